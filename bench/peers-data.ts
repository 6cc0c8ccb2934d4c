/**
 * The data and queries of bench/peers.bench.ts, with nothing that needs a server (tested in
 * test/bench/peers-data.test.ts): one day at 10 s spacing of R rows × 10 numeric columns, written
 * as vigil takes it (NDJSON of public-v2 `table` messages, one row per message, for
 * `POST /v0/messages`) and as VictoriaMetrics takes it (`/api/v1/import` JSON lines, one series per
 * line); the PT5M query in each system's language; both answers read into one shape and compared.
 *
 * One sample of each system is one cell of one row at one instant: R × 10 × 8 640 samples a day.
 * The rows carry no `name` cell (the gateway's row-name column), so vigil stores exactly the
 * numeric samples VictoriaMetrics does.
 *
 * The buckets are [b, b + 5 min) in both. VictoriaMetrics evaluates a rollup `f(m[5m])` at instant
 * t over (t − 5 min, t], so its steps are placed at b + 295 s: with samples on whole 10 s, that
 * window holds exactly the samples of [b, b + 5 min).
 */
import { cellValue, type TableTarget, tableMessage } from "./table-messages.js";

/** The day: a Wednesday in January (no DST change anywhere near it), in the past. */
export const PEERS_T0 = Date.UTC(2026, 0, 14);
export const SPACING_MS = 10_000;
export const DAY_STEPS = 86_400_000 / SPACING_MS; // 8 640
export const COLUMNS = 10;
export const BUCKET_MS = 300_000;
/** Where in its bucket a VictoriaMetrics step is evaluated (see above): 5 s before its end. */
export const VM_STEP_OFFSET_MS = BUCKET_MS - SPACING_MS / 2;
/** The VictoriaMetrics metric name; the column is a label, so every rollup keeps series apart. */
export const VM_METRIC = "cores";
/** Rows of one 10 s step of one row, at most: keeps the seeds of two cells apart. */
const MAX_ROWS = 1024;

export interface PeersShape {
  readonly rows: number;
  /** Instants, 10 s apart from PEERS_T0: DAY_STEPS for the bench, fewer in tests. */
  readonly steps: number;
}

export const columnName = (c: number): string => `metric_${c}`;
export const rowName = (r: number): string => `row-${r}`;

/** Samples of `shape` in either system. */
export const sampleCount = (shape: PeersShape): number => shape.rows * COLUMNS * shape.steps;

/** The end of the data, exclusive: the query range is [PEERS_T0, peersEnd). */
export const peersEnd = (shape: PeersShape): number => PEERS_T0 + shape.steps * SPACING_MS;

/** The value of `column` of `row` at `step`: at most three decimals, so its text is exact. */
export function peersValue(step: number, row: number, column: number): number {
  if (row >= MAX_ROWS) throw new Error(`at most ${MAX_ROWS} rows`);
  return cellValue((step * MAX_ROWS + row) * 16 + column);
}

const target = (row: number): TableTarget => ({
  gateway: "GW",
  probe: "p1",
  managedEntity: "host-000",
  sampler: "cpu",
  dataview: "cores",
  row: rowName(row),
  osType: "Linux",
  pluginName: "cpu",
});

/** vigil's message of `row` at `step`: its 10 cells as the gateway publishes them (decimal text). */
export function vigilMessage(step: number, row: number): string {
  const cells: Record<string, string> = {};
  for (let c = 0; c < COLUMNS; c += 1) cells[columnName(c)] = String(peersValue(step, row, c));
  return tableMessage(PEERS_T0 + step * SPACING_MS, target(row), cells);
}

/** NDJSON bodies of `perBody` messages, time-major (every row of one instant, then the next). */
export function vigilBodies(shape: PeersShape, perBody: number): string[] {
  const bodies: string[] = [];
  let lines: string[] = [];
  for (let s = 0; s < shape.steps; s += 1)
    for (let r = 0; r < shape.rows; r += 1) {
      lines.push(vigilMessage(s, r));
      if (lines.length === perBody) {
        bodies.push(`${lines.join("\n")}\n`);
        lines = [];
      }
    }
  if (lines.length > 0) bodies.push(`${lines.join("\n")}\n`);
  return bodies;
}

/** The labels of the series of `column` of `row`: the same names vigil keys the sample by. */
export function vmLabels(row: number, column: number): Record<string, string> {
  const t = target(row);
  return {
    __name__: VM_METRIC,
    gateway: t.gateway,
    probe: t.probe,
    managedEntity: t.managedEntity,
    sampler: t.sampler,
    dataview: t.dataview,
    row: t.row,
    column: columnName(column),
  };
}

