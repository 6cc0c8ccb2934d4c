/**
 * Builds the SQL that answers a metric query inside PostgreSQL (DESIGN 5.3, 5.5).
 *
 * Every value from a request (names, zone, times, p) is a bound parameter; the SQL text depends
 * only on the plan's shape (bucket kind, grouping, aggregations, number of time windows, number of
 * UTC-offset segments of the zone in the range, percentile strategy).
 *
 * Buckets follow DESIGN 5.3 exactly, DST included, with the rule of the DuckDB store
 * (duckdb-metrics-sql.ts): a bucket starts at the latest instant ≤ the sample whose local
 * wall-clock time is on the bucket grid. Within one UTC offset that instant is "local floor minus
 * the offset"; when an offset transition P lies between that candidate and the sample, the
 * boundary is P itself (the grid point fell into the skipped gap) or the last grid point before P
 * in the offset before P (in a repeated hour both instances of a grid time are boundaries).
 *
 * Two statements do it, so that no sample pays for a time-zone conversion (issue 9's benchmark):
 * {@link buildPgZoneOffsetsQuery} asks PostgreSQL's time zone library for the zone's offset
 * transitions around each stretch of stored weeks (hourly, refined to the minute and the second);
 * {@link buildPgMetricQuery} cuts those stretches at the transitions into segments of constant
 * offset and scans each with integer arithmetic on `ts_ms`: local time is `ts_ms + offset`, the
 * local floor a modulo (calendar months go through `date` arithmetic, exact and independent of the
 * session's zone). Assumption, as in the DuckDB store: at most one offset change per bucket and per
 * hour, at a whole second (true of every zone in use since 1970).
 *
 * Aggregations follow DESIGN 5.3 exactly: population variance and deviation; first/last by
 * timestamp with ties broken by the smaller (larger) value; percentile by nearest rank with
 * k = max(1, ⌈num·n/den⌉) in `numeric` (exact), never PostgreSQL's float `percentile_disc`. The
 * aggregation is one hash aggregate over (bucket, group number) — a group number stands for the
 * group's key columns and identifier — whose percentile state is the group's values as an array
 * (`array_agg`, no sort); each group then picks its k-th value with a bounded top-N sort of that
 * array from the nearer end (k or n − k + 1 values kept). A query whose samples would make those
 * arrays large ({@link PERCENTILE_HASH_MAX_SAMPLES}) uses an ordered `array_agg` instead, which
 * sorts the samples and holds one group's values at a time.
 */
import { decimalFraction } from "../duckdb/duckdb-metrics-sql.js";
import type { AggregationName, BucketSpec, GroupKey, MetricQueryPlan, TimeWindow } from "../store.js";

/** A statement with positional parameters, for `sql.unsafe(text, params)`. */
export interface PgStatement {
  readonly text: string;
  readonly params: unknown[];
}

/** The metric statement and how to read its rows. */
export interface PgMetricSql extends PgStatement {
  /** Output column names of the group keys, in grouping order, keyed as in `MetricQueryRow.group`. */
  readonly groupColumns: readonly {
    readonly key: string;
    readonly column: string;
    readonly numeric: boolean;
  }[];
  /** Aggregation labels, in order: the output columns `a0`, `a1`, … */
  readonly labels: readonly string[];
}

/** Epoch ms of 4713-11-24 BC (PostgreSQL's earliest timestamptz) and of 294276 AD, with margin. */
export const PG_MIN_MS = -210_866_803_200_000 + 40 * 86_400_000;
export const PG_MAX_MS = 9_224_318_016_000_000 - 40 * 86_400_000;

const SECOND_MS = 1000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
/** 1970-01-05, the first Monday after the epoch: ISO weeks start on Monday. */
const FIRST_MONDAY_MS = 4 * DAY_MS;
/** How far before a stretch to look for offset transitions: longer than the longest bucket (a month). */
export const TRANSITION_LOOKBACK_MS = 33 * DAY_MS; // 33 days
/**
 * Most scans of `samples` one statement makes: a range with more offset segments than this scans
 * groups of consecutive segments, choosing each sample's segment with a CASE.
 */
