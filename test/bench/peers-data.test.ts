/**
 * The pure parts of bench/peers.bench.ts (bench/peers-data.ts): both systems are sent the same
 * series, the VictoriaMetrics import lines have the format `/api/v1/import` reads, the two queries
 * ask for the same buckets, and the cross-check fails on answers that disagree. No server runs
 * here and nothing is timed.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  BUCKET_MS,
  type BucketFigures,
  bucketKey,
  COLUMNS,
  columnName,
  crossCheck,
  fromVigil,
  fromVm,
  PEERS_T0,
  type PeersShape,
  peersEnd,
  rowName,
  SPACING_MS,
  sampleCount,
  VM_METRIC,
  VM_STEP_OFFSET_MS,
  type VmAnswer,
  vigilBodies,
  vigilCountQuery,
  vigilMetricQuery,
  vmBodies,
  vmCountParams,
  vmImportLine,
  vmRangeParams,
} from "../../bench/peers-data.js";

const SHAPE: PeersShape = { rows: 3, steps: 95 }; // 95 instants: 15 min 50 s, a partial last bucket

/** Every sample of the vigil bodies: `row|column|at` → the cell's text. */
function vigilSamples(bodies: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const body of bodies)
    for (const line of body.split("\n")) {
      if (line === "") continue;
      const m = JSON.parse(line) as {
        type: string;
        operation: string;
        data: {
          sampleTime: string;
          target: { row: string; managedEntity: string };
          row: Record<string, string>;
        };
      };
      assert.equal(m.type, "table");
      assert.equal(m.operation, "update");
      for (const [column, text] of Object.entries(m.data.row))
        out.set(bucketKey(m.data.target.row, column, Date.parse(m.data.sampleTime)), text);
    }
  return out;
}

interface ImportLine {
  metric: Record<string, string>;
  values: number[];
  timestamps: number[];
}

function vmLines(bodies: readonly string[]): ImportLine[] {
  return bodies.flatMap((b) =>
    b
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as ImportLine),
  );
}

describe("peers bench data", () => {
  test("vigil and VictoriaMetrics are sent the same samples", () => {
    const vigil = vigilSamples(vigilBodies(SHAPE, 7));
    const vm = new Map<string, number>();
    for (const line of vmLines(vmBodies(SHAPE, 4)))
      for (const [i, t] of line.timestamps.entries())
        vm.set(
          bucketKey(line.metric.row as string, line.metric.column as string, t),
          line.values[i] as number,
        );
    assert.equal(vigil.size, sampleCount(SHAPE));
    assert.equal(vm.size, sampleCount(SHAPE));
    for (const [key, text] of vigil) {
      // The text vigil parses is the number VictoriaMetrics is sent, to the last bit.
      assert.equal(Number(text), vm.get(key), key);
      assert.equal(text, String(vm.get(key)), key);
    }
  });

  test("vigil's messages come in bodies of the size asked, time-major, ten numeric cells and no name", () => {
    const bodies = vigilBodies(SHAPE, 7);
    const messages = SHAPE.rows * SHAPE.steps;
    assert.equal(bodies.length, Math.ceil(messages / 7));
    const lines = bodies.flatMap((b) => b.split("\n").filter((l) => l !== ""));
    assert.equal(lines.length, messages);
    const first = JSON.parse(lines[0] as string) as {
      data: { sampleTime: string; row: Record<string, string> };
    };
    const second = JSON.parse(lines[1] as string) as { data: { sampleTime: string } };
    assert.equal(first.data.sampleTime, new Date(PEERS_T0).toISOString());
    assert.equal(second.data.sampleTime, first.data.sampleTime);
    assert.deepEqual(
      Object.keys(first.data.row),
      Array.from({ length: COLUMNS }, (_, c) => columnName(c)),
    );
    // The same inputs give the same text: a message without an id is known by its digest.
    assert.deepEqual(vigilBodies(SHAPE, 7), bodies);
  });

  test("a VictoriaMetrics import line is one series: its labels, its values and ms timestamps", () => {
    const line = JSON.parse(vmImportLine(SHAPE, 2, 7)) as ImportLine;
    assert.deepEqual(Object.keys(line).sort(), ["metric", "timestamps", "values"]);
    assert.deepEqual(line.metric, {
      __name__: VM_METRIC,
      gateway: "GW",
      probe: "p1",
      managedEntity: "host-000",
      sampler: "cpu",
      dataview: "cores",
      row: rowName(2),
      column: columnName(7),
    });
    assert.equal(line.values.length, SHAPE.steps);
    assert.equal(line.timestamps.length, SHAPE.steps);
    for (const [i, t] of line.timestamps.entries()) assert.equal(t, PEERS_T0 + i * SPACING_MS);
    for (const v of line.values) assert.ok(Number.isFinite(v) && v >= 0 && v < 10_000);
    const lines = vmLines(vmBodies(SHAPE, 4));
    assert.equal(lines.length, SHAPE.rows * COLUMNS);
    assert.equal(new Set(lines.map((l) => `${l.metric.row}/${l.metric.column}`)).size, SHAPE.rows * COLUMNS);
  });

  test("both queries cover the same buckets of the data", () => {
    const vigil = vigilMetricQuery(SHAPE) as {
      filter: { range: { from: string; to: string } };
      bucketing: { duration: string };
      grouping: string[];
      metrics: { identifier: string; include: string[] }[];
    };
    assert.equal(Date.parse(vigil.filter.range.from), PEERS_T0);
    assert.equal(Date.parse(vigil.filter.range.to), peersEnd(SHAPE));
    assert.equal(vigil.bucketing.duration, "PT5M");
    assert.deepEqual(vigil.grouping, ["rowname"]);
    assert.equal(vigil.metrics.length, COLUMNS);
    const vm = vmRangeParams(SHAPE);
    assert.equal(Number(vm.step) * 1000, BUCKET_MS);
    assert.equal(vm.nocache, "1");
    assert.match(vm.query as string, /quantile_over_time\(0\.95, cores\[5m\]\)/);
    // Steps at b + 295 s: the window (t − 5 min, t] holds the samples of [b, b + 5 min).
    const first = Number(vm.start) * 1000 - VM_STEP_OFFSET_MS;
    const last = Number(vm.end) * 1000 - VM_STEP_OFFSET_MS;
    assert.equal(first, PEERS_T0);
    assert.equal(last, PEERS_T0 + 3 * BUCKET_MS); // 95 instants: buckets 0..3
    assert.ok(VM_STEP_OFFSET_MS > BUCKET_MS - SPACING_MS && VM_STEP_OFFSET_MS < BUCKET_MS);
    const count = vmCountParams(SHAPE);
    const at = Number(count.time) * 1000;
    const span = Number(/\[(\d+)s\]/.exec(count.query as string)?.[1]) * 1000;
    assert.ok(at - span < PEERS_T0 && at >= peersEnd(SHAPE) - SPACING_MS && at < peersEnd(SHAPE));
    assert.equal(
      (vigilCountQuery(SHAPE) as { metrics: { include: string[] }[] }).metrics[0]?.include.length,
      COLUMNS,
    );
  });
});

