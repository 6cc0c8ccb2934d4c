/**
 * The probe's ingest endpoints in-process (STYLE 14): status codes and bodies of DESIGN 3.2, the
 * bounds (columns, cell length, well-formed Unicode), and the changes the probe sends
 * its gateway (recorded by a fake gateway on an in-process link).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import type { Change } from "../../src/link/protocol.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually, FakeGateway } from "../link/helpers.js";

const setup = parseSetup(`
gateway: { name: GW, maxColumnsPerDataview: 8, maxCellLength: 64 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api, rowLimit: 3 }
          - { name: wide, plugin: rest-api }
          - { name: twin, type: a, plugin: rest-api }
          - { name: twin, type: b, plugin: rest-api }
          - { name: logs, plugin: fkm, source: { sampler: s1, stream: x }, keywords: [{ pattern: E, severity: OK }] }
`);

const gateway = new FakeGateway(setup);
const probe = buildProbe({
  name: "p1",
  setup: setup.probes[0]!,
  link: gateway.connector,
  logger: pino({ level: "silent" }),
});
before(async () => {
  await probe.start();
  await eventually(() => probe.linkStatus().state === "up", "the link to come up");
});
after(() => probe.stop(1000));

const DV = "/v1/managedEntity/me1/sampler/s1/dataview/dv";

async function call(
  method: "GET" | "PUT" | "DELETE" | "POST" | "PATCH",
  url: string,
  payload?: string | Buffer,
  headers = {},
) {
  const response = await probe.http.inject({
    method,
    url,
    ...(payload === undefined ? {} : { payload }),
    headers,
  });
  return {
    status: response.statusCode,
    body: response.json() as Record<string, unknown>,
    headers: response.headers,
  };
}

/** True when every change the probe took is acknowledged (so the fake gateway has it). */
const idle = () => {
  const status = probe.linkStatus();
  return status.state === "up" && status.outgoing === 0 && status.inFlightBatches === 0;
};

/** The changes `request` sends the gateway (all of them: the link is idle before and after). */
async function changesOf(request: () => Promise<unknown>): Promise<Change[]> {
  await eventually(idle, "the link to be idle");
  const from = gateway.changes.length;
  await request();
  await eventually(idle, "the link to be idle");
  return gateway.changes.slice(from);
}