export const MAX_SEGMENT_SCANS = 16;
/**
 * Most samples (estimated from the partitions' sizes) a query with a percentile aggregates by hash:
 * the hash aggregate keeps every group's values in memory at once (8 bytes each, up to twice that
 * while arrays grow), so 8 M samples are at most about 128 MB. Above it the values are sorted
 * (spilling to disk if need be) and one group's values are held at a time.
 */
export const PERCENTILE_HASH_MAX_SAMPLES = 8_000_000;

/** One change of a zone's UTC offset: from `beforeMs` to `afterMs` (ms east of UTC) at `atMs`. */
export interface PgOffsetTransition {
  readonly atMs: number;
  readonly beforeMs: number;
  readonly afterMs: number;
}

/**
 * A zone's UTC offsets around one stretch of time: `initialMs` is in force from before the stretch
 * (at least {@link TRANSITION_LOOKBACK_MS} before it) until the first of `transitions`
 * (time-ordered). A fixed offset has no transitions.
 */
export interface PgZoneOffsets {
  readonly initialMs: number;
  readonly transitions: readonly PgOffsetTransition[];
}

/** Instants `[from, to)` (epoch ms) where samples of a query can be. */
export interface PgScanWindow {
  readonly from: number;
  readonly to: number;
}

/**
 * The stretches of a query's range that stored weeks cover: `spans` (each [from, to), epoch ms)
 * clipped to `[plan.from, plan.to)` and to PostgreSQL's timestamp range, adjacent ones merged, in
 * time order.
 */
export function scanWindows(
  plan: Pick<MetricQueryPlan, "from" | "to">,
  spans: readonly PgScanWindow[],
): PgScanWindow[] {
  const clipped = spans
    .map((s) => ({ from: Math.max(plan.from, s.from, PG_MIN_MS), to: Math.min(plan.to, s.to, PG_MAX_MS) }))
    .filter((s) => s.from < s.to)
    .sort((a, b) => a.from - b.from);
  const out: { from: number; to: number }[] = [];
  for (const s of clipped) {
    const last = out[out.length - 1];
    if (last !== undefined && s.from <= last.to) last.to = Math.max(last.to, s.to);
    else out.push({ ...s });
  }
  return out;
}

const floorDiv = (a: number, b: number): number => Math.floor(a / b);

/**
 * The statement that lists a named zone's UTC offsets around each of `windows`: rows `(w, at,
 * before, after)` — for window `w` (0-based) one row `(w, NULL, NULL, initial offset)` and one row
 * `(w, instant, offset before, offset after)` per transition, in time order; read it with
 * {@link readPgZoneOffsets}. Each window is scanned hourly from at least
 * {@link TRANSITION_LOOKBACK_MS} before it (so that a month bucket starting before it still sees
 * its transition) to at least an hour after it, on whole UTC days, inside PostgreSQL's range.
 */
