/**
 * DuckDB's cache of table blocks after a commit (duckdb-block-cache.ts): trimmed to its bound with
 * `memory_limit` set back, never while another statement could run, and a limit that cannot be set
 * back makes the store reopen its file. The test keeps a connection of its own to the store's
 * instance (the `openInstance` option), fills the cache by scanning a table of its own, and reads
 * the cache's size from `duckdb_memory()`.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { BlockCache, memoryLimitSql } from "../../../src/hub/store/duckdb/duckdb-block-cache.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import type { IngestBatch, Store } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { eventually } from "../../helpers/vigil-process.js";

const MIB = 1024 * 1024;
const LIMIT = "256MB";

const dir = await mkdtemp(join(tmpdir(), "vigil-block-cache-"));
after(() => rm(dir, { recursive: true, force: true }));
let files = 0;

/** One sample of `me`, at minute `i` of a day. */
function batch(i: number): IngestBatch {
  const key = { gateway: "gw", probe: "p", managedEntity: "me" };
  const at = asEpochMs(Date.UTC(2024, 4, 1) + i * 60_000);
  return {
    entities: [{ key, attributes: { "svc.name": "me" }, deleted: false, at }],
    samples: [
      {
        entity: key,
        series: { sampler: "s", samplerType: "", dataview: "d", row: "r", column: "c" },
        at,
        text: String(i),
        value: i,
      },
    ],
  };
}

/** The reader's methods that run a statement, which the gate holds. */
const STATEMENTS = new Set<string | symbol>(["run", "runAndReadAll", "stream", "prepare"]);

interface Opened {
  readonly store: Store;
  /** The test's own connection to the store's instance. */
  readonly own: DuckDBConnection;
  /** Holds every statement of the store's reader until `release()`. */
  holdReader(): { release(): void };
}

/**
 * A store on a new file with `cache`, the test's own connection, and a gate on the store's reader
 * (its second connection).
 */
async function open(cache: BlockCache): Promise<Opened> {
  files += 1;
  let own: DuckDBConnection | undefined;
  let gate: Promise<void> | undefined;
  const store = await createDuckDbStore({
    path: join(dir, `store-${files}.duckdb`),
    memoryLimit: LIMIT,
    blockCache: cache,
    async openInstance(path, config) {
      const instance = await DuckDBInstance.create(path, config);
      own = await instance.connect();
      let connections = 0;
      return new Proxy(instance, {
        get(target, prop) {
          if (prop !== "connect") {
            const v = Reflect.get(target, prop, target) as unknown;
            return typeof v === "function" ? v.bind(target) : v;
          }
          return async () => {
            const connection = await target.connect();
            connections += 1;
            if (connections !== 2) return connection;
            return new Proxy(connection, {
              get(c, name) {
                const v = Reflect.get(c, name, c) as unknown;
                if (typeof v !== "function") return v;
                if (!STATEMENTS.has(name)) return v.bind(c);
                return async (...args: unknown[]) => {
                  if (gate !== undefined) await gate;
                  return (v as (...a: unknown[]) => unknown).apply(c, args);
                };
              },
            });
          };
        },
      });
    },
  });
  await store.migrate();
  assert.ok(own !== undefined);
  return {
    store,
    own,
    holdReader() {
      let release: () => void = () => undefined;
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      return {
        release() {
          gate = undefined;
          release();
        },
      };
    },
  };
}

/** Bytes of table blocks in DuckDB's buffer pool. */
async function cached(own: DuckDBConnection): Promise<number> {
  const r = await own.runAndReadAll(
    "SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory() WHERE tag = 'BASE_TABLE'",
  );
  return Number(r.getRows()[0]?.[0] ?? 0);
}

async function memoryLimit(own: DuckDBConnection): Promise<string> {
  const r = await own.runAndReadAll("SELECT current_setting('memory_limit')");
  return String(r.getRows()[0]?.[0]);
}

