/**
 * A failed write fails that write only, on PostgreSQL too (DESIGN 5.4b, last bullet). The failures
 * are the real server's, set up by the test in its throwaway database: a CHECK constraint that
 * refuses long managed-entity names (SQLSTATE 23514, a refusal of the data), and a trigger that
 * raises an error for one entity (SQLSTATE P0001, a statement that fails for a reason of its own).
 * Expected: the message the constraint refuses is the only one rejected (the others of its batch
 * are stored); the batch the trigger fails answers 503 with `Retry-After` and the error body; every
 * other write and every query goes on answering.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { openStore } from "../../src/hub/store/open-store.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../helpers/postgres.js";
import { hubCalls } from "./store-helpers.js";

const reachable = await postgresReachable();
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

describe("a failed PostgreSQL write", { skip: reachable ? false : PG_SKIP, timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "vigil-store-pg-"));
  let db: PgTestDatabase | undefined;
  let hub: Hub | undefined;

  const { call, names } = hubCalls(() => (hub as Hub).http);

  before(async () => {
    db = await PgTestDatabase.create("write");
    const url = await db.freshUrl();
    const store = await openStore(url, dir);
    hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir: dir });
    await store.migrate();
    await hub.ingester.init();
    const schema = new URL(url).searchParams.get("search_path");
    await db.sql.unsafe(`SET search_path = ${schema}`);
    await db.sql.unsafe(
      `ALTER TABLE ${schema}.entities ADD CONSTRAINT short_names CHECK (length(managed_entity) <= 20)`,
    );
    await db.sql.unsafe(`CREATE FUNCTION ${schema}.refuse_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.managed_entity = 'blocked' THEN RAISE EXCEPTION 'entity blocked by the operator'; END IF;
        RETURN NEW;
      END $$`);
    await db.sql.unsafe(`CREATE TRIGGER refuse_blocked BEFORE INSERT OR UPDATE ON ${schema}.entities
      FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_blocked()`);
  });
  after(async () => {
    await hub?.stop();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a message the database refuses is rejected alone; the rest of its batch is stored", async () => {
    const long = "x".repeat(40);
    const r = await call("POST", "/v0/messages", [entity("a1", 1), entity(long, 2), entity("a2", 3)]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.accepted, 2);
    const rejected = r.body.rejected as { index: number; error: string }[];
    assert.deepEqual(
      rejected.map((x) => x.index),
      [1],
    );
    assert.match(rejected[0]?.error ?? "", /SQLSTATE 23514/);
    assert.deepEqual(await names(), ["a1", "a2"]);
  });

  test("a write the database fails answers 503; other writes and the queries go on", async () => {
    const r = await call("POST", "/v0/messages", [entity("blocked", 4)]);
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.retryAfter, "1");
    assert.deepEqual(Object.keys(r.body).sort(), ["body", "status", "title"]);
    assert.match(String(r.body.body), /could not commit the write \(SQLSTATE P0001\)/);
    assert.doesNotMatch(String(r.body.body), /\n\s+at /);
    assert.deepEqual(await names(), ["a1", "a2"]);
    const next = await call("POST", "/v0/messages", [entity("a3", 5)]);
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.deepEqual(await names(), ["a1", "a2", "a3"]);
    assert.equal((await call("GET", "/v0/ping")).status, 200);
  });
});