describe("probe ingest: success paths", () => {
  test("PUT dataview answers the row counts, even with curl's form content type", async () => {
    let r: Awaited<ReturnType<typeof call>> | undefined;
    const changes = await changesOf(async () => {
      r = await call(
        "PUT",
        DV,
        JSON.stringify([
          { n: "a", v: 1 },
          { n: "a", v: true },
          { n: "b", v: null },
        ]),
        { "content-type": "application/x-www-form-urlencoded" },
      );
    });
    assert.equal(r?.status, 200);
    assert.deepEqual(r?.body, { rows: 3, duplicates: 1, dropped: 0 });
    const [change] = changes;
    assert.equal(changes.length, 1);
    assert.ok(change?.kind === "dataview");
    assert.deepEqual(change.columns, ["n", "v"]);
    assert.deepEqual(
      change.rows.map((row) => [row.name, row.cells]),
      [
        ["a", ["a", "1"]],
        ["a_duplicate1", ["a", "true"]],
        ["b", ["b"]],
      ],
    );
    assert.deepEqual(change.dataview, {
      managedEntity: "me1",
      sampler: "s1",
      samplerType: "",
      dataview: "dv",
    });
  });

  test("GET dataview shows the state with duplicate names applied", async () => {
    const r = await call("GET", DV);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.headlines, { samplingStatus: "OK", totalRows: "3" });
    assert.deepEqual(r.body.columns, ["n", "v"]);
    assert.deepEqual(
      (r.body.rows as { name: string }[]).map((row) => row.name),
      ["a", "a_duplicate1", "b"],
    );
  });

  test("PUT row sends exactly one row change", async () => {
    const changes = await changesOf(async () => {
      assert.equal((await call("PUT", `${DV}/row/b`, JSON.stringify({ v: 7 }))).status, 200);
      // A second request after it: its change arrives after the first one's.
      await call("PUT", `${DV}/row/a`, JSON.stringify({ v: 8 }));
    });
    assert.deepEqual(
      changes.map((c) => (c.kind === "row" ? [c.name, c.cells] : c.kind)),
      [
        ["b", ["b", "7"]],
        ["a", ["a", "8"]],
      ],
    );
  });

  test("GET row answers one row by its published name", async () => {
    const r = await call("GET", `${DV}/row/a_duplicate1`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { name: "a_duplicate1", cells: { n: "a", v: "true" } });
  });

  test("DELETE of a base name with duplicates sends the renumbered row and one delete", async () => {
    const changes = await changesOf(async () => {
      assert.equal((await call("DELETE", `${DV}/row/a`)).status, 200);
    });
    assert.deepEqual(
      changes.map((c) => (c.kind === "row" || c.kind === "rowDelete" ? `${c.kind}:${c.name}` : c.kind)),
      ["row:a", "rowDelete:a_duplicate1", "headlines"],
    );
  });

  test("percent-encoded path segments are decoded", async () => {
    await call("PUT", `${DV}2`, "[]");
    const r = await call(
      "PUT",
      `${DV}2/row/${encodeURIComponent("c/d e")}`,
      JSON.stringify({ n: "c/d e", v: 1 }),
    );
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { row: "c/d e" });
  });

  test("a sampler with a type is addressed as name(type)", async () => {
    const [change] = await changesOf(async () => {
      assert.equal((await call("PUT", "/v1/managedEntity/me1/sampler/twin(b)/dataview/x", "[]")).status, 200);
    });
    assert.equal(change?.dataview.samplerType, "b");
  });

  test("sampling info says sampling depends on a 3rd party application", async () => {
    const r = await call("GET", "/v1/managedEntity/me1/sampler/s1");
    assert.deepEqual(r.body.samplingInfo, {
      samplingOptionsActive: false,
      status: "Sampling dependent on 3rd Party Application",
    });
  });

  test("DELETE dataview removes it and tells the gateway", async () => {
    await call("PUT", "/v1/managedEntity/me1/sampler/s1/dataview/gone", "[]");
    const [change] = await changesOf(async () => {
      assert.equal((await call("DELETE", "/v1/managedEntity/me1/sampler/s1/dataview/gone")).status, 200);
    });
    assert.equal(change?.kind, "dataviewDelete");
    assert.equal((await call("GET", "/v1/managedEntity/me1/sampler/s1/dataview/gone")).status, 404);
  });

  test("columns named __proto__ and constructor are ordinary columns", async () => {
    const url = "/v1/managedEntity/me1/sampler/wide/dataview/proto";
    const body = '[{"__proto__":"p","constructor":"c","toString":"t"}]';
    assert.equal((await call("PUT", url, body)).status, 200);
    assert.equal((await call("PUT", `${url}/row/p`, '{"constructor":"c2"}')).status, 200);
    const r = await call("GET", url);
    assert.deepEqual(r.body.columns, ["__proto__", "constructor", "toString"]);
    const rows = r.body.rows as { name: string; cells: Record<string, string> }[];
    assert.equal(rows[0]?.name, "p");
    assert.deepEqual(Object.entries(rows[0]?.cells ?? {}), [
      ["__proto__", "p"],
      ["constructor", "c2"],
      ["toString", ""],
    ]);
  });
});