export function buildPgZoneOffsetsQuery(zone: string, windows: readonly PgScanWindow[]): PgStatement {
  const params: unknown[] = [];
  const p = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const z = `${p(zone)}::text`;
  const lo = windows.map((w) =>
    String(Math.max(PG_MIN_MS, floorDiv(w.from - TRANSITION_LOOKBACK_MS, DAY_MS) * DAY_MS)),
  );
  const hi = windows.map((w) =>
    String(Math.min(PG_MAX_MS, (floorDiv(w.to + HOUR_MS - 1, DAY_MS) + 1) * DAY_MS)),
  );
  const tstz = (ms: string): string => `(timestamptz 'epoch' + ${ms} * interval '1 millisecond')`;
  const offsetAt = (ms: string): string =>
    `(extract(epoch FROM timezone(${z}, ${tstz(ms)}) - timezone('UTC', ${tstz(ms)})) * 1000)::bigint`;
  const text = `WITH scan AS (
  SELECT w.w, t.t_ms, ${offsetAt("t.t_ms")} AS off_ms
  FROM unnest(${p(lo)}::bigint[], ${p(hi)}::bigint[]) WITH ORDINALITY AS w(lo, hi, w),
  LATERAL generate_series(w.lo, w.hi, ${HOUR_MS}::bigint) AS t(t_ms)
),
steps AS (
  SELECT w, lag(t_ms) OVER win AS prev_t, t_ms, lag(off_ms) OVER win AS prev_off, off_ms
  FROM scan WINDOW win AS (PARTITION BY w ORDER BY t_ms)
),
changes AS (SELECT * FROM steps WHERE prev_off <> off_ms),
minutes AS (
  SELECT c.w, min(m.m_ms) AS m_ms, c.prev_off, c.off_ms
  FROM changes c, LATERAL generate_series(c.prev_t + ${MINUTE_MS}, c.t_ms, ${MINUTE_MS}::bigint) AS m(m_ms)
  WHERE ${offsetAt("m.m_ms")} = c.off_ms
  GROUP BY c.w, c.prev_t, c.prev_off, c.off_ms
),
seconds AS (
  SELECT c.w, min(s.s_ms) AS at_ms, c.prev_off, c.off_ms
  FROM minutes c, LATERAL generate_series(c.m_ms - ${MINUTE_MS} + ${SECOND_MS}, c.m_ms, ${SECOND_MS}::bigint) AS s(s_ms)
  WHERE ${offsetAt("s.s_ms")} = c.off_ms
  GROUP BY c.w, c.m_ms, c.prev_off, c.off_ms
)
SELECT w - 1 AS w, NULL::bigint AS at_ms, NULL::bigint AS before_ms, off_ms AS after_ms
FROM (SELECT DISTINCT ON (w) w, off_ms FROM scan ORDER BY w, t_ms) AS first
UNION ALL
SELECT w - 1, at_ms, prev_off, off_ms FROM seconds
ORDER BY 1, 2 NULLS FIRST`;
  return { text, params };
}

/** The answer of {@link buildPgZoneOffsetsQuery} for `count` windows (int8 columns arrive as strings). */
export function readPgZoneOffsets(rows: readonly Record<string, unknown>[], count: number): PgZoneOffsets[] {
  const initial: (number | undefined)[] = Array.from({ length: count }, () => undefined);
  const transitions: PgOffsetTransition[][] = Array.from({ length: count }, () => []);
  for (const row of rows) {
    const w = Number(row.w);
    const after = Number(row.after_ms);
    if (row.at_ms === null) initial[w] = after;
    else transitions[w]?.push({ atMs: Number(row.at_ms), beforeMs: Number(row.before_ms), afterMs: after });
  }
  return initial.map((initialMs, w) => {
    if (initialMs === undefined) throw new TypeError(`zone offsets: no initial offset for window ${w}`);
    return { initialMs, transitions: transitions[w] ?? [] };
  });
}

/** The offsets of a fixed-offset zone: one offset, no transitions. */
export function fixedPgZoneOffsets(offsetSeconds: number): PgZoneOffsets {
  return { initialMs: offsetSeconds * SECOND_MS, transitions: [] };
}

/** A stretch `[from, to)` of constant offset, and the transition that opened it, if recent. */
interface Segment {
  readonly from: number;
  readonly to: number;
  readonly offsetMs: number;
  readonly opened: PgOffsetTransition | null;
}

/** `window` cut at the transitions inside it; the first segment keeps the latest earlier transition. */
function segments(offsets: PgZoneOffsets, window: PgScanWindow): Segment[] {
  const out: Segment[] = [];
  let offsetMs = offsets.initialMs;
  let opened: PgOffsetTransition | null = null;
  let from = window.from;
  for (const t of offsets.transitions) {
    if (t.atMs <= window.from) {
      offsetMs = t.afterMs;
      opened = t;
      continue;
    }
    if (t.atMs >= window.to) break;
    out.push({ from, to: t.atMs, offsetMs, opened });
    from = t.atMs;
    offsetMs = t.afterMs;
    opened = t;
  }
  out.push({ from, to: window.to, offsetMs, opened });
  return out;
}

