/**
 * The `work_mem` of a PostgreSQL metric statement (postgres-metrics.ts `metricWorkMem`): large
 * enough that a hash aggregate keeping arrays (percentiles, first/last) for many groups does not
 * spill to disk on the planner's 8 kB a kept array and group, bounded both ways. Checked with
 * EXPLAIN ANALYZE on a statement of 28 800 groups, which spills at the least `work_mem`.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import postgres from "postgres";
import { fixedZoneOffsets } from "../../../src/hub/store/core/zone-offsets.js";
import { compactSamples } from "../../../src/hub/store/postgres/postgres-compaction.js";
import {
  estimatedGroups,
  METRIC_QUERY_HASH_MEM_MULTIPLIER,
  METRIC_QUERY_WORK_MEM_MAX,
  METRIC_QUERY_WORK_MEM_MIN,
  metricWorkMem,
} from "../../../src/hub/store/postgres/postgres-metrics.js";
import { buildPgMetricQuery } from "../../../src/hub/store/postgres/postgres-metrics-sql.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import type { MetricQueryPlan, SampleInput } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const MINUTE = 60_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 14);
const SELECTOR = { sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" } as const;

function plan(bucket: MetricQueryPlan["bucket"], to: number): MetricQueryPlan {
  return {
    entities: [],
    from: asEpochMs(T0),
    to: asEpochMs(to),
    zone: "UTC",
    bucket,
    metrics: [{ identifier: "m", include: [SELECTOR] }],
    aggregations: [
      { label: "svc.count", name: "svc.count" },
      { label: "svc.first", name: "svc.first" },
      { label: "svc.last", name: "svc.last" },
      { label: "svc.percentile(0.95)", name: "svc.percentile", p: "0.95" },
    ],
    grouping: ["rowname"],
    timeWindows: [],
  };
}

describe("metricWorkMem", () => {
  it("is the least for few groups and the most for very many", () => {
    assert.equal(metricWorkMem(0, 2), METRIC_QUERY_WORK_MEM_MIN);
    assert.equal(metricWorkMem(1_000, 2), METRIC_QUERY_WORK_MEM_MIN);
    assert.equal(metricWorkMem(10_000_000, 1), METRIC_QUERY_WORK_MEM_MAX);
    // Without kept arrays a group is small: 100 000 groups stay at the least.
    assert.equal(metricWorkMem(100_000, 0), METRIC_QUERY_WORK_MEM_MIN);
  });

  it("grows with the groups and the arrays each keeps, in between", () => {
    const one = metricWorkMem(20_000, 1);
    const two = metricWorkMem(20_000, 2);
    assert.ok(one > METRIC_QUERY_WORK_MEM_MIN && two < METRIC_QUERY_WORK_MEM_MAX, `${one} ${two}`);
    assert.ok(two > one);
    // Enough for the planner's 8 kB an array and group at PostgreSQL's hash_mem_multiplier.
    assert.ok(two * METRIC_QUERY_HASH_MEM_MULTIPLIER >= 20_000 * 2 * 8192);
  });
});

describe("estimatedGroups", () => {
  it("is the buckets of each window (two more for its ends) times the pairs, at most the samples", () => {
    const day = plan({ kind: "minutes", minutes: 5 }, T0 + DAY);
    assert.equal(estimatedGroups(day, [{ from: T0, to: T0 + DAY }], 200, 1e9), (288 + 2) * 200);
    assert.equal(estimatedGroups(day, [{ from: T0, to: T0 + DAY }], 200, 5_000), 5_000);
    const halves = [
      { from: T0, to: T0 + DAY / 2 },
      { from: T0 + DAY / 2, to: T0 + DAY },
    ];
    assert.equal(estimatedGroups(day, halves, 10, 1e9), (144 + 2) * 2 * 10);
  });

  it("takes a calendar bucket an hour short and a count bucket as its share of the range", () => {
    const week = { from: T0, to: T0 + 7 * DAY };
    // Days that may skip an hour: 8 (one more for the hour), and the ends.
    assert.equal(estimatedGroups(plan({ kind: "day" }, T0 + 7 * DAY), [week], 1, 1e9), 8 + 2);
    assert.equal(
      estimatedGroups(plan({ kind: "count", count: 70 }, T0 + 7 * DAY), [week], 3, 1e9),
      (70 + 2) * 3,
    );
  });
});

const reachable = await postgresReachable();
let db: PgTestDatabase | undefined;
after(async () => {
  await db?.drop();
});

/** The HashAggregate nodes of an EXPLAIN (ANALYZE, FORMAT JSON) plan. */
function hashAggregates(node: Record<string, unknown>): Record<string, unknown>[] {
  const own = node["Node Type"] === "Aggregate" && node.Strategy === "Hashed" ? [node] : [];
  const children = (node.Plans ?? []) as Record<string, unknown>[];
  return [...own, ...children.flatMap(hashAggregates)];
}

