/**
 * Every status a hub route answers is listed for it in `GET /v0/openapi.json`, and every status
 * listed is one the route answers. Each case provokes one status for real, in process
 * (`inject`), on one of two hubs with security enabled: one over DuckDB fed by backfill (200, 400,
 * 401, 403, 404, 413, 429) and one whose PostgreSQL store is a closed port, so that every store
 * call fails as in an outage (503). A case states the status it expects, so a route that answers
 * another fails here too. The last test compares, operation by operation, the statuses the
 * document lists with those the cases saw.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../../src/hub/app.js";
import { HUB_OPENAPI } from "../../../src/hub/http/openapi.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import { openStore } from "../../../src/hub/store/open-store.js";
import { closedPort } from "../../helpers/nats.js";

const setup = parseSetup(`
gateway: { name: GW }
hub:
  security:
    enabled: true
    appKeys:
      - { clientId: reader, clientSecret: r3ad-secret, roles: [read] }
      - { clientId: writer, clientSecret: wr1te-secret, roles: [write] }
      - { clientId: locked, clientSecret: l0cked-secret, roles: [read] }
`);

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const target = { gateway: "GW", probe: "p1", managedEntity: "web-01" };
const MESSAGES = [
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
];

/** Statuses listed per operation (`GET /v0/entities`), from the document. */
const documented = new Map<string, Set<string>>();
for (const [template, operations] of Object.entries(HUB_OPENAPI.paths)) {
  for (const [method, operation] of Object.entries(operations as Record<string, { responses: object }>)) {
    documented.set(`${method.toUpperCase()} ${template}`, new Set(Object.keys(operation.responses)));
  }
}

/**
 * Listed statuses no case here provokes, with where they are shown: the token endpoints' 503 needs
 * the secret-check queue full, which test/hub/auth/token-limits.test.ts fills with a queue of two.
 */
const SHOWN_ELSEWHERE: ReadonlyMap<string, string> = new Map([
  ["GET /token 503", "token-limits.test.ts"],
  ["GET /authorize 503", "token-limits.test.ts"],
  ["POST /oauth2/token 503", "token-limits.test.ts"],
  ["POST /v0/oauth2/token 503", "token-limits.test.ts"],
]);

type Who = "none" | "read" | "write" | "bad token";
interface Case {
  /** `METHOD /template` of the document. */
  readonly operation: string;
  readonly status: number;
  /** The URL sent; `{ID}` is the backfilled entity's id. */
  readonly url: string;
  readonly who: Who;
  readonly outage?: boolean;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly remoteAddress?: string;
}

const basic = (user: string, secret: string) =>
  `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`;
const READER = basic("reader", "r3ad-secret");
const WRONG = basic("reader", "not-the-secret");
const LOCKED = basic("locked", "l0cked-secret");
const FORM = { "content-type": "application/x-www-form-urlencoded" };
/** A Content-Length over the metric query's 10 MiB and the backfill's 256 MiB limits (no body follows). */
const HUGE = { "content-type": "application/json", "content-length": String(300 * 1024 * 1024) };
const range = { from: iso(T0), to: iso(T0 + 60_000) };
const query = (bucketing: object) => ({
  zoneId: "UTC",
  filter: { entities: "", range },
  metrics: [{ identifier: "m", include: ["orders/queue/{rowname}/latency"] }],
  aggregations: ["svc.count"],
  bucketing,
});
const q = encodeURIComponent;

/** The statuses every protected route reading the store answers, for one GET URL. */
function readsStore(template: string, url: string): Case[] {
  const operation = `GET ${template}`;
  return [
    { operation, status: 200, url, who: "read" },
    { operation, status: 401, url, who: "none" },
    { operation, status: 401, url, who: "bad token" },
    { operation, status: 403, url, who: "write" },
    { operation, status: 503, url, who: "read", outage: true },
  ];
}