describe("peers bench cross-check", () => {
  const bucket = PEERS_T0 + BUCKET_MS;
  const vigilAnswer = (avg: number, count: number) => ({
    data: [
      {
        bucket: new Date(bucket).toISOString().replace("Z", "+00:00"),
        group: { rowname: "row-0" },
        metrics: {
          metric_0: { "svc.avg": avg, "svc.max": 9, "svc.count": count, "svc.percentile(0.95)": 9 },
        },
      },
    ],
  });
  const vmAnswer = (avg: number, count: number): VmAnswer => {
    const t = (bucket + VM_STEP_OFFSET_MS) / 1000;
    const series = (agg: string, v: number) => ({
      metric: { agg, row: "row-0", column: "metric_0" },
      values: [[t, String(v)] as const],
    });
    return {
      status: "success",
      data: {
        resultType: "matrix",
        result: [series("avg", avg), series("max", 9), series("count", count), series("p95", 8.5)],
      },
    };
  };

  test("the answers are read into the same buckets", () => {
    const a = fromVigil(vigilAnswer(3.25, 30));
    const b = fromVm(vmAnswer(3.25, 30));
    const key = bucketKey("row-0", "metric_0", bucket);
    assert.deepEqual(a.get(key), { avg: 3.25, max: 9, count: 30, p95: 9 } satisfies BucketFigures);
    assert.deepEqual(b.get(key), { avg: 3.25, max: 9, count: 30, p95: 8.5 } satisfies BucketFigures);
    const check = crossCheck(a, b);
    assert.equal(check.buckets, 1);
    assert.equal(check.samples, 30);
    assert.equal(check.maxEqual, 1);
    assert.equal(check.p95Equal, 0); // reported, not checked
  });

  test("averages within 1e-9 relative agree; counts must be equal", () => {
    crossCheck(fromVigil(vigilAnswer(1000, 30)), fromVm(vmAnswer(1000 * (1 + 1e-12), 30)));
    assert.throws(() => crossCheck(fromVigil(vigilAnswer(1000, 30)), fromVm(vmAnswer(1000.001, 30))), /avg/);
    assert.throws(() => crossCheck(fromVigil(vigilAnswer(3.25, 30)), fromVm(vmAnswer(3.25, 29))), /count/);
  });

  test("a bucket only one system answers is a difference", () => {
    assert.throws(() => crossCheck(fromVigil(vigilAnswer(3.25, 30)), new Map()), /vigil's answer only/);
    assert.throws(() => crossCheck(new Map(), fromVm(vmAnswer(3.25, 30))), /VictoriaMetrics' answer only/);
  });
});
