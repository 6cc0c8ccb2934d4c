/**
 * Property: each store's metric query gives the answer of a plain reference written
 * here in JavaScript, straight from DESIGN 5.3 and independent of the stores' SQL, on random small
 * sample sets, random zones (DST changes of whole hours, half hours and 45-minute offsets, fixed
 * offsets, no change at all), random ranges, bucket sizes (one minute to a month, and `count`
 * equal parts of the range), time windows and percentiles, with ties in time and value made
 * likely. The reference finds a sample's bucket as the latest boundary at or before it: an instant
 * whose local time (Intl's offsets) is on the bucket grid, or the end of a skipped gap that
 * swallowed a grid point (for `count`, the part of the range by exact rational bounds). Counts,
 * min, max, first, last and percentiles must be exact; sums, means, variances and deviations equal
 * up to rounding. DuckDB always runs; PostgreSQL when reachable. Each store runs on a time budget.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import type {
  Aggregation,
  BucketSpec,
  EntityKey,
  MetricQueryPlan,
  MetricQueryRow,
  SampleInput,
  Store,
  TimeWindow,
} from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const BUDGET_MS = 6_000; // per store: fast-check stops starting new runs after this
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Instants next to offset changes (and one far from any), each with zones that change there. */
const CASES: readonly { readonly at: string; readonly zones: readonly string[] }[] = [
  { at: "2024-03-31T01:00:00Z", zones: ["Europe/London"] }, // spring: 01:00 GMT → 02:00 BST
  { at: "2024-10-27T01:00:00Z", zones: ["Europe/London"] }, // autumn: 02:00 BST → 01:00 GMT
  { at: "2024-04-06T15:00:00Z", zones: ["Australia/Lord_Howe"] }, // +11:00 → +10:30
  { at: "2024-10-05T15:30:00Z", zones: ["Australia/Lord_Howe"] }, // +10:30 → +11:00
  { at: "2024-04-06T14:00:00Z", zones: ["Pacific/Chatham"] }, // +13:45 → +12:45
  { at: "2024-09-08T04:00:00Z", zones: ["America/Santiago"] }, // midnight skipped
  { at: "2024-03-10T05:30:00Z", zones: ["America/St_Johns"] }, // -03:30 → -02:30
  // Samples on both sides of the epoch (negative instants: floor division, not truncation).
  { at: "1970-01-01T00:00:00Z", zones: ["UTC", "Europe/London", "+05:30", "-03:30", "America/New_York"] },
  {
    at: "2026-01-14T12:00:00Z",
    zones: ["UTC", "Europe/London", "Asia/Kolkata", "Asia/Calcutta", "+05:30", "-03:30", "+05:45"],
  },
];
const BUCKETS: readonly BucketSpec[] = [
  ...[1, 5, 15, 30, 45, 60, 90, 120, 180, 360, 720].map(
    (minutes): BucketSpec => ({ kind: "minutes", minutes }),
  ),
  { kind: "day" },
  { kind: "week" },
  { kind: "month" },
  // Equal parts of the range (not zone-aligned); ranges are whole hours, so 7 and 99 991 parts
  // are not whole milliseconds wide.
  ...[1, 7, 60, 1000, 99_991].map((count): BucketSpec => ({ kind: "count", count })),
];
const PERCENTILES = ["0", "0.07", "0.55", "0.56", "0.28", "0.5", "0.95", "1", "0.333", "0.001", "0.9999"];
/**
 * Every p of at most three decimals whose rank ⌈p·n⌉ for some n ≤ 100 comes out wrong in binary
 * floating point, either as PostgreSQL's percentile_disc computes it (0.07·100 → 8th, 0.28·25)
 * or as DuckDB's quantile_disc does with a DOUBLE p (0.55·100 → 56th, 0.56·25, 0.68·75), and a few more.
 */