/**
 * An instant near `at` inside `window` (strictly after its start, before its end) that is a bucket
 * boundary no bucket spans: every sample before it falls in a bucket that starts before it, every
 * sample from it on in one that starts at or after it. It is a grid point of the bucket kind (a
 * multiple of the size from local midnight, a local midnight, a local Monday midnight) inside a
 * stretch of constant offset, after any transition that opened that stretch, so the bucket rule
 * maps it to itself. Undefined when there
 * is none near `at`, and always for month buckets. A query can then run as separate statements on
 * either side of it whose answers, put one after the other, are the whole answer in order.
 */
export function splitInstant(
  bucket: BucketSpec,
  offsets: PgZoneOffsets,
  window: PgScanWindow,
  at: number,
): number | undefined {
  if (bucket.kind === "month") return undefined;
  // Grid points of the bucket kind (sub-day sizes divide a day: their grid from local midnight is
  // their grid from the local epoch).
  const [size, origin] =
    bucket.kind === "week"
      ? [WEEK_MS, FIRST_MONDAY_MS]
      : bucket.kind === "day"
        ? [DAY_MS, 0]
        : [bucket.minutes * MINUTE_MS, 0];
  for (const segment of segments(offsets, window)) {
    if (at < segment.from || at >= segment.to) continue;
    const local = at + segment.offsetMs;
    const floor = floorDiv(local - origin, size) * size + origin - segment.offsetMs;
    for (const t of [floor, floor + size]) {
      if (t >= segment.from && t < segment.to && t > window.from && t < window.to) return t;
    }
  }
  return undefined;
}

type AggregationSql = (percentile: { num: string; den: string } | null) => {
  readonly inner: string | null;
  readonly outer: string;
};

const simple =
  (fn: string): AggregationSql =>
  () => ({ inner: fn, outer: "" });

/**
 * One entry per aggregation (STYLE 6); `value` and `ts_ms` are columns of the bucketed samples,
 * `n` and `vals` of the aggregate. Arrays compare element by element: first/last take the earliest
 * (latest) time, then the smallest (largest) value (ms < 2^53, exact as float8).
 */
const AGGREGATIONS: Record<AggregationName, AggregationSql> = {
  "svc.count": simple("count(value)"),
  "svc.sum": simple("sum(value)"),
  "svc.min": simple("min(value)"),
  "svc.max": simple("max(value)"),
  "svc.avg": simple("avg(value)"),
  "svc.var": simple("var_pop(value)"),
  "svc.stddev": simple("stddev_pop(value)"),
  "svc.first": simple("(min(ARRAY[ts_ms::float8, value]))[2]"),
  "svc.last": simple("(max(ARRAY[ts_ms::float8, value]))[2]"),
  // The rank k = max(1, ⌈num·n/den⌉) in numeric; the value is picked in the outer query.
  "svc.percentile": (q) => ({
    inner: null,
    outer: `greatest(1, div(${q?.num} * n + ${q?.den} - 1, ${q?.den}))::bigint`,
  }),
};

const GROUP_COLUMNS = { rowname: "row_name", entity: "entity_id", attribute: "attr" } as const;
const groupName = (key: GroupKey): keyof typeof GROUP_COLUMNS =>
  typeof key === "string" ? key : "attribute";

/** `x` modulo `m` rounded toward minus infinity (PostgreSQL's `%` keeps the sign of `x`). */
const floorMod = (x: string, m: string): string => `(((${x}) % ${m}) + ${m}) % ${m}`;
/** Whole days since the epoch of a local time `l` (ms), as an int4 for `date` arithmetic. */
const localDay = (l: string): string => `((${l} - ${floorMod(l, `${DAY_MS}::bigint`)}) / ${DAY_MS})::int`;

