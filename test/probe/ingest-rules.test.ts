/**
 * The probe's ingest rules over real HTTP sockets (table-driven): empty names in the
 * path, 405 with `Allow` for every other method (TRACE included), duplicate names that never
 * collide, `Column-Order` naming absent columns, every error message filled in, and GET on
 * dataview and sampler paths (DESIGN 3.1).
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import { Publisher } from "../../src/gateway/publish/publisher.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually } from "../link/helpers.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me
        samplers:
          - { name: s, plugin: rest-api, rowLimit: 3 }
          - { name: twin, type: a, plugin: rest-api }
          - { name: twin, type: b, plugin: rest-api }
`);

// The probe's log lines, to see the Column-Order warning.
const logs: Record<string, unknown>[] = [];
const logger = pino(
  { level: "info" },
  { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
);
const quiet = pino({ level: "silent" });
const publisher = new Publisher({
  gateway: "GW",
  sinks: [{ name: "test", publish: async () => {}, close: async () => {} }],
  logger: quiet,
});
const published: PublicV2Message[] = [];
publisher.subscribe((envelope) => published.push(envelope.message));
const gateway = buildGateway({ setup, publisher, logger: quiet });
const probe = buildProbe({ name: "p1", link: gateway.connectInProcess(), setup: setup.probes[0]!, logger });
let base = "";

before(async () => {
  base = (await probe.start()).http;
  await eventually(() => probe.linkStatus().state === "up", "the link to come up");
});
after(async () => {
  await probe.stop(1000);
  await gateway.stop(1000);
  await publisher.close(1000);
});

const idle = () => {
  const status = probe.linkStatus();
  return status.state === "up" && status.outgoing === 0 && status.inFlightBatches === 0;
};

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: Record<string, unknown>;
}

/** One request on a real socket (node:http: fetch refuses TRACE). */
function call(
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
        });
      });
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const ME = "/v1/managedEntity/me/sampler/s";
const DV = `${ME}/dataview`;

/** The documented error body: exactly status, title, body, and no unfilled `{placeholder}`. */
function assertErrorBody(r: Answer, status: number, title: string): void {
  assert.equal(r.status, status, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ["body", "status", "title"]);
  assert.equal(r.body.status, status);
  assert.equal(r.body.title, title);
  assert.doesNotMatch(String(r.body.body), /\{\w+\}/, "every placeholder is filled in");
}

describe("empty names in the path are a 400", () => {
  const cases: [string, string, string, string | undefined][] = [
    ["PUT dataview", "PUT", `${DV}/`, "[]"],
    ["GET dataview", "GET", `${DV}/`, undefined],
    ["DELETE dataview", "DELETE", `${DV}/`, undefined],
    ["PUT row", "PUT", `${DV}/dv/row/`, '{"id":"a"}'],
    ["GET row", "GET", `${DV}/dv/row/`, undefined],
    ["DELETE row", "DELETE", `${DV}/dv/row/`, undefined],
  ];
  for (const [name, method, path, body] of cases) {
    test(name, async () => {
      const r = await call(method, path, body);
      assertErrorBody(r, 400, "Bad request");
      assert.match(String(r.body.body), /name in the path is empty/);
    });
  }

  test("nothing was created or published", async () => {
    await eventually(idle, "the link to be idle");
    assert.ok(!published.some((m) => (m.data.target as { dataview?: string }).dataview === ""));
    const sampler = await call("GET", ME);
    assert.ok(!(sampler.body.dataviews as string[]).includes(""));
  });
});

describe("405 with Allow for every other method (DESIGN 3.2)", () => {
  const resources: [string, string, string][] = [
    ["dataview", `${DV}/dv`, "GET, PUT, DELETE, HEAD"],
    ["row", `${DV}/dv/row/a`, "GET, PUT, DELETE, HEAD"],
    ["sampler", ME, "GET, HEAD"],
    ["health check", "/healthcheck", "GET, HEAD"],
  ];
  const methods = ["TRACE", "POST", "PATCH", "OPTIONS", "PROPFIND", "SEARCH", "MKCOL", "LOCK", "PURGE"];
  for (const [what, path, allow] of resources) {
    for (const method of methods) {
      test(`${method} on a ${what}`, async () => {
        const r = await call(method, path);
        assertErrorBody(r, 405, "Method not allowed");
        assert.equal(r.headers.allow, allow);
      });
    }
  }
  test("PUT on a sampler path", async () => {
    const r = await call("PUT", ME, "{}");
    assertErrorBody(r, 405, "Method not allowed");
    assert.equal(r.headers.allow, "GET, HEAD");
  });
});

