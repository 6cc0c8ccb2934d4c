/**
 * `GET /v0/openapi.json` against the real hub: the request schemas it publishes are the
 * very objects that validate requests, and the real responses of every endpoint — successes and
 * errors, with security enabled — satisfy the response schemas it publishes (checked with Ajv).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { pino } from "pino";
import { parseSetup } from "../../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../../src/hub/app.js";
import { HUB_OPENAPI } from "../../../src/hub/http/openapi.js";
import { METRIC_QUERY_SCHEMA } from "../../../src/hub/query/metric-query-schema.js";
import { RECORDS_QUERY_SCHEMA } from "../../../src/hub/query/records-query.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";

const setup = parseSetup(`
gateway: { name: GW }
hub: { security: { enabled: true, appKeys: [{ clientId: dash, clientSecret: s3cret, roles: [read, write] }] } }
`);

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const target = { gateway: "GW", probe: "p1", managedEntity: "web-01" };
const cell = { ...target, type: "", sampler: "orders", dataview: "queue", row: "EURUSD", column: "latency" };
const messages = [
  {
    type: "managedEntity",
    operation: "create",
    data: { timestamp: iso(T0), target, attributes: { Region: "emea" } },
  },
  {
    type: "table",
    operation: "update",
    data: {
      sampleTime: iso(T0 + 1_000),
      target: {
        ...target,
        type: "",
        sampler: "orders",
        dataview: "queue",
        row: "EURUSD",
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { latency: "10", status: "ok" },
    },
  },
  {
    type: "severity",
    operation: "update",
    data: {
      timestamp: iso(T0 + 2_000),
      target: cell,
      data: {
        severity: "WARNING",
        active: true,
        snoozed: false,
        snoozedParents: 0,
        userAssigned: false,
        value: { cell: "10" },
      },
    },
  },
  {
    type: "severity",
    operation: "update",
    data: {
      timestamp: iso(T0 + 3_000),
      target,
      data: { severity: "CRITICAL", active: true, snoozed: false, snoozedParents: 0, userAssigned: false },
    },
  },
];

type Operation = { responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> };
const paths = HUB_OPENAPI.paths as unknown as Record<string, Record<string, Operation>>;

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: "hub", components: HUB_OPENAPI.components });

/** Asserts `body` satisfies the documented JSON response of `template`/`method` for `status`. */
function assertDocumented(template: string, method: string, status: number, body: unknown): void {
  const operation = paths[template]?.[method];
  assert.ok(operation, `${method.toUpperCase()} ${template} is not in the document`);
  const response = operation.responses[String(status)];
  assert.ok(response, `${method.toUpperCase()} ${template} documents no ${status}`);
  const schema = response.content?.["application/json"]?.schema;
  assert.ok(schema?.$ref, `${method.toUpperCase()} ${template} ${status} has no schema reference`);
  const validate = ajv.getSchema(`hub${schema.$ref}`) ?? ajv.compile({ $ref: `hub${schema.$ref}` });
  assert.ok(
    validate(body),
    `${method.toUpperCase()} ${template} ${status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
  );
}

let hub: Hub;
let base: string;
let bearer = "";
const dataDir = mkdtempSync(join(tmpdir(), "vigil-hub-openapi-"));

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: {
      ...(bearer === "" ? {} : { authorization: `Bearer ${bearer}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

before(async () => {
  const store = await createDuckDbStore({ path: ":memory:" });
  hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  base = await hub.start(0);
  const basic = `Basic ${Buffer.from("dash:s3cret").toString("base64")}`;
  const token = await call("GET", "/token", undefined, { authorization: basic });
  assertDocumented("/token", "get", token.status, token.body);
  bearer = (token.body as { access_token: string }).access_token;
  const backfill = await call("POST", "/v0/messages", messages);
  assertDocumented("/v0/messages", "post", backfill.status, backfill.body);
});
after(async () => {
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("GET /v0/openapi.json", () => {
  test("serves the OpenAPI 3.1 document, itself documented", async () => {
    const { status, body } = await call("GET", "/v0/openapi.json");
    assert.equal(status, 200);
    assert.equal((body as { openapi: string }).openapi, "3.1.0");
    assert.deepEqual(body, JSON.parse(JSON.stringify(HUB_OPENAPI)));
    assertDocumented("/v0/openapi.json", "get", status, body);
  });

  test("request bodies are the schemas that validate requests, not copies", () => {
    type Post = { requestBody: { content: Record<string, { schema: unknown }> } };
    const body = (template: string) =>
      (paths[template]?.post as unknown as Post | undefined)?.requestBody.content["application/json"]?.schema;
    assert.equal(body("/v0/metrics/query"), METRIC_QUERY_SCHEMA);
    assert.equal(body("/v1alpha/metrics/query"), METRIC_QUERY_SCHEMA);
    assert.equal(body("/v0/events/recordsQuery"), RECORDS_QUERY_SCHEMA);
  });

  test("every component schema compiles in strict mode", () => {
    const strict = new Ajv2020({ strict: true });
    const defs = JSON.parse(
      JSON.stringify(HUB_OPENAPI.components.schemas).replaceAll("#/components/schemas/", "#/$defs/"),
    ) as object;
    strict.addSchema({ $id: "strict", $defs: defs });
    for (const name of Object.keys(HUB_OPENAPI.components.schemas)) {
      assert.doesNotThrow(() => strict.compile({ $ref: `strict#/$defs/${name}` }), name);
    }
  });

  test("every documented hub path is routed", () => {
    for (const [template, operations] of Object.entries(paths)) {
      const url = template.replace("{id}", "1").replace("{name}", "x");
      for (const method of Object.keys(operations)) {
        assert.ok(
          hub.http.hasRoute({
            method: method.toUpperCase() as "GET",
            url: template.replace(/\{(\w+)\}/g, ":$1"),
          }),
          `${method} ${url}`,
        );
      }
    }
  });
});

describe("real responses satisfy the documented schemas", () => {
  const q = (text: string) => encodeURIComponent(text);
  const range = { from: iso(T0), to: iso(T0 + 60_000) };
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [method: string, url: string, template: string, body?: unknown][] = [
    ["get", "/v0/ping", "/v0/ping"],
    ["get", "/v0/entities", "/v0/entities"],
    ["get", "/v0/entities?includeDeleted=true", "/v0/entities"],
    ["get", "/v0/entities/summary?groupBy=user.Region", "/v0/entities/summary"],
    ["get", "/v0/entities/attributes", "/v0/entities/attributes"],
    ["get", "/v0/entities/attributes/user.Region", "/v0/entities/attributes/{name}"],
    ["get", "/v0/entities/metrics?includeNonNumeric=true", "/v0/entities/metrics"],
    ["get", `/v0/entities/metrics/rows?path=${q("orders/queue")}`, "/v0/entities/metrics/rows"],
    ["get", "/v0/entities/1", "/v0/entities/{id}"],
    ["get", "/v0/entities/1/metrics", "/v0/entities/{id}/metrics"],
    ["get", `/v0/entities/1/metrics/rows?path=${q("orders/queue/{rowname}/latency")}`, "/v0/entities/{id}/metrics/rows"],
    ["get", `/v0/entities/1/metrics/data?path=${q("orders/queue/EURUSD/latency")}`, "/v0/entities/{id}/metrics/data"],
    ["get", "/v0/metrics/aggregations", "/v0/metrics/aggregations"],
    ["get", "/.well-known/jwks.json", "/.well-known/jwks.json"],
    ["get", "/v1/status", "/v1/status"],
    ["get", "/v1/whoami", "/v1/whoami"],
    ["post", "/v0/metrics/query", "/v0/metrics/query", { zoneId: "UTC", filter: { entities: "", range }, metrics: [{ identifier: "m", include: ["orders/queue/{rowname}/latency"] }], aggregations: ["svc.count", "svc.avg", "svc.percentile(0.5)"], bucketing: { duration: "PT1M" }, grouping: ["rowname", "entity", "entity:user.Region"] }],
    ["post", "/v1alpha/metrics/query", "/v1alpha/metrics/query", { zoneId: "UTC", filter: { entities: "", range }, metrics: [{ identifier: "m", include: ["orders/queue/{rowname}/latency"] }], aggregations: ["svc.max"], bucketing: { duration: "P1D" } }],
    ["post", "/v0/metrics/query", "/v0/metrics/query", { filter: { range }, metrics: [{ identifier: "m", include: ["orders/queue/{rowname}/latency"] }], aggregations: ["svc.count"], bucketing: { count: 7 } }],
    ["post", "/v0/events/recordsQuery", "/v0/events/recordsQuery", { filter: { entities: "", range }, events: null, metrics: null, zoneId: "", skip: 0, limit: 0 }],
    // Errors: the documented error body.
    ["get", "/v0/entities?filter=a&filter=b", "/v0/entities"],
    ["get", "/v0/entities/2147483648", "/v0/entities/{id}"],
    ["get", "/v0/entities/1/metrics/data", "/v0/entities/{id}/metrics/data"],
    ["post", "/v0/metrics/query", "/v0/metrics/query", { zoneId: 5 }],
    ["post", "/v0/events/recordsQuery", "/v0/events/recordsQuery", { filter: {} }],
  ];
  for (const [method, url, template, body] of cases) {
    test(`${method.toUpperCase()} ${url}`, async () => {
      const answer = await call(method.toUpperCase(), url, body);
      assert.ok(
        answer.status === 200 || answer.status === 400,
        `${answer.status} ${JSON.stringify(answer.body)}`,
      );
      assertDocumented(template, method, answer.status, answer.body);
      if (answer.status === 200 && Array.isArray(answer.body))
        assert.ok(answer.body.length > 0, "a non-empty sample");
    });
  }

  test("a request without a token is a documented 401", async () => {
    const response = await fetch(`${base}/v0/entities`);
    assertDocumented("/v0/entities", "get", response.status, await response.json());
  });

  test("the metric query and recordsQuery carry data", async () => {
    const query = await call("POST", "/v0/events/recordsQuery", { filter: { range } });
    assert.equal(Object.values(query.body as object).flat().length, 2);
  });
});
