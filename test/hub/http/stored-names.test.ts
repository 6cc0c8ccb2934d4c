/**
 * DESIGN 5.1 "What the hub says about a metric comes from what it stored, not from its own setup
 * file": a hub whose setup lists no probe and no sampler, fed by backfill (`POST /v0/messages`) and
 * by the in-process bus, answers the `plugin` filter and each metric's `type` from what the
 * messages carried, and again after a restart on the same file. Two hubs on one PostgreSQL
 * database, one receiving the probe message and the other the managed entity's, both show the
 * probe's OS type and host name on the entity.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { MessageIdSource } from "../../../src/bus/envelope.js";
import { MemoryBus } from "../../../src/bus/memory-bus.js";
import { parseSetup } from "../../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../../src/hub/app.js";
import { Ingester } from "../../../src/hub/ingest/ingester.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import type { PublicV2Message } from "../../../src/messages/types.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

/** No probes, no samplers: nothing the hub says of a metric can come from here. */
const setup = parseSetup("gateway: { name: GW }\nhub: { security: { enabled: false } }\n");
const logger = pino({ level: "silent" });
const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();

const table = (
  probe: string,
  me: string,
  plugin: string,
  cells: Record<string, string>,
  at: number,
  row = "r1",
): PublicV2Message =>
  ({
    type: "table",
    operation: "update",
    data: {
      sampleTime: iso(at),
      target: {
        gateway: "GW",
        probe,
        managedEntity: me,
        type: "",
        sampler: "orders",
        dataview: "queue",
        row,
        filter: { osType: "Linux", pluginName: plugin },
      },
      row: cells,
    },
  }) as PublicV2Message;

const probeMessage: PublicV2Message = {
  type: "probe",
  operation: "create",
  data: {
    timestamp: iso(T0),
    target: { gateway: "GW", probe: "p1" },
    parameters: { osType: "Linux", HostName: "host-1" },
  },
} as PublicV2Message;

const entityMessage: PublicV2Message = {
  type: "managedEntity",
  operation: "create",
  data: {
    timestamp: iso(T0),
    target: { gateway: "GW", probe: "p1", managedEntity: "web-01" },
    attributes: {},
  },
} as PublicV2Message;