const RANK_PERCENTILES = [
  "0",
  "0.001",
  "0.07",
  "0.14",
  "0.28",
  "0.5",
  "0.55",
  "0.56",
  "0.68",
  "0.95",
  "0.999",
  "1",
];
const SIMPLE = [
  "svc.count",
  "svc.sum",
  "svc.min",
  "svc.max",
  "svc.avg",
  "svc.var",
  "svc.stddev",
  "svc.first",
  "svc.last",
] as const;
const APPROXIMATE = new Set(["svc.sum", "svc.avg", "svc.var", "svc.stddev"]);

// ---- the reference ----------------------------------------------------------------------------

const offsetCache = new Map<string, number>();
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset in ms east of UTC at `ms`, from Intl (fixed offsets parsed here). */
function offsetMs(zone: string, ms: number): number {
  const fixed = /^([+-])(\d{2}):(\d{2})$/.exec(zone);
  if (fixed !== null)
    return (fixed[1] === "-" ? -1 : 1) * (Number(fixed[2]) * HOUR + Number(fixed[3]) * MINUTE);
  const key = `${zone} ${ms}`;
  const cached = offsetCache.get(key);
  if (cached !== undefined) return cached;
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    formatters.set(zone, formatter);
  }
  const text = formatter.formatToParts(ms).find((p) => p.type === "timeZoneName")?.value ?? "GMT";
  const m = /^GMT(?:([+-])(\d{2}):(\d{2}))?$/.exec(text);
  if (m === null) throw new Error(`unexpected offset ${text}`);
  const offset =
    m[1] === undefined ? 0 : (m[1] === "-" ? -1 : 1) * (Number(m[2]) * HOUR + Number(m[3]) * MINUTE);
  offsetCache.set(key, offset);
  return offset;
}

/** The latest local grid point at or before the local time `l` (ms since the local epoch). */
function gridFloor(l: number, bucket: BucketSpec): number {
  const floorTo = (x: number, size: number, origin = 0) => Math.floor((x - origin) / size) * size + origin;
  switch (bucket.kind) {
    case "minutes":
      return floorTo(l, bucket.minutes * MINUTE);
    case "day":
      return floorTo(l, DAY);
    case "week":
      return floorTo(l, 7 * DAY, 4 * DAY); // 1970-01-05 was a Monday
    case "month": {
      const d = new Date(l);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    case "count":
      throw new Error("count buckets have no grid");
  }
}

/** The grid point before the grid point `g`. */
function gridPrevious(g: number, bucket: BucketSpec): number {
  switch (bucket.kind) {
    case "minutes":
      return g - bucket.minutes * MINUTE;
    case "day":
      return g - DAY;
    case "week":
      return g - 7 * DAY;
    case "month": {
      const d = new Date(g);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1);
    }
    case "count":
      throw new Error("count buckets have no grid");
  }
}

/** The instants in (t - lookback, t] where the offset changes, each to the millisecond. */
function transitions(zone: string, t: number, lookback: number): number[] {
  const out: number[] = [];
  // Hours aligned to the epoch, so that samples share the cached offsets.
  for (let h = Math.floor((t - lookback) / HOUR) * HOUR; h < t; h += HOUR) {
    const end = Math.min(h + HOUR, t);
    if (end <= h) continue;
    if (offsetMs(zone, h) === offsetMs(zone, end)) continue;
    let lo = h; // old offset at lo, new at hi
    let hi = end;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetMs(zone, mid) === offsetMs(zone, lo)) lo = mid;
      else hi = mid;
    }
    if (hi > t - lookback) out.push(hi);
  }
  return out;
}

/**
 * DESIGN 5.3: the bucket of the instant `t` starts at the latest boundary ≤ t. Boundaries: every
 * instant x whose local time x + offset(x) is a grid point, and every transition whose skipped
 * local gap contains a grid point (the grid point moves to the end of the gap).
 */