describe("duplicate names never collide (DESIGN 3.3)", () => {
  const cases: [string, string[], string[]][] = [
    ["rows x, x, x_duplicate1", ["x", "x", "x_duplicate1"], ["x", "x_duplicate2", "x_duplicate1"]],
    ["the literal first", ["x_duplicate1", "x", "x"], ["x_duplicate1", "x", "x_duplicate2"]],
    ["plain duplicates", ["a", "a", "b"], ["a", "a_duplicate1", "b"]],
  ];
  let n = 0;
  for (const [name, ids, names] of cases) {
    test(name, async () => {
      const path = `${DV}/dup-${n++}`;
      await eventually(idle, "the link to be idle");
      const from = published.length;
      const r = await call("PUT", path, JSON.stringify(ids.map((id, i) => ({ id, i }))));
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { rows: ids.length, duplicates: ids.length - new Set(ids).size, dropped: 0 });
      const state = await call("GET", path);
      assert.deepEqual(
        (state.body.rows as { name: string; cells: { i: string } }[]).map((row) => [row.name, row.cells.i]),
        names.map((published, i) => [published, String(i)]),
      );
      await eventually(idle, "the link to be idle");
      const rows = published
        .slice(from)
        .filter((m) => m.type === "table")
        .map((m) => (m.data.target as { row: string }).row);
      assert.deepEqual(rows.sort(), [...names].sort(), "one published row per row");
    });
  }

  test("PUT row creating the literal name moves the duplicate aside, and DELETE gives it back", async () => {
    const path = `${DV}/dup-rows`;
    const names = async () =>
      ((await call("GET", path)).body.rows as { name: string; cells: { v: string } }[]).map((r) => [
        r.name,
        r.cells.v,
      ]);
    assert.equal((await call("PUT", path, '[{"id":"x","v":"1"},{"id":"x","v":"2"}]')).status, 200);
    await eventually(idle, "the link to be idle");
    let from = published.length;
    assert.equal((await call("PUT", `${path}/row/z`, '{"id":"x_duplicate1","v":"3"}')).status, 200);
    assert.deepEqual(await names(), [
      ["x", "1"],
      ["x_duplicate2", "2"],
      ["x_duplicate1", "3"],
    ]);
    await eventually(idle, "the link to be idle");
    const summary = () =>
      published
        .slice(from)
        .filter((m) => m.type === "table")
        .map(
          (m) =>
            `${m.operation}:${(m.data.target as { row: string }).row}:${(m.data.row as { v: string }).v}`,
        );
    assert.deepEqual(summary().sort(), ["create:x_duplicate2:2", "update:x_duplicate1:3"]);

    from = published.length;
    assert.equal((await call("DELETE", `${path}/row/x_duplicate1`)).status, 200);
    assert.deepEqual(await names(), [
      ["x", "1"],
      ["x_duplicate1", "2"],
    ]);
    await eventually(idle, "the link to be idle");
    assert.deepEqual(summary().sort(), ["delete:x_duplicate2:2", "update:x_duplicate1:2"]);
  });
});

