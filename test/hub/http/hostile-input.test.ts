/**
 * Hostile and malformed input to the hub through real sockets: every answer is a 4xx with
 * exactly the `{status, title, body}` error body (DESIGN 3.2), never a 500 and never Fastify's or
 * Node's own body — also for errors raised by the router (a malformed percent-escape) and by Node's
 * HTTP parser (an over-long header, a malformed request line), which never reach a route.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../../src/hub/app.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";

const setup = parseSetup("gateway: { name: GW }\nhub: { security: { enabled: false } }\n");

let hub: Hub;
let base: string;
let port: number;
const dataDir = mkdtempSync(join(tmpdir(), "vigil-hub-hostile-"));

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/** One request with the path sent byte for byte as given (no URL normalisation by a client). */
function send(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers: options.headers ?? {} }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers["content-type"] ?? ""),
          text,
        }),
      );
    });
    req.on("error", reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** Raw bytes on a socket; resolves with the whole answer once the server closes it. */
function raw(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(bytes));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
}

/** Asserts the documented error body with `status`; returns its `body` text. */
function assertErrorBody(answer: Answer, status: number): string {
  assert.equal(answer.status, status, answer.text);
  assert.match(answer.contentType, /^application\/json/);
  const body = JSON.parse(answer.text) as { status: unknown; title: unknown; body: unknown };
  assert.deepEqual(Object.keys(body).sort(), ["body", "status", "title"], answer.text);
  assert.equal(body.status, status);
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.body, "string");
  return body.body as string;
}

const json = { "content-type": "application/json" };
const q = (text: string) => encodeURIComponent(text);

