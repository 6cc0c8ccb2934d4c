/**
 * Streams through the probe's real HTTP API (DESIGN 3.4, seed B): any content type, one message
 * per PUT, the Streams Dataview with exact counters under concurrent PUTs, bufferSize and
 * totalMessagesLost, purge without a consumer, the reserved dataview name, the stream bound, GET,
 * and live reconfiguration. The gateway is a fake on an in-process link that records (and
 * validates) every change; time is a ManualScheduler, so nothing here waits for a clock.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { PROBE_MAX_STREAMS_PER_SAMPLER } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import type { ProbeSetup } from "../../src/config/setup.js";
import type { Change } from "../../src/link/protocol.js";
import { probeLimits } from "../../src/link/protocol.js";
import { wireProbeLimits, wireProbeSetup } from "../../src/link/wire-setup.js";
import { buildProbe } from "../../src/probe/app.js";
import { ManualScheduler } from "../../src/probe/fkm/sample-scheduler.js";
import { STREAMS_COLUMNS } from "../../src/probe/streams/sampler-streams.js";
import { eventually, FakeGateway } from "../link/helpers.js";

/** What `fetch` takes as a body here (the DOM's `BodyInit` is not in this project's library). */
type RequestBody = string | Uint8Array;

const SETUP_YAML = `
gateway: { name: GW, maxCellLength: 64 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api, bufferSize: 3 }
          - { name: small, plugin: rest-api, rowLimit: 2 }
          - { name: twin, type: a, plugin: rest-api }
          - { name: twin, type: b, plugin: rest-api }
          - name: logs
            plugin: fkm
            sampleInterval: 10
            source: { sampler: s1, stream: app-log }
            keywords: [{ pattern: ERROR, severity: CRITICAL }]
`;
const setup = parseSetup(SETUP_YAML);
const probeSetup = setup.probes[0] as ProbeSetup;

const gateway = new FakeGateway(setup);
const scheduler = new ManualScheduler();
const probe = buildProbe({
  name: "p1",
  setup: probeSetup,
  link: gateway.connector,
  logger: pino({ level: "silent" }),
  scheduler,
});
let base = "";
before(async () => {
  base = (await probe.start()).http;
  await eventually(() => probe.linkStatus().state === "up", "the link to come up");
});
after(() => probe.stop(1000));

const streamUrl = (sampler: string, stream: string) =>
  `${base}/v1/managedEntity/me1/sampler/${encodeURIComponent(sampler)}/stream/${encodeURIComponent(stream)}`;

async function put(url: string, body?: RequestBody, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: "PUT", ...(body === undefined ? {} : { body }), headers });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

