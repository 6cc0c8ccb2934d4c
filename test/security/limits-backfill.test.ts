/**
 * Attacks on the hub's backfill (`POST /v0/messages`) with messages beyond the setup's limits
 * (DESIGN 5.4b, docs/security.md "Limits"), against a real hub (HTTP on a port, embedded DuckDB):
 * each such message is rejected with its index and an error naming the limit while the rest of the
 * body is stored, an array body nested too deep is refused whole, every refusal is counted at the
 * hub's /metrics, and the hub keeps answering queries — also after a restart on the same data dir
 * (the entities with 1 MiB attributes that once broke it never reach the store).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { startHubService } from "../../src/compose/hub-service.js";
import type { RunningService } from "../../src/compose/service.js";
import { parseSetup } from "../../src/config/load-setup.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import { tableMessage } from "../helpers/nats.js";
import { tempDir } from "../helpers/vigil-process.js";
import { entities, metricNames, refusals } from "./limits-helpers.js";

const setup = parseSetup("gateway: { name: GW }\nhub: { port: 0, security: { enabled: false } }\n");
const dir = tempDir("limits-backfill");
const logger = pino({ level: "silent" });
let hub: RunningService;
let base = "";
const start = async () => {
  hub = await startHubService({
    setup,
    storeUrl: `duckdb:${dir.path}/vigil.duckdb`,
    dataDir: dir.path,
    host: "127.0.0.1",
    port: 0,
    logger,
  });
  base = hub.urls.hub ?? "";
};
before(start);
after(async () => {
  await hub.stop(5000);
  dir.remove();
});

const long = (bytes: number) => "x".repeat(bytes);
const TIME = "2024-05-01T12:00:00.000Z";

function entity(name: string, attributes: Record<string, string>): PublicV2Message {
  return {
    type: "managedEntity",
    operation: "create",
    data: { timestamp: TIME, target: { gateway: "GW1", probe: "probe1", managedEntity: name }, attributes },
  };
}

function table(change: (m: ReturnType<typeof tableMessage>) => void): PublicV2Message {
  const message = tableMessage("r1");
  change(message);
  return message;
}

const manyAttributes = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`a${i}`, "v"]));

// One line per attack: the message, and the limit its rejection names.
const attacks: { name: string; limit: string; message: PublicV2Message | string }[] = [
  {
    name: "an attribute value of 1 MiB",
    limit: "attributeValueBytes",
    message: entity("big-attr", { Region: long(1 << 20) }),
  },
  { name: "65 attributes", limit: "attributesPerEntity", message: entity("many-attrs", manyAttributes) },
  {
    name: "an attribute name of 1,025 bytes",
    limit: "nameBytes",
    message: entity("long-key", { [long(1025)]: "v" }),
  },
  { name: "a managed entity name of 1,025 bytes", limit: "nameBytes", message: entity(long(1025), {}) },
  {
    name: "a column name of 1 MiB",
    limit: "nameBytes",
    message: table((m) => {
      m.data.row = { name: "r1", [long(1 << 20)]: "1" };
    }),
  },
  {
    name: "a cell of 65,537 bytes",
    limit: "cellBytes",
    message: table((m) => {
      m.data.row = { name: "r1", queued: long(65_537) };
    }),
  },
  {
    name: "a dataview name of 1,025 bytes",
    limit: "nameBytes",
    message: table((m) => {
      m.data.target.dataview = long(1025);
    }),
  },
  {
    name: "a row name of 1,100 bytes",
    limit: "nameBytes",
    message: table((m) => {
      m.data.target.row = long(1100);
    }),
  },
  {
    name: "a probe OS type of 5,000 bytes",
    limit: "attributeValueBytes",
    message: table((m) => {
      m.data.target.filter.osType = long(5000);
    }),
  },
  {
    name: "a line nested 100,000 arrays deep",
    limit: "jsonDepth",
    message: `${"[".repeat(100_000)}${"]".repeat(100_000)}`,
  },
];

const line = (message: PublicV2Message | string) =>
  typeof message === "string" ? message : JSON.stringify(message);

async function post(body: string) {
  const response = await fetch(`${base}/v0/messages`, { method: "POST", body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("limits at the hub's backfill", () => {
  test("each message beyond a limit is rejected naming it; the valid ones around it are stored", async () => {
    const before = new Map(
      await Promise.all(
        attacks.map(async (a) => [a.limit, await refusals(base, "backfill", a.limit)] as const),
      ),
    );
    const valid = entity("valid-01", { Region: "emea" });
    const lines = [line(valid), ...attacks.map((a) => line(a.message)), line(tableMessage("after"))];
    const answer = await post(lines.join("\n"));
    assert.equal(answer.status, 200, JSON.stringify(answer.body).slice(0, 300));
    const rejected = answer.body.rejected as { index: number; error: string }[];
    assert.equal(answer.body.accepted, 2);
    assert.deepEqual(
      rejected.map((r) => r.index),
      attacks.map((_, i) => i + 1),
    );
    attacks.forEach((attack, i) => {
      const error = (rejected[i] as { error: string }).error;
      assert.match(
        error,
        new RegExp(`limits\\.${attack.limit} \\(\\d+\\)`),
        `${attack.name}: ${error.slice(0, 200)}`,
      );
      assert.ok(error.length < 1000, `${attack.name}: the error quotes a name only in part`);
    });
    for (const [limit, count] of before) {
      const expected = count + attacks.filter((a) => a.limit === limit).length;
      assert.equal(await refusals(base, "backfill", limit), expected, `refusals of ${limit}`);
    }
    const stored = await entities(base);
    assert.deepEqual(stored.map((e) => e.attributes["svc.name"]).sort(), ["valid-01", "web-01"]);
    assert.ok((await metricNames(base)).every((n) => Buffer.byteLength(n) < 1024));
  });

  test("an array body nested deeper than the limit is refused whole with 400, counted", async () => {
    const before = await refusals(base, "backfill", "jsonDepth");
    const answer = await post(`[${line(tableMessage("a"))}, ${"[".repeat(65)}${"]".repeat(65)}]`);
    assert.equal(answer.status, 400);
    assert.equal(answer.body.title, "Limit exceeded");
    assert.match(String(answer.body.body), /limits\.jsonDepth \(64\)/);
    assert.equal(await refusals(base, "backfill", "jsonDepth"), before + 1);
    // One level less is accepted as far as depth goes (the schema then rejects that message).
    const within = await post(`[${line(tableMessage("b"))}, ${"[".repeat(64)}${"]".repeat(64)}]`);
    assert.equal(within.status, 200);
    assert.deepEqual(
      (within.body.rejected as { index: number }[]).map((r) => r.index),
      [1],
    );
  });

  test("150 entities with 1 MiB attributes: all rejected, queries answer, the hub starts again", async () => {
    const body = Array.from({ length: 150 }, (_, i) =>
      line(entity(`huge-${i}`, { Blob: long(1 << 20) })),
    ).join("\n");
    const answer = await post(body);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.accepted, 0);
    assert.equal((answer.body.rejected as unknown[]).length, 150);
    assert.equal((await fetch(`${base}/v0/entities/summary`)).status, 200);
    await hub.stop(5000);
    await start();
    const names = (await entities(base)).map((e) => e.attributes["svc.name"]);
    assert.ok(names.includes("valid-01"));
    assert.ok(!names.some((n) => n?.startsWith("huge-")));
  });
});
