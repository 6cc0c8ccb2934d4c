/**
 * The write half of the Store contract (DESIGN 1, 5.5): message claims, transactions, events, the
 * series limit, data the store cannot hold, and what survives a reopen. Registered by
 * `storeContract()` in store-contract.ts, so every implementation runs it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { SampleRowsBuilder } from "../../../src/hub/store/sample-rows.js";
import {
  type EntityKey,
  type EventInput,
  type IngestBatch,
  type MessageKey,
  type SampleInput,
  type SeriesKey,
  type Store,
  StoreDataError,
  type StoreTransaction,
} from "../../../src/hub/store/store.js";
import { asEntityId, asEpochMs, type EntityId, type EpochMs } from "../../../src/ids.js";
import type { EventTarget } from "../../../src/messages/types.js";

/** Options the contract sets on the stores it opens; absent ones take the store's defaults. */
export interface ContractStoreOptions {
  readonly maxSeriesPerEntity?: number;
  readonly seriesCacheEntries?: number;
}

/** Opens a store (unmigrated) with `options`. */
export type OpenStore = (options?: ContractStoreOptions) => Promise<Store>;

const t = (iso: string): EpochMs => asEpochMs(Date.parse(iso));
const A: EntityKey = { gateway: "gw", probe: "p1", managedEntity: "a" };
const B: EntityKey = { gateway: "gw", probe: "p1", managedEntity: "b" };
const row = (name: string): SeriesKey => ({
  sampler: "cpu",
  samplerType: "linux",
  dataview: "cpu",
  row: name,
  column: "util",
});
const sample = (at: string, value: number, series = row("r1"), entity = A): SampleInput => ({
  entity,
  series,
  at: t(at),
  text: String(value),
  value,
});
const upsert = (key: EntityKey, attributes: Record<string, string>, at = "2024-01-01T00:00:00Z") => ({
  key,
  attributes,
  deleted: false,
  at: t(at),
});
/** Rows of cells on cpu/linux/cpu: each `[entity, row, at, {column: text}]` one row, numbers parsed. */
function cells(...rows: (readonly [EntityKey, string, string, Record<string, string>])[]): SampleRowsBuilder {
  const out = new SampleRowsBuilder();
  for (const [entity, name, at, values] of rows) {
    for (const [column, text] of Object.entries(values)) {
      const value = Number(text);
      out.cell(column, text, text.trim() === "" || !Number.isFinite(value) ? null : value);
    }
    out.endRow(entity, { sampler: "cpu", samplerType: "linux", dataview: "cpu", row: name }, t(at));
  }
  return out;
}

/** Every sample of one entity, series by series (sorted), as `row/column@ms=text`. */
async function storedSamples(store: Store, entity: EntityId): Promise<string[]> {
  const out: string[] = [];
  for (const { series } of await store.listSeries(entity)) {
    const page = await store.listSamples({ entity, cell: series, skip: 0, limit: 1000 });
    for (const x of page.samples) out.push(`${series.row}/${series.column}@${x.at}=${x.text}`);
  }
  return out.sort();
}

const seq = (origin: string, n: number): MessageKey => ({ kind: "seq", origin, seq: n });
const seqs = (origin: string, ...ns: number[]): MessageKey[] => ns.map((n) => seq(origin, n));
const hash = (h: string): MessageKey => ({ kind: "hash", hash: h });
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

const event = (
  at: string,
  type: EventInput["type"],
  entity: EntityKey | null,
  target: EventTarget,
  payload: Record<string, unknown>,
): EventInput => ({ type, operation: "create", at: t(at), entity, target, payload });

async function withStore<T>(
  open: OpenStore,
  options: ContractStoreOptions | undefined,
  fn: (store: Store) => Promise<T>,
): Promise<T> {
  const store = await open(options);
  try {
    await store.migrate();
    return await fn(store);
  } finally {
    await store.close();
  }
}

const claim = (store: Store, keys: readonly MessageKey[]): Promise<boolean[]> =>
  store.transaction((tx) => tx.claim(keys));

/** Samples per row name over 2024 (numeric samples of every linux row of cpu/cpu/util). */
async function countsByRow(store: Store): Promise<Record<string, number>> {
  const rows = await store.queryMetrics({
    entities: await store.listEntities({ includeDeleted: false }),
    from: t("2024-01-01T00:00:00Z"),
    to: t("2025-01-01T00:00:00Z"),
    zone: "UTC",
    bucket: { kind: "month" },
    metrics: [
      {
        identifier: "m",
        include: [{ sampler: "cpu", samplerType: "linux", dataview: "cpu", row: null, column: "util" }],
      },
    ],
    aggregations: [{ label: "n", name: "svc.count" }],
    grouping: ["entity", "rowname"],
    timeWindows: [],
  });
  const out: Record<string, number> = Object.create(null);
  for (const r of rows) {
    const key = `${r.group.entity}/${r.group.rowname}`;
    out[key] = (out[key] ?? 0) + (r.values.n ?? 0);
  }
  return { ...out };
}

/**
 * Entity ids sorted (deleted ones too): the order the store made the entities in. Ids are not
 * assumed dense, so cases name entities by position here rather than as 1, 2, 3.
 */
async function entityIds(store: Store): Promise<number[]> {
  return (await store.listEntities({ includeDeleted: true })).map((e) => e.id).sort((a, b) => a - b);
}