function queryRoute(template: string): Case[] {
  const operation = `POST ${template}`;
  return [
    { operation, status: 200, url: template, who: "read", body: query({ duration: "PT1M" }) },
    { operation, status: 200, url: template, who: "read", body: query({ count: 4 }) },
    { operation, status: 400, url: template, who: "read", body: query({ duration: "PT1M", count: 4 }) },
    {
      operation,
      status: 400,
      url: template,
      who: "read",
      body: "{not json",
      headers: { "content-type": "application/json" },
    },
    {
      operation,
      status: 400,
      url: template,
      who: "read",
      body: "x",
      headers: { "content-type": "text/csv" },
    },
    { operation, status: 413, url: template, who: "read", headers: HUGE },
    { operation, status: 401, url: template, who: "none", body: query({ count: 4 }) },
    { operation, status: 403, url: template, who: "write", body: query({ count: 4 }) },
    { operation, status: 503, url: template, who: "read", outage: true, body: query({ count: 4 }) },
  ];
}

function oauth2Route(template: string): Case[] {
  const operation = `POST ${template}`;
  const grant = "grant_type=client_credentials";
  return [
    {
      operation,
      status: 200,
      url: template,
      who: "none",
      body: grant,
      headers: { ...FORM, authorization: READER },
    },
    {
      operation,
      status: 400,
      url: template,
      who: "none",
      body: "scope=x",
      headers: { ...FORM, authorization: READER },
    },
    {
      operation,
      status: 400,
      url: template,
      who: "none",
      body: "grant_type=password",
      headers: { ...FORM, authorization: READER },
    },
    {
      operation,
      status: 401,
      url: template,
      who: "none",
      body: grant,
      headers: { ...FORM, authorization: WRONG },
    },
    {
      operation,
      status: 429,
      url: template,
      who: "none",
      body: grant,
      headers: { ...FORM, authorization: LOCKED },
    },
  ];
}

