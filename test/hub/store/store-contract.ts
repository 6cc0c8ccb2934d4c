/**
 * The contract every Store implementation passes (DESIGN 5.5, STYLE 2): the DuckDB and PostgreSQL
 * stores, with the same cases. `open` must return a fresh, empty, unmigrated store. The cases
 * assume no more of ids than DESIGN 5.1 gives: stable integers, increasing as entities are made,
 * but not dense (a rolled-back or raced insert in PostgreSQL uses up an id) and not 1, 2, 3…
 * The write cases (claims, transactions, events, limits) are in store-contract-writes.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type {
  Aggregation,
  CellSelector,
  EntityKey,
  EntityUpsert,
  IngestBatch,
  MetricQueryPlan,
  MetricQueryRow,
  SampleInput,
  SeriesKey,
  Store,
} from "../../../src/hub/store/store.js";
import { asEntityId, asEpochMs, type EntityId, type EpochMs } from "../../../src/ids.js";
import { type OpenStore, writeContract } from "./store-contract-writes.js";

const t = (iso: string): EpochMs => asEpochMs(Date.parse(iso));
const iso = (ms: number): string => new Date(ms).toISOString().replace(".000Z", "Z");

const A: EntityKey = { gateway: "gw", probe: "p1", managedEntity: "a" };
const B: EntityKey = { gateway: "gw", probe: "p1", managedEntity: "b" };
const C: EntityKey = { gateway: "gw", probe: "p2", managedEntity: "c" };

const cpu = (row: string, samplerType = "linux", column = "util"): SeriesKey => ({
  sampler: "cpu",
  samplerType,
  dataview: "cpu",
  row,
  column,
});
const sel = (row: string | null, samplerType: string | null = "linux", column = "util"): CellSelector => ({
  sampler: "cpu",
  samplerType,
  dataview: "cpu",
  row,
  column,
});

const up = (
  key: EntityKey,
  attributes: Record<string, string>,
  at: string,
  deleted = false,
): EntityUpsert => ({
  key,
  attributes,
  deleted,
  at: t(at),
});

/** A sample of `series` on `entity`; `value` null makes a text-only sample. */
const s = (at: string, value: number | null, series = cpu("r1"), entity = A): SampleInput => ({
  entity,
  series,
  at: t(at),
  text: value === null ? "n/a" : String(value),
  value,
});

const agg = (name: Aggregation["name"], p?: string): Aggregation =>
  p === undefined ? { label: name, name } : { label: `${name}(${p})`, name, p };