async function get(url: string) {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The Streams Dataview changes of `sampler` received so far. */
function streamsChanges(sampler: string): Change[] {
  return gateway.changes.filter(
    (c) => c.dataview.sampler === sampler && c.dataview.dataview === "Streams Dataview",
  );
}

/** The last row of stream `name` the gateway received, as column → cell. */
function lastRow(sampler: string, name: string): Record<string, string> | undefined {
  let cells: readonly (string | number)[] | undefined;
  for (const change of streamsChanges(sampler)) {
    if (change.kind === "row" && change.name === name) cells = change.cells;
    if (change.kind === "dataview") {
      const row = change.rows.find((r) => r.name === name);
      if (row !== undefined) cells = row.cells;
    }
  }
  if (cells === undefined) return undefined;
  const out: Record<string, string> = {};
  STREAMS_COLUMNS.forEach((column, i) => {
    const cell = cells?.[i];
    out[column] = typeof cell === "string" ? cell : "";
  });
  return out;
}

describe("PUT stream", () => {
  test("the first stream creates the Streams Dataview; a second one updates totalStreams", async () => {
    const first = await put(streamUrl("twin(a)", "one"), "hello");
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, {
      name: "one",
      currentBufferSize: 0,
      maxBufferSize: 1000,
      totalMessagesReceived: 1,
      totalMessagesLost: 0,
    });
    const created = await eventually(() => streamsChanges("twin").find((c) => c.kind === "dataview"));
    assert.ok(created.kind === "dataview");
    assert.equal(created.plugin, "rest-api");
    assert.deepEqual(created.dataview, {
      managedEntity: "me1",
      sampler: "twin",
      samplerType: "a",
      dataview: "Streams Dataview",
    });
    assert.deepEqual(created.columns, [...STREAMS_COLUMNS]);
    assert.deepEqual(created.headlines, [
      ["samplingStatus", "OK"],
      ["totalStreams", "1"],
    ]);
    assert.deepEqual(
      created.rows.map((r) => r.cells),
      [["one", "0", "1000", "1", "0"]],
    );
    assert.equal((await put(streamUrl("twin(a)", "two"), "x")).status, 200);
    const headlines = await eventually(() =>
      streamsChanges("twin").find((c) => c.kind === "headlines" && c.headlines[1]?.[1] === "2"),
    );
    assert.ok(headlines);
    assert.deepEqual(lastRow("twin", "two"), {
      name: "two",
      currentBufferSize: "0",
      maxBufferSize: "1000",
      totalMessagesReceived: "1",
      totalMessagesLost: "0",
    });
  });

  const contentTypes: [string, Record<string, string>, RequestBody | undefined][] = [
    ["no Content-Type and a binary body", {}, new Uint8Array([0, 255, 1, 128])],
    ["an empty Content-Type", { "content-type": "" }, "x"],
    ["a Content-Type Fastify cannot parse", { "content-type": "weird" }, "x"],
    ["JSON that is not valid JSON", { "content-type": "application/json" }, "{not json"],
    ["curl's form type", { "content-type": "application/x-www-form-urlencoded" }, "a=b&c"],
    ["multipart", { "content-type": "multipart/form-data; boundary=zz" }, "--zz--"],
    ["an empty body", { "content-type": "text/plain" }, ""],
    ["no body at all", {}, undefined],
  ];
  for (const [what, headers, body] of contentTypes) {
    test(`accepts ${what} as one message`, async () => {
      const r = await put(streamUrl("twin(b)", "ct"), body, headers);
      assert.equal(r.status, 200, JSON.stringify(r.body));
    });
  }
  test("every one of those requests counted as one message", async () => {
    const r = await get(streamUrl("twin(b)", "ct"));
    assert.equal(r.body.totalMessagesReceived, contentTypes.length);
  });

  test("many concurrent real HTTP PUTs leave exact counters (no consumer: all purged, none lost)", async () => {
    const n = 300;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => put(streamUrl("s1", "busy"), `message ${i}`)),
    );
    assert.ok(results.every((r) => r.status === 200));
    const counters = (await get(streamUrl("s1", "busy"))).body;
    assert.deepEqual(counters, {
      name: "busy",
      currentBufferSize: 0,
      maxBufferSize: 3,
      totalMessagesReceived: n,
      totalMessagesLost: 0,
    });
    const row = await eventually(() => {
      const r = lastRow("s1", "busy");
      return r?.totalMessagesReceived === String(n) ? r : undefined;
    }, "the gateway to see every message counted");
    assert.equal(row.currentBufferSize, "0");
  });

  test("a consumed stream holds at most bufferSize messages; the oldest are lost, counted exactly", async () => {
    const n = 120;
    await Promise.all(Array.from({ length: n }, (_, i) => put(streamUrl("s1", "app-log"), `line ${i}`)));
    const counters = (await get(streamUrl("s1", "app-log"))).body;
    assert.equal(counters.currentBufferSize, 3);
    assert.equal(counters.totalMessagesReceived, n);
    assert.equal(counters.totalMessagesLost, n - 3);
    await eventually(
      () => lastRow("s1", "app-log")?.totalMessagesLost === String(n - 3),
      "lost on the gateway",
    );
    // The consumer's sample empties the buffer.
    scheduler.advance(10_000);
    assert.equal((await get(streamUrl("s1", "app-log"))).body.currentBufferSize, 0);
    await eventually(
      () => lastRow("s1", "app-log")?.currentBufferSize === "0",
      "the emptied buffer on the gateway",
    );
  });
});