// biome-ignore format: one line per case (STYLE 16)
const CASES: readonly Case[] = [
  { operation: "GET /v0/ping", status: 200, url: "/v0/ping", who: "none" },
  { operation: "GET /v0/ping", status: 503, url: "/v0/ping", who: "none", outage: true },
  { operation: "GET /v0/openapi.json", status: 200, url: "/v0/openapi.json", who: "read" },
  { operation: "GET /v0/openapi.json", status: 401, url: "/v0/openapi.json", who: "none" },
  { operation: "GET /v0/openapi.json", status: 403, url: "/v0/openapi.json", who: "write" },
  ...readsStore("/v0/entities", "/v0/entities"),
  { operation: "GET /v0/entities", status: 400, url: "/v0/entities?filter=a&filter=b", who: "read" },
  { operation: "GET /v0/entities", status: 400, url: `/v0/entities?filter=${q("svc.name = ")}`, who: "read" },
  ...readsStore("/v0/entities/summary", "/v0/entities/summary?groupBy=user.Region"),
  { operation: "GET /v0/entities/summary", status: 400, url: "/v0/entities/summary?nrSamples=many", who: "read" },
  ...readsStore("/v0/entities/attributes", "/v0/entities/attributes"),
  { operation: "GET /v0/entities/attributes", status: 400, url: "/v0/entities/attributes?includeDeleted=maybe", who: "read" },
  { operation: "GET /v0/entities/attributes", status: 400, url: `/v0/entities/attributes?filter=${q("(")}`, who: "read" },
  ...readsStore("/v0/entities/attributes/{name}", "/v0/entities/attributes/user.Region"),
  { operation: "GET /v0/entities/attributes/{name}", status: 400, url: `/v0/entities/attributes/user.Region?filter=${q("a IN")}`, who: "read" },
  ...readsStore("/v0/entities/metrics", "/v0/entities/metrics"),
  { operation: "GET /v0/entities/metrics", status: 400, url: "/v0/entities/metrics?includeNonNumeric=yes", who: "read" },
  ...readsStore("/v0/entities/metrics/rows", `/v0/entities/metrics/rows?path=${q("orders/queue")}`),
  { operation: "GET /v0/entities/metrics/rows", status: 400, url: "/v0/entities/metrics/rows", who: "read" },
  ...readsStore("/v0/entities/{id}", "/v0/entities/{ID}"),
  { operation: "GET /v0/entities/{id}", status: 400, url: "/v0/entities/0", who: "read" },
  { operation: "GET /v0/entities/{id}", status: 404, url: "/v0/entities/2147483647", who: "read" },
  ...readsStore("/v0/entities/{id}/metrics", "/v0/entities/{ID}/metrics"),
  { operation: "GET /v0/entities/{id}/metrics", status: 400, url: "/v0/entities/{ID}/metrics?includeNonNumeric=1", who: "read" },
  { operation: "GET /v0/entities/{id}/metrics", status: 404, url: "/v0/entities/2147483647/metrics", who: "read" },
  ...readsStore("/v0/entities/{id}/metrics/rows", `/v0/entities/{ID}/metrics/rows?path=${q("orders/queue/{rowname}/latency")}`),
  { operation: "GET /v0/entities/{id}/metrics/rows", status: 400, url: `/v0/entities/{ID}/metrics/rows?path=${q("orders/queue/EURUSD/latency")}`, who: "read" },
  { operation: "GET /v0/entities/{id}/metrics/rows", status: 404, url: `/v0/entities/2147483647/metrics/rows?path=${q("orders/queue")}`, who: "read" },
  ...readsStore("/v0/entities/{id}/metrics/data", `/v0/entities/{ID}/metrics/data?path=${q("orders/queue/EURUSD/latency")}`),
  { operation: "GET /v0/entities/{id}/metrics/data", status: 400, url: "/v0/entities/{ID}/metrics/data", who: "read" },
  { operation: "GET /v0/entities/{id}/metrics/data", status: 400, url: `/v0/entities/{ID}/metrics/data?path=${q("orders/queue/EURUSD/latency")}&limit=10001`, who: "read" },
  { operation: "GET /v0/entities/{id}/metrics/data", status: 404, url: `/v0/entities/2147483647/metrics/data?path=${q("orders/queue/EURUSD/latency")}`, who: "read" },
  ...queryRoute("/v0/metrics/query"),
  ...queryRoute("/v1alpha/metrics/query"),
  { operation: "GET /v0/metrics/aggregations", status: 200, url: "/v0/metrics/aggregations", who: "read" },
  { operation: "GET /v0/metrics/aggregations", status: 401, url: "/v0/metrics/aggregations", who: "none" },
  { operation: "GET /v0/metrics/aggregations", status: 403, url: "/v0/metrics/aggregations", who: "write" },
  { operation: "POST /v0/events/recordsQuery", status: 200, url: "/v0/events/recordsQuery", who: "read", body: { filter: { range } } },
  { operation: "POST /v0/events/recordsQuery", status: 400, url: "/v0/events/recordsQuery", who: "read", body: { filter: { range: { from: "yesterday", to: range.to } } } },
  { operation: "POST /v0/events/recordsQuery", status: 413, url: "/v0/events/recordsQuery", who: "read", headers: HUGE },
  { operation: "POST /v0/events/recordsQuery", status: 401, url: "/v0/events/recordsQuery", who: "none", body: { filter: { range } } },
  { operation: "POST /v0/events/recordsQuery", status: 403, url: "/v0/events/recordsQuery", who: "write", body: { filter: { range } } },
  { operation: "POST /v0/events/recordsQuery", status: 503, url: "/v0/events/recordsQuery", who: "read", outage: true, body: { filter: { range } } },
  { operation: "POST /v0/messages", status: 200, url: "/v0/messages", who: "write", body: MESSAGES },
  { operation: "POST /v0/messages", status: 400, url: "/v0/messages", who: "write", body: "  ", headers: { "content-type": "application/json" } },
  { operation: "POST /v0/messages", status: 413, url: "/v0/messages", who: "write", headers: HUGE },
  { operation: "POST /v0/messages", status: 401, url: "/v0/messages", who: "none", body: MESSAGES },
  { operation: "POST /v0/messages", status: 403, url: "/v0/messages", who: "read", body: MESSAGES },
  { operation: "POST /v0/messages", status: 503, url: "/v0/messages", who: "write", outage: true, body: MESSAGES },
  { operation: "GET /v1/status", status: 200, url: "/v1/status", who: "read" },
  { operation: "GET /v1/status", status: 401, url: "/v1/status", who: "none" },
  { operation: "GET /v1/status", status: 403, url: "/v1/status", who: "write" },
  { operation: "GET /v1/whoami", status: 200, url: "/v1/whoami", who: "write" },
  { operation: "GET /v1/whoami", status: 401, url: "/v1/whoami", who: "none" },
  { operation: "GET /metrics", status: 200, url: "/metrics", who: "read" },
  { operation: "GET /metrics", status: 401, url: "/metrics", who: "none" },
  { operation: "GET /metrics", status: 403, url: "/metrics", who: "write" },
  { operation: "GET /token", status: 200, url: "/token", who: "none", headers: { authorization: READER } },
  { operation: "GET /token", status: 401, url: "/token", who: "none", headers: { authorization: WRONG } },
  { operation: "GET /token", status: 401, url: "/token", who: "none" },
  { operation: "GET /token", status: 429, url: "/token", who: "none", headers: { authorization: LOCKED } },
  { operation: "GET /authorize", status: 200, url: "/authorize?response_type=token&client_id=reader&state=s", who: "none", headers: { authorization: READER } },
  { operation: "GET /authorize", status: 400, url: "/authorize?response_type=code&client_id=reader", who: "none", headers: { authorization: READER } },
  { operation: "GET /authorize", status: 400, url: "/authorize?response_type=token&client_id=writer", who: "none", headers: { authorization: READER } },
  { operation: "GET /authorize", status: 401, url: "/authorize?response_type=token&client_id=reader", who: "none", headers: { authorization: WRONG } },
  { operation: "GET /authorize", status: 429, url: "/authorize?response_type=token&client_id=locked", who: "none", headers: { authorization: LOCKED } },
  ...oauth2Route("/oauth2/token"),
  ...oauth2Route("/v0/oauth2/token"),
  { operation: "GET /.well-known/jwks.json", status: 200, url: "/.well-known/jwks.json", who: "none" },
];