/**
 * The local floor of a local time `l` (ms since the local epoch, an expression) per bucket kind:
 * arithmetic for minutes (sizes divide a day, so the grid from local midnight is the grid from the
 * local epoch), days and ISO weeks; for months the first of the month by `date` arithmetic (exact,
 * and independent of the session's time zone, unlike `date_trunc` on a date).
 */
const TRUNCATE: Record<BucketSpec["kind"], (l: string, size: string) => string> = {
  minutes: (l, size) => `(${l} - ${floorMod(l, size)})`,
  day: (l) => `(${l} - ${floorMod(l, `${DAY_MS}::bigint`)})`,
  week: (l) => `(${l} - ${floorMod(`${l} - ${FIRST_MONDAY_MS}`, `${WEEK_MS}::bigint`)})`,
  month: (l) => {
    const d = `(date '1970-01-01' + ${localDay(l)})`;
    return `((${d} - extract(day FROM ${d})::int + 1 - date '1970-01-01')::bigint * ${DAY_MS})`;
  },
};

/**
 * Builds the statement for `plan` over `windows` (from {@link scanWindows}, non-empty) with the
 * zone's offsets per window (`offsets[i]` for `windows[i]`). `sortPercentiles` picks the
 * memory-bounded percentile strategy (see the file comment). Throws a RangeError for an invalid
 * percentile.
 */