/** One `/api/v1/import` line: every sample of one series (values as JSON numbers, times in ms). */
export function vmImportLine(shape: PeersShape, row: number, column: number): string {
  const values = new Array<number>(shape.steps);
  const timestamps = new Array<number>(shape.steps);
  for (let s = 0; s < shape.steps; s += 1) {
    values[s] = peersValue(s, row, column);
    timestamps[s] = PEERS_T0 + s * SPACING_MS;
  }
  return JSON.stringify({ metric: vmLabels(row, column), values, timestamps });
}

/** `/api/v1/import` bodies of `perBody` series each. */
export function vmBodies(shape: PeersShape, perBody: number): string[] {
  const bodies: string[] = [];
  let lines: string[] = [];
  for (let r = 0; r < shape.rows; r += 1)
    for (let c = 0; c < COLUMNS; c += 1) {
      lines.push(vmImportLine(shape, r, c));
      if (lines.length === perBody) {
        bodies.push(`${lines.join("\n")}\n`);
        lines = [];
      }
    }
  if (lines.length > 0) bodies.push(`${lines.join("\n")}\n`);
  return bodies;
}

// ---------------------------------------------------------------------------------------------
// Queries

export const VIGIL_AGGREGATIONS = ["svc.avg", "svc.max", "svc.count", "svc.percentile(0.95)"] as const;

const range = (shape: PeersShape) => ({
  from: new Date(PEERS_T0).toISOString(),
  to: new Date(peersEnd(shape)).toISOString(),
});

/** vigil's PT5M query: each column a metric of every row, grouped per row, the four aggregations. */
export function vigilMetricQuery(shape: PeersShape): Record<string, unknown> {
  return {
    zoneId: "UTC",
    filter: { entities: "", range: range(shape) },
    metrics: Array.from({ length: COLUMNS }, (_, c) => ({
      identifier: columnName(c),
      include: [`cpu/cores/{rowname}/${columnName(c)}`],
    })),
    aggregations: [...VIGIL_AGGREGATIONS],
    bucketing: { duration: "PT5M" },
    grouping: ["rowname"],
  };
}

/** vigil's count of every sample of the day: one bucket, one metric over every column. */
export function vigilCountQuery(shape: PeersShape): Record<string, unknown> {
  return {
    zoneId: "UTC",
    filter: { entities: "", range: range(shape) },
    metrics: [
      {
        identifier: "all",
        include: Array.from({ length: COLUMNS }, (_, c) => `cpu/cores/{rowname}/${columnName(c)}`),
      },
    ],
    aggregations: ["svc.count"],
    bucketing: { duration: "P1D" },
  };
}

/** The four rollups, each over the 5-minute window before a step, by the label they get. */
const VM_ROLLUPS: readonly (readonly [keyof BucketFigures, string])[] = [
  ["avg", `avg_over_time(${VM_METRIC}[5m])`],
  ["max", `max_over_time(${VM_METRIC}[5m])`],
  ["count", `count_over_time(${VM_METRIC}[5m])`],
  ["p95", `quantile_over_time(0.95, ${VM_METRIC}[5m])`],
];

/** The four rollups in one MetricsQL expression, each series labelled `agg` with its rollup. */
export const VM_QUERY = `union(${VM_ROLLUPS.map(([agg, e]) => `label_set(${e}, "agg", "${agg}")`).join(", ")})`;

/** `/api/v1/query_range` parameters of the PT5M query: one step per bucket (see above). */
export function vmRangeParams(shape: PeersShape): Record<string, string> {
  const buckets = Math.ceil((shape.steps * SPACING_MS) / BUCKET_MS);
  const first = PEERS_T0 + VM_STEP_OFFSET_MS;
  return {
    query: VM_QUERY,
    start: String(first / 1000),
    end: String((first + (buckets - 1) * BUCKET_MS) / 1000),
    step: String(BUCKET_MS / 1000),
    // Unaligned start (VictoriaMetrics aligns start to step when it may cache) and no cache.
    nocache: "1",
  };
}

/** `/api/v1/query` parameters counting every sample of the day (window (end − range, end]). */
export function vmCountParams(shape: PeersShape): Record<string, string> {
  const span = shape.steps * SPACING_MS;
  return {
    query: `sum(count_over_time(${VM_METRIC}[${span / 1000}s]))`,
    time: String((PEERS_T0 + span - SPACING_MS / 2) / 1000),
    nocache: "1",
  };
}

// ---------------------------------------------------------------------------------------------
// Answers

/** One bucket of one series in either answer. */
export interface BucketFigures {
  avg?: number;
  max?: number;
  count?: number;
  p95?: number;
}

/** Key of a series' bucket: `row|column|bucket start in epoch ms`. */
export const bucketKey = (row: string, column: string, at: number): string => `${row}|${column}|${at}`;

export interface VigilAnswer {
  readonly data: readonly {
    readonly bucket: string;
    readonly group: Readonly<Record<string, string | number>>;
    readonly metrics: Readonly<Record<string, Readonly<Record<string, number | null>>>>;
  }[];
}

