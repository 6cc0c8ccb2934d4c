/**
 * The probe's ingest endpoints in-process (STYLE 14): status codes and bodies of DESIGN 3.2, and
 * the events the probe sends its gateway.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import type { ProbeEvent } from "../../src/link/probe-link.js";
import { buildProbe } from "../../src/probe/app.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api, rowLimit: 3 }
          - { name: twin, type: a, plugin: rest-api }
          - { name: twin, type: b, plugin: rest-api }
          - { name: logs, plugin: fkm, source: { sampler: s1, stream: x }, keywords: [{ pattern: E, severity: OK }] }
`);

const events: ProbeEvent[] = [];
const probe = buildProbe({
  setup: setup.probes[0]!,
  customDataviewMaxRows: 0,
  link: { send: (event) => events.push(event) },
  logger: pino({ level: "silent" }),
});
after(() => probe.http.close());

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

describe("probe ingest: success paths", () => {
  test("PUT dataview answers the row counts, even with curl's form content type", async () => {
    const r = await call(
      "PUT",
      DV,
      JSON.stringify([
        { n: "a", v: 1 },
        { n: "a", v: true },
        { n: "b", v: null },
      ]),
      {
        "content-type": "application/x-www-form-urlencoded",
      },
    );
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { rows: 3, duplicates: 1, dropped: 0 });
    const last = events.at(-1);
    assert.equal(last?.kind, "dataview");
    if (last?.kind === "dataview") {
      assert.deepEqual(
        last.state.rows.map((row) => [row.name, row.cells]),
        [
          ["a", { n: "a", v: "1" }],
          ["a_duplicate1", { n: "a", v: "true" }],
          ["b", { n: "b", v: "" }],
        ],
      );
      assert.deepEqual(last.touched, ["a", "a_duplicate1", "b"]);
      assert.deepEqual(last.address, {
        managedEntity: "me1",
        sampler: "s1",
        samplerType: "",
        dataview: "dv",
      });
    }
  });

  test("GET dataview shows the state with duplicate names applied", async () => {
    const r = await call("GET", DV);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.headlines, { samplingStatus: "OK", totalRows: "3" });
    assert.deepEqual(r.body.columns, ["n", "v"]);
  });

  test("PUT row touches only that row", async () => {
    const r = await call("PUT", `${DV}/row/b`, JSON.stringify({ v: 7 }));
    assert.equal(r.status, 200);
    const last = events.at(-1);
    assert.ok(last?.kind === "dataview");
    assert.deepEqual(last.touched, ["b"]);
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
    const r = await call("PUT", "/v1/managedEntity/me1/sampler/twin(b)/dataview/x", "[]");
    assert.equal(r.status, 200);
    const last = events.at(-1);
    assert.ok(last?.kind === "dataview");
    assert.equal(last.address.samplerType, "b");
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
    const r = await call("DELETE", "/v1/managedEntity/me1/sampler/s1/dataview/gone");
    assert.equal(r.status, 200);
    assert.equal(events.at(-1)?.kind, "dataviewDeleted");
    assert.equal((await call("GET", "/v1/managedEntity/me1/sampler/s1/dataview/gone")).status, 404);
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
