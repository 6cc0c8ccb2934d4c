/**
 * Attacks on the probe's ingest endpoints with names, cells and bodies beyond the setup's limits
 * (DESIGN 5.4b, docs/security.md "Limits"), against `vigil up`'s parts in this process (real HTTP
 * servers, the in-process link and bus, embedded DuckDB): each is refused at once with 400 naming
 * the limit and its setting, counted at the probe's /metrics, the probe still answers, and nothing
 * of it reaches the hub (a valid row sent after it is stored, the refused names are not).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { tempDir } from "../helpers/vigil-process.js";
import { metricNames, refusals, until } from "./limits-helpers.js";

// gateway.maxCellLength far above limits.cellBytes: the byte limit is what refuses a long cell.
const setup = parseSetup(`
gateway: { name: GW, port: 0, maxCellLength: 2000000 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me
        samplers: [{ name: s, plugin: rest-api }]
hub: { port: 0, security: { enabled: false } }
`);

const dir = tempDir("limits-probe");
let system: RunningService;
let probe = "";
let hub = "";
before(async () => {
  system = await startSystem({
    setup,
    dataDir: dir.path,
    demo: false,
    host: "127.0.0.1",
    logger: pino({ level: "silent" }),
  });
  probe = system.urls["probe:p1"] ?? "";
  hub = system.urls.hub ?? "";
});
after(async () => {
  await system.stop(5000);
  dir.remove();
});

const DV = "/v1/managedEntity/me/sampler/s/dataview";
const long = (bytes: number, char = "x") => char.repeat(bytes);
/** Nested arrays `depth` deep around a scalar. */
const deep = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

async function send(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${probe}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

// One line per attack: what is sent, and the limit it breaks.
const attacks: {
  name: string;
  limit: string;
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}[] = [
  {
    name: "a 1 MiB column name in a dataview body",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/dv`,
    body: JSON.stringify([{ name: "r", [long(1 << 20)]: "1" }]),
  },
  {
    name: "a 1 MiB column name in a row body",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/base/row/r`,
    body: JSON.stringify({ name: "r", [long(1 << 20)]: "1" }),
  },
  {
    name: "a row name (first column) of 1,025 bytes",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/dv`,
    body: JSON.stringify([{ name: long(1025) }]),
  },
  {
    name: "a row name of 1,025 bytes as a first-column value in a row body",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/base/row/r`,
    body: JSON.stringify({ name: long(1025) }),
  },
  {
    name: "a 1,000-character name of 3-byte characters (3,000 bytes)",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/dv`,
    body: JSON.stringify([{ name: "r", [long(1000, "€")]: "1" }]),
  },
  {
    name: "a cell of 65,537 bytes",
    limit: "cellBytes",
    method: "PUT",
    path: `${DV}/dv`,
    body: JSON.stringify([{ name: "r", v: long(65_537) }]),
  },
  {
    name: "a 1 MiB cell in a row body",
    limit: "cellBytes",
    method: "PUT",
    path: `${DV}/base/row/r`,
    body: JSON.stringify({ name: "r", v: long(1 << 20) }),
  },
  {
    name: "a dataview body 100,000 arrays deep",
    limit: "jsonDepth",
    method: "PUT",
    path: `${DV}/dv`,
    body: deep(100_000),
  },
  {
    name: "a row body 65 objects deep",
    limit: "jsonDepth",
    method: "PUT",
    path: `${DV}/base/row/r`,
    body: `${'{"a":'.repeat(65)}1${"}".repeat(65)}`,
  },
  {
    name: "a dataview name of 2,000 bytes in the path",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/${long(2000)}`,
    body: "[]",
  },
  {
    name: "a row name of 2,000 bytes in the path",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/base/row/${long(2000)}`,
    body: "{}",
  },
  {
    name: "a managed entity name of 2,000 bytes in the path",
    limit: "nameBytes",
    method: "PUT",
    path: `/v1/managedEntity/${long(2000)}/sampler/s/dataview/dv`,
    body: "[]",
  },
  {
    name: "a sampler type of 2,000 bytes in the path",
    limit: "nameBytes",
    method: "GET",
    path: `/v1/managedEntity/me/sampler/s(${long(2000)})`,
  },
  {
    name: "a stream name of 2,000 bytes in the path",
    limit: "nameBytes",
    method: "PUT",
    path: `/v1/managedEntity/me/sampler/s/stream/${long(2000)}`,
    body: "message",
  },
  {
    // 140 rows of 60,000 bytes: 8.4 MB, within the 10 MiB body limit, past the 8 MiB link frame.
    name: "a dataview whose rows would not fit one link frame",
    limit: "linkFrameBytes",
    method: "PUT",
    path: `${DV}/huge`,
    body: JSON.stringify(Array.from({ length: 140 }, (_, i) => ({ name: `r${i}`, v: long(60_000) }))),
  },
  {
    name: "a Column-Order name of 2,000 bytes",
    limit: "nameBytes",
    method: "PUT",
    path: `${DV}/dv`,
    body: JSON.stringify([{ name: "r" }]),
    headers: { "Column-Order": `name,${long(2000)}` },
  },
];

describe("limits at the probe's ingest endpoints", () => {
  before(async () => {
    // The dataview the row attacks address exists.
    assert.equal((await send("PUT", `${DV}/base`, JSON.stringify([{ name: "first" }]))).status, 200);
  });

  for (const attack of attacks) {
    test(`${attack.name}: 400 naming limits.${attack.limit}, counted, the probe still answers`, async () => {
      const before = await refusals(probe, "probe", attack.limit);
      const answer = await send(attack.method, attack.path, attack.body, attack.headers);
      assert.equal(answer.status, 400, JSON.stringify(answer.body).slice(0, 300));
      assert.deepEqual(Object.keys(answer.body).sort(), ["body", "status", "title"]);
      assert.equal(answer.body.title, "Limit exceeded");
      assert.match(String(answer.body.body), new RegExp(`limits\\.${attack.limit} \\(\\d+\\)`));
      assert.ok(String(answer.body.body).length < 1000, "the answer quotes a name only in part");
      assert.equal(await refusals(probe, "probe", attack.limit), before + 1);
      assert.equal((await fetch(`${probe}/healthcheck`)).status, 200);
    });
  }

  test("nothing refused reaches the hub; a valid row sent after the attacks is stored", async () => {
    assert.equal(
      (await send("PUT", `${DV}/after`, JSON.stringify([{ name: "ok", marker: "1" }]))).status,
      200,
    );
    const names = await until(async () => {
      const all = await metricNames(hub);
      return all.some((n) => n.startsWith("s/after/")) ? all : undefined;
    }, "the valid row to be stored");
    assert.ok(
      names.every((n) => Buffer.byteLength(n) < 1024 && !n.startsWith("s/dv/")),
      `stored: ${names.join(", ").slice(0, 300)}`,
    );
  });

  test("names and cells exactly at the limits are accepted", async () => {
    const body = JSON.stringify([{ [long(1024, "n")]: long(1024, "r"), v: long(65_536) }]);
    assert.equal((await send("PUT", `${DV}/${long(1024, "d")}`, body)).status, 200);
  });
});