before(async () => {
  const store = await createDuckDbStore({ path: ":memory:" });
  hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  base = await hub.start(0);
  port = Number(new URL(base).port);
});
after(async () => {
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const tableAt = (sampleTime: string, value: string) => ({
  type: "table",
  operation: "update",
  data: {
    sampleTime,
    target: {
      gateway: "GW",
      probe: "p",
      managedEntity: "m",
      type: "",
      sampler: "s",
      dataview: "d",
      row: "r",
      filter: { osType: "Linux", pluginName: "rest-api" },
    },
    row: { c: value },
  },
});

describe("a leap second in a backfill", () => {
  test("rejects that message alone with a clear reason; the rest of the batch is stored", async () => {
    const answer = await send("POST", "/v0/messages", {
      headers: json,
      body: JSON.stringify([
        tableAt("2016-12-31T23:59:59Z", "1"),
        tableAt("2016-12-31T23:59:60Z", "2"),
        tableAt("2017-01-01T00:00:00Z", "3"),
      ]),
    });
    assert.equal(answer.status, 200);
    const result = JSON.parse(answer.text) as {
      accepted: number;
      rejected: { index: number; error: string }[];
    };
    assert.equal(result.accepted, 2);
    assert.deepEqual(
      result.rejected.map((r) => r.index),
      [1],
    );
    assert.match(result.rejected[0]?.error ?? "", /sampleTime: '2016-12-31T23:59:60Z' is a leap second/);
    // The batch's other messages and later batches are stored (no rollback, no stale cache).
    const later = await send("POST", "/v0/messages", {
      headers: json,
      body: JSON.stringify([tableAt("2017-01-01T00:00:01Z", "4")]),
    });
    assert.equal(JSON.parse(later.text).accepted, 1);
    const data = await send("GET", `/v0/entities/1/metrics/data?path=${q("s/d/r/c")}`);
    assert.deepEqual(
      (JSON.parse(data.text) as { values: { value: string }[] }).values.map((v) => v.value),
      ["1", "3", "4"],
    );
  });
});

describe("4xx with the error body, never a 500", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: { name: string; method?: string; path: string; headers?: Record<string, string>; body?: string; status: number; says: RegExp }[] = [
    { name: "filter given twice", path: `/v0/entities?filter=${q("a = b")}&filter=${q("c = d")}`, status: 400, says: /'filter' is given 2 times/ },
    { name: "includeDeleted given twice", path: "/v0/entities?includeDeleted=true&includeDeleted=false", status: 400, says: /'includeDeleted'/ },
    { name: "an entity id beyond 32 bits", path: "/v0/entities/2147483648", status: 400, says: /from 1 to 2147483647/ },
    { name: "a 20-digit entity id", path: "/v0/entities/99999999999999999999", status: 400, says: /from 1 to 2147483647/ },
    { name: "entity id 0", path: "/v0/entities/0", status: 400, says: /from 1 to 2147483647/ },
    { name: "a negative entity id", path: "/v0/entities/-1", status: 400, says: /from 1 to 2147483647/ },
    { name: "an entity id with an exponent", path: "/v0/entities/1e3", status: 400, says: /from 1 to 2147483647/ },
    { name: "an out-of-range id under /metrics/data", path: `/v0/entities/2147483648/metrics/data?path=${q("s/d/r/c")}`, status: 400, says: /from 1 to 2147483647/ },
    { name: "the largest id that no entity has", path: "/v0/entities/2147483647", status: 404, says: /No entity has id 2147483647/ },
    { name: "a malformed percent-escape in the path", path: "/v0/entities/%E0%A4%A", status: 400, says: /malformed percent-escape/ },
    { name: "a lone % in the path", path: "/v0/entities/attributes/%", status: 400, says: /malformed percent-escape/ },
    { name: "a path parameter over the router's length limit", path: `/v0/entities/attributes/${"x".repeat(500)}`, status: 400, says: /too long/ },
    { name: "an unknown path", path: "/v0/nothing", status: 404, says: /No resource at \/v0\/nothing/ },
    { name: "a wrong method", method: "DELETE", path: "/v0/entities", status: 405, says: /DELETE is not allowed/ },
    { name: "a wrong method with a body of an unsupported type", method: "POST", path: "/v0/entities", headers: { "content-type": "text/csv" }, body: "a,b", status: 405, says: /POST is not allowed/ },
    { name: "a wrong method with a body that is not JSON", method: "PUT", path: "/v0/metrics/query", headers: json, body: "{", status: 405, says: /PUT is not allowed/ },
    { name: "QUERY, a method with a body, without a content type", method: "QUERY", path: "/v0/entities", body: "x", status: 405, says: /QUERY is not allowed/ },
    { name: "a body that is not JSON", method: "POST", path: "/v0/metrics/query", headers: json, body: "{", status: 400, says: /not valid JSON/ },
    { name: "a __proto__ key in a JSON body", method: "POST", path: "/v0/events/recordsQuery", headers: json, body: '{"__proto__": {"x": 1}}', status: 400, says: /./ },
    { name: "a constructor.prototype key in a JSON body", method: "POST", path: "/v0/metrics/query", headers: json, body: '{"constructor": {"prototype": {"x": 1}}}', status: 400, says: /./ },
    { name: "an unsupported content type", method: "POST", path: "/v0/metrics/query", headers: { "content-type": "text/csv" }, body: "a,b", status: 400, says: /Content-Type/ },
    { name: "a JSON body that is not an object", method: "POST", path: "/v0/events/recordsQuery", headers: json, body: "null", status: 400, says: /./ },
    { name: "a groupBy on a prototype name", path: "/v0/entities/summary?groupBy=__proto__&groupBy=constructor", status: 200, says: /./ },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const answer = await send(c.method ?? "GET", c.path, {
        ...(c.headers === undefined ? {} : { headers: c.headers }),
        ...(c.body === undefined ? {} : { body: c.body }),
      });
      if (c.status === 200) {
        assert.equal(answer.status, 200, answer.text);
        return;
      }
      assert.match(assertErrorBody(answer, c.status), c.says);
    });
  }

  test("grouping by entity:constructor or entity:__proto__ is an ordinary attribute", async () => {
    for (const grouping of ["entity:constructor", "entity:__proto__", "entity:toString"]) {
      const answer = await send("POST", "/v0/metrics/query", {
        headers: json,
        body: JSON.stringify({
          zoneId: "UTC",
          filter: { entities: "", range: { from: "2016-12-31T00:00:00Z", to: "2017-01-02T00:00:00Z" } },
          metrics: [{ identifier: "m", include: ["s/d/{rowname}/c"] }],
          aggregations: ["svc.count"],
          bucketing: { duration: "P1D" },
          grouping: [grouping],
        }),
      });
      assert.equal(answer.status, 200, answer.text);
      const body = JSON.parse(answer.text) as { data: { group: Record<string, unknown> }[] };
      assert.deepEqual(
        body.data.map((d) => d.group),
        [{ attribute: "" }, { attribute: "" }],
      );
    }
  });

  test("the values of an attribute named constructor", async () => {
    const answer = await send("GET", "/v0/entities/attributes/constructor");
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.text), []);
  });

  test("a body over the limit is a 413", async () => {
    const answer = await send("POST", "/v0/metrics/query", {
      headers: json,
      body: JSON.stringify({ x: "a".repeat(11 * 1024 * 1024) }),
    });
    assertErrorBody(answer, 413);
  });
});

describe("errors of Node's HTTP parser", () => {
  test("an over-long header is a 400 with the error body", async () => {
    const answer = await send("GET", "/v0/ping", { headers: { "x-long": "a".repeat(64 * 1024) } });
    assert.match(assertErrorBody(answer, 400), /header fields are larger than the server accepts/);
  });

  test("a malformed request line is a 400 with the error body", async () => {
    const text = await raw("GARBAGE\r\n\r\n");
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/);
    const body = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ["body", "status", "title"]);
    assert.equal(body.status, 400);
    assert.match(String(body.body), /not valid HTTP\/1\.1/);
  });

  test("a bad header value is a 400 with the error body", async () => {
    const text = await raw("GET /v0/ping HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n");
    assert.match(text, /^HTTP\/1\.1 400 /);
    assert.match(text, /"status":400/);
  });

  test("the hub still answers afterwards", async () => {
    assert.equal((await send("GET", "/v0/ping")).status, 200);
  });
});