describe("Column-Order naming a column that no row has", () => {
  test("is not shown, a warning is logged, and the request is accepted", async () => {
    const path = `${DV}/order`;
    const before = logs.length;
    const r = await call("PUT", path, '[{"id":"a","v":"1"},{"id":"b","w":"2"}]', {
      "column-order": "nope, id, w, also-nope",
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { rows: 2, duplicates: 0, dropped: 0 });
    const state = await call("GET", path);
    assert.deepEqual(state.body.columns, ["id", "w", "v"]);
    assert.deepEqual(
      (state.body.rows as { name: string }[]).map((row) => row.name),
      ["a", "b"],
    );
    const warning = logs.slice(before).find((line) => line.level === 40);
    assert.ok(warning !== undefined, "a warning is logged");
    assert.deepEqual(warning.columns, ["nope", "also-nope"]);
    assert.equal(warning.dataview, "order");
  });

  test("a column only in rows beyond the row limit is not shown either", async () => {
    const path = `${DV}/order-limit`;
    const r = await call("PUT", path, '[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d","late":"1"}]', {
      "column-order": "late",
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { rows: 3, duplicates: 0, dropped: 1 });
    assert.deepEqual((await call("GET", path)).body.columns, ["id"]);
  });
});

describe("GET on dataview and sampler paths (DESIGN 3.1)", () => {
  test("a dataview: columns, rows with duplicate names applied, headlines", async () => {
    const path = `${DV}/shown`;
    const body = '[{"id":"a","__proto__":"p","constructor":1.50},{"id":"a","toString":"t"}]';
    assert.equal((await call("PUT", path, body)).status, 200);
    const r = await call("GET", path);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ["columns", "rows", "headlines"]);
    assert.deepEqual(r.body.columns, ["id", "__proto__", "constructor", "toString"]);
    // The raw JSON names `__proto__` as an ordinary key (JSON.parse makes it an own property).
    assert.match(r.text, /"cells":\{"id":"a","__proto__":"p","constructor":"1.50","toString":""\}/);
    const rows = r.body.rows as { name: string; cells: Record<string, string> }[];
    assert.deepEqual(
      rows.map((row) => [row.name, Object.entries(row.cells)]),
      [
        [
          "a",
          [
            ["id", "a"],
            ["__proto__", "p"],
            ["constructor", "1.50"],
            ["toString", ""],
          ],
        ],
        [
          "a_duplicate1",
          [
            ["id", "a"],
            ["__proto__", ""],
            ["constructor", ""],
            ["toString", "t"],
          ],
        ],
      ],
    );
    assert.deepEqual(r.body.headlines, { samplingStatus: "OK", totalRows: "2" });
  });

  test("a sampler: its sampling info and dataviews", async () => {
    await call("PUT", "/v1/managedEntity/me/sampler/twin(b)/dataview/one", '[{"id":"a"}]');
    const r = await call("GET", "/v1/managedEntity/me/sampler/twin(b)");
    assert.equal(r.status, 200);
    assert.equal(r.body.sampler, "twin");
    assert.equal(r.body.type, "b");
    assert.equal(r.body.plugin, "rest-api");
    assert.deepEqual(r.body.samplingInfo, {
      samplingOptionsActive: false,
      status: "Sampling dependent on 3rd Party Application",
    });
    assert.deepEqual(r.body.dataviews, ["one"]);
  });

  const reserved: [string, string][] = [
    ["GET dataview", `${DV}/Streams%20Dataview`],
    ["GET row", `${DV}/Streams%20Dataview/row/a`],
  ];
  for (const [name, path] of reserved) {
    test(`${name} of the Streams Dataview is a 400`, async () => {
      assertErrorBody(await call("GET", path), 400, "Reserved dataview name");
    });
  }
});

describe("every probe error message is filled in", () => {
  const cases: [string, string, string, string | undefined, number, string, RegExp][] = [
    [
      "row limit",
      "PUT",
      `${DV}/full/row/d`,
      '{"id":"d"}',
      400,
      "Row limit reached",
      /Dataview 'full' already holds 3 rows/,
    ],
    [
      "unknown dataview",
      "GET",
      `${DV}/none`,
      undefined,
      404,
      "Dataview not found",
      /Sampler 's' has no dataview 'none'/,
    ],
    [
      "unknown row",
      "GET",
      `${DV}/full/row/zz`,
      undefined,
      404,
      "Row not found",
      /Dataview 'full' has no row 'zz'/,
    ],
    ["unknown row on DELETE", "DELETE", `${DV}/full/row/zz`, undefined, 404, "Row not found", /no row 'zz'/],
    [
      "unknown entity",
      "GET",
      "/v1/managedEntity/nope/sampler/s",
      undefined,
      404,
      "Managed entity not found",
      /'nope'.*'p1'/,
    ],
    [
      "unknown sampler",
      "GET",
      "/v1/managedEntity/me/sampler/nope",
      undefined,
      404,
      "Sampler not found",
      /'me' has no rest-api sampler 'nope'/,
    ],
    [
      "ambiguous sampler",
      "GET",
      "/v1/managedEntity/me/sampler/twin",
      undefined,
      400,
      "Ambiguous sampler",
      /twin\(a\) or twin\(b\)/,
    ],
    [
      "no body",
      "PUT",
      `${DV}/full`,
      undefined,
      400,
      "Request has no body",
      /A PUT needs a body: a JSON array/,
    ],
    ["not JSON", "PUT", `${DV}/full`, "[{", 400, "Unable to create or update dataview", /not valid JSON/],
    [
      "wrong method",
      "POST",
      `${DV}/full`,
      "[]",
      405,
      "Method not allowed",
      /POST is not allowed on \/v1\/.*full; allowed: GET, PUT, DELETE, HEAD/,
    ],
  ];
  before(async () => {
    assert.equal((await call("PUT", `${DV}/full`, '[{"id":"a"},{"id":"b"},{"id":"c"}]')).status, 200);
  });
  for (const [name, method, path, body, status, title, text] of cases) {
    test(name, async () => {
      const r = await call(method, path, body);
      assertErrorBody(r, status, title);
      assert.match(String(r.body.body), text);
    });
  }
});