export function buildPgMetricQuery(
  plan: MetricQueryPlan,
  windows: readonly PgScanWindow[],
  offsets: readonly PgZoneOffsets[],
  sortPercentiles = false,
): PgMetricSql {
  const params: unknown[] = [];
  const p = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const big = (ms: number): string => `${p(String(ms))}::bigint`;

  const attribute = plan.grouping.find((g): g is { readonly attribute: string } => typeof g !== "string");
  const entityIds = p(plan.entities.map((e) => e.id));
  const entityAttrs = p(
    // Object.hasOwn: an attribute named `constructor` or `__proto__` is data, not a prototype member.
    plan.entities.map((e) =>
      attribute === undefined || !Object.hasOwn(e.attributes, attribute.attribute)
        ? ""
        : (e.attributes[attribute.attribute] ?? ""),
    ),
  );
  const selectors = plan.metrics.flatMap((m) => m.include.map((s) => ({ identifier: m.identifier, ...s })));
  const sel = {
    identifier: p(selectors.map((s) => s.identifier)),
    sampler: p(selectors.map((s) => s.sampler)),
    samplerType: p(selectors.map((s) => s.samplerType ?? "")),
    anyType: p(selectors.map((s) => (s.samplerType === null ? 1 : 0))),
    dataview: p(selectors.map((s) => s.dataview)),
    row: p(selectors.map((s) => s.row ?? "")),
    anyRow: p(selectors.map((s) => (s.row === null ? 1 : 0))),
    column: p(selectors.map((s) => s.column)),
  };

  const groupColumns = plan.grouping.map((g) => ({
    key: groupName(g),
    column: GROUP_COLUMNS[groupName(g)],
    numeric: groupName(g) === "entity",
  }));
  const sortKey = (c: string): string => (c === "entity_id" ? c : `${c} COLLATE "C"`);
  const keyColumns = [...groupColumns.map((g) => g.column), "identifier"];
  // Group numbers follow the output order (key columns in code-point order), so ordering by the
  // number orders by the keys.
  const gidOrder = [...groupColumns.map((g) => sortKey(g.column)), 'identifier COLLATE "C"'];

  const size = plan.bucket.kind === "minutes" ? big(plan.bucket.minutes * MINUTE_MS) : "0";
  const truncate = (l: string): string => TRUNCATE[plan.bucket.kind](l, size);
  const windowSql = plan.timeWindows.map((w) => timeWindowSql(w, p));

  const all = windows.flatMap((w, i) => {
    const o = offsets[i];
    if (o === undefined) throw new RangeError(`internal: no zone offsets for window ${i}`);
    return segments(o, w);
  });
  const perScan = Math.ceil(all.length / MAX_SEGMENT_SCANS);
  const scans: string[] = [];
  for (let first = 0; first < all.length; first += perScan) {
    scans.push(segmentScan(all.slice(first, first + perScan), truncate, windowSql, big));
  }

  const inner: string[] = [];
  const outer: string[] = [];
  let hasPercentile = false;
  plan.aggregations.forEach((a, i) => {
    if (a.name === "svc.percentile") {
      hasPercentile = true;
      const { numerator, denominator } = decimalFraction(a.p ?? "");
      const q = { num: `${p(numerator.toString())}::numeric`, den: `${p(denominator.toString())}::numeric` };
      outer.push(`${percentileSql(AGGREGATIONS[a.name](q).outer, sortPercentiles)} AS a${i}`);
    } else {
      inner.push(`${AGGREGATIONS[a.name](null).inner} AS a${i}`);
      outer.push(`a${i}`);
    }
  });
  if (hasPercentile) {
    inner.push(
      "count(value) AS n",
      sortPercentiles ? "array_agg(value ORDER BY value) AS vals" : "array_agg(value) AS vals",
    );
  }

  const text = `WITH ents AS (
  SELECT * FROM unnest(${entityIds}::int[], ${entityAttrs}::text[]) AS e(entity_id, attr)
),
sel AS (
  SELECT * FROM unnest(${sel.identifier}::text[], ${sel.sampler}::text[], ${sel.samplerType}::text[],
                       ${sel.anyType}::int[], ${sel.dataview}::text[], ${sel.row}::text[], ${sel.anyRow}::int[],
                       ${sel.column}::text[])
    AS s(identifier, sampler, sampler_type, any_type, dataview, row_name, any_row, column_name)
),
matched AS MATERIALIZED (
  SELECT DISTINCT s.id AS series_id, s.row_name, s.entity_id, ents.attr, sel.identifier
  FROM series s
  JOIN ents ON ents.entity_id = s.entity_id
  JOIN sel ON s.sampler = sel.sampler AND s.dataview = sel.dataview AND s.column_name = sel.column_name
    AND (sel.any_type = 1 OR s.sampler_type = sel.sampler_type)
    AND (CASE WHEN sel.any_row = 1 THEN s.row_name <> '' ELSE s.row_name = sel.row_name END)
),
keyed AS MATERIALIZED (
  SELECT series_id, ${keyColumns.join(", ")}, dense_rank() OVER (ORDER BY ${gidOrder.join(", ")})::int AS gid
  FROM matched
),
bucketed AS (
  ${scans.join("\n  UNION ALL\n  ")}
),
agg AS MATERIALIZED (
  SELECT bucket_ms, gid, ${inner.join(", ")} FROM bucketed GROUP BY bucket_ms, gid
),
keys AS (SELECT DISTINCT gid, ${keyColumns.join(", ")} FROM keyed)
SELECT agg.bucket_ms, ${keyColumns.map((c) => `keys.${c}`).join(", ")}, ${outer.join(", ")}
FROM agg JOIN keys ON keys.gid = agg.gid
ORDER BY agg.bucket_ms, agg.gid`;

  return { text, params, groupColumns, labels: plan.aggregations.map((a) => a.label) };
}

/**
 * The percentile at rank `k` (an expression over the aggregate's `n`) from the group's values
 * `vals`: sorted already (`sorted`), or by a bounded top-N sort from the nearer end, which keeps k
 * (or n − k + 1) values instead of sorting all n.
 */
function percentileSql(k: string, sorted: boolean): string {
  if (sorted) return `vals[(${k})::int]`;
  return `(SELECT CASE WHEN 2 * r.k <= n
    THEN (SELECT v FROM (SELECT unnest(vals) AS v) AS u ORDER BY v OFFSET r.k - 1 LIMIT 1)
    ELSE (SELECT v FROM (SELECT unnest(vals) AS v) AS u ORDER BY v DESC OFFSET n - r.k LIMIT 1) END
    FROM (SELECT ${k} AS k) AS r)`;
}

