/**
 * A fatal DuckDB error does not leave the hub answering 500 forever (DESIGN 5.4b, last bullet).
 *
 * The fatal error is DuckDB's own: the test keeps a connection of its own to the store's instance
 * (through the store's `openInstance` option, which opens the real instance) and makes a checkpoint
 * fail with DuckDB's `debug_checkpoint_abort` setting, which raises the FATAL error a failed
 * checkpoint raises and invalidates the instance, as an out-of-memory or I/O failure during a
 * checkpoint does. From then on every statement on any connection of that instance fails with
 * "database has been invalidated". Expected: the query that meets it and everything after answer
 * 503 with `Retry-After` and the error body, `/v0/ping` is 503 and `/v1/status` says why, until
 * the store has reopened its file; then everything answers again, with every acknowledged entity,
 * without a restart. The test holds the reopen until it has looked at the 503s.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import { withOutageErrors } from "../../src/hub/store/store-outage.js";
import { eventually } from "../helpers/vigil-process.js";
import { type HubAnswer, hubCalls } from "./store-helpers.js";

const setup = parseSetup("gateway: { name: G }\nhub: { security: { enabled: false } }\n");
const T0 = Date.UTC(2026, 4, 1);

function entity(name: string, i: number): unknown {
  return {
    type: "managedEntity",
    operation: "create",
    data: {
      timestamp: new Date(T0 + i).toISOString(),
      target: { gateway: "G", probe: "p", managedEntity: name },
      attributes: { Region: `r${i}` },
    },
  };
}

describe("a fatal DuckDB error", { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "vigil-store-fatal-"));
  let hub: Hub | undefined;
  after(async () => {
    await hub?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("answers 503 until the store has reopened its file, then everything again", async () => {
    let opens = 0;
    let own: DuckDBConnection | undefined;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const store = withOutageErrors(
      await createDuckDbStore({
        path: join(dir, "hub.duckdb"),
        memoryLimit: "64MB",
        async openInstance(path, config) {
          opens += 1;
          if (opens > 1) await held;
          const instance = await DuckDBInstance.create(path, config);
          if (opens === 1) own = await instance.connect();
          return instance;
        },
      }),
    );
    hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir: join(dir, "data") });
    await store.migrate();
    await hub.ingester.init();
    const http = hub.http;
    const { call, names } = hubCalls(() => http);
    const unavailable = (r: HubAnswer, what: string) => {
      assert.equal(r.status, 503, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.retryAfter, "1", `${what} carries Retry-After`);
      assert.deepEqual(Object.keys(r.body).sort(), ["body", "status", "title"], what);
      assert.doesNotMatch(String(r.body.body), /\n\s+at /, `${what}: no stack trace`);
    };

    const first = await call("POST", "/v0/messages", [entity("e1", 1), entity("e2", 2), entity("e3", 3)]);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(await names(), ["e1", "e2", "e3"]);

    // DuckDB's fatal error: a checkpoint that fails invalidates the instance.
    assert.ok(own !== undefined);
    await own.run("SET debug_checkpoint_abort = 'before_header'");
    await assert.rejects(own.run("CHECKPOINT"), /FATAL Error/);
    own.closeSync();

    // The first statement of the store meets the invalidated instance: 503, and the store reopens.
    // (The entity list alone runs no statement while the hub's entity cache is current: the summary
    // reads the latest severities.)
    unavailable(await call("GET", "/v0/entities/summary"), "a query on the invalidated instance");
    const ping = await call("GET", "/v0/ping");
    unavailable(ping, "/v0/ping");
    assert.match(String(ping.body.body), /reopening after a fatal error/);
    const status = await call("GET", "/v1/status");
    assert.equal(status.status, 200);
    assert.equal((status.body.storeState as { state: string }).state, "unavailable");
    unavailable(await call("POST", "/v0/messages", [entity("e4", 4)]), "a backfill while reopening");
    unavailable(await call("GET", "/v0/entities"), "a query while reopening");

    release();
    await eventually(async () => ((await call("GET", "/v0/ping")).status === 200 ? true : undefined), 30_000);
    assert.deepEqual(await names(), ["e1", "e2", "e3"], "every acknowledged entity, without a restart");
    const again = await call("POST", "/v0/messages", [entity("e4", 4)]);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(await names(), ["e1", "e2", "e3", "e4"]);
    const after = await call("GET", "/v1/status");
    assert.deepEqual(after.body.storeState, { state: "ok", reopens: 1, entityReads: "one scan" });
    assert.equal(opens, 2);
  });
});