describe("probe ingest: bounds", () => {
  const wide = "/v1/managedEntity/me1/sampler/wide/dataview/bounds";

  test("more distinct columns than maxColumnsPerDataview is a 400 naming the limit", async () => {
    const row = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`c${i}`, String(i)]));
    const r = await call("PUT", wide, JSON.stringify([row]));
    assert.equal(r.status, 400);
    assert.equal(r.body.title, "Too many columns");
    assert.match(String(r.body.body), /more than 8 distinct columns/);
  });

  test("a row PUT that would add a column beyond the limit is a 400", async () => {
    const row = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`c${i}`, String(i)]));
    assert.equal((await call("PUT", wide, JSON.stringify([row]))).status, 200);
    const r = await call("PUT", `${wide}/row/0`, JSON.stringify({ extra: "x" }));
    assert.equal(r.status, 400);
    assert.equal(r.body.title, "Too many columns");
  });

  test("a cell longer than maxCellLength is a 400 naming the limit and the column", async () => {
    const r = await call("PUT", wide, JSON.stringify([{ id: "a", note: "x".repeat(65) }]));
    assert.equal(r.status, 400);
    assert.equal(r.body.title, "Cell too long");
    assert.match(String(r.body.body), /column 'note'/);
    assert.match(String(r.body.body), /limit of 64/);
  });

  const surrogates: [string, string, string][] = [
    ["a lone surrogate in a value (dataview)", wide, '[{"id":"a","v":"\\ud800"}]'],
    ["a lone surrogate in a column name (dataview)", wide, '[{"id":"a","\\udc00":"1"}]'],
    ["a lone surrogate in a value (row)", `${wide}/row/a`, '{"v":"x\\udfff"}'],
  ];
  for (const [name, url, body] of surrogates) {
    test(`${name} is a 400`, async () => {
      const r = await call("PUT", url, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(String(r.body.body), /not well-formed Unicode/);
    });
  }

  test("a well-formed surrogate pair is accepted", async () => {
    const r = await call("PUT", wide, '[{"id":"a","v":"\\ud83d\\ude00"}]');
    assert.equal(r.status, 200);
  });
});