/**
 * One scan of `samples` over the segments `group` (consecutive, one offset each): the matched
 * samples with their group number and bucket start `bucket_ms`. With one segment the offset and
 * transition are constants; with several a CASE on the sample time picks them.
 */
function segmentScan(
  group: readonly Segment[],
  truncate: (l: string) => string,
  windowSql: readonly ((l: string, sod: string) => string)[],
  big: (ms: number) => string,
): string {
  const [head] = group;
  const last = group[group.length - 1];
  if (head === undefined || last === undefined) throw new RangeError("internal: a scan needs a segment");
  const pick = (value: (g: Segment) => string): string => {
    if (group.length === 1) return value(head);
    // Each segment but the last runs until the next one starts.
    const whens = group.slice(0, -1).map((g) => `WHEN ts_ms < ${big(g.to)} THEN ${value(g)}`);
    return `CASE ${whens.join(" ")} ELSE ${value(last)} END`;
  };
  const opened = group.some((g) => g.opened !== null);
  const columns = [`${pick((g) => big(g.offsetMs))} AS off_ms`];
  if (opened) {
    columns.push(
      `${pick((g) => (g.opened === null ? "NULL::bigint" : big(g.opened.atMs)))} AS p_ms`,
      `${pick((g) => (g.opened === null ? "NULL::bigint" : big(g.opened.beforeMs)))} AS q_ms`,
    );
  }
  // A sample after a transition whose grid point lies before it: the boundary is the transition
  // (the grid point fell into a skipped gap) or the last grid point before it, in the old offset.
  const bucket = opened
    ? `CASE WHEN p_ms IS NULL OR f_ms - off_ms >= p_ms THEN f_ms - off_ms
              WHEN f_ms >= p_ms + q_ms THEN p_ms
              ELSE ${truncate("p_ms + q_ms - 1")} - q_ms END`
    : "f_ms - off_ms";
  const where =
    windowSql.length === 0
      ? ""
      : `\n    WHERE ${windowSql.map((w) => w("l_ms", floorMod("l_ms", `${DAY_MS}::bigint`))).join(" OR ")}`;
  return `SELECT gid, value, ts_ms, ${bucket} AS bucket_ms
    FROM (SELECT *, ${truncate("l_ms")} AS f_ms
      FROM (SELECT *, ts_ms + off_ms AS l_ms
        FROM (SELECT m.gid, x.value, x.ts_ms, ${columns.join(", ")}
          FROM samples x JOIN keyed m ON m.series_id = x.series_id
          WHERE x.value IS NOT NULL AND x.ts_ms >= ${big(head.from)} AND x.ts_ms < ${big(last.to)}
        ) AS s0) AS s1) AS s2${where}`;
}

/**
 * One time window as a predicate on a sample's local time `l` (ms since the local epoch) and its
 * ms after local midnight `sod`: in [from, to), or overnight when to < from; from = to covers the
 * whole day; `days` are local ISO weekdays.
 */
function timeWindowSql(w: TimeWindow, p: (value: unknown) => string): (l: string, sod: string) => string {
  const from = `${p(w.fromSecond * SECOND_MS)}::bigint`;
  const to = `${p(w.toSecond * SECOND_MS)}::bigint`;
  const days = w.days === undefined ? undefined : p([...w.days]);
  return (l, sod) => {
    const time =
      w.fromSecond < w.toSecond
        ? `${sod} >= ${from} AND ${sod} < ${to}`
        : `(${sod} >= ${from} OR ${sod} < ${to})`;
    // Day 0 of the local epoch (1970-01-01) is a Thursday, ISO weekday 4.
    const isoWeekday = `(${floorMod(`${localDay(l)} + 3`, "7")} + 1)`;
    return days === undefined ? `(${time})` : `(${time} AND ${isoWeekday} = ANY(${days}::int[]))`;
  };
}