describe("stream errors", () => {
  const cases: [string, string, string, number, string][] = [
    ["empty stream name", "PUT", `/v1/managedEntity/me1/sampler/s1/stream/`, 400, "Bad request"],
    [
      "unknown managed entity",
      "PUT",
      `/v1/managedEntity/nope/sampler/s1/stream/x`,
      404,
      "Managed entity not found",
    ],
    ["unknown sampler", "PUT", `/v1/managedEntity/me1/sampler/nope/stream/x`, 404, "Sampler not found"],
    [
      "an fkm sampler takes no streams",
      "PUT",
      `/v1/managedEntity/me1/sampler/logs/stream/x`,
      404,
      "Sampler not found",
    ],
    ["ambiguous sampler", "PUT", `/v1/managedEntity/me1/sampler/twin/stream/x`, 400, "Ambiguous sampler"],
    [
      "GET of a missing stream",
      "GET",
      `/v1/managedEntity/me1/sampler/s1/stream/missing`,
      404,
      "Stream not found",
    ],
    ["POST", "POST", `/v1/managedEntity/me1/sampler/s1/stream/x`, 405, "Method not allowed"],
    ["DELETE", "DELETE", `/v1/managedEntity/me1/sampler/s1/stream/x`, 405, "Method not allowed"],
    ["PATCH", "PATCH", `/v1/managedEntity/me1/sampler/s1/stream/x`, 405, "Method not allowed"],
  ];
  for (const [what, method, path, status, title] of cases) {
    test(`${what}: ${status} ${title}`, async () => {
      const response = await fetch(base + path, { method, ...(method === "GET" ? {} : { body: "x" }) });
      const body = (await response.json()) as Record<string, unknown>;
      assert.equal(response.status, status);
      assert.equal(body.status, status);
      assert.equal(body.title, title);
      assert.equal(typeof body.body, "string");
      assert.ok(!String(body.body).includes("{"), `unfilled placeholder in ${String(body.body)}`);
      if (status === 405) assert.equal(response.headers.get("allow"), "GET, PUT, HEAD");
    });
  }

  test("a body over the limit is a 413", async () => {
    const r = await put(streamUrl("s1", "big"), new Uint8Array(10 * 1024 * 1024 + 1));
    assert.equal(r.status, 413);
    assert.equal(r.body.title, "Request body too large");
  });

  test("a stream beyond the sampler's bound (its row limit here) is refused; existing ones still take messages", async () => {
    assert.ok(PROBE_MAX_STREAMS_PER_SAMPLER >= 2);
    assert.equal((await put(streamUrl("small", "a"), "1")).status, 200);
    assert.equal((await put(streamUrl("small", "b"), "1")).status, 200);
    const refused = await put(streamUrl("small", "c"), "1");
    assert.equal(refused.status, 400);
    assert.match(String(refused.body.body), /already has 2 streams/);
    assert.equal((await put(streamUrl("small", "a"), "2")).status, 200);
  });

  test("a stream name longer than maxCellLength is refused", async () => {
    const r = await put(streamUrl("s1", "n".repeat(65)), "x");
    assert.equal(r.status, 400);
  });

  const dataviewEndpoints: [string, string, string][] = [
    ["PUT dataview", "PUT", "/dataview/Streams%20Dataview"],
    ["GET dataview", "GET", "/dataview/Streams%20Dataview"],
    ["DELETE dataview", "DELETE", "/dataview/Streams%20Dataview"],
    ["PUT row", "PUT", "/dataview/Streams%20Dataview/row/one"],
    ["GET row", "GET", "/dataview/Streams%20Dataview/row/one"],
    ["DELETE row", "DELETE", "/dataview/Streams%20Dataview/row/one"],
  ];
  for (const [what, method, suffix] of dataviewEndpoints) {
    test(`${what} on 'Streams Dataview' is 400 Reserved dataview name, even once it exists`, async () => {
      const body = method === "PUT" ? (suffix.includes("/row/") ? '{"name":"one"}' : "[]") : undefined;
      const response = await fetch(`${base}/v1/managedEntity/me1/sampler/twin(a)${suffix}`, {
        method,
        ...(body === undefined ? {} : { body }),
      });
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as { title: string }).title, "Reserved dataview name");
    });
  }
});

