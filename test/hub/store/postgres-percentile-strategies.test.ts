/**
 * The PostgreSQL store's ways of running one metric query (postgres-metrics.ts) give the same
 * exact answers: the two percentile strategies, `hash` (each group's values kept by a hash
 * aggregate, the k-th picked by a bounded top-N sort from the nearer end) and `sort` (ordered
 * `array_agg`, for queries too large to keep every group's values at once); first/last from the
 * kept values and times (`arrays`) or sample by sample (`rows`); series found by array index
 * (`array`, with and without ids no group takes) or by a join; and a query split at a bucket
 * boundary into two statements run at once. Checked on the nearest rank of every n from 1
 * to 100 for percentiles whose rank is easy to get wrong in binary floating point, and on random
 * data (times with ties around DST changes — the split lands next to them —, zones, bucket sizes,
 * groupings, time windows). The store's default path is checked against the DESIGN 5.3 reference
 * by metric-query-reference.test.ts.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import postgres from "postgres";
import { MAX_SEGMENT_SCANS } from "../../../src/hub/store/core/bucket-grid.js";
import { fixedZoneOffsets } from "../../../src/hub/store/core/zone-offsets.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import {
  type PgMetricQueryOptions,
  queryPgMetrics,
} from "../../../src/hub/store/postgres/postgres-metrics.js";
import { buildPgMetricQuery } from "../../../src/hub/store/postgres/postgres-metrics-sql.js";
import { listPartitions } from "../../../src/hub/store/postgres/postgres-partitions.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import type {
  BucketSpec,
  EntityKey,
  GroupKey,
  MetricQueryPlan,
  MetricQueryRow,
  SampleInput,
  TimeWindow,
} from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
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
const SELECTOR = { sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" } as const;

/** Nearest rank ⌈p·n⌉ (at least 1) of the sorted values, computed on the decimal p. */
function nearestRank(sorted: readonly number[], p: string): number | undefined {
  const [whole = "0", fraction = ""] = p.split(".");
  const numerator = BigInt(whole + fraction);
  const denominator = 10n ** BigInt(fraction.length);
  const k = (numerator * BigInt(sorted.length) + denominator - 1n) / denominator;
  return sorted[Math.max(1, Number(k)) - 1];
}

const reachable = await postgresReachable();
let db: PgTestDatabase | undefined;

async function withStore(
  body: (store: Awaited<ReturnType<typeof createPostgresStore>>, sql: postgres.Sql) => Promise<void>,
): Promise<void> {
  db ??= await PgTestDatabase.create("pct");
  const url = await db.freshUrl();
  const store = await createPostgresStore({ url });
  const sql = postgres(url, { max: 2, onnotice: () => undefined });
  try {
    await store.migrate();
    await body(store, sql);
  } finally {
    await sql.end();
    await store.close();
  }
}

/**
 * Answers with sums, means, variances and deviations rounded: the strategies (and the two halves of
 * a split query) add in other orders. A result within 1e-9 of zero counts as zero: adding a tiny
 * value before or after terms that cancel (8e-323 + -3 + 2 + 1 against -3 + 2 + 1 + 8e-323) gives
 * either, both right in floating point.
 */
function comparable(rows: readonly MetricQueryRow[]): unknown[] {
  const rounded = (v: number): number => (Math.abs(v) < 1e-9 ? 0 : Number(v.toPrecision(10)));
  // −0 and 0 compare equal, so where they tie (a percentile, min, max, first or last) either may
  // be answered, by rows or by compacted chunks alike; the answer's JSON writes both as 0.
  const zero = (v: number | null): number | null => (v === 0 ? 0 : v);
  return rows.map((r) => ({
    ...r,
    values: Object.fromEntries(
      Object.entries(r.values).map(([k, v]) => [
        k,
        v !== null && /^svc\.(sum|avg|var|stddev)$/.test(k) ? rounded(v) : zero(v),
      ]),
    ),
  }));
}