describe("probe ingest: errors (DESIGN 3.2)", () => {
  const cases: [
    string,
    "GET" | "PUT" | "DELETE" | "POST" | "PATCH",
    string,
    string | undefined,
    number,
    string,
  ][] = [
    ["no body on PUT dataview", "PUT", DV, undefined, 400, "Request has no body"],
    ["no body on PUT row", "PUT", `${DV}/row/a`, undefined, 400, "Request has no body"],
    ["body not JSON", "PUT", DV, "{nope", 400, "Unable to create or update dataview"],
    ["dataview body not an array", "PUT", DV, '{"n":"a"}', 400, "Unable to create or update dataview"],
    ["a row that is not an object", "PUT", DV, '["a"]', 400, "Unable to create or update dataview"],
    [
      "a cell that is an object",
      "PUT",
      DV,
      '[{"n":"a","v":{"x":1}}]',
      400,
      "Unable to create or update dataview",
    ],
    ["a cell that is an array", "PUT", DV, '[{"n":"a","v":[1]}]', 400, "Unable to create or update dataview"],
    ["row body not an object", "PUT", `${DV}/row/a`, "[1]", 400, "Unable to create or update row"],
    ["row cell that is an object", "PUT", `${DV}/row/a`, '{"v":{}}', 400, "Unable to create or update row"],
    [
      "reserved name on PUT",
      "PUT",
      "/v1/managedEntity/me1/sampler/s1/dataview/Streams%20Dataview",
      "[]",
      400,
      "Reserved dataview name",
    ],
    [
      "reserved name on GET",
      "GET",
      "/v1/managedEntity/me1/sampler/s1/dataview/Streams%20Dataview",
      undefined,
      400,
      "Reserved dataview name",
    ],
    [
      "reserved name on DELETE row",
      "DELETE",
      "/v1/managedEntity/me1/sampler/s1/dataview/Streams%20Dataview/row/a",
      undefined,
      400,
      "Reserved dataview name",
    ],
    [
      "unknown managed entity",
      "PUT",
      "/v1/managedEntity/nope/sampler/s1/dataview/dv",
      "[]",
      404,
      "Managed entity not found",
    ],
    [
      "unknown sampler",
      "PUT",
      "/v1/managedEntity/me1/sampler/nope/dataview/dv",
      "[]",
      404,
      "Sampler not found",
    ],
    [
      "an fkm sampler takes no pushed dataviews",
      "PUT",
      "/v1/managedEntity/me1/sampler/logs/dataview/dv",
      "[]",
      404,
      "Sampler not found",
    ],
    [
      "wrong sampler type",
      "PUT",
      "/v1/managedEntity/me1/sampler/s1(zz)/dataview/dv",
      "[]",
      404,
      "Sampler not found",
    ],
    [
      "ambiguous sampler name",
      "PUT",
      "/v1/managedEntity/me1/sampler/twin/dataview/dv",
      "[]",
      400,
      "Ambiguous sampler",
    ],
    [
      "row PUT on a missing dataview",
      "PUT",
      "/v1/managedEntity/me1/sampler/s1/dataview/none/row/a",
      "{}",
      404,
      "Dataview not found",
    ],
    [
      "DELETE of a missing dataview",
      "DELETE",
      "/v1/managedEntity/me1/sampler/s1/dataview/none",
      undefined,
      404,
      "Dataview not found",
    ],
    ["DELETE of a missing row", "DELETE", `${DV}/row/zzz`, undefined, 404, "Row not found"],
    ["wrong method", "POST", DV, "[]", 405, "Method not allowed"],
    ["unknown path", "GET", "/v2/nothing", undefined, 404, "Not found"],
  ];
  for (const [name, method, url, payload, status, title] of cases) {
    test(name, async () => {
      const r = await call(method, url, payload);
      assert.equal(r.status, status);
      assert.equal(r.body.status, status);
      assert.equal(r.body.title, title);
      assert.equal(typeof r.body.body, "string");
      assert.deepEqual(Object.keys(r.body).sort(), ["body", "status", "title"]);
    });
  }

  test("405 names the allowed methods in Allow", async () => {
    const r = await call("PATCH", DV, "[]");
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, "GET, PUT, DELETE, HEAD");
  });

  test("a new row beyond the row limit is a 400", async () => {
    await call("PUT", DV, JSON.stringify([{ n: "a" }, { n: "b" }, { n: "c" }]));
    const r = await call("PUT", `${DV}/row/d`, JSON.stringify({ v: 1 }));
    assert.equal(r.status, 400);
    assert.equal(r.body.title, "Row limit reached");
  });

  test("a body over 10 MiB is a 413", async () => {
    const big = Buffer.alloc(10 * 1024 * 1024 + 10, 0x20);
    const r = await call("PUT", DV, big);
    assert.equal(r.status, 413);
    assert.equal(r.body.title, "Request body too large");
  });

  test("a deeply nested body is refused without harm", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const r = await call("PUT", DV, deep);
    assert.equal(r.status, 400);
    assert.equal((await call("GET", DV)).status, 200);
  });
});

describe("probe setup updates", () => {
  test("updateSetup adds a sampler at once and deletes the dataviews of a removed one", async () => {
    const NEW = "/v1/managedEntity/me1/sampler/added/dataview/dv";
    assert.equal((await call("PUT", NEW, "[]")).status, 404);
    const next = parseSetup(`
gateway: { name: GW, maxColumnsPerDataview: 8, maxCellLength: 64 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: added, plugin: rest-api }
`);
    const changes = await changesOf(async () => probe.updateSetup(next.probes[0]!));
    assert.ok(changes.length > 0 && changes.every((c) => c.kind === "dataviewDelete"));
    assert.ok(changes.some((c) => c.dataview.sampler === "s1" && c.dataview.dataview === "dv"));
    assert.equal((await call("PUT", NEW, "[]")).status, 200);
    assert.equal((await call("GET", DV)).status, 404);
  });
});