describe("a metric statement of many groups", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  it("keeps its hash aggregate in memory at the work_mem it is given, where the least spills", async () => {
    db ??= await PgTestDatabase.create("workmem");
    const url = await db.freshUrl();
    const store = await createPostgresStore({ url });
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      await store.migrate();
      // 200 rows, a sample a minute for 12 hours: 28 800 groups of five samples in 5-minute buckets,
      // the store-query bench's full aggregation at a fifth of its samples.
      const rows = 200;
      const minutes = 12 * 60;
      const samples: SampleInput[] = [];
      for (let m = 0; m < minutes; m++)
        for (let r = 0; r < rows; r++) {
          const value = (m * 31 + r * 17) % 101;
          samples.push({
            entity: { gateway: "gw", probe: "p", managedEntity: "e" },
            series: { sampler: "cpu", samplerType: "", dataview: "cpu", row: `r${r}`, column: "util" },
            at: asEpochMs(T0 + m * MINUTE),
            text: String(value),
            value,
          });
        }
      await store.ingest({ entities: [], samples });
      // As the store keeps a past day: compacted into chunks, their partitions analyzed; and every
      // other table analyzed now, so that autovacuum does not change the plan between the EXPLAINs.
      await compactSamples(sql, Date.now());
      await sql`ANALYZE`;
      const end = T0 + minutes * MINUTE;
      const q = {
        ...plan({ kind: "minutes", minutes: 5 }, end),
        entities: await store.listEntities({ includeDeleted: false }),
      };
      const windows = [{ from: T0, to: end }];
      // As the store runs it (postgres-metrics.ts `chooseStrategy`): every series of the file
      // matched, found by array index.
      const [ids] = await sql<{ lo: number; hi: number }[]>`SELECT min(id) AS lo, max(id) AS hi FROM series`;
      const statement = buildPgMetricQuery(q, windows, [fixedZoneOffsets(0)], {
        percentiles: "hash",
        firstLast: "arrays",
        lookup: { minId: Number(ids?.lo), maxId: Number(ids?.hi), complete: true, wholeTable: true },
      });
      assert.equal(statement.keptArrays, 2);
      const batches = async (workMem: number): Promise<number[]> =>
        sql.begin(async (tx) => {
          await tx`SELECT set_config('jit', 'off', true), set_config('work_mem', ${`${Math.ceil(workMem / 1024)}kB`}, true),
                          set_config('hash_mem_multiplier', ${String(METRIC_QUERY_HASH_MEM_MULTIPLIER)}, true)`;
          const [row] = await tx.unsafe(
            `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
            statement.params as never[],
          );
          const json = row?.["QUERY PLAN"] as unknown;
          const [top] = (typeof json === "string" ? JSON.parse(json) : json) as {
            Plan: Record<string, unknown>;
          }[];
          const aggregates = hashAggregates(top?.Plan ?? {}).filter(
            (a) => a["Parent Relationship"] !== "InitPlan",
          );
          assert.equal(aggregates.length, 1, "the samples' aggregate is hashed");
          return aggregates.map((a) => Number(a["HashAgg Batches"]));
        });
      const groups = estimatedGroups(q, windows, rows, samples.length);
      assert.equal(groups, (144 + 2) * rows);
      assert.deepEqual(await batches(metricWorkMem(groups, statement.keptArrays)), [1]);
      const [spilled = 0] = await batches(METRIC_QUERY_WORK_MEM_MIN);
      assert.ok(spilled > 1, `at the least work_mem the aggregate ran in ${spilled} batches`);
    } finally {
      await sql.end();
      await store.close();
    }
  });
});