describe("PostgreSQL metric query strategies", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  after(() => db?.drop());

  for (const strategy of ["hash", "sort"] as const) {
    it(`(${strategy}) percentiles take the exact nearest rank of every n from 1 to 100`, async () => {
      await withStore(async (store, sql) => {
        // Entity n holds the values 1…n at n distinct seconds, in shuffled order.
        const keys = Array.from(
          { length: 100 },
          (_, i): EntityKey => ({ gateway: "gw", probe: "ranks", managedEntity: `n${i + 1}` }),
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
        const plan: MetricQueryPlan = {
          entities,
          from: asEpochMs(Date.UTC(2024, 4, 1)),
          to: asEpochMs(Date.UTC(2024, 4, 2)),
          zone: "UTC",
          bucket: { kind: "day" },
          metrics: [{ identifier: "m", include: [{ ...SELECTOR, row: "r1" }] }],
          aggregations: RANK_PERCENTILES.map((p) => ({ label: p, name: "svc.percentile", p })),
          grouping: ["entity"],
          timeWindows: [],
        };
        const rows = await queryPgMetrics(sql, plan, [...(await listPartitions(sql))], {
          percentiles: strategy,
        });
        const sizeOf = new Map(entities.map((e) => [e.id as number, Number(e.attributes.n)]));
        assert.equal(rows.length, 100);
        const wrong: string[] = [];
        for (const row of rows) {
          const n = sizeOf.get(Number(row.group.entity)) ?? 0;
          const sorted = Array.from({ length: n }, (_, i) => i + 1);
          for (const p of RANK_PERCENTILES) {
            if (row.values[p] !== nearestRank(sorted, p)) wrong.push(`p ${p} of ${n}: ${row.values[p]}`);
          }
        }
        assert.deepEqual(wrong, []);
      });
    });
  }

  it("a series made after the lookup was sized (its id past the array) is in no group of the answer", async () => {
    await withStore(async (store, sql) => {
      const at = Date.UTC(2024, 4, 1);
      const sample = (row: string, value: number): SampleInput => ({
        entity: { gateway: "gw", probe: "p", managedEntity: "e" },
        series: { sampler: "cpu", samplerType: "linux", dataview: "cpu", row, column: "util" },
        at: asEpochMs(at),
        text: String(value),
        value,
      });
      await store.ingest({ entities: [], samples: [sample("r1", 1), sample("r2", 2)] });
      const plan: MetricQueryPlan = {
        entities: await store.listEntities({ includeDeleted: false }),
        from: asEpochMs(at),
        to: asEpochMs(at + HOUR),
        zone: "UTC",
        bucket: { kind: "minutes", minutes: 60 },
        metrics: [{ identifier: "m", include: [SELECTOR] }],
        aggregations: [{ label: "n", name: "svc.count" }],
        grouping: ["rowname"],
        timeWindows: [],
      };
      const [first] = await sql<{ id: number }[]>`SELECT min(id) AS id FROM series`;
      const id = Number(first?.id);
      // The array covers r1 alone, as if r2 were made between sizing the lookup and the scan.
      const statement = buildPgMetricQuery(plan, [{ from: plan.from, to: plan.to }], [fixedZoneOffsets(0)], {
        percentiles: "hash",
        firstLast: "arrays",
        lookup: { minId: id, maxId: id, complete: true, wholeTable: true },
      });
      const rows = await sql.unsafe(statement.text, statement.params as never[]);
      assert.deepEqual(
        rows.map((r) => [r.row_name, Number(r.a0)]),
        [["r1", 1]],
      );
    });
  });

  it(`a range of more than ${MAX_SEGMENT_SCANS} offset segments (scans choosing a segment per sample) matches the DuckDB store`, async () => {
    // Samples next to every London change from 2015 to 2025, each week a partition of its own:
    // about 44 stretches with their segments, so scans take several segments each.
    const samples: SampleInput[] = [];
    for (let year = 2015; year <= 2025; year++) {
      for (const change of [Date.UTC(year, 2, 31, 1), Date.UTC(year, 9, 31, 1)]) {
        // The last Sunday of March / October at 01:00 UTC.
        const sunday = change - new Date(change).getUTCDay() * DAY;
        for (const [i, minutes] of [-90, -30, -1, 0, 30, 59, 60, 90, 24 * 60].entries()) {
          const value = ((year * 7 + i * 13) % 11) - 5;
          samples.push({
            entity: { gateway: "gw", probe: "p", managedEntity: "e" },
            series: {
              sampler: "cpu",
              samplerType: "linux",
              dataview: "cpu",
              row: `r${i % 2}`,
              column: "util",
            },
            at: asEpochMs(sunday + minutes * MINUTE),
            text: String(value),
            value,
          });
        }
      }
    }
    const duck = await createDuckDbStore({ path: ":memory:" });
    try {
      await duck.migrate();
      await duck.ingest({ entities: [], samples });
      await withStore(async (store, sql) => {
        await store.ingest({ entities: [], samples });
        assert.ok((await listPartitions(sql)).size > 2 * MAX_SEGMENT_SCANS);
        for (const bucket of [
          { kind: "minutes", minutes: 60 },
          { kind: "day" },
          { kind: "month" },
        ] as const) {
          const plan = async (s: typeof duck): Promise<MetricQueryPlan> => ({
            entities: await s.listEntities({ includeDeleted: false }),
            from: asEpochMs(Date.UTC(2014, 11, 1)),
            to: asEpochMs(Date.UTC(2026, 0, 1)),
            zone: "Europe/London",
            bucket,
            metrics: [{ identifier: "m", include: [SELECTOR] }],
            aggregations: [
              ...(["svc.count", "svc.sum", "svc.min", "svc.max", "svc.avg"] as const).map((name) => ({
                label: name,
                name,
              })),
              ...(["svc.var", "svc.stddev", "svc.first", "svc.last"] as const).map((name) => ({
                label: name,
                name,
              })),
              { label: "p50", name: "svc.percentile", p: "0.5" },
            ],
            grouping: ["rowname"],
            timeWindows: [],
          });
          const expected = await duck.queryMetrics(await plan(duck));
          const actual = await store.queryMetrics(await plan(store));
          assert.equal(
            expected.reduce((n, r) => n + (r.values["svc.count"] ?? 0), 0),
            samples.length,
          );
          assert.deepEqual(comparable(actual), comparable(expected), `${bucket.kind} buckets`);
        }
      });
    } finally {
      await duck.close();
    }
  });

  it("property: both strategies, and a split query, give the same answers on random data", async (t) => {
    const BUCKETS: readonly BucketSpec[] = [
      { kind: "minutes", minutes: 1 },
      { kind: "minutes", minutes: 15 },
      { kind: "minutes", minutes: 90 },
      { kind: "day" },
      { kind: "week" },
      { kind: "month" },
      { kind: "count", count: 7 },
      { kind: "count", count: 500 },
    ];
    const GROUPINGS: readonly GroupKey[][] = [[], ["rowname"], ["entity"], [{ attribute: "dc" }, "rowname"]];
    // Series in two groups (looked up by a join whatever is asked), in one group each (by array
    // index), and in one group each with ids between them that no group takes (rows r2).
    const METRICS = {
      overlapping: [
        { identifier: "all", include: [SELECTOR] },
        { identifier: "r1", include: [{ ...SELECTOR, row: "r1" }] },
      ],
      all: [{ identifier: "all", include: [SELECTOR] }],
      gaps: [
        {
          identifier: "all",
          include: [
            { ...SELECTOR, row: "r1" },
            { ...SELECTOR, row: "r3" },
          ],
        },
      ],
    } satisfies Record<string, MetricQueryPlan["metrics"]>;
    const arbitraryCase = fc.record({
      // Around London's autumn change (a repeated hour) and Lord Howe's half-hour change.
      base: fc.constantFrom(Date.parse("2024-10-27T01:00:00Z"), Date.parse("2024-04-06T15:00:00Z")),
      zone: fc.constantFrom("Europe/London", "Australia/Lord_Howe", "UTC", "+05:30"),
      times: fc.array(fc.integer({ min: -2 * 24 * 60, max: 2 * 24 * 60 }), { minLength: 1, maxLength: 6 }),
      samples: fc.array(
        fc.record({
          time: fc.nat(),
          entity: fc.constantFrom("e1", "e2"),
          row: fc.constantFrom("r1", "r2", "r3"),
          value: fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })),
        }),
        { minLength: 1, maxLength: 60 },
      ),
      bucket: fc.constantFrom(...BUCKETS),
      grouping: fc.constantFrom(...GROUPINGS),
      metrics: fc.constantFrom(...(Object.keys(METRICS) as (keyof typeof METRICS)[])),
      ps: fc.subarray(RANK_PERCENTILES, { minLength: 1, maxLength: 3 }),
      windows: fc.oneof(
        fc.constant<TimeWindow[]>([]),
        fc
          .record({
            fromSecond: fc.integer({ min: 0, max: 23 }).map((h) => h * 3600),
            toSecond: fc.integer({ min: 0, max: 23 }).map((h) => h * 3600),
          })
          .map((w): TimeWindow[] => [w]),
      ),
    });
    await withStore(async (store, sql) => {
      let cases = 0;
      await fc.assert(
        fc.asyncProperty(arbitraryCase, async (c) => {
          cases += 1;
          const probe = `case${cases}`;
          const key = (entity: string): EntityKey => ({ gateway: "gw", probe, managedEntity: entity });
          const seen = new Set<string>();
          const samples = c.samples
            .map((s) => ({ ...s, at: c.base + (c.times[s.time % c.times.length] ?? 0) * MINUTE }))
            .filter(
              (s) => !seen.has(`${s.entity} ${s.row} ${s.at}`) && seen.add(`${s.entity} ${s.row} ${s.at}`),
            );
          await store.ingest({
            entities: ["e1", "e2"].map((e) => ({
              key: key(e),
              attributes: e === "e1" ? { dc: "north", case: probe } : { case: probe },
              deleted: false,
              at: asEpochMs(0),
            })),
            samples: samples.map(
              (s): SampleInput => ({
                entity: key(s.entity),
                series: { sampler: "cpu", samplerType: "linux", dataview: "cpu", row: s.row, column: "util" },
                at: asEpochMs(s.at),
                text: String(s.value),
                value: s.value,
              }),
            ),
          });
          const entities = (await store.listEntities({ includeDeleted: false })).filter(
            (e) => e.attributes.case === probe,
          );
          const plan: MetricQueryPlan = {
            entities,
            from: asEpochMs(c.base - 3 * DAY),
            to: asEpochMs(c.base + 3 * DAY + HOUR),
            zone: c.zone,
            bucket: c.bucket,
            metrics: METRICS[c.metrics],
            aggregations: [
              ...(["svc.count", "svc.sum", "svc.min", "svc.max", "svc.avg"] as const).map((name) => ({
                label: name,
                name,
              })),
              ...(["svc.var", "svc.stddev", "svc.first", "svc.last"] as const).map((name) => ({
                label: name,
                name,
              })),
              ...c.ps.map((p) => ({ label: `p${p}`, name: "svc.percentile" as const, p })),
            ],
            grouping: c.grouping,
            timeWindows: c.windows,
          };
          const weeks = [...(await listPartitions(sql))];
          const run = (options: PgMetricQueryOptions): Promise<MetricQueryRow[]> =>
            queryPgMetrics(sql, plan, weeks, { splitMinSamples: Infinity, ...options });
          const hashed = await run({ percentiles: "hash", firstLast: "rows", lookup: "join" });
          const kept = await run({ percentiles: "hash", firstLast: "arrays", lookup: "array" });
          const sorted = await run({ percentiles: "sort", lookup: "array" });
          const split = await run({ splitMinSamples: 0 });
          assert.deepEqual(comparable(kept), comparable(hashed));
          assert.deepEqual(comparable(sorted), comparable(hashed));
          assert.deepEqual(comparable(split), comparable(hashed));
          if (c.windows.length === 0) {
            // Every sample is in the range: the strategies agree on a complete answer.
            const counted = hashed
              .filter((r) => r.identifier === "all")
              .reduce((n, r) => n + (r.values["svc.count"] ?? 0), 0);
            assert.equal(counted, samples.filter((s) => c.metrics !== "gaps" || s.row !== "r2").length);
          }
        }),
        { numRuns: 25 },
      );
      t.diagnostic(`${cases} random cases compared`);
    });
  });
});