function bucketStart(zone: string, bucket: BucketSpec, t: number): number {
  const lookback = (bucket.kind === "minutes" ? bucket.minutes * MINUTE : 32 * DAY) + 2 * DAY;
  const changes = transitions(zone, t, lookback);
  const offsets = new Set([offsetMs(zone, t), ...changes.map((p) => offsetMs(zone, p - 1))]);
  let best = Number.NEGATIVE_INFINITY;
  for (const o of offsets) {
    let g = gridFloor(t + o, bucket);
    for (let step = 0; step < 400; step++, g = gridPrevious(g, bucket)) {
      const x = g - o;
      if (x <= t && offsetMs(zone, x) === o) {
        best = Math.max(best, x);
        break;
      }
    }
  }
  for (const p of changes) {
    const before = offsetMs(zone, p - 1);
    const afterOffset = offsetMs(zone, p);
    if (afterOffset > before && gridFloor(p + afterOffset - 1, bucket) >= p + before)
      best = Math.max(best, p);
  }
  assert.ok(Number.isFinite(best), `no boundary before ${new Date(t).toISOString()} in ${zone}`);
  return best;
}

function inWindows(zone: string, t: number, windows: readonly TimeWindow[]): boolean {
  if (windows.length === 0) return true;
  const local = t + offsetMs(zone, t);
  const second = Math.floor((((local % DAY) + DAY) % DAY) / 1000);
  const weekday = ((((Math.floor(local / DAY) + 3) % 7) + 7) % 7) + 1; // 1970-01-01 was a Thursday
  return windows.some((w) => {
    const time =
      w.fromSecond === w.toSecond ||
      (w.fromSecond < w.toSecond
        ? second >= w.fromSecond && second < w.toSecond
        : second >= w.fromSecond || second < w.toSecond);
    return time && (w.days === undefined || w.days.includes(weekday));
  });
}

/** Nearest rank on the decimal p: the value at 1-based position max(1, ⌈p·n⌉) of the sorted values. */
function percentile(sorted: readonly number[], p: string): number {
  const [whole = "0", fraction = ""] = p.split(".");
  const numerator = BigInt(whole + fraction);
  const denominator = 10n ** BigInt(fraction.length);
  const n = BigInt(sorted.length);
  const k = (numerator * n + denominator - 1n) / denominator;
  return sorted[Number(k < 1n ? 1n : k) - 1] as number;
}

interface Point {
  readonly at: number;
  readonly value: number;
}

/**
 * DESIGN 5.3 `count`: N equal buckets of [from, to) with exact rational bounds from + i·W/N; the
 * instant t is in bucket i when i·W/N ≤ t − from < (i+1)·W/N, labelled with its first whole
 * millisecond. Found here by walking the exact bounds in BigInt, not by the stores' formula.
 */
function countBucketStart(plan: Pick<MetricQueryPlan, "from" | "to">, count: number, t: number): number {
  const n = BigInt(count);
  const w = BigInt(plan.to - plan.from);
  const d = BigInt(t - plan.from);
  // Bucket i holds d when i·W ≤ d·N < (i+1)·W; start from an estimate and step to the bucket.
  let i = BigInt(Math.floor(((t - plan.from) / (plan.to - plan.from)) * count));
  while (i * w > d * n) i -= 1n;
  while ((i + 1n) * w <= d * n) i += 1n;
  // The first whole millisecond m with m·N ≥ i·W.
  let m = (i * w) / n;
  while (m * n < i * w) m += 1n;
  return plan.from + Number(m);
}

