/**
 * Property: the DuckDB and PostgreSQL stores give the same answer to the same metric
 * query on the same random data, for all ten aggregations, random zones (named, aliased, fixed
 * offsets, DST changes in range), bucket sizes, groupings, percentiles and time windows. Counts,
 * min, max, first, last and percentiles must be equal; sums, means, variances and deviations equal
 * up to rounding (the databases add in different orders). Runs on a time budget.
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
  GroupKey,
  MetricQueryPlan,
  MetricQueryRow,
  SampleInput,
  Store,
  TimeWindow,
} from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const BUDGET_MS = 30_000; // fast-check stops starting new runs after this
/** Around the October 2024 change in Europe/London and the September one in Santiago. */
const BASES = [Date.UTC(2024, 9, 26, 12), Date.UTC(2024, 8, 7, 12), Date.UTC(2024, 4, 1)];
const ZONES = [
  "UTC",
  "Europe/London",
  "America/Santiago",
  "Asia/Kolkata",
  "Asia/Calcutta",
  "+05:30",
  "-03:30",
  "Z",
];
const BUCKETS: BucketSpec[] = [
  ...[1, 5, 15, 45, 60, 90, 180, 720].map((minutes): BucketSpec => ({ kind: "minutes", minutes })),
  { kind: "day" },
  { kind: "week" },
  { kind: "month" },
  { kind: "count", count: 7 },
  { kind: "count", count: 1000 },
];
const PERCENTILES = ["0", "0.07", "0.5", "0.95", "1", "0.333", "0.001"];
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
const EXACT = new Set(["svc.count", "svc.min", "svc.max", "svc.first", "svc.last", "svc.percentile"]);

const reachable = await postgresReachable();

describe("DuckDB and PostgreSQL stores agree", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  let db: PgTestDatabase | undefined;
  after(() => db?.drop());

  it("property: the same answers on random data for all ten aggregations", async (t) => {
    db = await PgTestDatabase.create("agree");
    const duck = await createDuckDbStore({ path: ":memory:" });
    const pg = await createPostgresStore({ url: await db.freshUrl() });
    await duck.migrate();
    await pg.migrate();
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            base: fc.constantFrom(...BASES),
            samples: fc.array(
              fc.record({
                entity: fc.integer({ min: 0, max: 2 }),
                row: fc.constantFrom("r1", "r2", "r3"),
                // Within ±3 days of the base, on whole milliseconds; ties are likely at coarse steps.
                offset: fc.oneof(
                  fc.integer({ min: -3 * 86_400, max: 3 * 86_400 }).map((s) => s * 1000),
                  fc.integer({ min: -3 * 86_400_000, max: 3 * 86_400_000 }),
                ),
                value: fc.oneof(
                  fc.integer({ min: -50, max: 50 }),
                  fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }),
                ),
              }),
              { minLength: 1, maxLength: 60 },
            ),
            zone: fc.constantFrom(...ZONES),
            bucket: fc.constantFrom(...BUCKETS),
            grouping: fc.subarray<GroupKey>(["entity", "rowname", { attribute: "region" }]),
            p: fc.constantFrom(...PERCENTILES),
            windows: fc.oneof(
              fc.constant<TimeWindow[]>([]),
              fc
                .array(
                  fc.record({
                    fromSecond: fc.integer({ min: 0, max: 86_399 }),
                    toSecond: fc.integer({ min: 0, max: 86_399 }),
                    days: fc.option(fc.subarray([1, 2, 3, 4, 5, 6, 7], { minLength: 1 }), { nil: undefined }),
                  }),
                  { minLength: 1, maxLength: 2 },
                )
                .map((ws) =>
                  ws.map(({ days, ...w }): TimeWindow => (days === undefined ? w : { ...w, days })),
                ),
            ),
          }),
          async (c) => {
            run += 1;
            const keys: EntityKey[] = [0, 1, 2].map((e) => ({
              gateway: "gw",
              probe: `run${run}`,
              managedEntity: `e${e}`,
            }));
            const batch = {
              entities: keys.map((key, e) => ({
                key,
                attributes: {
                  "svc.name": key.managedEntity,
                  run: String(run),
                  ...(e === 2 ? {} : { region: `z${e}` }),
                },
                deleted: false,
                at: asEpochMs(0),
              })),
              samples: c.samples.map(
                (s): SampleInput => ({
                  entity: keys[s.entity] as EntityKey,
                  series: {
                    sampler: "cpu",
                    samplerType: "linux",
                    dataview: "cpu",
                    row: s.row,
                    column: "util",
                  },
                  at: asEpochMs(c.base + s.offset),
                  text: String(s.value),
                  value: s.value,
                }),
              ),
            };
            await duck.ingest(batch);
            await pg.ingest(batch);
            const aggregations: Aggregation[] = [
              ...SIMPLE.map((name) => ({ label: name, name })),
              { label: `svc.percentile(${c.p})`, name: "svc.percentile", p: c.p },
            ];
            const ask = async (store: Store): Promise<string[][]> => {
              const entities = (await store.listEntities({ includeDeleted: false })).filter(
                (e) => e.attributes.run === String(run),
              );
              const plan: MetricQueryPlan = {
                entities,
                from: asEpochMs(c.base - 2 * 86_400_000),
                to: asEpochMs(c.base + 2 * 86_400_000),
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
                aggregations,
                grouping: c.grouping,
                timeWindows: c.windows,
              };
              const names = new Map(entities.map((e) => [e.id, e.attributes["svc.name"]]));
              return (await store.queryMetrics(plan)).map((r) => describeRow(r, names));
            };
            // Sorted by key: each store orders entity groups by its own ids (the contract checks order).
            const byKey = (rows: string[][]) => rows.sort((x, y) => ((x[0] ?? "") < (y[0] ?? "") ? -1 : 1));
            const [d, p] = [byKey(await ask(duck)), byKey(await ask(pg))];
            assert.deepEqual(
              p.map((r) => r[0]),
              d.map((r) => r[0]),
              "same buckets and groups",
            );
            d.forEach((row, i) => {
              const other = p[i] as string[];
              row.slice(1).forEach((cell, j) => {
                const [label, a] = cell.split("=");
                const b = (other[j + 1] ?? "").split("=")[1];
                if (EXACT.has((label ?? "").replace(/\(.*/, ""))) assert.equal(b, a, `${row[0]} ${label}`);
                else assert.ok(close(Number(a), Number(b)), `${row[0]} ${label}: duckdb ${a}, postgres ${b}`);
              });
            });
          },
        ),
        { interruptAfterTimeLimit: BUDGET_MS, numRuns: 200, seed: 20241027 },
      );
      t.diagnostic(`${run} random cases compared`);
    } finally {
      await duck.close();
      await pg.close();
    }
  });
});

/** A row as [key, "label=value"…], with entity ids replaced by names (ids differ between stores). */
function describeRow(r: MetricQueryRow, names: ReadonlyMap<number, string | undefined>): string[] {
  const group = Object.entries(r.group).map(([k, v]) => `${k}:${k === "entity" ? names.get(Number(v)) : v}`);
  return [
    `${new Date(r.bucket).toISOString()} ${group.join(",")} ${r.identifier}`,
    ...Object.entries(r.values).map(([k, v]) => `${k}=${v === null ? "null" : v === 0 ? 0 : v}`),
  ];
}

const close = (a: number, b: number): boolean =>
  a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b)) * 100;
