/**
 * `vigil hub --store postgres://…` as a real process (DESIGN 5.5): data backfilled through the API
 * is stored in PostgreSQL, and a restarted hub keeps the entity ids and the samples.
 * Runs the built CLI (dist/, which `npm test` builds first).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { MessageOf } from "../../../src/messages/types.js";
import { countSamples } from "../../helpers/hub-query.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";
import { startVigil, tempDir, type VigilProcess, writeFile } from "../../helpers/vigil-process.js";

const reachable = await postgresReachable();
const T0 = Date.parse("2026-03-01T00:00:00.000Z");

function row(me: string, i: number): MessageOf<"table"> {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: new Date(T0 + i * 1000).toISOString(),
      target: {
        gateway: "GW1",
        probe: "p1",
        managedEntity: me,
        type: "",
        sampler: "s",
        dataview: "dv",
        row: "r",
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: "r", v: String(i) },
    },
  };
}

describe("vigil hub --store postgres://", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  const dir = tempDir("hub-pg");
  let db: PgTestDatabase | undefined;
  let hub: VigilProcess | undefined;
  let config = "";

  before(async () => {
    db = await PgTestDatabase.create("hub");
    config = writeFile(
      dir.path,
      "setup.yaml",
      "gateway:\n  name: GW1\nhub:\n  port: 0\n  security: { enabled: false }\n",
    );
  });

  after(async () => {
    if (hub !== undefined) await hub.stop("SIGKILL");
    await db?.drop();
    dir.remove();
  });

  const startHub = () =>
    startVigil(
      [
        "hub",
        "--config",
        config,
        "--store",
        db?.url ?? "",
        "--data-dir",
        join(dir.path, "data"),
        "--host",
        "127.0.0.1",
      ],
      dir.path,
    );

  const entities = async (url: string): Promise<{ id: number; name: string }[]> => {
    const response = await fetch(`${url}/v0/entities`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { id: number; attributes: Record<string, string> }[];
    return body.map((e) => ({ id: e.id, name: e.attributes["svc.name"] ?? "" }));
  };

  const count = (url: string, entity: string): Promise<number> =>
    countSamples(url, {
      entity,
      include: "s/dv/{rowname}/v",
      from: "2026-03-01T00:00:00Z",
      to: "2026-03-02T00:00:00Z",
    });

  test("backfilled data is stored, and a restart keeps ids and data", async () => {
    hub = startHub();
    let url = await hub.url("hub");
    const messages = [
      ...Array.from({ length: 50 }, (_, i) => row("web-02", i)),
      ...Array.from({ length: 30 }, (_, i) => row("web-01", i)),
    ];
    const response = await fetch(`${url}/v0/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(messages),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const result = (await response.json()) as { accepted: number; rejected: unknown[] };
    assert.deepEqual([result.accepted, result.rejected], [80, []]);
    const first = await entities(url);
    assert.deepEqual(first.map((e) => e.name).sort(), ["web-01", "web-02"]);
    assert.equal(await count(url, "web-02"), 50);

    await hub.stop("SIGTERM");
    hub = startHub();
    url = await hub.url("hub");
    assert.deepEqual(await entities(url), first, "same ids after the restart");
    assert.equal(await count(url, "web-02"), 50);
    assert.equal(await count(url, "web-01"), 30);
    // The same file again: every message is known (no id, so known by its hash), nothing is stored twice.
    await fetch(`${url}/v0/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(messages),
    });
    assert.equal(await count(url, "web-02"), 50);
  });
});
