/**
 * `/v0/ping`'s store check (src/hub/store-ping.ts) on a real DuckDB store: callers share one store
 * ping at a time, a store that answered a moment ago answers at once, and a store whose ping fails
 * is a 503 that says why.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { VigilError } from "../../src/errors/catalog.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import type { Store } from "../../src/hub/store/store.js";
import { StorePing } from "../../src/hub/store-ping.js";

/** `store`, counting its pings (every call goes to the real store). */
function counted(store: Store): { store: Store; pings: () => number } {
  let pings = 0;
  const wrapped = new Proxy(store, {
    get(target, property) {
      if (property === "ping")
        return () => {
          pings += 1;
          return target.ping();
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, pings: () => pings };
}

describe("StorePing", () => {
  test("concurrent checks share one store ping; one just after an answer needs none", async () => {
    const real = await createDuckDbStore({ path: ":memory:" });
    try {
      const { store, pings } = counted(real);
      const ping = new StorePing(store);
      await Promise.all(Array.from({ length: 20 }, () => ping.check()));
      assert.equal(pings(), 1);
      await ping.check();
      assert.equal(pings(), 1, "answered a moment ago: no new store ping");
    } finally {
      await real.close();
    }
  });

  test("a store whose ping fails is a 503 naming the failure, and stays one", async () => {
    const store = await createDuckDbStore({ path: ":memory:" });
    await store.close();
    const ping = new StorePing(store);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(ping.check(), (error: unknown) => {
        assert.ok(error instanceof VigilError);
        assert.equal(error.status, 503);
        assert.match(error.body, /duckdb store cannot answer \(the ping failed\)/);
        return true;
      });
    }
  });
});