/** Bucket start (ISO) → label → value, for the samples of one query. */
function reference(
  points: readonly Point[],
  plan: Pick<MetricQueryPlan, "from" | "to" | "zone" | "bucket" | "timeWindows">,
  p: string,
): Map<string, Record<string, number>> {
  const buckets = new Map<number, Point[]>();
  for (const point of points) {
    if (point.at < plan.from || point.at >= plan.to || !inWindows(plan.zone, point.at, plan.timeWindows))
      continue;
    const start =
      plan.bucket.kind === "count"
        ? countBucketStart(plan, plan.bucket.count, point.at)
        : bucketStart(plan.zone, plan.bucket, point.at);
    buckets.set(start, [...(buckets.get(start) ?? []), point]);
  }
  const out = new Map<string, Record<string, number>>();
  for (const start of [...buckets.keys()].sort((a, b) => a - b)) {
    const ps = buckets.get(start) as Point[];
    const vs = ps.map((x) => x.value);
    const n = vs.length;
    const mean = vs.reduce((a, b) => a + b, 0) / n;
    const variance = vs.reduce((a, b) => a + (b - mean) ** 2, 0) / n;
    const byTime = [...ps].sort((a, b) => a.at - b.at || a.value - b.value);
    out.set(new Date(start).toISOString(), {
      "svc.count": n,
      "svc.sum": vs.reduce((a, b) => a + b, 0),
      "svc.min": Math.min(...vs),
      "svc.max": Math.max(...vs),
      "svc.avg": mean,
      "svc.var": variance,
      "svc.stddev": Math.sqrt(variance),
      "svc.first": (byTime[0] as Point).value,
      "svc.last": (byTime[byTime.length - 1] as Point).value,
      [`svc.percentile(${p})`]: percentile(
        [...vs].sort((a, b) => a - b),
        p,
      ),
    });
  }
  return out;
}

// ---- the property -----------------------------------------------------------------------------

const arbitraryCase = fc
  .record({
    place: fc.constantFrom(...CASES),
    zoneIndex: fc.nat(),
    // A few instants that samples share (ties in time), within ±3 days of the place.
    times: fc.array(
      fc.oneof(
        fc.integer({ min: -3 * 24 * 60, max: 3 * 24 * 60 }).map((m) => m * MINUTE),
        fc.integer({ min: -3 * DAY, max: 3 * DAY }),
      ),
      { minLength: 1, maxLength: 8 },
    ),
    samples: fc.array(
      fc.record({
        time: fc.nat(),
        row: fc.constantFrom("r1", "r2", "r3", "r4"),
        value: fc.oneof(
          fc.integer({ min: -5, max: 5 }), // ties in value
          fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }).map((v) => v + 0),
        ),
      }),
      { minLength: 1, maxLength: 40 },
    ),
    from: fc.integer({ min: -4 * 24, max: 24 }).map((h) => h * HOUR),
    length: fc.integer({ min: 1, max: 6 * 24 }).map((h) => h * HOUR),
    bucket: fc.constantFrom(...BUCKETS),
    p: fc.constantFrom(...PERCENTILES),
    windows: fc.oneof(
      { weight: 3, arbitrary: fc.constant<TimeWindow[]>([]) },
      fc
        .record({
          fromSecond: fc.integer({ min: 0, max: 95 }).map((q) => q * 900),
          toSecond: fc.integer({ min: 0, max: 95 }).map((q) => q * 900),
          days: fc.option(fc.subarray([1, 2, 3, 4, 5, 6, 7], { minLength: 1 }), { nil: undefined }),
        })
        .map(({ days, ...w }): TimeWindow[] => [days === undefined ? w : { ...w, days }]),
    ),
  })
  .map((c) => {
    const base = Date.parse(c.place.at);
    const zone = c.place.zones[c.zoneIndex % c.place.zones.length] as string;
    // Samples on distinct series at a shared time: a series holds one sample per instant.
    const seen = new Set<string>();
    const samples = c.samples
      .map((s) => ({ ...s, at: base + (c.times[s.time % c.times.length] as number) }))
      .filter((s) => !seen.has(`${s.row} ${s.at}`) && seen.add(`${s.row} ${s.at}`) !== undefined);
    return { ...c, zone, base, samples };
  });

/** A sample of column `util` of `row` (dataview cpu/cpu) of `entity`, its text the number's. */
function utilSample(entity: EntityKey, row: string, at: number, value: number): SampleInput {
  return {
    entity,
    series: { sampler: "cpu", samplerType: "linux", dataview: "cpu", row, column: "util" },
    at: asEpochMs(at),
    text: String(value),
    value,
  };
}

