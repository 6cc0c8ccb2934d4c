/**
 * The hub's HTTP API in-process (STYLE 14) over a real in-memory DuckDB store: backfill through
 * POST /v0/messages, entity queries with filters, and a metric query over known samples.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { AGGREGATIONS } from "../../src/hub/query/aggregations.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import type { PublicV2Message } from "../../src/messages/types.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: web-01
        samplers:
          - name: orders
            plugin: rest-api
            schema: { columns: { latency: { type: float64, unit: milliseconds } } }
hub: { security: { enabled: false } }
`);

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const filter = { osType: "Linux", pluginName: "rest-api" };

function entity(name: string, attributes: Record<string, string>, operation = "create"): unknown {
  return {
    type: "managedEntity",
    operation,
    data: { timestamp: iso(T0), target: { gateway: "GW", probe: "p1", managedEntity: name }, attributes },
  };
}

function table(me: string, row: string, latency: string, at: number): PublicV2Message {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: iso(at),
      target: {
        gateway: "GW",
        probe: "p1",
        managedEntity: me,
        type: "",
        sampler: "orders",
        dataview: "queue",
        row,
        filter,
      },
      row: { name: row, latency },
    },
  };
}

const probe = {
  type: "probe",
  operation: "create",
  data: {
    timestamp: iso(T0),
    target: { gateway: "GW", probe: "p1" },
    parameters: { osType: "Linux", HostName: "h1" },
  },
};

let hub: Hub;
const dataDir = mkdtempSync(join(tmpdir(), "vigil-hub-http-"));

async function call(
  method: "GET" | "POST",
  url: string,
  payload?: unknown,
  contentType = "application/json",
) {
  const response = await hub.http.inject({
    method,
    url,
    ...(payload === undefined
      ? {}
      : { payload: typeof payload === "string" ? payload : JSON.stringify(payload) }),
    headers: { "content-type": contentType },
  });
  return { status: response.statusCode, body: response.json() as unknown };
}

before(async () => {
  const store = await createDuckDbStore({ path: ":memory:" });
  hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  await store.migrate();
  await hub.ingester.init();
});
after(async () => {
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("POST /v0/messages (backfill)", () => {
  test("accepts valid messages and reports invalid ones by index", async () => {
    const messages = [
      probe,
      entity("web-01", { Region: "emea", Tier: "1" }),
      entity("web-02", { Region: "amer", Empty: "" }),
      entity("old", { Region: "emea" }),
      { type: "table", operation: "update", data: {} },
      table("web-01", "EURUSD", "10", T0 + 1_000),
      table("web-01", "EURUSD", "20", T0 + 2_000),
      table("web-01", "GBPUSD", "60", T0 + 3_000),
      table("web-01", "GBPUSD", "n/a", T0 + 4_000),
      table("web-02", "EURUSD", "1000", T0 + 1_000),
      entity("old", {}, "delete"),
    ];
    const { status, body } = await call("POST", "/v0/messages", messages);
    assert.equal(status, 200);
    const result = body as { accepted: number; rejected: { index: number; error: string }[] };
    assert.equal(result.accepted, 10);
    assert.deepEqual(
      result.rejected.map((r) => r.index),
      [4],
    );
    assert.match(result.rejected[0]?.error ?? "", /sampleTime/);
  });

  test("takes NDJSON too, with bad lines rejected by index", async () => {
    const text = `${JSON.stringify(table("web-01", "USDJPY", "5", T0 + 5_000))}\n{oops\n\n`;
    const { status, body } = await call("POST", "/v0/messages", text, "application/x-ndjson");
    assert.equal(status, 200);
    assert.deepEqual((body as { accepted: number }).accepted, 1);
    assert.deepEqual(
      (body as { rejected: { index: number }[] }).rejected.map((r) => r.index),
      [1],
    );
  });

  test("an empty body is a 400", async () => {
    const { status, body } = await call("POST", "/v0/messages", " ");
    assert.equal(status, 400);
    assert.equal((body as { title: string }).title, "Request has no body");
  });
});

describe("entity endpoints", () => {
  const names = (body: unknown) =>
    (body as { attributes: Record<string, string> }[]).map((e) => e.attributes["svc.name"]);

  const cases: [string, string, string[]][] = [
    ["no filter lists every live entity", "/v0/entities", ["web-01", "web-02"]],
    ["includeDeleted shows deleted ones", "/v0/entities?includeDeleted=true", ["web-01", "web-02", "old"]],
    ["= on a user attribute", `/v0/entities?filter=${encodeURIComponent("user.Region = emea")}`, ["web-01"]],
    ["IN", `/v0/entities?filter=${encodeURIComponent("user.Region IN (amer, apac)")}`, ["web-02"]],
    ["EXISTS ignores empty values", `/v0/entities?filter=${encodeURIComponent("user.Empty EXISTS")}`, []],
    [
      "hyphenated svc.os-type",
      `/v0/entities?filter=${encodeURIComponent("svc.os-type = Linux")}`,
      ["web-01", "web-02"],
    ],
    [
      "svc.hostname comes from the probe",
      `/v0/entities?filter=${encodeURIComponent("svc.hostname = h1")}`,
      ["web-01", "web-02"],
    ],
  ];
  for (const [name, url, expected] of cases) {
    test(name, async () => {
      const { status, body } = await call("GET", url);
      assert.equal(status, 200);
      assert.deepEqual(names(body), expected);
    });
  }

  test("a filter syntax error is a 400 naming the position", async () => {
    const { status, body } = await call("GET", `/v0/entities?filter=${encodeURIComponent("svc.name = ")}`);
    assert.equal(status, 400);
    assert.equal((body as { title: string }).title, "Invalid entity filter");
    assert.match((body as { body: string }).body, /position 11/);
  });

  test("attributes with value counts; empty values count as absent", async () => {
    const { body } = await call("GET", "/v0/entities/attributes");
    const byName = Object.fromEntries(
      (body as { name: string; valueCount: number }[]).map((a) => [a.name, a.valueCount]),
    );
    assert.equal(byName["user.Region"], 2);
    assert.equal(byName["svc.name"], 2);
    assert.equal(byName["user.Empty"], undefined);
  });

  test("values of one attribute, sorted", async () => {
    assert.deepEqual((await call("GET", "/v0/entities/attributes/user.Region")).body, ["amer", "emea"]);
  });

  test("one entity by id, and 404 / 400 for missing and malformed ids", async () => {
    const one = await call("GET", "/v0/entities/1");
    assert.equal(one.status, 200);
    assert.equal((one.body as { attributes: Record<string, string> }).attributes["svc.name"], "web-01");
    assert.equal((await call("GET", "/v0/entities/999")).status, 404);
    assert.equal((await call("GET", "/v0/entities/abc")).status, 400);
  });

  test("an entity's metrics are listed as cell references with units", async () => {
    const { body } = await call("GET", "/v0/entities/1/metrics");
    assert.deepEqual(
      (body as { name: string; unit: string }[]).find((m) => m.name === "orders/queue/{rowname}/latency"),
      { name: "orders/queue/{rowname}/latency", type: "float64", unit: "milliseconds" },
    );
  });
});

describe("POST /v0/metrics/query", () => {
  const query = (overrides: Record<string, unknown> = {}) => ({
    zoneId: "Europe/London",
    filter: { entities: "svc.name = web-01", range: { from: iso(T0), to: iso(T0 + 3_600_000) } },
    metrics: [{ identifier: "lat", include: ["orders/queue/{rowname}/latency"] }],
    aggregations: ["svc.avg", "svc.count", "svc.min", "svc.max", "svc.sum"],
    bucketing: { duration: "PT1H" },
    ...overrides,
  });

  test("aggregates the numeric samples of the selected entities in one bucket", async () => {
    const { status, body } = await call("POST", "/v0/metrics/query", query());
    assert.equal(status, 200);
    assert.deepEqual(body, {
      schema: {
        bucketing: { duration: "PT1H" },
        grouping: [],
        metrics: {
          lat: {
            "svc.avg": { type: "float64", unit: "milliseconds" },
            "svc.count": { type: "int64", unit: "none" },
            "svc.min": { type: "float64", unit: "milliseconds" },
            "svc.max": { type: "float64", unit: "milliseconds" },
            "svc.sum": { type: "float64", unit: "milliseconds" },
          },
        },
      },
      data: [
        {
          bucket: "2026-03-01T10:00:00+00:00",
          group: {},
          metrics: { lat: { "svc.avg": 23.75, "svc.count": 4, "svc.min": 5, "svc.max": 60, "svc.sum": 95 } },
        },
      ],
    });
  });

  test("a named row selects only that row", async () => {
    const { body } = await call(
      "POST",
      "/v0/metrics/query",
      query({
        metrics: [{ identifier: "eur", include: ["orders/queue/EURUSD/latency"] }],
        aggregations: ["svc.avg"],
      }),
    );
    assert.deepEqual((body as { data: { metrics: unknown }[] }).data[0]?.metrics, { eur: { "svc.avg": 15 } });
  });

  test("bucketing.count cuts the range into equal buckets from `from`, labelled in the zone", async () => {
    const range = { from: iso(T0), to: iso(T0 + 6_000) };
    const { status, body } = await call(
      "POST",
      "/v0/metrics/query",
      query({
        zoneId: "Asia/Kolkata",
        filter: { entities: "svc.name = web-01", range },
        aggregations: ["svc.count", "svc.sum"],
        bucketing: { count: 3 },
      }),
    );
    assert.equal(status, 200);
    assert.deepEqual(body, {
      schema: {
        bucketing: { count: 3, duration: "PT2S" },
        grouping: [],
        metrics: {
          lat: {
            "svc.count": { type: "int64", unit: "none" },
            "svc.sum": { type: "float64", unit: "milliseconds" },
          },
        },
      },
      data: [
        {
          bucket: "2026-03-01T15:30:00+05:30",
          group: {},
          metrics: { lat: { "svc.count": 1, "svc.sum": 10 } },
        },
        {
          bucket: "2026-03-01T15:30:02+05:30",
          group: {},
          metrics: { lat: { "svc.count": 2, "svc.sum": 80 } },
        },
        {
          bucket: "2026-03-01T15:30:04+05:30",
          group: {},
          metrics: { lat: { "svc.count": 1, "svc.sum": 5 } },
        },
      ],
    });
  });

  test("count buckets whose width is not a whole millisecond are labelled with their first whole millisecond", async () => {
    const range = { from: iso(T0), to: iso(T0 + 5_000) };
    const { status, body } = await call(
      "POST",
      "/v1alpha/metrics/query",
      query({
        zoneId: "UTC",
        filter: { entities: "", range },
        aggregations: ["svc.count"],
        bucketing: { count: 3 },
      }),
    );
    assert.equal(status, 200);
    const answer = body as { schema: { bucketing: unknown }; data: { bucket: string; metrics: unknown }[] };
    assert.deepEqual(answer.schema.bucketing, { count: 3, duration: "PT1.666666666S" });
    assert.deepEqual(
      answer.data.map((d) => [d.bucket, d.metrics]),
      [
        ["2026-03-01T10:00:00+00:00", { lat: { "svc.count": 2 } }], // web-01 10 at +1 s, web-02 1000 at +1 s
        ["2026-03-01T10:00:01.667+00:00", { lat: { "svc.count": 2 } }], // 20 at +2 s, 60 at +3 s
      ],
    );
  });

  // biome-ignore format: one line per case (STYLE 16)
  const badBucketing: [string, unknown, string][] = [
    ["both duration and count", { duration: "PT1H", count: 3 }, "bucketing: has more than one field; give only duration or only count, not both"],
    ["neither duration nor count", {}, "bucketing: is empty; give duration or count"],
    ["a count of 0", { count: 0 }, "bucketing.count: must be >= 1"],
    ["a count above 100 000", { count: 100_001 }, "bucketing.count: must be <= 100000"],
    ["a fractional count", { count: 1.5 }, "bucketing.count: must be integer"],
    ["more buckets than milliseconds in the range", { count: 100_000 }, "bucketing.count: 100000 buckets of a range of 60000 ms would be narrower than a millisecond; ask for fewer buckets or a longer range"],
  ];
  for (const [name, bucketing, message] of badBucketing) {
    test(`bucketing with ${name} is a 400 naming the field`, async () => {
      const range = { from: iso(T0), to: iso(T0 + 60_000) };
      const { status, body } = await call(
        "POST",
        "/v0/metrics/query",
        query({ filter: { entities: "", range }, bucketing }),
      );
      assert.equal(status, 400);
      assert.deepEqual(body, { status: 400, title: "Invalid metric query", body: message });
    });
  }

  test("the same handler answers under /v1alpha", async () => {
    assert.equal((await call("POST", "/v1alpha/metrics/query", query())).status, 200);
  });

  test("an invalid request is a 400 naming the field", async () => {
    const { status, body } = await call("POST", "/v0/metrics/query", query({ zoneId: "Mars/Olympus" }));
    assert.equal(status, 400);
    assert.match((body as { body: string }).body, /^zoneId/);
  });

  test("a bad entity filter in the body is a 400", async () => {
    const bad = query({ filter: { entities: "svc.name ==", range: { from: iso(T0), to: iso(T0 + 1) } } });
    const { status, body } = await call("POST", "/v0/metrics/query", bad);
    assert.equal(status, 400);
    assert.equal((body as { title: string }).title, "Invalid entity filter");
  });

  test("the aggregation catalog is served as it is defined", async () => {
    const { status, body } = await call("GET", "/v0/metrics/aggregations");
    assert.equal(status, 200);
    assert.deepEqual(body, AGGREGATIONS);
  });
});

describe("security enabled (DESIGN 5.4)", () => {
  const secured = parseSetup(`
gateway: { name: GW }
hub: { security: { enabled: true, appKeys: [{ clientId: dash, clientSecret: s3cret }] } }
`);
  let securedHub: Hub;
  const securedDir = mkdtempSync(join(tmpdir(), "vigil-hub-auth-"));
  before(async () => {
    const store = await createDuckDbStore({ path: ":memory:" });
    securedHub = await buildHub({
      setup: secured,
      store,
      logger: pino({ level: "silent" }),
      dataDir: securedDir,
    });
    await store.migrate();
  });
  after(async () => {
    await securedHub.stop();
    rmSync(securedDir, { recursive: true, force: true });
  });

  const get = (url: string, headers: Record<string, string> = {}) =>
    securedHub.http.inject({ method: "GET", url, headers });

  test("the query API answers 401 with the seed's body without a token", async () => {
    for (const url of ["/v0/entities", "/v0/entities/attributes", "/v0/metrics/aggregations"]) {
      const response = await get(url);
      assert.equal(response.statusCode, 401, url);
      assert.equal(response.json().title, "Authorization failed");
      assert.match(response.json().body, /valid authorization token is needed/);
      assert.match(String(response.headers["www-authenticate"]), /^Bearer/);
    }
    const post = await securedHub.http.inject({ method: "POST", url: "/v1alpha/metrics/query", payload: {} });
    assert.equal(post.statusCode, 401);
  });

  test("ping stays open", async () => {
    assert.equal((await get("/v0/ping")).statusCode, 200);
  });

  test("a token from GET /token with the application key opens the API", async () => {
    const basic = `Basic ${Buffer.from("dash:s3cret").toString("base64")}`;
    const token = await get("/token", { authorization: basic });
    assert.equal(token.statusCode, 200);
    const body = token.json() as { access_token: string; token_type: string; expires: number };
    assert.equal(body.token_type, "Bearer");
    const entities = await get("/v0/entities", { authorization: `Bearer ${body.access_token}` });
    assert.equal(entities.statusCode, 200);
    assert.deepEqual(entities.json(), []);
  });

  test("a wrong secret gets no token", async () => {
    const basic = `Basic ${Buffer.from("dash:wrong").toString("base64")}`;
    assert.equal((await get("/token", { authorization: basic })).statusCode, 401);
  });
});
