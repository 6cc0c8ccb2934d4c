/**
 * The hub's entity cache (src/hub/store/entity-cache.ts) on real stores: it answers what the store
 * answers after every change (DuckDB, and PostgreSQL with two stores on one database, as two hubs
 * sharing it), and past its count or byte bound it holds nothing and still answers the same.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import { EntityCache, entityBytes, withEntityCache } from "../../../src/hub/store/entity-cache.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import type { EntityUpsert, Store } from "../../../src/hub/store/store.js";
import { withOutageErrors } from "../../../src/hub/store/store-outage.js";
import { asEntityId, asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const reachable = await postgresReachable();

function upsert(name: string, attributes: Record<string, string>, at: number, deleted = false): EntityUpsert {
  return {
    key: { gateway: "GW", probe: "p1", managedEntity: name },
    attributes: { "svc.gateway": "GW", "svc.probe": "p1", "svc.name": name, ...attributes },
    deleted,
    at: asEpochMs(at),
  };
}

async function write(store: Store, ...entities: EntityUpsert[]): Promise<void> {
  await store.ingest({ entities, samples: [] });
}

/** A `probe` message's write: the probe's row, which every entity of it shows. */
async function writeProbe(store: Store, hostname: string, at: number): Promise<void> {
  await store.ingest({
    entities: [],
    samples: [],
    probes: [{ gateway: "GW", probe: "p1", osType: "Linux", hostname, at: asEpochMs(at), fallback: false }],
  });
}

const hostnames = async (store: Store) =>
  (await store.listEntities({ includeDeleted: true })).map((e) => e.attributes["svc.hostname"]);

/** Both lists and every entity by id, through `store` (the cached one or the store itself). */
async function view(store: Store): Promise<unknown> {
  const all = await store.listEntities({ includeDeleted: true });
  const live = await store.listEntities({ includeDeleted: false });
  const byId = await Promise.all(all.map((e) => store.getEntity(e.id)));
  return { all, live, byId, missing: await store.getEntity(asEntityId(1_000_000)) };
}