interface HubUnderTest {
  readonly hub: Hub;
  readonly tokens: Record<"read" | "write", string>;
}

let data: HubUnderTest;
let outage: HubUnderTest;
let entityId = 0;
const dirs: string[] = [];

async function inject(
  hub: Hub,
  method: string,
  url: string,
  options: { headers?: Record<string, string>; body?: unknown; remoteAddress?: string } = {},
) {
  const payload =
    options.body === undefined || typeof options.body === "string"
      ? options.body
      : JSON.stringify(options.body);
  const headers = {
    ...(payload !== undefined && typeof options.body !== "string"
      ? { "content-type": "application/json" }
      : {}),
    ...options.headers,
  };
  return hub.http.inject({
    method: method as "GET",
    url,
    headers,
    ...(payload === undefined ? {} : { payload }),
    remoteAddress: options.remoteAddress ?? "127.0.0.1",
  });
}

async function tokensOf(hub: Hub): Promise<HubUnderTest["tokens"]> {
  const token = async (authorization: string) => {
    const response = await inject(hub, "GET", "/token", { headers: { authorization } });
    assert.equal(response.statusCode, 200, response.body);
    return (response.json() as { access_token: string }).access_token;
  };
  return { read: await token(READER), write: await token(basic("writer", "wr1te-secret")) };
}

async function newHub(store: Parameters<typeof buildHub>[0]["store"]): Promise<Hub> {
  const dataDir = mkdtempSync(join(tmpdir(), "vigil-hub-statuses-"));
  dirs.push(dataDir);
  return buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
}