describe("metrics answered from what the hub stored (setup lists no probes or samplers)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "vigil-stored-names-"));
  const path = join(dataDir, "hub.duckdb");
  let hub: Hub | undefined;
  let base = "";
  after(async () => {
    await hub?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (): Promise<MemoryBus> => {
    const bus = new MemoryBus(logger);
    const store = await createDuckDbStore({ path, memoryLimit: "256MB" });
    hub = await buildHub({ setup, store, consumer: bus, logger, dataDir });
    base = await hub.start(0, "127.0.0.1");
    return bus;
  };
  const get = async (url: string): Promise<unknown> => {
    const response = await fetch(`${base}${url}`);
    assert.equal(response.status, 200, await response.clone().text());
    return response.json();
  };
  const entityId = async (name: string): Promise<number> => {
    const entities = (await get("/v0/entities")) as { id: number; attributes: Record<string, string> }[];
    const found = entities.find((e) => e.attributes["svc.name"] === name);
    assert.ok(found !== undefined, `no entity ${name}`);
    return found.id;
  };

  const check = async () => {
    // Numeric cells only by default: `status` has held text only.
    assert.deepEqual(await get("/v0/entities/metrics?plugin=rest-api"), [
      { name: "orders/queue/{rowname}/latency", type: "float64", unit: "none" },
    ]);
    assert.deepEqual(await get("/v0/entities/metrics?plugin=rest-api&includeNonNumeric=true"), [
      { name: "orders/queue/{rowname}/latency", type: "float64", unit: "none" },
      { name: "orders/queue/{rowname}/status", type: "string", unit: "none" },
    ]);
    assert.deepEqual(await get("/v0/entities/metrics?plugin=fkm&includeNonNumeric=true"), [
      { name: "orders/queue/{rowname}/size", type: "float64", unit: "none" },
    ]);
    assert.deepEqual(await get("/v0/entities/metrics?plugin=none-such"), []);
    // web-02 (by the bus) alone: its `status` has held text only too.
    const web02 = await entityId("web-02");
    assert.deepEqual(await get(`/v0/entities/${web02}/metrics?includeNonNumeric=true`), [
      { name: "orders/queue/{rowname}/latency", type: "float64", unit: "none" },
      { name: "orders/queue/{rowname}/status", type: "string", unit: "none" },
    ]);
    // An entity made from metrics alone has the OS type its metrics carried.
    const entities = (await get("/v0/entities")) as { attributes: Record<string, string> }[];
    assert.deepEqual(
      entities.map((e) => e.attributes["svc.os-type"]),
      ["Linux", "Linux", "Linux"],
    );
  };

  test("backfilled and bus-delivered data; the same answers after a restart", async () => {
    const bus = await start();
    const response = await fetch(`${base}/v0/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        table("p1", "web-01", "rest-api", { latency: "10", status: "ok" }, T0),
        table("p1", "web-01", "rest-api", { latency: "n/a", status: "ok" }, T0 + 1_000, "r2"),
      ]),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.deepEqual(((await response.json()) as { rejected: unknown[] }).rejected, []);
    const ids = new MessageIdSource("GW");
    await bus.publish(
      ids.wrap([
        table("p2", "web-02", "rest-api", { latency: "5", status: "up" }, T0),
        table("p2", "web-03", "fkm", { size: "100" }, T0),
      ]),
    );
    await check();

    await hub?.stop();
    hub = undefined;
    await start();
    await check();
  });

  test("includeMappings: a dataview is deleted once every row of it is, and back with an update", async () => {
    const backfill = async (messages: PublicV2Message[]) => {
      const response = await fetch(`${base}/v0/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(messages),
      });
      assert.equal(response.status, 200, await response.clone().text());
      assert.deepEqual(((await response.json()) as { rejected: unknown[] }).rejected, []);
    };
    const web01 = await entityId("web-01");
    const mappings = async () =>
      (
        (await get(`/v0/entities/${web01}/metrics?includeMappings=true&includeNonNumeric=true`)) as {
          mappings: { legacyPath: string; dataviewId: number; isDeleted: boolean }[];
        }[]
      ).flatMap((m) => m.mappings);
    const before = await mappings();
    assert.equal(before.length, 2);
    assert.ok(before.every((m) => m.isDeleted === false && m.dataviewId === before[0]?.dataviewId));
    const remove = (row: string, at: number) => ({
      ...table("p1", "web-01", "rest-api", {}, at, row),
      operation: "delete",
    });
    await backfill([remove("r1", T0 + 10_000) as PublicV2Message]);
    assert.ok(
      (await mappings()).every((m) => m.isDeleted === false),
      "r2 is still there",
    );
    await backfill([remove("r2", T0 + 11_000) as PublicV2Message]);
    const deleted = await mappings();
    assert.ok(deleted.every((m) => m.isDeleted === true && m.dataviewId === before[0]?.dataviewId));
    await backfill([table("p1", "web-01", "rest-api", { latency: "12", status: "ok" }, T0 + 12_000)]);
    assert.deepEqual(await mappings(), before);
  });
});

const reachable = await postgresReachable();
describe("two hubs on one PostgreSQL database", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  test("one receives the probe message, the other the managed entity's: both show the probe's details", async () => {
    const db = await PgTestDatabase.create("twohubs");
    const url = await db.freshUrl();
    const one = await createPostgresStore({ url });
    const two = await createPostgresStore({ url });
    try {
      await one.migrate();
      await two.migrate();
      const hubOne = new Ingester(one, logger);
      const hubTwo = new Ingester(two, logger);
      await hubOne.init();
      await hubTwo.init();
      const ids = new MessageIdSource("GW");
      const [probe, entity, metrics] = ids.wrap([
        probeMessage,
        entityMessage,
        table("p1", "web-02", "rest-api", { latency: "1" }, T0),
      ]);
      assert.ok(probe !== undefined && entity !== undefined && metrics !== undefined);
      // The entity first (hub two), then the probe (hub one), then metrics of another entity (hub two).
      const delivery = (e: typeof probe) => ({ id: e.id, message: e.message });
      assert.equal((await hubTwo.ingest([delivery(entity)])).stored, 1);
      assert.equal((await hubOne.ingest([delivery(probe)])).stored, 1);
      assert.equal((await hubTwo.ingest([delivery(metrics)])).stored, 1);
      for (const store of [one, two]) {
        const entities = await store.listEntities({ includeDeleted: false });
        assert.deepEqual(
          entities
            .map((e) => [e.attributes["svc.name"], e.attributes["svc.os-type"], e.attributes["svc.hostname"]])
            .sort(),
          [
            ["web-01", "Linux", "host-1"],
            ["web-02", "Linux", "host-1"],
          ],
        );
      }
    } finally {
      await one.close();
      await two.close();
      await db.drop();
    }
  });
});