describe("GET", () => {
  test("GET on the sampler includes the Streams Dataview's counters", async () => {
    const r = await get(`${base}/v1/managedEntity/me1/sampler/twin(a)`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.streams, ["one", "two"]);
    assert.deepEqual(r.body.streamsDataview, {
      headlines: { samplingStatus: "OK", totalStreams: 2 },
      rows: [
        {
          name: "one",
          currentBufferSize: 0,
          maxBufferSize: 1000,
          totalMessagesReceived: 1,
          totalMessagesLost: 0,
        },
        {
          name: "two",
          currentBufferSize: 0,
          maxBufferSize: 1000,
          totalMessagesReceived: 1,
          totalMessagesLost: 0,
        },
      ],
    });
  });

  test("a sampler without streams shows none", async () => {
    const r = await get(`${base}/v1/managedEntity/me1/sampler/small`);
    assert.ok(Array.isArray(r.body.streams));
    const fresh = await get(`${base}/v1/managedEntity/me1/sampler/twin(b)`);
    assert.equal(fresh.status, 200);
  });

  test("names are data: a stream called __proto__ or constructor works", async () => {
    for (const name of ["__proto__", "constructor"]) {
      assert.equal((await put(streamUrl("twin(b)", name), "x")).status, 200);
      assert.equal((await get(streamUrl("twin(b)", name))).body.name, name);
    }
  });
});

describe("live reconfiguration", () => {
  const reload = (yaml: string) => {
    const next = parseSetup(yaml);
    probe.updateSetup(next.probes[0] as ProbeSetup, probeLimits(next.gateway));
  };

  test("a smaller bufferSize drops the oldest messages and counts them lost", async () => {
    await Promise.all([1, 2, 3].map((i) => put(streamUrl("s1", "app-log"), `again ${i}`)));
    const before = (await get(streamUrl("s1", "app-log"))).body;
    assert.equal(before.currentBufferSize, 3);
    reload(SETUP_YAML.replace("bufferSize: 3", "bufferSize: 1"));
    const afterShrink = (await get(streamUrl("s1", "app-log"))).body;
    assert.equal(afterShrink.currentBufferSize, 1);
    assert.equal(afterShrink.maxBufferSize, 1);
    assert.equal(afterShrink.totalMessagesLost, (before.totalMessagesLost as number) + 2);
    await eventually(
      () => lastRow("s1", "app-log")?.maxBufferSize === "1",
      "the new maxBufferSize on the gateway",
    );
  });

  test("a removed sampler's Streams Dataview is deleted; added again it starts afresh", async () => {
    const without = SETUP_YAML.replace("          - { name: twin, type: a, plugin: rest-api }\n", "");
    reload(without);
    const deleted = await eventually(() =>
      streamsChanges("twin").find((c) => c.kind === "dataviewDelete" && c.dataview.samplerType === "a"),
    );
    assert.ok(deleted);
    assert.equal((await put(streamUrl("twin(a)", "one"), "x")).status, 404);
    reload(SETUP_YAML);
    const r = await put(streamUrl("twin(a)", "one"), "x");
    assert.equal(r.status, 200);
    assert.equal(r.body.totalMessagesReceived, 1);
  });

  test("the gateway's setup frame reconfigures streams too", async () => {
    const next = parseSetup(SETUP_YAML.replace("bufferSize: 3", "bufferSize: 7"));
    gateway.send({
      type: "setup",
      setup: wireProbeSetup(next.probes[0] as ProbeSetup),
      limits: wireProbeLimits(probeLimits(next.gateway)),
    });
    await eventually(
      async () => (await get(streamUrl("s1", "app-log"))).body.maxBufferSize === 7,
      "bufferSize 7",
    );
  });
});