/** Fills the cache with about 16 MiB of a table of the test's own, written and scanned. */
async function fill(own: DuckDBConnection): Promise<void> {
  await own.run("CREATE OR REPLACE TABLE filler AS SELECT random() AS v FROM range(2000000)");
  await own.run("CHECKPOINT");
  await own.runAndReadAll("SELECT sum(v) FROM filler");
}

describe("DuckDB block cache", { timeout: 120_000 }, () => {
  it("a commit trims the cached blocks to the bound and sets memory_limit back", async () => {
    const cache = new BlockCache(LIMIT, 2 * MIB, 0);
    const { store, own } = await open(cache);
    try {
      const limit = await memoryLimit(own);
      await fill(own);
      const before = await cached(own);
      assert.ok(before > 8 * MIB, `the scan left ${before} bytes of blocks`);
      await store.ingest(batch(1));
      assert.equal(cache.trims, 1);
      const left = await cached(own);
      assert.ok(left <= 2 * MIB, `${left} bytes of blocks left after the trim`);
      assert.equal(await memoryLimit(own), limit, "memory_limit is the store's own again");
      // Every sample is still there: evicting drops only the cached copy of the file's blocks.
      const r = await own.runAndReadAll("SELECT count(*)::INTEGER FROM filler");
      assert.equal(r.getRows()[0]?.[0], 2_000_000);
      await store.ingest(batch(2));
      assert.equal(cache.trims, 1, "nothing to trim");
    } finally {
      await store.close();
    }
  });

  it("keeps the blocks below the bound", async () => {
    const cache = new BlockCache(LIMIT, 256 * MIB, 0);
    const { store, own } = await open(cache);
    try {
      await fill(own);
      const before = await cached(own);
      await store.ingest(batch(1));
      assert.equal(cache.trims, 0);
      assert.ok((await cached(own)) >= before - MIB, "the blocks stay");
    } finally {
      await store.close();
    }
  });

  it("does not trim while another statement of the store may run, and trims after it", async () => {
    const cache = new BlockCache(LIMIT, 2 * MIB, 0);
    const { store, own, holdReader } = await open(cache);
    try {
      const limit = await memoryLimit(own);
      await fill(own);
      const hold = holdReader();
      const reading = store.listEntities({ includeDeleted: false });
      await store.ingest(batch(1));
      assert.equal(cache.trims, 0, "the reader had a statement waiting");
      assert.ok((await cached(own)) > 8 * MIB, "the blocks stay");
      assert.equal(await memoryLimit(own), limit);
      hold.release();
      await reading;
      await store.ingest(batch(2));
      assert.equal(cache.trims, 1);
      assert.ok((await cached(own)) <= 2 * MIB);
    } finally {
      await store.close();
    }
  });

  it("checks no more often than its interval", () => {
    let now = 0;
    const cache = new BlockCache(LIMIT, MIB, 250, () => now);
    assert.equal(cache.takeCheck(), true);
    now = 249;
    assert.equal(cache.takeCheck(), false);
    now = 250;
    assert.equal(cache.takeCheck(), true);
    assert.equal(cache.takeCheck(), false);
  });

  it("sets the lower limit in whole KiB", () => {
    assert.equal(memoryLimitSql(10 * MIB + 1), "SET memory_limit = '10241KiB'");
    assert.equal(memoryLimitSql(-5), "SET memory_limit = '1KiB'");
  });

  it("a memory_limit that cannot be set back makes the store reopen its file", async () => {
    class Failing extends BlockCache {
      override async trim(): Promise<never> {
        throw new Error("Invalid Input Error: the limit was not set back");
      }
    }
    const { store, own } = await open(new Failing(LIMIT, 2 * MIB, 0));
    try {
      await fill(own);
      await store.ingest(batch(1));
      const health = store.health?.();
      assert.equal(health?.state, "reopening");
      assert.match(health?.state === "reopening" ? health.reason : "", /memory_limit could not be set back/);
      await eventually(async () => (store.health?.().reopens === 1 ? true : undefined), 30_000);
      assert.equal(store.health?.().state, "ok");
    } finally {
      await store.close();
    }
  });
});