describe("EntityCache on DuckDB", () => {
  let store: Store;
  before(async () => {
    store = await createDuckDbStore({ path: ":memory:" });
    await store.migrate();
  });
  after(() => store.close());

  test("answers what the store answers after each change, reading the store only after a change", async () => {
    const cache = new EntityCache(store, { maxEntries: 100, maxBytes: 1 << 20 });
    const cached = withEntityCache(store, cache);
    await write(store, upsert("a", { "user.Region": "emea" }, 1), upsert("b", {}, 1));
    assert.deepEqual(await view(cached), await view(store));
    const reads = cache.status().reads;
    assert.deepEqual(await view(cached), await view(store));
    assert.equal(cache.status().reads, reads, "no change, no read");
    assert.equal(cache.status().state, "holding");

    await write(store, upsert("a", { "user.Region": "amer" }, 2));
    assert.equal(
      (await cached.listEntities({ includeDeleted: false })).find((e) => e.attributes["svc.name"] === "a")
        ?.attributes["user.Region"],
      "amer",
    );
    await write(store, upsert("b", {}, 3, true), upsert("c", Object.fromEntries([["__proto__", "x"]]), 3));
    assert.deepEqual(await view(cached), await view(store));
    // DuckDB tells which entities changed: only those were read again.
    assert.equal(cache.status().reads, reads);
    assert.ok(cache.status().updates >= 2);
  });

  test("a probe's row written alone changes every entity of the probe", async () => {
    const cache = new EntityCache(store, { maxEntries: 100, maxBytes: 1 << 20 });
    const cached = withEntityCache(store, cache);
    await writeProbe(store, "host-1", 4);
    assert.deepEqual(await view(cached), await view(store));
    const reads = cache.status().reads;
    await writeProbe(store, "host-2", 5);
    assert.deepEqual(await view(cached), await view(store));
    assert.ok((await hostnames(cached)).every((h) => h === "host-2"));
    assert.equal(cache.status().reads, reads, "only the probe's entities were read again");
  });

  test("through the hub's outage wrapper, only the changed entities are read again", async () => {
    const outer = withOutageErrors(store);
    const cache = new EntityCache(outer, { maxEntries: 100, maxBytes: 1 << 20 });
    const cached = withEntityCache(outer, cache);
    assert.deepEqual(await view(cached), await view(store));
    await write(store, upsert("e", { "user.Rack": "r1" }, 6));
    assert.deepEqual(await view(cached), await view(store));
    assert.deepEqual(cache.status(), { ...cache.status(), reads: 1, updates: 1 });
  });

  test("a cache that has missed a reopen of the file reads every entity", async () => {
    const cache = new EntityCache(store, { maxEntries: 100, maxBytes: 1 << 20 });
    const cached = withEntityCache(store, cache);
    await cached.listEntities({ includeDeleted: true });
    const version = await store.entityVersion?.();
    assert.ok(version !== undefined);
    const [reopens, n] = version.split(":").map(Number);
    assert.equal(await store.changedEntities?.(`${(reopens ?? 0) + 1}:${n}`), undefined);
    const changed = await store.changedEntities?.(version);
    assert.deepEqual(changed, { version, records: [] });
  });

  test("past its byte bound it holds nothing and answers from the store; under it again, it holds", async () => {
    const fresh = await createDuckDbStore({ path: ":memory:" });
    await fresh.migrate();
    try {
      await write(fresh, upsert("small", {}, 1));
      const one = (await fresh.listEntities({ includeDeleted: true }))[0];
      assert.ok(one !== undefined);
      const bound = entityBytes(one) * 3;
      const cache = new EntityCache(fresh, { maxEntries: 100, maxBytes: bound });
      const cached = withEntityCache(fresh, cache);
      assert.deepEqual(await view(cached), await view(fresh));
      assert.equal(cache.status().state, "holding");
      assert.ok(cache.status().bytes <= bound);

      // 64 attributes of 4 KiB: far past the bound.
      const heavy: Record<string, string> = {};
      for (let i = 0; i < 64; i++) heavy[`user.A${i}`] = "v".repeat(4096);
      await write(fresh, upsert("heavy", heavy, 2));
      assert.deepEqual(await view(cached), await view(fresh));
      assert.equal(cache.status().state, "over its bound");
      assert.equal(cache.status().bytes, 0);

      await write(fresh, upsert("heavy", {}, 3, true));
      assert.deepEqual(await view(cached), await view(fresh));
      assert.equal(cache.status().state, "holding");
      assert.ok(cache.status().bytes <= bound);
    } finally {
      await fresh.close();
    }
  });

  test("past its count bound it holds nothing and answers from the store", async () => {
    const fresh = await createDuckDbStore({ path: ":memory:" });
    await fresh.migrate();
    try {
      await write(fresh, upsert("x", {}, 1), upsert("y", {}, 1), upsert("z", {}, 1));
      const cache = new EntityCache(fresh, { maxEntries: 2, maxBytes: 1 << 20 });
      const cached = withEntityCache(fresh, cache);
      assert.deepEqual(await view(cached), await view(fresh));
      assert.equal(cache.status().state, "over its bound");
    } finally {
      await fresh.close();
    }
  });

  test("concurrent callers after a change share one read", async () => {
    const cache = new EntityCache(store, { maxEntries: 100, maxBytes: 1 << 20 });
    const cached = withEntityCache(store, cache);
    await write(store, upsert("d", {}, 5));
    const before = cache.status().reads;
    const lists = await Promise.all(
      Array.from({ length: 5 }, () => cached.listEntities({ includeDeleted: true })),
    );
    assert.equal(cache.status().reads, before + 1);
    for (const list of lists) assert.deepEqual(list, await store.listEntities({ includeDeleted: true }));
  });
});

describe("EntityCache on PostgreSQL, two stores on one database", {
  skip: needs(reachable ? false : PG_SKIP),
}, () => {
  let db: PgTestDatabase;
  let first: Store;
  let second: Store;
  before(async () => {
    db = await PgTestDatabase.create("entity_cache");
    const url = await db.freshUrl();
    first = await createPostgresStore({ url });
    second = await createPostgresStore({ url });
    await first.migrate();
    await second.migrate();
  });
  after(async () => {
    await first?.close();
    await second?.close();
    await db?.drop();
  });

  test("a hub's cache sees what another hub committed", async () => {
    const cache = new EntityCache(second, { maxEntries: 100, maxBytes: 1 << 20 });
    const cached = withEntityCache(second, cache);
    await write(first, upsert("a", { "user.Tier": "1" }, 1));
    assert.deepEqual(await view(cached), await view(first));
    const reads = cache.status().reads;
    assert.deepEqual(await view(cached), await view(first));
    assert.equal(cache.status().reads, reads, "no change, no read");

    // An update by the other hub: same count of entities, new attributes.
    await write(first, upsert("a", { "user.Tier": "2" }, 2));
    assert.deepEqual(await view(cached), await view(first));
    assert.equal((await cached.listEntities({ includeDeleted: true }))[0]?.attributes["user.Tier"], "2");
    // A deletion and a new entity.
    await write(first, upsert("a", {}, 3, true), upsert("b", {}, 3));
    assert.deepEqual(await view(cached), await view(first));
    assert.equal((await cached.listEntities({ includeDeleted: false })).length, 1);
    // A probe message stored by the other hub: the probe's row alone changes.
    await writeProbe(first, "host-1", 4);
    assert.deepEqual(await view(cached), await view(first));
    await writeProbe(first, "host-2", 5);
    assert.deepEqual(await view(cached), await view(first));
    assert.deepEqual(await hostnames(cached), ["host-2", "host-2"]);
  });
});