before(async () => {
  const hub = await newHub(await createDuckDbStore({ path: ":memory:" }));
  await hub.start(0);
  data = { hub, tokens: await tokensOf(hub) };
  const backfill = await inject(hub, "POST", "/v0/messages", {
    headers: { authorization: `Bearer ${data.tokens.write}` },
    body: MESSAGES,
  });
  assert.equal(backfill.statusCode, 200, backfill.body);
  const entities = await inject(hub, "GET", "/v0/entities", {
    headers: { authorization: `Bearer ${data.tokens.read}` },
  });
  entityId = (entities.json() as { id: number }[])[0]?.id ?? 0;
  assert.ok(entityId > 0);
  // A PostgreSQL store on a port nobody listens on: every store call is refused, as in an outage.
  // The hub is not started (its start would migrate the store); inject needs no listening socket.
  const down = await newHub(await openStore(`postgres://postgres@127.0.0.1:${await closedPort()}/none`, "."));
  outage = { hub: down, tokens: await tokensOf(down) };
});

after(async () => {
  await data?.hub.stop();
  // Never started: stopping closes its app and its (never connected) store.
  await outage?.hub.stop().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const observed = new Map<string, Set<string>>();
let lockoutAddresses = 0;

/**
 * Locks the client id `locked` out (docs/security.md): failed authentications, each from an address
 * of its own so that no address locks out, until one is refused with 429 — at once when it still is
 * locked out, after ten failures otherwise. Done right before each 429 case, so that a slow run
 * cannot outlast the lockout.
 */
async function lockOut(hub: Hub): Promise<void> {
  for (let attempt = 0; attempt <= 10; attempt++) {
    lockoutAddresses += 1;
    const response = await inject(hub, "GET", "/token", {
      headers: { authorization: basic("locked", "wrong") },
      remoteAddress: `10.0.${Math.floor(lockoutAddresses / 250)}.${(lockoutAddresses % 250) + 1}`,
    });
    if (response.statusCode === 429) return;
    assert.equal(response.statusCode, 401, response.body);
  }
  assert.fail("ten failed authentications did not lock the client id out");
}

describe("every status a route answers is listed for it in the OpenAPI document", () => {
  for (const c of CASES) {
    const where = c.outage === true ? " (store down)" : "";
    test(`${c.operation} → ${c.status}: ${c.who}, ${c.url}${where}`, async () => {
      const { hub, tokens } = c.outage === true ? outage : data;
      const authorization =
        c.who === "read" || c.who === "write"
          ? { authorization: `Bearer ${tokens[c.who]}` }
          : c.who === "bad token"
            ? { authorization: "Bearer not-a-token" }
            : {};
      const [method = "", template = ""] = c.operation.split(" ");
      if (c.status === 429) await lockOut(hub);
      const response = await inject(hub, method, c.url.replace("{ID}", String(entityId)), {
        headers: { ...authorization, ...c.headers },
        body: c.body,
        ...(c.remoteAddress === undefined ? {} : { remoteAddress: c.remoteAddress }),
      });
      assert.equal(response.statusCode, c.status, response.body.slice(0, 300));
      const listed = documented.get(c.operation);
      assert.ok(listed !== undefined, `${c.operation} is not in the document`);
      assert.ok(listed.has(String(c.status)), `${c.operation} answered ${c.status}, which it does not list`);
      const seen = observed.get(c.operation) ?? new Set<string>();
      seen.add(String(c.status));
      observed.set(c.operation, seen);
      // Every error answers the documented body: the API's, or RFC 6749's on the OAuth endpoint.
      if (c.status >= 400) {
        const body = response.json() as Record<string, unknown>;
        if (template.endsWith("oauth2/token")) assert.equal(typeof body.error, "string");
        else assert.deepEqual(Object.keys(body).sort(), ["body", "status", "title"]);
      }
    });
  }

  test("each operation lists exactly the statuses provoked above (or shown elsewhere)", () => {
    const wrong: string[] = [];
    for (const [operation, listed] of documented) {
      const seen = observed.get(operation) ?? new Set<string>();
      for (const status of listed) {
        if (!seen.has(status) && !SHOWN_ELSEWHERE.has(`${operation} ${status}`)) {
          wrong.push(`${operation} lists ${status}, which no case provoked`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  test("every documented operation is routed", () => {
    for (const operation of documented.keys()) {
      const [method = "", template = ""] = operation.split(" ");
      const url = template.replace(/\{(\w+)\}/g, ":$1");
      assert.ok(data.hub.http.hasRoute({ method: method as "GET", url }), operation);
    }
  });
});