const VIGIL_FIELDS: Readonly<Record<string, keyof BucketFigures>> = {
  "svc.avg": "avg",
  "svc.max": "max",
  "svc.count": "count",
  "svc.percentile(0.95)": "p95",
};

/** vigil's answer per series and bucket. */
export function fromVigil(answer: VigilAnswer): Map<string, BucketFigures> {
  const out = new Map<string, BucketFigures>();
  for (const d of answer.data) {
    const at = Date.parse(d.bucket);
    const row = String(d.group.rowname ?? "");
    for (const [column, values] of Object.entries(d.metrics)) {
      const figures: BucketFigures = {};
      for (const [name, value] of Object.entries(values)) {
        const field = VIGIL_FIELDS[name];
        if (field !== undefined && typeof value === "number") figures[field] = value;
      }
      if (figures.count !== undefined && figures.count > 0) out.set(bucketKey(row, column, at), figures);
    }
  }
  return out;
}

export interface VmAnswer {
  readonly status: string;
  readonly data: {
    readonly resultType: string;
    readonly result: readonly {
      readonly metric: Readonly<Record<string, string>>;
      readonly values: readonly (readonly [number, string])[];
    }[];
  };
}

/** VictoriaMetrics' answer per series and bucket (a step at t is the bucket t − VM_STEP_OFFSET). */
export function fromVm(answer: VmAnswer): Map<string, BucketFigures> {
  const out = new Map<string, BucketFigures>();
  for (const series of answer.data.result) {
    const field = VM_ROLLUPS.find(([agg]) => agg === series.metric.agg)?.[0];
    if (field === undefined) continue;
    for (const [t, text] of series.values) {
      const key = bucketKey(
        series.metric.row ?? "",
        series.metric.column ?? "",
        Math.round(t * 1000) - VM_STEP_OFFSET_MS,
      );
      const figures = out.get(key) ?? {};
      figures[field] = Number(text);
      out.set(key, figures);
    }
  }
  return out;
}

export interface CrossCheck {
  /** Series × buckets compared (every one both answers hold). */
  readonly buckets: number;
  /** Samples counted, the same in both. */
  readonly samples: number;
  /** Largest relative difference of two averages. */
  readonly avgMaxRelDiff: number;
  /** Buckets whose max is the same double in both. */
  readonly maxEqual: number;
  /** Buckets whose p95 is the same in both (VictoriaMetrics interpolates, vigil takes a rank). */
  readonly p95Equal: number;
  /** Largest relative difference of two p95s. */
  readonly p95MaxRelDiff: number;
}

const relDiff = (a: number, b: number): number =>
  a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b));

/**
 * Compares the two answers bucket by bucket: the same series and buckets, the same counts exactly,
 * averages within `tolerance` relative. Throws, naming the first few differences, when they do
 * not agree; max and p95 are only reported.
 */
export function crossCheck(
  vigil: ReadonlyMap<string, BucketFigures>,
  vm: ReadonlyMap<string, BucketFigures>,
  tolerance = 1e-9,
): CrossCheck {
  const problems: string[] = [];
  const note = (text: string): void => {
    if (problems.length < 10) problems.push(text);
  };
  let samples = 0;
  let avgMaxRelDiff = 0;
  let maxEqual = 0;
  let p95Equal = 0;
  let p95MaxRelDiff = 0;
  let mismatches = 0;
  for (const key of vm.keys()) if (!vigil.has(key)) note(`${key}: in VictoriaMetrics' answer only`);
  for (const [key, a] of vigil) {
    const b = vm.get(key);
    if (b === undefined) {
      mismatches += 1;
      note(`${key}: in vigil's answer only`);
      continue;
    }
    if (a.count !== b.count) {
      mismatches += 1;
      note(`${key}: count ${a.count} (vigil) against ${b.count} (VictoriaMetrics)`);
    }
    samples += a.count ?? 0;
    const d = relDiff(a.avg ?? Number.NaN, b.avg ?? Number.NaN);
    if (!(d <= tolerance)) {
      mismatches += 1;
      note(`${key}: avg ${a.avg} (vigil) against ${b.avg} (VictoriaMetrics)`);
    }
    if (d > avgMaxRelDiff) avgMaxRelDiff = d;
    if (a.max === b.max) maxEqual += 1;
    if (a.p95 === b.p95) p95Equal += 1;
    const p = relDiff(a.p95 ?? Number.NaN, b.p95 ?? Number.NaN);
    if (p > p95MaxRelDiff) p95MaxRelDiff = p;
  }
  if (mismatches > 0 || vigil.size !== vm.size)
    throw new Error(
      `vigil and VictoriaMetrics disagree (${vigil.size} against ${vm.size} series × buckets, ` +
        `${mismatches} differences):\n${problems.join("\n")}`,
    );
  return { buckets: vigil.size, samples, avgMaxRelDiff, maxEqual, p95Equal, p95MaxRelDiff };
}