async function withStore<T>(open: () => Promise<Store>, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await open();
  try {
    await store.migrate();
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** The default query: every entity, all of 2024 in UTC, day buckets, one metric over all linux rows, count. */
async function query(store: Store, plan: Partial<MetricQueryPlan>): Promise<MetricQueryRow[]> {
  return store.queryMetrics({
    entities: await store.listEntities({ includeDeleted: false }),
    from: t("2024-01-01T00:00:00Z"),
    to: t("2025-01-01T00:00:00Z"),
    zone: "UTC",
    bucket: { kind: "day" },
    metrics: [{ identifier: "m", include: [sel(null)] }],
    aggregations: [agg("svc.count")],
    grouping: [],
    timeWindows: [],
    ...plan,
  });
}

/** Rows as `bucket group identifier values` lines, numbers rounded to 9 significant digits. */
function lines(rows: readonly MetricQueryRow[]): string[] {
  return rows.map((r) => {
    const values = Object.entries(r.values).map(
      ([k, v]) => `${k}=${v === null ? "null" : Number(v.toPrecision(9))}`,
    );
    return `${iso(r.bucket)} ${JSON.stringify(r.group)} ${r.identifier} ${values.join(" ")}`;
  });
}

/** Entity ids sorted (every entity, deleted ones too): the order in which the store made them. */
async function entityIds(store: Store): Promise<EntityId[]> {
  return byId((await store.listEntities({ includeDeleted: true })).map((e) => e.id));
}
const byId = (ids: Iterable<EntityId>): EntityId[] => [...ids].sort((a, b) => a - b);

/**
 * `counts` lines in the order a store must answer (bucket, then the group keys in grouping order:
 * entity ids as numbers, names by code point, then identifier), so expectations do not depend on
 * the ids a store happened to give.
 */
function sortedLines(lines: readonly string[]): string[] {
  const parse = (line: string) => {
    const [bucket = "", group = "{}", identifier = ""] = line.split(" ");
    return { bucket, group: Object.values(JSON.parse(group) as Record<string, string | number>), identifier };
  };
  const cmp = (a: string | number, b: string | number): number =>
    typeof a === "number" && typeof b === "number" ? a - b : a < b ? -1 : a > b ? 1 : 0;
  return [...lines].sort((x, y) => {
    const a = parse(x);
    const b = parse(y);
    if (a.bucket !== b.bucket) return cmp(a.bucket, b.bucket);
    for (let i = 0; i < a.group.length; i++) {
      const d = cmp(a.group[i] ?? "", b.group[i] ?? "");
      if (d !== 0) return d;
    }
    return cmp(a.identifier, b.identifier);
  });
}

const counts = (rows: readonly MetricQueryRow[]): string[] =>
  rows.map((r) => `${iso(r.bucket)} ${JSON.stringify(r.group)} ${r.identifier} ${r.values["svc.count"]}`);

// Six values at 10:00…10:05 UTC, not in value order: sorted 4 8 15 16 23 42, mean 18, Σ(x−18)² = 910.
const SIX: SampleInput[] = [16, 4, 42, 8, 23, 15].map((v, i) => s(`2024-05-01T10:0${i}:00Z`, v));
const hundred = (): SampleInput[] =>
  Array.from({ length: 100 }, (_, i) => {
    const v = ((i * 37) % 100) + 1; // 1…100, shuffled in time
    return s(new Date(Date.UTC(2024, 4, 1, 10, 0, i)).toISOString(), v);
  });
const values = (vs: readonly number[]): SampleInput[] =>
  vs.map((v, i) => s(new Date(Date.UTC(2024, 4, 1, 10, 0, i)).toISOString(), v));

/**
 * Registers the contract suite for one store implementation. `open` returns a fresh empty store
 * (not yet migrated) tuned by `options`; every case opens its own and closes it. `persistent`, for a
 * store that keeps data across a close, returns an opener that opens one same (initially empty)
 * database on every call; the reopen cases run only then.
 */
export function storeContract(name: string, open: OpenStore, persistent?: () => OpenStore): void {
  describe(`Store contract: ${name}`, () => {
    writeContract(open, persistent);

    describe("entities", () => {
      // biome-ignore format: one line per case (STYLE 16)
      const cases: {
        name: string;
        batches: EntityUpsert[][];
        all: [number, Record<string, string>, boolean][];
      }[] = [
        { name: "new entities get ids (in creation order) with their attributes", batches: [[up(A, { "svc.name": "a" }, "2024-01-01T00:00:00Z"), up(B, { "svc.name": "b" }, "2024-01-01T00:00:00Z")]], all: [[1, { "svc.name": "a" }, false], [2, { "svc.name": "b" }, false]] },
        { name: "a re-upsert keeps the id and replaces the attributes", batches: [[up(A, { x: "1", y: "2" }, "2024-01-01T00:00:00Z")], [up(A, { x: "3" }, "2024-01-02T00:00:00Z")]], all: [[1, { x: "3" }, false]] },
        { name: "empty attribute values are not stored", batches: [[up(A, { x: "1", empty: "" }, "2024-01-01T00:00:00Z")]], all: [[1, { x: "1" }, false]] },
        { name: "attribute keys are case-sensitive", batches: [[up(A, { Key: "1", key: "2" }, "2024-01-01T00:00:00Z")]], all: [[1, { Key: "1", key: "2" }, false]] },
        { name: "a deletion keeps the id and sets isDeleted", batches: [[up(A, { x: "1" }, "2024-01-01T00:00:00Z"), up(B, { x: "2" }, "2024-01-01T00:00:00Z")], [up(A, { x: "1" }, "2024-01-02T00:00:00Z", true)]], all: [[1, { x: "1" }, true], [2, { x: "2" }, false]] },
        { name: "a deletion without attributes keeps the stored ones", batches: [[up(A, { x: "1" }, "2024-01-01T00:00:00Z")], [up(A, {}, "2024-01-02T00:00:00Z", true)]], all: [[1, { x: "1" }, true]] },
        { name: "a later upsert revives a deleted entity with the same id", batches: [[up(A, { x: "1" }, "2024-01-01T00:00:00Z"), up(B, {}, "2024-01-01T00:00:00Z")], [up(A, {}, "2024-01-02T00:00:00Z", true)], [up(A, { x: "9" }, "2024-01-03T00:00:00Z")]], all: [[1, { x: "9" }, false], [2, {}, false]] },
        { name: "upserts of one entity in one batch apply in order", batches: [[up(A, { x: "1" }, "2024-01-01T00:00:00Z"), up(A, { x: "2" }, "2024-01-02T00:00:00Z"), up(A, {}, "2024-01-03T00:00:00Z", true)]], all: [[1, { x: "2" }, true]] },
        { name: "an upsert older than the stored one is ignored", batches: [[up(A, { x: "new" }, "2024-01-02T00:00:00Z")], [up(A, { x: "old" }, "2024-01-01T00:00:00Z", true)]], all: [[1, { x: "new" }, false]] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            for (const batch of c.batches) await store.ingest({ entities: batch, samples: [] });
            const all = await store.listEntities({ includeDeleted: true });
            const ids = all.map((e) => e.id);
            assert.deepEqual(ids, byId(new Set(ids)), "each entity once, ordered by id");
            // Ids need not be dense: `c.all` names each entity by its rank in id order.
            const rank = (id: number): number => ids.indexOf(asEntityId(id)) + 1;
            assert.deepEqual(
              all.map((e) => [rank(e.id), e.attributes, e.isDeleted]),
              c.all,
            );
            const live = await store.listEntities({ includeDeleted: false });
            assert.deepEqual(
              live.map((e) => rank(e.id)),
              c.all.filter(([, , deleted]) => !deleted).map(([id]) => id),
            );
            for (const e of all) assert.deepEqual(await store.getEntity(e.id), e);
          }),
        );
      }

      it("getEntity answers undefined for an unknown id", () =>
        withStore(open, async (store) => {
          assert.equal(await store.getEntity(asEntityId(42)), undefined);
        }));

      it("a sample for an unknown entity creates it with its built-in attributes", () =>
        withStore(open, async (store) => {
          await store.ingest({ entities: [], samples: [s("2024-05-01T10:00:00Z", 1, cpu("r1"), C)] });
          const [id] = await entityIds(store);
          assert.ok(id !== undefined, "an entity is made");
          assert.deepEqual(await store.listEntities({ includeDeleted: false }), [
            {
              id,
              attributes: { "svc.gateway": "gw", "svc.probe": "p2", "svc.name": "c" },
              isDeleted: false,
            },
          ]);
          await store.ingest({
            entities: [up(C, { "svc.name": "c", x: "1" }, "2024-05-01T10:00:00Z")],
            samples: [],
          });
          assert.deepEqual(await store.getEntity(id), {
            id,
            attributes: { "svc.name": "c", x: "1" },
            isDeleted: false,
          });
        }));

      it("listSeries lists each series of one entity once, sorted", () =>
        withStore(open, async (store) => {
          await store.ingest({
            entities: [up(A, {}, "2024-01-01T00:00:00Z"), up(B, {}, "2024-01-01T00:00:00Z")],
            samples: [s("2024-05-01T10:00:00Z", 1, cpu("r2")), s("2024-05-01T10:00:00Z", 1, cpu("r1"))],
          });
          await store.ingest({
            entities: [],
            samples: [
              s("2024-05-01T10:01:00Z", 2, cpu("r1")),
              s("2024-05-01T10:01:00Z", 2, cpu("", "linux", "hl"), B),
            ],
          });
          const [a, b] = await entityIds(store);
          assert.ok(a !== undefined && b !== undefined, "two entities");
          assert.deepEqual(await store.listSeries(a), [{ series: cpu("r1") }, { series: cpu("r2") }]);
          assert.deepEqual(await store.listSeries(b), [{ series: cpu("", "linux", "hl") }]);
          assert.deepEqual(await store.listSeries(asEntityId(Math.max(a, b) + 1000)), []);
        }));

      it("a failing batch commits nothing, and the next batch works", () =>
        withStore(open, async (store) => {
          const broken: IngestBatch = {
            entities: [up(A, { x: "1" }, "2024-01-01T00:00:00Z")],
            samples: [
              s("2024-05-01T10:00:00Z", 1),
              { ...s("2024-05-01T10:00:00Z", 2), at: asEpochMs(Number.NaN) },
            ],
          };
          await assert.rejects(store.ingest(broken));
          assert.deepEqual(await store.listEntities({ includeDeleted: true }), []);
          await store.ingest({ entities: [up(A, { x: "2" }, "2024-01-01T00:00:00Z")], samples: SIX });
          const entities = await store.listEntities({ includeDeleted: false });
          assert.deepEqual(
            entities.map((e) => e.attributes),
            [{ x: "2" }],
          );
          assert.deepEqual(await store.listSeries(entities[0]!.id), [{ series: cpu("r1") }]);
          assert.deepEqual(counts(await query(store, {})), ["2024-05-01T00:00:00Z {} m 6"]);
        }));

      it("concurrent ingests are all committed", () =>
        withStore(open, async (store) => {
          await Promise.all(
            Array.from({ length: 20 }, (_, i) =>
              store.ingest({
                entities: [up(A, { n: String(i) }, "2024-01-01T00:00:00Z")],
                samples: [s(`2024-05-01T10:${String(i).padStart(2, "0")}:00Z`, i, cpu(`r${i % 3}`))],
              }),
            ),
          );
          const entities = await store.listEntities({ includeDeleted: false });
          assert.equal(entities.length, 1);
          assert.equal((await store.listSeries(entities[0]!.id)).length, 3);
          assert.deepEqual(counts(await query(store, {})), ["2024-05-01T00:00:00Z {} m 20"]);
        }));
    });

    describe("metric aggregations", () => {
      // biome-ignore format: one line per case (STYLE 16)
      const cases: {
        name: string;
        samples: () => SampleInput[];
        aggregation: Aggregation;
        expected: number;
      }[] = [
        { name: "svc.count counts the numeric samples", samples: () => SIX, aggregation: agg("svc.count"), expected: 6 },
        { name: "svc.sum adds them", samples: () => SIX, aggregation: agg("svc.sum"), expected: 108 },
        { name: "svc.min is the smallest", samples: () => SIX, aggregation: agg("svc.min"), expected: 4 },
        { name: "svc.max is the largest", samples: () => SIX, aggregation: agg("svc.max"), expected: 42 },
        { name: "svc.avg is the mean", samples: () => SIX, aggregation: agg("svc.avg"), expected: 18 },
        { name: "svc.var is the population variance", samples: () => SIX, aggregation: agg("svc.var"), expected: 910 / 6 },
        { name: "svc.stddev is the population deviation", samples: () => SIX, aggregation: agg("svc.stddev"), expected: Math.sqrt(910 / 6) },
        { name: "svc.first is the earliest sample's value", samples: () => SIX, aggregation: agg("svc.first"), expected: 16 },
        { name: "svc.last is the latest sample's value", samples: () => SIX, aggregation: agg("svc.last"), expected: 15 },
        { name: "svc.var of one value is 0", samples: () => values([7]), aggregation: agg("svc.var"), expected: 0 },
        { name: "svc.first breaks a timestamp tie by the smaller value", samples: () => [s("2024-05-01T10:00:00Z", 5), s("2024-05-01T10:00:00Z", 3, cpu("r2")), s("2024-05-01T10:01:00Z", 1)], aggregation: agg("svc.first"), expected: 3 },
        { name: "svc.last breaks a timestamp tie by the larger value", samples: () => [s("2024-05-01T10:00:00Z", 9), s("2024-05-01T10:01:00Z", 5), s("2024-05-01T10:01:00Z", 7, cpu("r2"))], aggregation: agg("svc.last"), expected: 7 },
        { name: "percentile 0.07 of 1…100 is exactly the 7th (float ceil would give the 8th)", samples: hundred, aggregation: agg("svc.percentile", "0.07"), expected: 7 },
        { name: "percentile 0.070 (trailing zero) is still the 7th", samples: hundred, aggregation: agg("svc.percentile", "0.070"), expected: 7 },
        { name: "percentile 0.01 of 100 is the 1st", samples: hundred, aggregation: agg("svc.percentile", "0.01"), expected: 1 },
        { name: "percentile 0.95 of 100 is the 95th", samples: hundred, aggregation: agg("svc.percentile", "0.95"), expected: 95 },
        { name: "percentile 0 is the minimum", samples: hundred, aggregation: agg("svc.percentile", "0"), expected: 1 },
        { name: "percentile 1 is the maximum", samples: hundred, aggregation: agg("svc.percentile", "1"), expected: 100 },
        { name: "percentile 0.5 of an odd count is the middle value", samples: () => values([50, 10, 40, 20, 30]), aggregation: agg("svc.percentile", "0.5"), expected: 30 },
        { name: "percentile 0.5 of an even count is the lower middle", samples: () => values([40, 10, 30, 20]), aggregation: agg("svc.percentile", "0.5"), expected: 20 },
        { name: "percentile 0.5 of six values is the 3rd", samples: () => SIX, aggregation: agg("svc.percentile", "0.5"), expected: 15 },
        { name: "percentile 0.95 of six values is the 6th", samples: () => SIX, aggregation: agg("svc.percentile", "0.95"), expected: 42 },
        { name: "percentile 0.55 of 20 values is the 11th", samples: () => values(Array.from({ length: 20 }, (_, i) => ((i * 7) % 20) + 1)), aggregation: agg("svc.percentile", "0.55"), expected: 11 },
        { name: "percentile 0.55 of 100 is exactly the 55th (DuckDB's quantile with a float p gives the 56th)", samples: hundred, aggregation: agg("svc.percentile", "0.55"), expected: 55 },
        { name: "percentile 0.56 of 25 values is exactly the 14th (a float p gives the 15th)", samples: () => values(Array.from({ length: 25 }, (_, i) => ((i * 7) % 25) + 1)), aggregation: agg("svc.percentile", "0.56"), expected: 14 },
        { name: "percentile 0.28 of 25 values is exactly the 7th (float ceil would give the 8th)", samples: () => values(Array.from({ length: 25 }, (_, i) => ((i * 7) % 25) + 1)), aggregation: agg("svc.percentile", "0.28"), expected: 7 },
        { name: "svc.first takes the smallest of three values tied at the earliest time", samples: () => [s("2024-05-01T10:00:00Z", 5), s("2024-05-01T10:00:00Z", -2, cpu("r2")), s("2024-05-01T10:00:00Z", 3, cpu("r3")), s("2024-05-01T10:01:00Z", -9)], aggregation: agg("svc.first"), expected: -2 },
        { name: "svc.last takes the largest of three values tied at the latest time", samples: () => [s("2024-05-01T09:59:00Z", 99), s("2024-05-01T10:00:00Z", 5), s("2024-05-01T10:00:00Z", 9, cpu("r2")), s("2024-05-01T10:00:00Z", -3, cpu("r3"))], aggregation: agg("svc.last"), expected: 9 },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            await store.ingest({ entities: [up(A, {}, "2024-01-01T00:00:00Z")], samples: c.samples() });
            const rows = await query(store, { aggregations: [c.aggregation] });
            assert.equal(rows.length, 1);
            const got = rows[0]!.values[c.aggregation.label];
            assert.equal(typeof got, "number");
            assert.ok(Math.abs((got as number) - c.expected) < 1e-9, `${got} ≠ ${c.expected}`);
          }),
        );
      }

      it("several aggregations answer in one row, keyed by label", () =>
        withStore(open, async (store) => {
          await store.ingest({ entities: [up(A, {}, "2024-01-01T00:00:00Z")], samples: SIX });
          const aggregations = [
            agg("svc.count"),
            agg("svc.percentile", "0.5"),
            agg("svc.percentile", "0.95"),
            agg("svc.max"),
          ];
          assert.deepEqual(lines(await query(store, { aggregations })), [
            "2024-05-01T00:00:00Z {} m svc.count=6 svc.percentile(0.5)=15 svc.percentile(0.95)=42 svc.max=42",
          ]);
        }));

      it("text-only samples count in no aggregation, and a bucket of only text is omitted", () =>
        withStore(open, async (store) => {
          const samples = [
            ...values([1, 2]),
            s("2024-05-01T10:05:00Z", null),
            s("2024-05-02T10:00:00Z", null),
          ];
          await store.ingest({ entities: [up(A, {}, "2024-01-01T00:00:00Z")], samples });
          assert.deepEqual(lines(await query(store, { aggregations: [agg("svc.count"), agg("svc.min")] })), [
            "2024-05-01T00:00:00Z {} m svc.count=2 svc.min=1",
          ]);
        }));

      it("property: count, sum, min, max and avg match a plain computation", () =>
        withStore(open, async (store) => {
          let run = 0;
          await fc.assert(
            fc.asyncProperty(
              fc.array(
                fc.record({
                  row: fc.constantFrom("r1", "r2", "r3"),
                  second: fc.integer({ min: 0, max: 86_399 }),
                  value: fc.oneof(
                    fc.integer({ min: -1000, max: 1000 }),
                    fc.double({ min: -1e6, max: 1e6, noNaN: true }),
                  ),
                }),
                { minLength: 1, maxLength: 40 },
              ),
              async (data) => {
                run += 1;
                const entity: EntityKey = { gateway: "gw", probe: "prop", managedEntity: `e${run}` };
                await store.ingest({
                  entities: [up(entity, { run: String(run) }, "2024-01-01T00:00:00Z")],
                  samples: data.map((d) => ({
                    entity,
                    series: cpu(d.row),
                    at: asEpochMs(Date.UTC(2024, 4, 1) + d.second * 1000),
                    text: String(d.value),
                    value: d.value,
                  })),
                });
                const all = await store.listEntities({ includeDeleted: false });
                const mine = all.filter((e) => e.attributes.run === String(run));
                assert.equal(mine.length, 1);
                const rows = await query(store, {
                  entities: mine,
                  aggregations: ["svc.count", "svc.sum", "svc.min", "svc.max", "svc.avg"].map((n) =>
                    agg(n as Aggregation["name"]),
                  ),
                });
                const vs = data.map((d) => d.value);
                const sum = vs.reduce((a, b) => a + b, 0);
                const scale = Math.max(1, ...vs.map(Math.abs)) * vs.length * 1e-9;
                assert.equal(rows.length, 1);
                const got = rows[0]!.values;
                assert.equal(got["svc.count"], vs.length);
                assert.ok(Math.abs((got["svc.sum"] ?? Number.NaN) - sum) <= scale, "sum");
                // -0 and 0 are the same number to a user; Object.is (assert's rule) tells them apart.
                const plus0 = (x: number | null | undefined) => (x === 0 ? 0 : x);
                assert.equal(plus0(got["svc.min"]), plus0(Math.min(...vs)));
                assert.equal(plus0(got["svc.max"]), plus0(Math.max(...vs)));
                assert.ok(Math.abs((got["svc.avg"] ?? Number.NaN) - sum / vs.length) <= scale, "avg");
              },
            ),
            { numRuns: 40 },
          );
        }));
    });

    describe("metric buckets", () => {
      // biome-ignore format: one line per case (STYLE 16)
      const cases: {
        name: string;
        samples: SampleInput[];
        plan: Partial<MetricQueryPlan>;
        expected: string[];
      }[] = [
        { name: "5-minute buckets in Asia/Kolkata start on local :00/:05", samples: [s("2024-05-01T10:02:00Z", 1), s("2024-05-01T10:07:00Z", 1), s("2024-05-01T10:09:59Z", 1)], plan: { zone: "Asia/Kolkata", bucket: { kind: "minutes", minutes: 5 } }, expected: ["2024-05-01T10:00:00Z {} m 1", "2024-05-01T10:05:00Z {} m 2"] },
        { name: "hour buckets in Asia/Kolkata start on the local hour (:30 UTC)", samples: [s("2024-05-01T10:02:00Z", 1), s("2024-05-01T10:31:00Z", 1)], plan: { zone: "Asia/Kolkata", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-05-01T09:30:00Z {} m 1", "2024-05-01T10:30:00Z {} m 1"] },
        { name: "the alias Asia/Calcutta works like Asia/Kolkata", samples: [s("2024-05-01T10:02:00Z", 1)], plan: { zone: "Asia/Calcutta", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-05-01T09:30:00Z {} m 1"] },
        { name: "the fixed offset +05:30 works like Asia/Kolkata", samples: [s("2024-05-01T10:02:00Z", 1), s("2024-05-01T10:31:00Z", 1)], plan: { zone: "+05:30", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-05-01T09:30:00Z {} m 1", "2024-05-01T10:30:00Z {} m 1"] },
        { name: "the fixed offset +05:45 aligns hours to :15 UTC", samples: [s("2024-05-01T10:02:00Z", 1)], plan: { zone: "+05:45", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-05-01T09:15:00Z {} m 1"] },
        { name: "the fixed offset -03:30 aligns days to 03:30 UTC", samples: [s("2024-05-01T03:29:00Z", 1), s("2024-05-01T03:30:00Z", 1)], plan: { zone: "-03:30" }, expected: ["2024-04-30T03:30:00Z {} m 1", "2024-05-01T03:30:00Z {} m 1"] },
        { name: "3-hour buckets in UTC start at 00, 03, 06 …", samples: [s("2024-05-01T02:59:59Z", 1), s("2024-05-01T03:00:00Z", 1), s("2024-05-01T07:00:00Z", 1)], plan: { bucket: { kind: "minutes", minutes: 180 } }, expected: ["2024-05-01T00:00:00Z {} m 1", "2024-05-01T03:00:00Z {} m 1", "2024-05-01T06:00:00Z {} m 1"] },
        { name: "day buckets in Europe/London: the March DST day has 23 hours", samples: [s("2024-03-30T12:00:00Z", 1), s("2024-03-31T00:30:00Z", 1), s("2024-03-31T22:30:00Z", 1), s("2024-03-31T23:30:00Z", 1)], plan: { zone: "Europe/London" }, expected: ["2024-03-30T00:00:00Z {} m 1", "2024-03-31T00:00:00Z {} m 2", "2024-03-31T23:00:00Z {} m 1"] },
        { name: "day buckets in Europe/London: the October DST day has 25 hours", samples: [s("2024-10-26T23:30:00Z", 1), s("2024-10-27T23:30:00Z", 1), s("2024-10-28T00:30:00Z", 1)], plan: { zone: "Europe/London" }, expected: ["2024-10-26T23:00:00Z {} m 2", "2024-10-28T00:00:00Z {} m 1"] },
        { name: "hour buckets in the repeated hour are two buckets", samples: [s("2024-10-27T00:30:00Z", 1), s("2024-10-27T01:30:00Z", 1), s("2024-10-27T01:45:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-10-27T00:00:00Z {} m 1", "2024-10-27T01:00:00Z {} m 2"] },
        { name: "5-minute buckets in the repeated hour stay apart", samples: [s("2024-10-27T00:31:00Z", 1), s("2024-10-27T01:31:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 5 } }, expected: ["2024-10-27T00:30:00Z {} m 1", "2024-10-27T01:30:00Z {} m 1"] },
        { name: "2-hour buckets across the October change: 00:00 BST to 02:00 GMT is one 3-hour bucket", samples: [s("2024-10-26T23:10:00Z", 1), s("2024-10-27T01:50:00Z", 1), s("2024-10-27T02:10:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 120 } }, expected: ["2024-10-26T23:00:00Z {} m 2", "2024-10-27T02:00:00Z {} m 1"] },
        { name: "45-minute buckets in the repeated hour: 01:30 BST and 01:30 GMT are both boundaries", samples: [s("2024-10-27T00:40:00Z", 1), s("2024-10-27T01:10:00Z", 1), s("2024-10-27T01:40:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 45 } }, expected: ["2024-10-27T00:30:00Z {} m 2", "2024-10-27T01:30:00Z {} m 1"] },
        { name: "hour buckets across the skipped hour: 00:00 GMT then 02:00 BST", samples: [s("2024-03-31T00:30:00Z", 1), s("2024-03-31T01:30:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-03-31T00:00:00Z {} m 1", "2024-03-31T01:00:00Z {} m 1"] },
        { name: "90-minute buckets: the 01:30 boundary in the skipped hour moves to its end", samples: [s("2024-03-31T00:50:00Z", 1), s("2024-03-31T01:10:00Z", 1), s("2024-03-31T01:59:00Z", 1), s("2024-03-31T02:10:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 90 } }, expected: ["2024-03-31T00:00:00Z {} m 1", "2024-03-31T01:00:00Z {} m 2", "2024-03-31T02:00:00Z {} m 1"] },
        { name: "a day whose midnight is skipped starts at the end of the gap (America/Santiago)", samples: [s("2024-09-08T03:30:00Z", 1), s("2024-09-08T04:30:00Z", 1)], plan: { zone: "America/Santiago" }, expected: ["2024-09-07T04:00:00Z {} m 1", "2024-09-08T04:00:00Z {} m 1"] },
        { name: "week buckets start on Monday local midnight", samples: [s("2024-03-31T12:00:00Z", 1), s("2024-03-31T23:30:00Z", 1), s("2024-04-07T22:59:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "week" } }, expected: ["2024-03-25T00:00:00Z {} m 1", "2024-03-31T23:00:00Z {} m 2"] },
        { name: "month buckets are calendar months in local time", samples: [s("2024-03-01T03:00:00Z", 1), s("2024-03-15T12:00:00Z", 1), s("2024-04-01T03:00:00Z", 1), s("2024-04-01T05:00:00Z", 1)], plan: { zone: "America/New_York", bucket: { kind: "month" } }, expected: ["2024-02-01T05:00:00Z {} m 1", "2024-03-01T05:00:00Z {} m 2", "2024-04-01T04:00:00Z {} m 1"] },
        { name: "a bucket is labelled with its aligned start even when from is inside it", samples: [s("2024-05-01T10:40:00Z", 1), s("2024-05-01T10:20:00Z", 1)], plan: { from: t("2024-05-01T10:30:00Z"), bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-05-01T10:00:00Z {} m 1"] },
        { name: "the range includes from and excludes to", samples: [s("2024-05-01T10:00:00Z", 1), s("2024-05-01T10:59:59Z", 1), s("2024-05-01T11:00:00Z", 1)], plan: { from: t("2024-05-01T10:00:00Z"), to: t("2024-05-01T11:00:00Z") }, expected: ["2024-05-01T00:00:00Z {} m 2"] },
        { name: "empty buckets are omitted", samples: [s("2024-05-01T10:00:00Z", 1), s("2024-05-03T10:00:00Z", 1)], plan: {}, expected: ["2024-05-01T00:00:00Z {} m 1", "2024-05-03T00:00:00Z {} m 1"] },
        { name: "5-minute buckets in Europe/London in January: no transition in range, one offset", samples: [s("2026-01-14T10:02:00Z", 1), s("2026-01-14T10:04:59Z", 1), s("2026-01-14T10:05:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "minutes", minutes: 5 }, from: t("2026-01-14T00:00:00Z"), to: t("2026-01-15T00:00:00Z") }, expected: ["2026-01-14T10:00:00Z {} m 2", "2026-01-14T10:05:00Z {} m 1"] },
        { name: "hour buckets in Australia/Lord_Howe across the half-hour fall-back (+11:00 to +10:30)", samples: [s("2024-04-06T14:45:00Z", 1), s("2024-04-06T15:10:00Z", 1), s("2024-04-06T15:40:00Z", 1)], plan: { zone: "Australia/Lord_Howe", bucket: { kind: "minutes", minutes: 60 } }, expected: ["2024-04-06T14:00:00Z {} m 2", "2024-04-06T15:30:00Z {} m 1"] },
        { name: "45-minute buckets in Australia/Lord_Howe: 02:15 falls in the half-hour gap and moves to its end", samples: [s("2024-10-05T15:20:00Z", 1), s("2024-10-05T15:40:00Z", 1)], plan: { zone: "Australia/Lord_Howe", bucket: { kind: "minutes", minutes: 45 } }, expected: ["2024-10-05T15:00:00Z {} m 1", "2024-10-05T15:30:00Z {} m 1"] },
        { name: "a month bucket that began before the spring change starts in the old offset, from after the change", samples: [s("2024-03-31T12:00:00Z", 1), s("2024-04-02T12:00:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "month" }, from: t("2024-03-31T06:00:00Z") }, expected: ["2024-03-01T00:00:00Z {} m 1", "2024-03-31T23:00:00Z {} m 1"] },
        { name: "a week bucket that began before the autumn change starts in the old offset, from after the change", samples: [s("2024-10-27T12:00:00Z", 1), s("2024-10-28T12:00:00Z", 1)], plan: { zone: "Europe/London", bucket: { kind: "week" }, from: t("2024-10-27T06:00:00Z") }, expected: ["2024-10-20T23:00:00Z {} m 1", "2024-10-28T00:00:00Z {} m 1"] },
        { name: "twenty years of Europe/London day buckets (about forty offset changes: grouped segment scans)", samples: [s("2005-06-01T23:30:00Z", 1), s("2012-01-15T00:30:00Z", 1), s("2018-10-28T00:30:00Z", 1), s("2018-10-28T01:30:00Z", 1), s("2024-07-01T22:59:00Z", 1)], plan: { zone: "Europe/London", from: t("2004-01-01T00:00:00Z"), to: t("2025-01-01T00:00:00Z") }, expected: ["2005-06-01T23:00:00Z {} m 1", "2012-01-15T00:00:00Z {} m 1", "2018-10-27T23:00:00Z {} m 2", "2024-06-30T23:00:00Z {} m 1"] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            await store.ingest({ entities: [up(A, {}, "2024-01-01T00:00:00Z")], samples: c.samples });
            assert.deepEqual(
              counts(await query(store, { from: t("2024-01-01T00:00:00Z"), ...c.plan })),
              c.expected,
            );
          }),
        );
      }
    });

    describe("metric count buckets", () => {
      const H = 3600;
      const local = (day: string, time: string): string => `${day}T${time}+05:30`;
      const count = (n: number) => ({ bucket: { kind: "count", count: n } as const });
      // biome-ignore format: one line per case (STYLE 16)
      const cases: {
        name: string;
        samples: SampleInput[];
        plan: Partial<MetricQueryPlan>;
        expected: string[];
      }[] = [
        { name: "4 buckets of an hour are its quarters, from and to-1ms included", samples: [s("2024-05-01T10:00:00Z", 1), s("2024-05-01T10:14:59.999Z", 1), s("2024-05-01T10:15:00Z", 1), s("2024-05-01T10:59:59.999Z", 1), s("2024-05-01T11:00:00Z", 1)], plan: { from: t("2024-05-01T10:00:00Z"), to: t("2024-05-01T11:00:00Z"), ...count(4) }, expected: ["2024-05-01T10:00:00Z {} m 2", "2024-05-01T10:15:00Z {} m 1", "2024-05-01T10:45:00Z {} m 1"] },
        { name: "3 buckets of a second: bounds at 333⅓ and 666⅔ ms, labelled with their first whole ms", samples: [s("2024-05-01T10:00:00.333Z", 1), s("2024-05-01T10:00:00.334Z", 1), s("2024-05-01T10:00:00.666Z", 1), s("2024-05-01T10:00:00.667Z", 1), s("2024-05-01T10:00:00.999Z", 1)], plan: { from: t("2024-05-01T10:00:00Z"), to: t("2024-05-01T10:00:01Z"), ...count(3) }, expected: ["2024-05-01T10:00:00Z {} m 1", "2024-05-01T10:00:00.334Z {} m 2", "2024-05-01T10:00:00.667Z {} m 2"] },
        { name: "buckets start at from, not on the zone's clock (Asia/Kolkata)", samples: [s("2024-05-01T10:08:00Z", 1), s("2024-05-01T10:13:00Z", 1)], plan: { zone: "Asia/Kolkata", from: t("2024-05-01T10:07:00Z"), to: t("2024-05-01T10:17:00Z"), ...count(2) }, expected: ["2024-05-01T10:07:00Z {} m 1", "2024-05-01T10:12:00Z {} m 1"] },
        { name: "buckets are equal in real time across the repeated hour (Europe/London)", samples: [s("2024-10-27T00:30:00Z", 1), s("2024-10-27T01:30:00Z", 1), s("2024-10-27T01:45:00Z", 1)], plan: { zone: "Europe/London", from: t("2024-10-27T00:00:00Z"), to: t("2024-10-27T02:00:00Z"), ...count(2) }, expected: ["2024-10-27T00:00:00Z {} m 1", "2024-10-27T01:00:00Z {} m 2"] },
        { name: "one bucket is the whole range, labelled from", samples: [s("2024-05-01T10:00:00Z", 1), s("2024-05-03T09:59:59.999Z", 1), s("2024-05-03T10:00:00Z", 1)], plan: { from: t("2024-05-01T10:00:00Z"), to: t("2024-05-03T10:00:00Z"), ...count(1) }, expected: ["2024-05-01T10:00:00Z {} m 2"] },
        { name: "empty buckets are omitted", samples: [s("2024-05-01T00:00:00Z", 1), s("2024-05-01T23:00:00Z", 1)], plan: { from: t("2024-05-01T00:00:00Z"), to: t("2024-05-02T00:00:00Z"), ...count(24) }, expected: ["2024-05-01T00:00:00Z {} m 1", "2024-05-01T23:00:00Z {} m 1"] },
        { name: "time windows apply in the zone's local time", samples: [s(local("2024-05-01", "08:59:59"), 1), s(local("2024-05-01", "09:00:00"), 1), s(local("2024-05-01", "12:00:00"), 1), s(local("2024-05-01", "16:59:59"), 1), s(local("2024-05-01", "17:00:00"), 1)], plan: { zone: "Asia/Kolkata", from: t(local("2024-05-01", "00:00:00")), to: t(local("2024-05-02", "00:00:00")), timeWindows: [{ fromSecond: 9 * H, toSecond: 17 * H }], ...count(2) }, expected: ["2024-04-30T18:30:00Z {} m 1", "2024-05-01T06:30:00Z {} m 2"] },
        { name: "99 999 buckets of years 1 to 9999: products beyond 64 bits stay exact", samples: [s("2024-05-01T10:00:00Z", 1), s("2024-07-01T00:00:00Z", 1)], plan: { from: t("0001-01-01T00:00:00Z"), to: t("9999-01-01T00:00:00Z"), ...count(99_999) }, expected: ["2024-04-25T16:54:53.601Z {} m 1", "2024-06-01T05:19:48.768Z {} m 1"] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            await store.ingest({ entities: [up(A, {}, "2024-01-01T00:00:00Z")], samples: c.samples });
            assert.deepEqual(counts(await query(store, c.plan)), c.expected);
          }),
        );
      }

      it("all aggregations work per count bucket, grouped by row", () =>
        withStore(open, async (store) => {
          await store.ingest({
            entities: [up(A, {}, "2024-01-01T00:00:00Z")],
            samples: [
              s("2024-05-01T10:00:00Z", 4),
              s("2024-05-01T10:10:00Z", 8),
              s("2024-05-01T10:20:00Z", 15, cpu("r2")),
              s("2024-05-01T10:30:00Z", 16),
              s("2024-05-01T10:50:00Z", 23),
            ],
          });
          const rows = await query(store, {
            from: t("2024-05-01T10:00:00Z"),
            to: t("2024-05-01T11:00:00Z"),
            bucket: { kind: "count", count: 2 },
            grouping: ["rowname"],
            aggregations: [
              agg("svc.count"),
              agg("svc.sum"),
              agg("svc.first"),
              agg("svc.last"),
              agg("svc.percentile", "0.5"),
            ],
          });
          assert.deepEqual(lines(rows), [
            '2024-05-01T10:00:00Z {"rowname":"r1"} m svc.count=2 svc.sum=12 svc.first=4 svc.last=8 svc.percentile(0.5)=4',
            '2024-05-01T10:00:00Z {"rowname":"r2"} m svc.count=1 svc.sum=15 svc.first=15 svc.last=15 svc.percentile(0.5)=15',
            '2024-05-01T10:30:00Z {"rowname":"r1"} m svc.count=2 svc.sum=39 svc.first=16 svc.last=23 svc.percentile(0.5)=16',
          ]);
        }));
    });

    describe("metric selection and grouping", () => {
      // Entity 1 (a, region eu): linux rows r1 (2 samples) and r2 (1), the linux headline "util" (1),
      // a windows r1 (1). Entity 2 (b, no region): linux r1 (1). Entity 3 (c, region us, deleted later
      // in no case) is left out of the plan where `entities` says so.
      const fixture: IngestBatch = {
        entities: [
          up(A, { region: "eu" }, "2024-01-01T00:00:00Z"),
          up(B, { region: "" }, "2024-01-01T00:00:00Z"),
          up(C, { region: "us" }, "2024-01-01T00:00:00Z"),
        ],
        samples: [
          s("2024-05-01T10:00:00Z", 1, cpu("r1")),
          s("2024-05-01T10:01:00Z", 2, cpu("r1")),
          s("2024-05-01T10:00:00Z", 3, cpu("r2")),
          s("2024-05-01T10:00:00Z", 4, cpu("")),
          s("2024-05-01T10:00:00Z", 5, cpu("r1", "windows")),
          s("2024-05-01T10:00:00Z", 6, cpu("r1"), B),
          s("2024-05-01T10:00:00Z", 7, cpu("r1"), C),
          s("2024-05-02T10:00:00Z", 8, cpu("r1"), C),
        ],
      };
      const D = "2024-05-01T00:00:00Z";
      const D2 = "2024-05-02T00:00:00Z";
      const onlyAB = { entities: [] as const };
      // biome-ignore format: one line per case (STYLE 16)
      const cases: { name: string; plan: Partial<MetricQueryPlan>; expected: string[]; ab?: boolean }[] = [
        { name: "a wildcard row matches every row but not a headline", ab: true, plan: {}, expected: [`${D} {} m 4`] },
        { name: "a named row matches only that row", ab: true, plan: { metrics: [{ identifier: "m", include: [sel("r2")] }] }, expected: [`${D} {} m 1`] },
        { name: "an empty row matches the headline", ab: true, plan: { metrics: [{ identifier: "m", include: [sel("")] }] }, expected: [`${D} {} m 1`] },
        { name: "samplerType null matches any sampler type", ab: true, plan: { metrics: [{ identifier: "m", include: [sel("r1", null)] }] }, expected: [`${D} {} m 4`] },
        { name: "a given samplerType matches only that type", ab: true, plan: { metrics: [{ identifier: "m", include: [sel("r1", "windows")] }] }, expected: [`${D} {} m 1`] },
        { name: "a series matched by two selectors of one metric counts once", ab: true, plan: { metrics: [{ identifier: "m", include: [sel("r1"), sel(null), sel("r1", null)] }] }, expected: [`${D} {} m 5`] },
        { name: "one series under two identifiers appears under each", ab: true, plan: { metrics: [{ identifier: "y", include: [sel("r2")] }, { identifier: "x", include: [sel(null)] }] }, expected: [`${D} {} x 4`, `${D} {} y 1`] },
        { name: "a selector matching nothing gives no rows", ab: true, plan: { metrics: [{ identifier: "m", include: [sel("nope")] }] }, expected: [] },
        { name: "only the plan's entities count", plan: {}, expected: [`${D} {} m 5`, `${D2} {} m 1`] },
        { name: "grouping by rowname", ab: true, plan: { grouping: ["rowname"] }, expected: [`${D} {"rowname":"r1"} m 3`, `${D} {"rowname":"r2"} m 1`] },
        { name: "grouping by rowname keeps the headline's empty row name", ab: true, plan: { grouping: ["rowname"], metrics: [{ identifier: "m", include: [sel(""), sel("r2")] }] }, expected: [`${D} {"rowname":""} m 1`, `${D} {"rowname":"r2"} m 1`] },
        { name: "grouping by entity gives the entity id", ab: true, plan: { grouping: ["entity"] }, expected: [`${D} {"entity":@A} m 3`, `${D} {"entity":@B} m 1`] },
        { name: "grouping by an attribute, empty when absent", plan: { grouping: [{ attribute: "region" }] }, expected: [`${D} {"attribute":""} m 1`, `${D} {"attribute":"eu"} m 3`, `${D} {"attribute":"us"} m 1`, `${D2} {"attribute":"us"} m 1`] },
        { name: "grouping by entity then rowname, sorted in that order", ab: true, plan: { grouping: ["entity", "rowname"] }, expected: [`${D} {"entity":@A,"rowname":"r1"} m 2`, `${D} {"entity":@A,"rowname":"r2"} m 1`, `${D} {"entity":@B,"rowname":"r1"} m 1`] },
        { name: "rows sort by bucket, then group, then identifier", plan: { grouping: ["entity"], metrics: [{ identifier: "z", include: [sel("r1")] }, { identifier: "a", include: [sel("r1")] }] }, expected: [`${D} {"entity":@A} a 2`, `${D} {"entity":@A} z 2`, `${D} {"entity":@B} a 1`, `${D} {"entity":@B} z 1`, `${D} {"entity":@C} a 1`, `${D} {"entity":@C} z 1`, `${D2} {"entity":@C} a 1`, `${D2} {"entity":@C} z 1`] },
        { name: "no entities give no rows", plan: onlyAB, expected: [] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            await store.ingest(fixture);
            const all = await store.listEntities({ includeDeleted: false });
            const entities = c.ab === true ? all.filter((e) => e.attributes.region !== "us") : all;
            // Ids are whatever the store gave: A is the "eu" entity, B the one without region, C "us".
            const idOf = (region: string | undefined) =>
              String(all.find((e) => e.attributes.region === region)?.id);
            const ids: Record<string, string> = { "@A": idOf("eu"), "@B": idOf(undefined), "@C": idOf("us") };
            const expected = sortedLines(c.expected.map((l) => l.replace(/@[ABC]/g, (m) => ids[m] ?? m)));
            assert.deepEqual(counts(await query(store, { entities, ...c.plan })), expected);
          }),
        );
      }
    });

    describe("metric time windows", () => {
      // Local times in Asia/Kolkata (+05:30) on Wednesday 2024-05-01 and Thursday 2024-05-02.
      const local = (day: string, time: string, v: number): SampleInput => s(`${day}T${time}+05:30`, v);
      const samples = [
        local("2024-05-01", "08:59:59", 1),
        local("2024-05-01", "09:00:00", 2),
        local("2024-05-01", "16:59:59", 3),
        local("2024-05-01", "17:00:00", 4),
        local("2024-05-01", "23:00:00", 5),
        local("2024-05-02", "02:00:00", 6),
        local("2024-05-02", "10:00:00", 7),
      ];
      const H = 3600;
      // biome-ignore format: one line per case (STYLE 16)
      const cases: { name: string; windows: MetricQueryPlan["timeWindows"]; expected: number[] }[] = [
        { name: "no window keeps every sample", windows: [], expected: [1, 2, 3, 4, 5, 6, 7] },
        { name: "a day window is [from, to) in local time", windows: [{ fromSecond: 9 * H, toSecond: 17 * H }], expected: [2, 3, 7] },
        { name: "an overnight window wraps past midnight", windows: [{ fromSecond: 22 * H, toSecond: 6 * H }], expected: [5, 6] },
        { name: "days limit a window to local ISO weekdays (3 = Wednesday)", windows: [{ fromSecond: 9 * H, toSecond: 17 * H, days: [3] }], expected: [2, 3] },
        { name: "days apply to the sample's own local day in an overnight window", windows: [{ fromSecond: 22 * H, toSecond: 6 * H, days: [4] }], expected: [6] },
        { name: "several windows keep samples in any of them", windows: [{ fromSecond: 0, toSecond: 9 * H }, { fromSecond: 17 * H, toSecond: 18 * H }], expected: [1, 4, 6] },
        { name: "from = to is the whole day", windows: [{ fromSecond: 0, toSecond: 0 }], expected: [1, 2, 3, 4, 5, 6, 7] },
      ];
      for (const c of cases) {
        it(c.name, () =>
          withStore(open, async (store) => {
            await store.ingest({ entities: [up(A, {}, "2024-01-01T00:00:00Z")], samples });
            const rows = await query(store, {
              zone: "Asia/Kolkata",
              bucket: { kind: "month" },
              timeWindows: c.windows,
              aggregations: [agg("svc.count"), agg("svc.sum")],
            });
            const expectedSum = c.expected.reduce((a, b) => a + b, 0);
            assert.deepEqual(
              rows.map((r) => [r.values["svc.count"], r.values["svc.sum"]]),
              [[c.expected.length, expectedSum]],
            );
          }),
        );
      }
    });
  });
}