const isDataError = (pattern?: RegExp) => (error: unknown) => {
  assert.ok(error instanceof StoreDataError, `expected a StoreDataError, got ${String(error)}`);
  if (pattern !== undefined) assert.match(error.message, pattern);
  return true;
};

/**
 * Registers the write cases. `open` gives a fresh empty store; `persistent`, when the store keeps
 * data across a close, gives an opener that opens one same database on every call.
 */
export function writeContract(open: OpenStore, persistent?: () => OpenStore): void {
  describe("message claims", () => {
    // biome-ignore format: one line per case (STYLE 16)
    const cases: { name: string; calls: MessageKey[][]; expected: boolean[][] }[] = [
      { name: "a new key is new, the same key again is not", calls: [seqs("o", 1), seqs("o", 1)], expected: [[true], [false]] },
      { name: "a key repeated within one call is new once", calls: [seqs("o", 1, 1, 2, 1)], expected: [[true, false, true, false]] },
      { name: "in-order batches: only the unseen seqs are new", calls: [seqs("o", 1, 2, 3), seqs("o", 4, 5, 6), seqs("o", 2, 6, 7)], expected: [[true, true, true], [true, true, true], [false, false, true]] },
      { name: "out-of-order seqs are each new once", calls: [seqs("o", 5, 3), seqs("o", 4, 1, 2), seqs("o", 1, 2, 3, 4, 5)], expected: [[true, true], [true, true, true], [false, false, false, false, false]] },
      { name: "gaps stay claimable and are filled later", calls: [seqs("o", 1, 2, 5, 6, 9), seqs("o", 3, 4, 7), seqs("o", ...range(1, 10))], expected: [[true, true, true, true, true], [true, true, true], [...range(1, 9).map((n) => n === 8), true]] },
      { name: "a batch whose seqs straddle a stored run", calls: [seqs("o", 4, 5, 6), seqs("o", 2, 3, 4, 5, 6, 7, 8)], expected: [[true, true, true], [true, true, false, false, false, true, true]] },
      { name: "origins are independent", calls: [seqs("a", 1, 2), seqs("b", 1, 2, 3), [seq("a", 3), seq("b", 3), seq("a", 1)]], expected: [[true, true], [true, true, true], [true, false, false]] },
      { name: "large seqs (up to 2^53 − 1) are kept exactly", calls: [seqs("o", 2 ** 53 - 1, 2 ** 53 - 2), seqs("o", 2 ** 53 - 1, 2 ** 53 - 3)], expected: [[true, true], [false, true]] },
      { name: "hash keys: new once, repeats within a call too", calls: [[hash("h1"), hash("h2"), hash("h1")], [hash("h1"), hash("h3")]], expected: [[true, true, false], [false, true]] },
      { name: "seq and hash keys in one call", calls: [[seq("o", 1), hash("h"), seq("o", 2)], [hash("h"), seq("o", 3), seq("o", 1)]], expected: [[true, true, true], [false, true, false]] },
      { name: "an empty claim answers an empty list", calls: [[]], expected: [[]] },
    ];
    for (const c of cases) {
      it(c.name, () =>
        withStore(open, undefined, async (store) => {
          const got: boolean[][] = [];
          for (const keys of c.calls) got.push(await claim(store, keys));
          assert.deepEqual(got, c.expected);
        }),
      );
    }

    it("property: claims answer like a set of the keys claimed before", () =>
      withStore(open, undefined, async (store) => {
        let run = 0;
        await fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.array(
                fc.record({ origin: fc.constantFrom("x", "y"), seq: fc.integer({ min: 1, max: 40 }) }),
                { maxLength: 25 },
              ),
              {
                minLength: 1,
                maxLength: 8,
              },
            ),
            async (batches) => {
              run += 1;
              const seen = new Set<string>();
              for (const batch of batches) {
                const keys = batch.map((k) => seq(`${k.origin}-${run}`, k.seq));
                const expected = keys.map((k) => {
                  const id = k.kind === "seq" ? `${k.origin}.${k.seq}` : k.hash;
                  const isNew = !seen.has(id);
                  seen.add(id);
                  return isNew;
                });
                assert.deepEqual(await claim(store, keys), expected);
              }
            },
          ),
          { numRuns: 60, seed: 20240501 },
        );
      }));

    // biome-ignore format: one line per case (STYLE 16)
    const bad: [string, MessageKey][] = [
      ["seq 0", seq("o", 0)],
      ["a fractional seq", seq("o", 1.5)],
      ["a seq beyond 2^53", seq("o", 2 ** 53)],
      ["an origin with a lone surrogate", seq("o\uD800", 1)],
      ["a hash with a lone surrogate", hash("\uDC00")],
    ];
    for (const [what, key] of bad) {
      it(`${what} is a StoreDataError, and the transaction stays usable`, () =>
        withStore(open, undefined, async (store) => {
          const after = await store.transaction(async (tx) => {
            await assert.rejects(tx.claim([seq("ok", 1), key]), isDataError());
            return tx.claim([seq("ok", 1)]);
          });
          assert.deepEqual(after, [true]);
        }));
    }
  });

  describe("transactions", () => {
    const batch: IngestBatch = {
      entities: [upsert(A, { x: "1" })],
      samples: [sample("2024-05-01T10:00:00Z", 1), sample("2024-05-01T10:00:00Z", 2, row("r2"))],
    };

    it("a rolled-back transaction leaves no claims, no data and no cached ids", () =>
      withStore(open, undefined, async (store) => {
        const keys = seqs("o", 1, 2);
        const boom = new Error("boom");
        await assert.rejects(
          store.transaction(async (tx) => {
            assert.deepEqual(await tx.claim(keys), [true, true]);
            await tx.write(batch);
            throw boom;
          }),
          (e) => e === boom,
        );
        assert.deepEqual(await store.listEntities({ includeDeleted: true }), []);
        const result = await store.transaction(async (tx) => {
          const fresh = await tx.claim(keys);
          await tx.write(batch);
          return fresh;
        });
        assert.deepEqual(result, [true, true]);
        const [entity] = await store.listEntities({ includeDeleted: false });
        assert.ok(entity !== undefined, "the entity is stored");
        assert.deepEqual(await store.listSeries(entity.id), [{ series: row("r1") }, { series: row("r2") }]);
        // Samples written through ids the rolled-back transaction had drawn would count nowhere.
        await store.ingest({ entities: [], samples: [sample("2024-05-02T10:00:00Z", 3)] });
        assert.deepEqual(await countsByRow(store), { [`${entity.id}/r1`]: 2, [`${entity.id}/r2`]: 1 });
      }));

    it("resolves with the value of work, after the commit", () =>
      withStore(open, undefined, async (store) => {
        const value = await store.transaction(async (tx) => {
          await tx.write(batch);
          return 42;
        });
        assert.equal(value, 42);
        assert.equal((await store.listEntities({ includeDeleted: false })).length, 1);
      }));

    it("writes of one transaction see each other's entities and series", () =>
      withStore(open, undefined, async (store) => {
        await store.transaction(async (tx) => {
          await tx.write(batch);
          await tx.write({
            entities: [],
            samples: [sample("2024-05-01T11:00:00Z", 5), sample("2024-05-01T11:00:00Z", 6, row("r3"))],
          });
          await tx.write({ entities: [upsert(A, { x: "2" }, "2024-01-02T00:00:00Z")], samples: [] });
        });
        const entities = await store.listEntities({ includeDeleted: false });
        assert.deepEqual(
          entities.map((e) => e.attributes),
          [{ x: "2" }],
        );
        const id = entities[0]!.id;
        assert.equal((await store.listSeries(id)).length, 3);
        assert.deepEqual(await countsByRow(store), { [`${id}/r1`]: 2, [`${id}/r2`]: 1, [`${id}/r3`]: 1 });
      }));

    it("writes queued without waiting for each other see each other's entities and series", () =>
      withStore(open, undefined, async (store) => {
        await store.transaction((tx) =>
          Promise.all([
            tx.write(batch),
            tx.write({
              entities: [],
              samples: [sample("2024-05-01T11:00:00Z", 5), sample("2024-05-01T11:00:00Z", 6, row("r3"))],
            }),
          ]),
        );
        const [entity] = await store.listEntities({ includeDeleted: false });
        assert.ok(entity !== undefined, "the entity is stored once");
        assert.equal((await store.listSeries(entity.id)).length, 3);
        const id = entity.id;
        assert.deepEqual(await countsByRow(store), { [`${id}/r1`]: 2, [`${id}/r2`]: 1, [`${id}/r3`]: 1 });
      }));

    it("a transaction whose hash keys were stored before stores its write once, and answers false for them", () =>
      withStore(open, undefined, async (store) => {
        const write = (at: string) => (tx: StoreTransaction) =>
          tx.claim([hash("h1"), hash("h2")]).then(async (fresh) => {
            // As the ingester does: only what the claim calls new is written.
            if (fresh[1] === true) await tx.write({ entities: [], samples: [sample(at, 1)] });
            return fresh;
          });
        assert.deepEqual(await store.transaction(write("2024-05-01T10:00:00Z")), [true, true]);
        assert.deepEqual(await store.transaction(write("2024-05-01T11:00:00Z")), [false, false]);
        const [entity] = await store.listEntities({ includeDeleted: false });
        assert.ok(entity !== undefined);
        assert.deepEqual(await countsByRow(store), { [`${entity.id}/r1`]: 1 });
      }));

    it("a claim of hash keys only with a malformed one is a StoreDataError, and the transaction stays usable", () =>
      withStore(open, undefined, async (store) => {
        const after = await store.transaction(async (tx) => {
          await assert.rejects(tx.claim([hash("h"), hash("\uDC00")]), isDataError());
          return tx.claim([hash("h")]);
        });
        assert.deepEqual(after, [true]);
      }));

    it("a hash key whose time is not a whole millisecond in range is a StoreDataError, and the transaction stays usable", () =>
      withStore(open, undefined, async (store) => {
        const at = Date.UTC(2025, 0, 1);
        const timed = (h: string, time: number): MessageKey => ({ kind: "hash", hash: h, at: time });
        const after = await store.transaction(async (tx) => {
          for (const bad of [Number.NaN, at + 0.5, 8.64e15 + 1, Number.POSITIVE_INFINITY])
            await assert.rejects(tx.claim([timed("h", at), timed("g", bad)]), isDataError());
          return tx.claim([timed("h", at)]);
        });
        assert.deepEqual(after, [true]);
      }));

    it("hash keys with their message's time are new once, in one claim and across transactions", () =>
      withStore(open, undefined, async (store) => {
        const at = Date.UTC(2025, 0, 1, 0, 0, 30);
        const keys: MessageKey[] = [
          { kind: "hash", hash: "a".repeat(64), at },
          { kind: "hash", hash: "b".repeat(64), at: at + 59_000 },
          { kind: "hash", hash: "a".repeat(64), at },
          { kind: "hash", hash: "id:x" },
        ];
        assert.deepEqual(await store.transaction((tx) => tx.claim(keys)), [true, true, false, true]);
        assert.deepEqual(await store.transaction((tx) => tx.claim(keys)), [false, false, false, false]);
      }));

    it("a write refused with StoreDataError writes nothing, and the rest commits", () =>
      withStore(open, { maxSeriesPerEntity: 2 }, async (store) => {
        await store.transaction(async (tx) => {
          await tx.write(batch);
          await assert.rejects(
            tx.write({
              entities: [upsert(A, { x: "changed" }, "2024-02-01T00:00:00Z"), upsert(B, { y: "1" })],
              samples: [sample("2024-05-01T12:00:00Z", 7), sample("2024-05-01T12:00:00Z", 8, row("r3"))],
            }),
            isDataError(),
          );
          await tx.write({ entities: [], samples: [sample("2024-05-01T13:00:00Z", 9, row("r2"))] });
        });
        const entities = await store.listEntities({ includeDeleted: true });
        assert.deepEqual(
          entities.map((e) => e.attributes),
          [{ x: "1" }],
        );
        const id = entities[0]!.id;
        assert.deepEqual(await countsByRow(store), { [`${id}/r1`]: 1, [`${id}/r2`]: 2 });
      }));

    it("calls on a transaction that has ended are refused", () =>
      withStore(open, undefined, async (store) => {
        let kept: Parameters<Parameters<Store["transaction"]>[0]>[0] | undefined;
        await store.transaction(async (tx) => {
          kept = tx;
        });
        assert.ok(kept !== undefined, "work ran");
        await assert.rejects(kept.claim([seq("o", 1)]), /ended/);
        assert.deepEqual(await claim(store, [seq("o", 1)]), [true]);
      }));

    it("ingest is a transaction of one write", () =>
      withStore(open, undefined, async (store) => {
        await store.ingest(batch);
        const id = (await store.listEntities({ includeDeleted: false }))[0]!.id;
        assert.deepEqual(await countsByRow(store), { [`${id}/r1`]: 1, [`${id}/r2`]: 1 });
      }));

    it("ping answers while the store is open", () =>
      withStore(open, undefined, async (store) => {
        await store.ping();
      }));
  });

  describe("events", () => {
    const severity = {
      severity: "CRITICAL",
      active: true,
      snoozed: false,
      snoozedParents: 0,
      userAssigned: false,
      value: { cell: "97", number: 97 },
    };
    const cell: EventTarget = {
      gateway: "gw",
      probe: "p1",
      managedEntity: "a",
      type: "",
      sampler: "cpu",
      dataview: "cpu",
      row: "r1",
      column: "util",
    };
    const events: EventInput[] = [
      event("2024-05-01T10:00:00Z", "severity", A, cell, severity),
      event(
        "2024-05-01T09:00:00Z",
        "snooze",
        A,
        { gateway: "gw", probe: "p1", managedEntity: "a" },
        { snoozed: true, snoozedBy: "ann", comment: "", period: "Manual" },
      ),
      event(
        "2024-05-01T11:00:00Z",
        "userassignment",
        null,
        { gateway: "gw", filter: { osType: "Linux", pluginName: "cpu" } },
        { userAssigned: false, unassignedBy: "bob" },
      ),
      event(
        "2024-05-01T10:00:00Z",
        "severity",
        B,
        { ...cell, managedEntity: "b" },
        { ...severity, severity: "OK" },
      ),
    ];

    it("round trip: stored in time order, arrival order within one instant, entities created", () =>
      withStore(open, undefined, async (store) => {
        await store.ingest({ entities: [upsert(A, { "svc.name": "a" })], samples: [], events });
        const entities = await store.listEntities({ includeDeleted: false });
        assert.deepEqual(
          entities.map((e) => e.attributes),
          [{ "svc.name": "a" }, { "svc.gateway": "gw", "svc.probe": "p1", "svc.name": "b" }],
        );
        const [a, b] = entities.map((e) => e.id);
        const all = await store.listEvents({ limit: 10 });
        assert.deepEqual(all, [
          {
            type: "snooze",
            operation: "create",
            at: t("2024-05-01T09:00:00Z"),
            entityId: a,
            target: events[1]!.target,
            payload: events[1]!.payload,
          },
          {
            type: "severity",
            operation: "create",
            at: t("2024-05-01T10:00:00Z"),
            entityId: a,
            target: cell,
            payload: severity,
          },
          {
            type: "severity",
            operation: "create",
            at: t("2024-05-01T10:00:00Z"),
            entityId: b,
            target: events[3]!.target,
            payload: events[3]!.payload,
          },
          {
            type: "userassignment",
            operation: "create",
            at: t("2024-05-01T11:00:00Z"),
            entityId: null,
            target: events[2]!.target,
            payload: events[2]!.payload,
          },
        ]);
      }));

    // biome-ignore format: one line per case (STYLE 16)
    const queries: { name: string; query: { from?: string; to?: string; entity?: "a" | "b"; types?: EventInput["type"][]; limit: number }; expected: string[] }[] = [
      { name: "from is inclusive, to exclusive", query: { from: "2024-05-01T10:00:00Z", to: "2024-05-01T11:00:00Z", limit: 10 }, expected: ["severity a", "severity b"] },
      { name: "one entity", query: { entity: "a", limit: 10 }, expected: ["snooze a", "severity a"] },
      { name: "some types", query: { types: ["snooze", "userassignment"], limit: 10 }, expected: ["snooze a", "userassignment null"] },
      { name: "limit keeps the earliest", query: { limit: 2 }, expected: ["snooze a", "severity a"] },
      { name: "limit 0 gives nothing", query: { limit: 0 }, expected: [] },
    ];
    for (const q of queries) {
      it(`listEvents: ${q.name}`, () =>
        withStore(open, undefined, async (store) => {
          await store.ingest({ entities: [upsert(A, {})], samples: [], events });
          // Entities by name: A was upserted (no attributes), B made by its event (svc.name "b").
          const names = new Map<number | null, string>([[null, "null"]]);
          for (const e of await store.listEntities({ includeDeleted: true })) {
            names.set(e.id, e.attributes["svc.name"] ?? "a");
          }
          const idOf = (name: string) => [...names].find(([, n]) => n === name)?.[0] ?? -1;
          const { from, to, entity, ...rest } = q.query;
          const got = await store.listEvents({
            ...rest,
            ...(from === undefined ? {} : { from: t(from) }),
            ...(to === undefined ? {} : { to: t(to) }),
            ...(entity === undefined ? {} : { entity: asEntityId(idOf(entity)) }),
          });
          assert.deepEqual(
            got.map((e) => `${e.type} ${names.get(e.entityId)}`),
            q.expected,
          );
        }));
    }

    it("events of a rolled-back transaction are not stored", () =>
      withStore(open, undefined, async (store) => {
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.write({ entities: [], samples: [], events });
            throw new Error("boom");
          }),
        );
        assert.deepEqual(await store.listEvents({ limit: 10 }), []);
        assert.deepEqual(await store.listEntities({ includeDeleted: true }), []);
      }));
  });

  describe("limits and data the store cannot hold", () => {
    it("a new series beyond maxSeriesPerEntity is a StoreDataError naming entity, limit and count", () =>
      withStore(open, { maxSeriesPerEntity: 3 }, async (store) => {
        await store.ingest({
          entities: [],
          samples: ["r1", "r2", "r3"].map((r) => sample("2024-05-01T10:00:00Z", 1, row(r))),
        });
        await assert.rejects(
          store.ingest({ entities: [], samples: [sample("2024-05-01T11:00:00Z", 1, row("r4"))] }),
          isDataError(/"a".*"p1".*"gw".*would have 4 series.*limit of 3/),
        );
        // Known series still take samples; another entity has its own budget.
        await store.ingest({
          entities: [],
          samples: [
            sample("2024-05-01T11:00:00Z", 1, row("r1")),
            ...["r1", "r2", "r3"].map((r) => sample("2024-05-01T11:00:00Z", 1, row(r), B)),
          ],
        });
        await assert.rejects(
          store.ingest({
            entities: [],
            samples: ["x1", "x2", "x3", "x4"].map((r) =>
              sample("2024-05-01T11:00:00Z", 1, row(r), { ...B, managedEntity: "c" }),
            ),
          }),
          isDataError(/would have 4 series/),
        );
        const [a, b] = await entityIds(store);
        assert.deepEqual(await countsByRow(store), {
          [`${a}/r1`]: 2,
          [`${a}/r2`]: 1,
          [`${a}/r3`]: 1,
          [`${b}/r1`]: 1,
          [`${b}/r2`]: 1,
          [`${b}/r3`]: 1,
        });
      }));

    it("the series limit counts a rolled-back transaction's series as never made", () =>
      withStore(open, { maxSeriesPerEntity: 2 }, async (store) => {
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.write({
              entities: [],
              samples: [
                sample("2024-05-01T10:00:00Z", 1, row("r1")),
                sample("2024-05-01T10:00:00Z", 1, row("r2")),
              ],
            });
            throw new Error("boom");
          }),
        );
        await store.ingest({
          entities: [],
          samples: [
            sample("2024-05-01T10:00:00Z", 1, row("r3")),
            sample("2024-05-01T10:00:00Z", 1, row("r4")),
          ],
        });
        await assert.rejects(
          store.ingest({ entities: [], samples: [sample("2024-05-01T10:00:00Z", 1, row("r5"))] }),
          isDataError(/would have 3 series/),
        );
      }));

    const lone = "bad\uD800text";
    // biome-ignore format: one line per case (STYLE 16)
    const cases: [string, IngestBatch][] = [
      ["a sample text with a lone surrogate", { entities: [], samples: [{ ...sample("2024-05-01T10:00:00Z", 1), text: lone }] }],
      ["a low surrogate alone at the end", { entities: [], samples: [{ ...sample("2024-05-01T10:00:00Z", 1), text: "x\uDC00" }] }],
      ["an attribute value with a lone surrogate", { entities: [upsert(A, { x: lone })], samples: [] }],
      ["an attribute name with a lone surrogate", { entities: [upsert(A, { [lone]: "1" })], samples: [] }],
      ["a managed entity name with a lone surrogate", { entities: [upsert({ ...A, managedEntity: lone }, {})], samples: [] }],
      ["a row name with a lone surrogate", { entities: [], samples: [sample("2024-05-01T10:00:00Z", 1, row(lone))] }],
      ["an entity named only by a sample, with a lone surrogate", { entities: [], samples: [sample("2024-05-01T10:00:00Z", 1, row("r1"), { ...A, probe: lone })] }],
      ["an event payload string with a lone surrogate", { entities: [], samples: [], events: [event("2024-05-01T10:00:00Z", "snooze", null, { gateway: "gw" }, { comment: lone })] }],
      ["an event payload key with a lone surrogate", { entities: [], samples: [], events: [event("2024-05-01T10:00:00Z", "snooze", null, { gateway: "gw" }, { nested: [{ [lone]: 1 }] })] }],
      ["an event target with a lone surrogate", { entities: [], samples: [], events: [event("2024-05-01T10:00:00Z", "snooze", null, { gateway: "gw", dataview: lone }, {})] }],
      ["a sample time that is not a number", { entities: [], samples: [{ ...sample("2024-05-01T10:00:00Z", 1), at: asEpochMs(Number.NaN) }] }],
      ["a sample time with a fraction of a millisecond", { entities: [], samples: [{ ...sample("2024-05-01T10:00:00Z", 1), at: asEpochMs(1.5) }] }],
      ["an entity update time beyond the Date range", { entities: [{ ...upsert(A, {}), at: asEpochMs(9e15) }], samples: [] }],
    ];
    for (const [what, bad] of cases) {
      it(`${what} is a StoreDataError, and the store still works`, () =>
        withStore(open, undefined, async (store) => {
          const good: IngestBatch = {
            entities: [upsert(A, { x: "ok" })],
            samples: [sample("2024-05-01T10:00:00Z", 1)],
          };
          await assert.rejects(
            store.ingest({
              entities: [...good.entities, ...bad.entities],
              samples: [...good.samples, ...bad.samples],
              ...(bad.events === undefined ? {} : { events: bad.events }),
            }),
            isDataError(),
          );
          assert.deepEqual(await store.listEntities({ includeDeleted: true }), []);
          await store.ingest(good);
          const [a] = await entityIds(store);
          assert.deepEqual(await countsByRow(store), { [`${a}/r1`]: 1 });
        }));
    }

    it("text with paired surrogates (emoji) is stored as is", () =>
      withStore(open, undefined, async (store) => {
        const smile = "ok \u{1F600}";
        await store.ingest({
          entities: [upsert(A, { [smile]: smile })],
          samples: [sample("2024-05-01T10:00:00Z", 1, row(smile))],
          events: [
            event("2024-05-01T10:00:00Z", "snooze", A, { gateway: "gw", row: smile }, { comment: smile }),
          ],
        });
        const a = asEntityId((await entityIds(store))[0] ?? -1);
        assert.deepEqual((await store.getEntity(a))?.attributes, { [smile]: smile });
        assert.deepEqual(await store.listSeries(a), [{ series: row(smile) }]);
        const [stored] = await store.listEvents({ limit: 1 });
        assert.deepEqual([stored?.target.row, stored?.payload], [smile, { comment: smile }]);
      }));
  });

  describe("samples in columns (IngestBatch.rows)", () => {
    it("store what the same samples one object each store: series, times, texts as sent, numbers", () =>
      withStore(open, undefined, async (store) => {
        const data: [string, string, Record<string, string>][] = [
          ["r1", "2024-05-01T10:00:00Z", { util: "1.50", idle: "n/a", "": "0x10" }],
          ["r2", "2024-05-01T10:00:00Z", { util: " 7 ", idle: "-0" }],
          ["r1", "2024-05-01T10:01:00Z", { idle: "1e3", util: "2" }],
        ];
        // Entity a by single samples, entity b by rows, in one batch.
        const singles: SampleInput[] = data.flatMap(([name, at, values]) =>
          Object.entries(values).map(([column, text]) => {
            const value = Number(text);
            return {
              entity: A,
              series: { ...row(name), column },
              at: t(at),
              text,
              value: text.trim() === "" || !Number.isFinite(value) ? null : value,
            };
          }),
        );
        await store.ingest({
          entities: [],
          samples: singles,
          rows: cells(...data.map((d) => [B, ...d] as const)),
        });
        const [a, b] = (await entityIds(store)).map(asEntityId);
        const expected = [
          "r1/@1714557600000=0x10",
          "r1/idle@1714557600000=n/a",
          "r1/idle@1714557660000=1e3",
          "r1/util@1714557600000=1.50",
          "r1/util@1714557660000=2",
          "r2/idle@1714557600000=-0",
          "r2/util@1714557600000= 7 ",
        ];
        assert.deepEqual(await storedSamples(store, a as EntityId), expected);
        assert.deepEqual(await storedSamples(store, b as EntityId), expected);
        // Numbers aggregate; text that is none does not.
        const names = async (id: EntityId) =>
          (await store.listMetricNames({ entities: [id], includeNonNumeric: false }))
            .map((m) => m.column)
            .sort();
        assert.deepEqual(await names(a as EntityId), await names(b as EntityId));
        assert.deepEqual(await names(b as EntityId), ["", "idle", "util"]);
      }));

    it("texts of numbers read back as sent, whether or not they are the number's canonical text", () =>
      withStore(open, undefined, async (store) => {
        // Canonical ones (a store may keep only the number) beside texts of the same numbers that
        // are not, and numbers past the ranges where a canonical text exists.
        // biome-ignore format: one row of texts per line
        const texts = [
          "7", "7.0", "7.50", "07", "+7", " 7", "-0", "0", "-7", "0.1", "0.10", ".1", "-0.5",
          "1e21", "1e3", "1E3", "0.000001", "0.0001", "0.00015", "0.00009", "1.5e-5", "1e-7",
          "123456789012345678", "9007199254740991", "9007199254740992", "-9007199254740991",
          "1152921504606846976", "0.30000000000000004", "0.1234567890123456789", "4503599627370495.5",
          "1e300", "-1e300", "5e-324", "123.456", "NaN", "Infinity",
        ];
        const data = texts.map(
          (text, i) =>
            [A, "r1", new Date(Date.UTC(2024, 4, 1, 10, i)).toISOString(), { util: text }] as const,
        );
        await store.ingest({ entities: [], samples: [], rows: cells(...data) });
        const [a] = (await entityIds(store)).map(asEntityId);
        const expected = data.map(([, , at, { util }]) => `r1/util@${Date.parse(at)}=${util}`);
        assert.deepEqual(await storedSamples(store, a as EntityId), expected.sort());
      }));

    it("a cached row gaining columns, and rows in any column order, give one series per cell", () =>
      withStore(open, { seriesCacheEntries: 3 }, async (store) => {
        for (const [i, columns] of [
          ["util"],
          ["idle", "util"],
          ["util", "idle", "wait"],
          ["wait"],
        ].entries()) {
          const values = Object.fromEntries(columns.map((c) => [c, String(i)]));
          const at = `2024-05-0${i + 1}T10:00:00Z`;
          await store.ingest({
            entities: [],
            samples: [],
            rows: cells([A, "r1", at, values], [A, "r2", at, values]),
          });
        }
        const [a] = (await entityIds(store)).map(asEntityId);
        const series = (await store.listSeries(a as EntityId)).map(
          (x) => `${x.series.row}/${x.series.column}`,
        );
        assert.deepEqual(series.sort(), ["r1/idle", "r1/util", "r1/wait", "r2/idle", "r2/util", "r2/wait"]);
        assert.equal((await storedSamples(store, a as EntityId)).length, 14);
      }));

    it("only the cells some row names are stored or checked", () =>
      withStore(open, undefined, async (store) => {
        const rows = new SampleRowsBuilder();
        for (const [column, text] of [
          ["util", "1"],
          ["skipped", "\ud800"],
          ["idle", "2"],
          ["wait", "3"],
        ] as const) {
          rows.cell(column, text, Number(text));
        }
        rows.row(A, "cpu", "linux", "cpu", "r1", t("2024-05-01T10:00:00Z"), 0, 1);
        rows.row(A, "cpu", "linux", "cpu", "r1", t("2024-05-01T10:01:00Z"), 2, 3);
        await store.ingest({ entities: [], samples: [], rows });
        const [a] = (await entityIds(store)).map(asEntityId);
        assert.deepEqual(await storedSamples(store, a as EntityId), [
          "r1/idle@1714557660000=2",
          "r1/util@1714557600000=1",
        ]);
      }));

    it("a batch of more cells than one chunk holds (4 096) stores each cell as sent", () =>
      withStore(open, undefined, async (store) => {
        const start = t("2024-05-01T00:00:00Z");
        const data = Array.from({ length: 1000 }, (_, i) => {
          const values: Record<string, string> = {};
          for (let c = 0; c < 5; c++) values[`m${c}`] = String(i * 5 + c);
          return [A, "r1", new Date(start + i * 60_000).toISOString(), values] as const;
        });
        await store.ingest({ entities: [], samples: [], rows: cells(...data) });
        const [a] = (await entityIds(store)).map(asEntityId);
        const expected = data.flatMap(([, , at, values]) =>
          Object.entries(values).map(([column, text]) => `r1/${column}@${Date.parse(at)}=${text}`),
        );
        assert.deepEqual(await storedSamples(store, a as EntityId), expected.sort());
      }));

    it("an entity named only by rows is made with the attributes its key gives", () =>
      withStore(open, undefined, async (store) => {
        await store.ingest({
          entities: [],
          samples: [],
          rows: cells([B, "r1", "2024-05-01T10:00:00Z", { util: "1" }]),
        });
        const [entity] = await store.listEntities({ includeDeleted: false });
        assert.deepEqual(entity?.attributes, { "svc.gateway": "gw", "svc.probe": "p1", "svc.name": "b" });
      }));

    it("a lone surrogate in a cell or a column name, or a series past the limit, is a StoreDataError that writes nothing", () =>
      withStore(open, { maxSeriesPerEntity: 2 }, async (store) => {
        await store.ingest({
          entities: [],
          samples: [],
          rows: cells([A, "r1", "2024-05-01T10:00:00Z", { util: "1" }]),
        });
        const refused = [
          cells(
            [A, "r1", "2024-05-01T11:00:00Z", { util: "2" }],
            [A, "r1", "2024-05-01T11:00:00Z", { x: "\ud800" }],
          ),
          cells([A, "r1", "2024-05-01T11:00:00Z", { util: "2", "\udc00": "1" }]),
          cells([A, "r1", "2024-05-01T11:00:00Z", { util: "2", idle: "1", wait: "1" }]),
        ];
        for (const rows of refused) {
          await assert.rejects(store.ingest({ entities: [], samples: [], rows }), isDataError());
        }
        const [a] = (await entityIds(store)).map(asEntityId);
        assert.deepEqual(await storedSamples(store, a as EntityId), ["r1/util@1714557600000=1"]);
      }));
  });

  describe("series cache", () => {
    it("a cache smaller than the series in use gives the same ids, without duplicate series", () =>
      withStore(open, { seriesCacheEntries: 2 }, async (store) => {
        const rows = range(0, 9).map((i) => `r${i}`);
        for (let round = 0; round < 3; round++) {
          await store.ingest({
            entities: [],
            samples: rows.map((r, i) => sample(`2024-05-0${round + 1}T10:00:0${i}Z`, i, row(r))),
          });
        }
        const a = (await entityIds(store))[0] ?? -1;
        assert.equal((await store.listSeries(asEntityId(a))).length, 10);
        assert.deepEqual(await countsByRow(store), Object.fromEntries(rows.map((r) => [`${a}/${r}`, 3])));
      }));
  });

  if (persistent === undefined) return;

  describe("across a close and reopen", () => {
    it("claims survive", async () => {
      const reopen = persistent();
      await withStore(reopen, undefined, async (store) => {
        await claim(store, [...seqs("o", 1, 2, 3, 7), hash("h")]);
      });
      await withStore(reopen, undefined, async (store) => {
        assert.deepEqual(await claim(store, [...seqs("o", 3, 4, 6, 7, 8), hash("h"), hash("i")]), [
          false,
          true,
          true,
          false,
          true,
          false,
          true,
        ]);
        assert.deepEqual(await claim(store, seqs("o", ...range(1, 9))), [
          false,
          false,
          false,
          false,
          true,
          false,
          false,
          false,
          true,
        ]);
      });
    });

    it("series are looked up on demand: same ids, no duplicates, with a tiny cache", async () => {
      const reopen = persistent();
      const rows = range(0, 9).map((i) => `r${i}`);
      await withStore(reopen, undefined, async (store) => {
        await store.ingest({
          entities: [upsert(A, { which: "a" }), upsert(B, { which: "b" })],
          samples: [
            ...rows.map((r) => sample("2024-05-01T10:00:00Z", 1, row(r))),
            sample("2024-05-01T10:00:00Z", 1, row("r0"), B),
          ],
        });
      });
      await withStore(reopen, { seriesCacheEntries: 2 }, async (store) => {
        await store.ingest({
          entities: [],
          samples: [
            ...rows.map((r) => sample("2024-05-02T10:00:00Z", 1, row(r))),
            sample("2024-05-02T10:00:00Z", 1, row("new")),
            sample("2024-05-02T10:00:00Z", 1, row("r0"), B),
          ],
        });
        // A and B were upserted together; A's attributes tell it apart.
        const entities = await store.listEntities({ includeDeleted: false });
        const a = entities.find((e) => e.attributes.which === "a")?.id ?? asEntityId(-1);
        const b = entities.find((e) => e.attributes.which === "b")?.id ?? asEntityId(-1);
        assert.equal((await store.listSeries(a)).length, 11);
        assert.equal((await store.listSeries(b)).length, 1);
        assert.deepEqual(await countsByRow(store), {
          ...Object.fromEntries(rows.map((r) => [`${a}/${r}`, 2])),
          [`${a}/new`]: 1,
          [`${b}/r0`]: 2,
        });
      });
    });

    it("the series limit counts the series stored before the reopen", async () => {
      const reopen = persistent();
      await withStore(reopen, { maxSeriesPerEntity: 3 }, async (store) => {
        await store.ingest({
          entities: [],
          samples: ["r1", "r2", "r3"].map((r) => sample("2024-05-01T10:00:00Z", 1, row(r))),
        });
      });
      await withStore(reopen, { maxSeriesPerEntity: 3 }, async (store) => {
        await assert.rejects(
          store.ingest({ entities: [], samples: [sample("2024-05-01T10:00:00Z", 1, row("r4"))] }),
          isDataError(/would have 4 series \(3 stored, 1 new\)/),
        );
        await store.ingest({ entities: [], samples: [sample("2024-05-02T10:00:00Z", 1, row("r3"))] });
      });
    });

    it("events survive", async () => {
      const reopen = persistent();
      const e = event(
        "2024-05-01T10:00:00Z",
        "snooze",
        A,
        { gateway: "gw", probe: "p1", managedEntity: "a" },
        { snoozed: false, unsnoozedBy: "ann" },
      );
      await withStore(reopen, undefined, (store) => store.ingest({ entities: [], samples: [], events: [e] }));
      await withStore(reopen, undefined, async (store) => {
        const [id] = await entityIds(store);
        assert.deepEqual(await store.listEvents({ limit: 5 }), [
          {
            type: "snooze",
            operation: "create",
            at: e.at,
            entityId: id,
            target: e.target,
            payload: e.payload,
          },
        ]);
      });
    });
  });
}