/** The rows of metric `m` (every row's `util`) over [from, to) in UTC buckets of `minutes`. */
async function utilRows(
  store: Store,
  range: { readonly from: number; readonly to: number; readonly minutes: number },
  aggregations: readonly Aggregation[],
  grouping: MetricQueryPlan["grouping"],
): Promise<MetricQueryRow[]> {
  return store.queryMetrics({
    entities: await store.listEntities({ includeDeleted: false }),
    from: asEpochMs(range.from),
    to: asEpochMs(range.to),
    zone: "UTC",
    bucket: { kind: "minutes", minutes: range.minutes },
    metrics: [
      {
        identifier: "m",
        include: [{ sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" }],
      },
    ],
    aggregations,
    grouping,
    timeWindows: [],
  });
}

const stores: { name: string; open: () => Promise<{ store: Store; close: () => Promise<void> }> }[] = [
  {
    name: "duckdb",
    open: async () => {
      const store = await createDuckDbStore({ path: ":memory:" });
      return { store, close: () => store.close() };
    },
  },
  {
    // Every query in as many statements as it has bucket boundaries (up to QUERY_PARTS_MAX):
    // around DST changes, count buckets and time windows alike.
    name: "duckdb in parts",
    open: async () => {
      const store = await createDuckDbStore({ path: ":memory:", queryPartSamples: 0 });
      return { store, close: () => store.close() };
    },
  },
];
const reachable = await postgresReachable();
let db: PgTestDatabase | undefined;
if (reachable) {
  stores.push({
    name: "postgres",
    open: async () => {
      db ??= await PgTestDatabase.create("reference");
      const store = await createPostgresStore({ url: await db.freshUrl() });
      return { store, close: () => store.close() };
    },
  });
}

describe("metric query against a reference written from DESIGN 5.3", () => {
  after(() => db?.drop());
  if (!reachable) it("postgres", { skip: needs(PG_SKIP) }, () => undefined);

  it("(duckdb in parts of 40 samples) a first part that sorts, then parts keeping a few values a group: exact percentiles", async () => {
    const store = await createDuckDbStore({ path: ":memory:", queryPartSamples: 40 });
    try {
      await store.migrate();
      const entity: EntityKey = { gateway: "gw", probe: "edge", managedEntity: "probe-part" };
      const at = Date.UTC(2024, 4, 1);
      // 30 one-minute buckets of 3 to 40 values each, in two rows: about 700 samples, so about 18
      // parts; bucket 20 holds far more values than those before it.
      const minutes = Array.from({ length: 30 }, (_, m) =>
        Array.from(
          { length: m === 20 ? 40 : 3 + ((m * 7) % 11) },
          (_, i) => ((i * 13 + m * 5) % 17) - 8 + m / 4,
        ),
      );
      await store.ingest({
        entities: [],
        samples: minutes.flatMap((values, minute) =>
          values.flatMap((value, i) =>
            ["a", "b"].map(
              (row): SampleInput =>
                utilSample(entity, row, at + minute * 60_000 + i * 1000, row === "a" ? value : 0 - value),
            ),
          ),
        ),
      });
      const ps = ["0.95", "0.1", "0.5", "0.75"];
      const rows = await utilRows(
        store,
        { from: at, to: at + 30 * 60_000, minutes: 1 },
        ps.map((p) => ({ label: p, name: "svc.percentile" as const, p })),
        ["rowname"],
      );
      const expected = minutes.flatMap((values) =>
        ["a", "b"].map((row) => {
          const sorted = values.map((v) => (row === "a" ? v : 0 - v)).sort((x, y) => x - y);
          return Object.fromEntries(ps.map((p) => [p, percentile(sorted, p)]));
        }),
      );
      assert.deepEqual(
        rows.map((r) => r.values),
        expected,
      );
    } finally {
      await store.close();
    }
  });

  for (const { name, open } of stores) {
    it(`(${name}) samples near the largest double: null where a result is beyond it, never an error`, async () => {
      const { store, close } = await open();
      try {
        await store.migrate();
        const entity: EntityKey = { gateway: "gw", probe: "edge", managedEntity: "huge" };
        const at = Date.UTC(2024, 4, 1);
        const groups: Record<string, number[]> = {
          r1: [1e200, -1e200], // variance 1e400
          r2: [1e308, 1e308], // sum 2e308
          r3: [1.5, 2.5, 5e-324], // ordinary, a subnormal among them
          r4: [1e300, 1e-300], // variance 2.5e599, a tiny sample beside a huge one
        };
        await store.ingest({
          entities: [],
          samples: Object.entries(groups).flatMap(([row, values]) =>
            values.map((value, i): SampleInput => utilSample(entity, row, at + i * 1000, value)),
          ),
        });
        const rows = await utilRows(
          store,
          { from: at, to: at + 3_600_000, minutes: 60 },
          (["svc.sum", "svc.avg", "svc.var", "svc.stddev"] as const).map((n) => ({
            label: n,
            name: n,
          })),
          ["rowname"],
        );
        const got = Object.fromEntries(rows.map((r) => [r.group.rowname, r.values]));
        assert.deepEqual(got.r1, { "svc.sum": 0, "svc.avg": 0, "svc.var": null, "svc.stddev": 1e200 });
        assert.deepEqual(got.r2, { "svc.sum": null, "svc.avg": 1e308, "svc.var": 0, "svc.stddev": 0 });
        assert.deepEqual(got.r4, {
          "svc.sum": 1e300,
          "svc.avg": 5e299,
          "svc.var": null,
          "svc.stddev": 5e299,
        });
        const r3 = got.r3 ?? {};
        assert.equal(r3["svc.sum"], 4);
        const mean = 4 / 3;
        const variance = ((1.5 - mean) ** 2 + (2.5 - mean) ** 2 + mean ** 2) / 3;
        assert.ok(Math.abs((r3["svc.var"] ?? Number.NaN) - variance) < 1e-12, `variance ${r3["svc.var"]}`);
        assert.ok(Math.abs((r3["svc.stddev"] ?? Number.NaN) - Math.sqrt(variance)) < 1e-12);
      } finally {
        await close();
      }
    });

    it(`(${name}) a variance beyond the largest double in one bucket leaves the buckets around it as they are`, async () => {
      const { store, close } = await open();
      try {
        await store.migrate();
        const entity: EntityKey = { gateway: "gw", probe: "edge", managedEntity: "later" };
        const at = Date.UTC(2024, 4, 1);
        // Minute 0 ordinary, minute 5's variance beyond the largest double (an error the store
        // answers with its bounded forms), minute 9 ordinary again: a store that answers in parts
        // meets the overflow in a later part than the first. Minute 2's sum overflows with no
        // variance beyond range (DuckDB raises nothing there).
        const minutes: [number, number[]][] = [
          [0, [1.5, 2.25]],
          [2, [1.7e308, 1.7e308]],
          [5, [1e200, -1e200]],
          [9, [-4, 0.5, 8]],
        ];
        await store.ingest({
          entities: [],
          samples: minutes.flatMap(([minute, values]) =>
            values.map(
              (value, i): SampleInput => utilSample(entity, "r", at + minute * 60_000 + i * 1000, value),
            ),
          ),
        });
        const rows = await utilRows(
          store,
          { from: at, to: at + 600_000, minutes: 1 },
          (["svc.sum", "svc.count", "svc.max", "svc.var"] as const).map((n) => ({
            label: n,
            name: n,
          })),
          [],
        );
        assert.deepEqual(
          rows.map((r) => [(r.bucket - at) / 60_000, r.values]),
          [
            [0, { "svc.sum": 3.75, "svc.count": 2, "svc.max": 2.25, "svc.var": 0.140625 }],
            [2, { "svc.sum": null, "svc.count": 2, "svc.max": 1.7e308, "svc.var": 0 }],
            [5, { "svc.sum": 0, "svc.count": 2, "svc.max": 1e200, "svc.var": null }],
            [9, { "svc.sum": 4.5, "svc.count": 3, "svc.max": 8, "svc.var": 24.5 }],
          ],
        );
      } finally {
        await close();
      }
    });

    it(`(${name}) percentiles stay exact when a later bucket holds far more values than the first`, async () => {
      const { store, close } = await open();
      try {
        await store.migrate();
        const entity: EntityKey = { gateway: "gw", probe: "edge", managedEntity: "ranks" };
        const at = Date.UTC(2024, 4, 1);
        // 4 values in minute 0, 100 in minute 1, 4 in minute 2 (one per second, shuffled values):
        // a store that answers in parts, keeping a part's few top or bottom values because the
        // part before needed no more, must take minute 1 from all of them.
        const counts = [4, 100, 4];
        const minutes = counts.map((n, minute) =>
          Array.from({ length: n }, (_, i) => ((i * 37 + minute * 11) % n) * 1.5 - n / 3),
        );
        await store.ingest({
          entities: [],
          samples: minutes.flatMap((values, minute) =>
            values.map(
              (value, i): SampleInput =>
                utilSample(
                  entity,
                  "r",
                  at + minute * 60_000 + Math.floor((i * 60_000) / values.length),
                  value,
                ),
            ),
          ),
        });
        const ps = ["0.95", "0.1", "0.5", "0.999"];
        const rows = await utilRows(
          store,
          { from: at, to: at + 180_000, minutes: 1 },
          ps.map((p) => ({ label: p, name: "svc.percentile" as const, p })),
          [],
        );
        assert.deepEqual(
          rows.map((r) => r.values),
          minutes.map((values) => {
            const sorted = [...values].sort((a, b) => a - b);
            return Object.fromEntries(ps.map((p) => [p, percentile(sorted, p)]));
          }),
        );
      } finally {
        await close();
      }
    });

    it(`(${name}) percentiles take the exact nearest rank of every n from 1 to 100`, async () => {
      const { store, close } = await open();
      try {
        await store.migrate();
        // Entity n holds the values 1…n at n distinct seconds, in shuffled order.
        const keys = Array.from(
          { length: 100 },
          (_, i): EntityKey => ({
            gateway: "gw",
            probe: "ranks",
            managedEntity: `n${i + 1}`,
          }),
        );
        await store.ingest({
          entities: keys.map((key, i) => ({
            key,
            attributes: { n: String(i + 1) },
            deleted: false,
            at: asEpochMs(0),
          })),
          samples: keys.flatMap((entity, i) =>
            Array.from({ length: i + 1 }, (_, j): SampleInput => {
              const value = ((j * 101) % (i + 1)) + 1; // 101 is prime: a permutation of 1…n
              return {
                entity,
                series: { sampler: "cpu", samplerType: "linux", dataview: "cpu", row: "r1", column: "util" },
                at: asEpochMs(Date.UTC(2024, 4, 1) + j * 1000),
                text: String(value),
                value,
              };
            }),
          ),
        });
        const entities = await store.listEntities({ includeDeleted: false });
        const rows = await store.queryMetrics({
          entities,
          from: asEpochMs(Date.UTC(2024, 4, 1)),
          to: asEpochMs(Date.UTC(2024, 4, 2)),
          zone: "UTC",
          bucket: { kind: "day" },
          metrics: [
            {
              identifier: "m",
              include: [{ sampler: "cpu", samplerType: null, dataview: "cpu", row: "r1", column: "util" }],
            },
          ],
          aggregations: RANK_PERCENTILES.map((p) => ({ label: p, name: "svc.percentile", p })),
          grouping: ["entity"],
          timeWindows: [],
        });
        const sizeOf = new Map(entities.map((e) => [e.id as number, Number(e.attributes.n)]));
        assert.equal(rows.length, 100);
        const wrong: string[] = [];
        for (const row of rows) {
          const n = sizeOf.get(Number(row.group.entity)) ?? 0;
          const sorted = Array.from({ length: n }, (_, i) => i + 1);
          for (const p of RANK_PERCENTILES) {
            if (row.values[p] !== percentile(sorted, p)) wrong.push(`p ${p} of ${n}: ${row.values[p]}`);
          }
        }
        assert.deepEqual(wrong, []);
      } finally {
        await close();
      }
    });

    it(`property (${name}): buckets and all ten aggregations equal the reference`, async (t) => {
      const { store, close } = await open();
      await store.migrate();
      let run = 0;
      try {
        await fc.assert(
          fc.asyncProperty(arbitraryCase, async (c) => {
            run += 1;
            const entity: EntityKey = { gateway: "gw", probe: "reference", managedEntity: `e${run}` };
            await store.ingest({
              entities: [{ key: entity, attributes: { run: String(run) }, deleted: false, at: asEpochMs(0) }],
              samples: c.samples.map(
                (s): SampleInput => ({
                  entity,
                  series: {
                    sampler: "cpu",
                    samplerType: "linux",
                    dataview: "cpu",
                    row: s.row,
                    column: "util",
                  },
                  at: asEpochMs(s.at),
                  text: String(s.value),
                  value: s.value,
                }),
              ),
            });
            const plan: MetricQueryPlan = {
              entities: (await store.listEntities({ includeDeleted: false })).filter(
                (e) => e.attributes.run === String(run),
              ),
              from: asEpochMs(c.base + c.from),
              to: asEpochMs(c.base + c.from + c.length),
              zone: c.zone,
              bucket: c.bucket,
              metrics: [
                {
                  identifier: "m",
                  include: [
                    { sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" },
                  ],
                },
              ],
              aggregations: [
                ...SIMPLE.map((label): Aggregation => ({ label, name: label })),
                { label: `svc.percentile(${c.p})`, name: "svc.percentile", p: c.p },
              ],
              grouping: [],
              timeWindows: c.windows,
            };
            const got = await store.queryMetrics(plan);
            const expected = reference(c.samples, plan, c.p);
            assert.deepEqual(
              got.map((r) => new Date(r.bucket).toISOString()),
              [...expected.keys()],
              "the same buckets",
            );
            const inRange = c.samples.filter((s) => s.at >= plan.from && s.at < plan.to);
            const n = Math.max(1, inRange.length);
            const big = Math.max(1, ...inRange.map((s) => Math.abs(s.value)));
            // Rounding allowance: the stores and the reference add in different orders.
            const tolerance: Record<string, number> = {
              "svc.sum": 1e-9 * big * n,
              "svc.avg": 1e-9 * big * n,
              "svc.var": 1e-9 * big * big * n,
              "svc.stddev": 1e-6 * big * n,
            };
            for (const row of got) {
              const bucket = new Date(row.bucket).toISOString();
              const want = expected.get(bucket) ?? {};
              for (const [label, value] of Object.entries(want)) {
                const have = row.values[label];
                if (APPROXIMATE.has(label)) {
                  const allowed = tolerance[label] ?? 0;
                  assert.ok(
                    Math.abs((have ?? Number.NaN) - value) <= allowed,
                    `${bucket} ${label}: ${have} ≠ ${value}`,
                  );
                } else {
                  assert.equal((have ?? Number.NaN) + 0, value + 0, `${bucket} ${label}`);
                }
              }
            }
          }),
          { interruptAfterTimeLimit: BUDGET_MS, numRuns: 300, seed: 20261123 },
        );
        t.diagnostic(`${run} random cases compared`);
      } finally {
        await close();
      }
    });
  }
});
