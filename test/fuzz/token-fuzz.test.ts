/**
 * Hostile input to the hub's token endpoints through a real socket, on a time budget
 * (test/helpers/fuzz-budget.ts): `GET /token`, `GET /authorize` and `POST /oauth2/token` (and its
 * `/v0/` alias) given random Authorization headers, query strings, content types and bodies.
 *
 * Invariant: never a 5xx; `/token` and `/authorize` answer a 4xx with exactly `{status, title, body}`,
 * the OAuth 2.0 endpoint a 4xx with exactly `{error, error_description}` (RFC 6749 §5.2, the one
 * documented exception in docs/errors.md). Nothing the fuzz sends changes what the hub keeps: the
 * signing key file is byte for byte the same, and a token pair issued before still works.
 *
 * The endpoints are served by registerAuth (src/hub/auth/auth.ts, what buildHub registers) with rate
 * limits and lockouts no fuzz run reaches, as test/hub/auth/auth.test.ts does: with the production limits almost
 * every request would be a 429 and the parsers behind it would go untested
 * (test/hub/auth/token-limits.test.ts covers the limits).
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import type { HubSetup } from "../../src/config/setup.js";
import { resource } from "../../src/http/routes.js";
import { createHttpApp, listen } from "../../src/http/server.js";
import { registerAuth } from "../../src/hub/auth/auth.js";
import { basicAuthorization } from "../../src/hub/auth/credentials.js";
import { SIGNING_KEY_FILE } from "../../src/hub/auth/signing-key.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";
import { type Answer, assertNoServerError, closeAgent, type Sent, send } from "./fuzz-http.js";

const CLIENT = "reporting";
const SECRET = "s3cret:with-colon";

const security: HubSetup["security"] = {
  enabled: true,
  tokenLifetime: 300,
  appKeys: [{ clientId: CLIENT, clientSecret: SECRET, roles: ["read"] }],
  kerberos: { enabled: false, keytab: "", servicePrincipal: "" },
  kerberosRoles: ["read"],
};

let app: FastifyInstance;
let base = "";
let dataDir = "";
let keyFile = "";

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "vigil-token-fuzz-"));
  app = createHttpApp({ logger: pino({ level: "silent" }) });
  await registerAuth(app, {
    security,
    dataDir,
    limits: {
      address: { burst: 1_000_000_000, lockoutFailures: 1_000_000_000 },
      client: { burst: 1_000_000_000, lockoutFailures: 1_000_000_000 },
    },
  });
  resource(app, "/v0/entities", { GET: async () => [] });
  base = await listen(app, 0, "127.0.0.1");
  keyFile = await readFile(join(dataDir, SIGNING_KEY_FILE), "utf8");
});
after(async () => {
  closeAgent();
  await app?.close();
  if (dataDir !== "") await rm(dataDir, { recursive: true, force: true });
});

const OAUTH_PATHS = new Set(["/oauth2/token", "/v0/oauth2/token"]);

/** The invariant, with the OAuth 2.0 endpoint's own error body. */
function assertTokenAnswer(answer: Answer, sent: Sent): void {
  const path = sent.path.split("?")[0] ?? "";
  if (!OAUTH_PATHS.has(path) || sent.method !== "POST" || answer.status < 400) {
    assertNoServerError(answer, sent);
    return;
  }
  const what = `${sent.method} ${sent.path} ${JSON.stringify(sent.headers)} ${JSON.stringify(String(sent.body ?? "").slice(0, 200))} → ${answer.status} ${answer.text}`;
  assert.ok(answer.status < 500, what);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ["error", "error_description"], what);
  assert.equal(typeof body.error, "string", what);
}

/** Header text the HTTP client may send: tab, visible ASCII and Latin-1 (RFC 9110 §5.5 field-value). */
const headerChar = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.integer({ min: 0x80, max: 0xff }),
  fc.constant(0x09),
);
const headerText = (maxLength: number) =>
  fc.array(headerChar, { maxLength }).map((codes) => String.fromCharCode(...codes));
const base64 = (arb: fc.Arbitrary<string>) => arb.map((s) => Buffer.from(s, "utf8").toString("base64"));

const authorization = fc.oneof(
  fc.constant(undefined),
  headerText(80),
  base64(fc.string({ unit: "binary", maxLength: 40 })).map((b) => `Basic ${b}`),
  fc
    .tuple(
      fc.constantFrom(CLIENT, "", "other", `${CLIENT}\u0000`, "Reporting", "é"),
      fc.constantFrom(SECRET, "", "s3cret", `${SECRET} `, "x".repeat(5_000)),
    )
    .map(([user, password]) => basicAuthorization(user, password)),
  fc.constantFrom(
    "Basic",
    "Basic ",
    "Basic ====",
    "Basic Og==",
    "basic cmVwb3J0aW5nOnMzY3JldA==",
    "Bearer x.y.z",
    "Negotiate",
    "Negotiate YIIB",
    "Negotiate !!!",
    `Basic ${"A".repeat(8_000)}`,
  ),
  fc
    .tuple(fc.constantFrom("Basic", "Negotiate", "Bearer", "Digest"), headerText(60))
    .map(([s, t]) => `${s} ${t}`),
);

const paramName = fc.constantFrom(
  "grant_type",
  "client_id",
  "client_secret",
  "refresh_token",
  "scope",
  "response_type",
  "state",
  "redirect_uri",
  "__proto__",
  "",
);
const paramValue = fc.oneof(
  fc.constantFrom("client_credentials", "refresh_token", "password", "token", CLIENT, SECRET, "", "%", "%zz"),
  fc.string({ unit: "binary", maxLength: 20 }),
);
/** `name=value&…`, each part percent-encoded, or raw (malformed escapes included). */
const formText = fc
  .tuple(fc.array(fc.tuple(paramName, paramValue, fc.boolean()), { maxLength: 6 }), fc.boolean())
  .map(([pairs, raw]) =>
    pairs
      .map(([name, value, bare]) =>
        raw ? `${name}=${value}` : bare ? encodeURIComponent(name) : `${name}=${encodeURIComponent(value)}`,
      )
      .join("&"),
  );

const tokenBody = fc.oneof(
  formText,
  fc.dictionary(paramName, fc.oneof(paramValue, fc.jsonValue({ maxDepth: 2 }))).map((o) => JSON.stringify(o)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ unit: "binary", maxLength: 100 }),
  fc.constant("x".repeat(20_000)),
);
const contentType = fc.constantFrom(
  "application/x-www-form-urlencoded",
  "application/x-www-form-urlencoded; charset=ISO-8859-1",
  "application/json",
  "text/plain",
  "multipart/form-data; boundary=b",
  "",
);

/** A query string that is safe to put in a request line (printable ASCII, no space). */
const queryText = fc.oneof(
  formText.map((q) =>
    q.replace(/[^\x21-\x7e]/gu, (c) =>
      [...Buffer.from(c, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    ),
  ),
  fc.constantFrom(
    "response_type=token",
    "response_type=token&response_type=token",
    "state=%",
    "client_id[]=a",
  ),
);

describe("token endpoints under hostile input", () => {
  let pair = { access: "", refresh: "" };
  before(async () => {
    const answer = await send(base, {
      method: "GET",
      path: "/token",
      headers: { authorization: basicAuthorization(CLIENT, SECRET) },
    });
    assert.equal(answer.status, 200, answer.text);
    const body = JSON.parse(answer.text) as { access_token: string; refresh_token: string };
    pair = { access: body.access_token, refresh: body.refresh_token };
  });
  after(async () => {
    // Nothing kept changed: the same key file, and the pair issued before the fuzz still works.
    assert.equal(await readFile(join(dataDir, SIGNING_KEY_FILE), "utf8"), keyFile);
    const entities = await send(base, {
      method: "GET",
      path: "/v0/entities",
      headers: { authorization: `Bearer ${pair.access}` },
    });
    assert.equal(entities.status, 200, entities.text);
    const refreshed = await send(base, {
      method: "POST",
      path: "/oauth2/token",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: basicAuthorization(CLIENT, SECRET),
      },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(pair.refresh)}`,
    });
    assert.equal(refreshed.status, 200, refreshed.text);
  });

  test("GET /token and /authorize with random credentials and query strings: 200 or a 4xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/token", "/authorize"),
        queryText,
        authorization,
        fc.constantFrom("GET", "GET", "GET", "POST", "PUT", "DELETE"),
        async (path, query, auth, method) => {
          const sent: Sent = {
            method,
            path: query === "" ? path : `${path}?${query}`,
            headers: auth === undefined ? {} : { authorization: auth },
          };
          assertTokenAnswer(await send(base, sent), sent);
        },
      ),
      fuzzBudget(300),
    );
  });

  test("POST /oauth2/token with random bodies, content types and credentials: 200 or a 4xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/oauth2/token", "/v0/oauth2/token"),
        tokenBody,
        contentType,
        authorization,
        async (path, body, type, auth) => {
          const sent: Sent = {
            method: "POST",
            path,
            headers: {
              ...(type === "" ? {} : { "content-type": type }),
              ...(auth === undefined ? {} : { authorization: auth }),
            },
            body,
          };
          assertTokenAnswer(await send(base, sent), sent);
        },
      ),
      fuzzBudget(300),
    );
  });

  test("bearer tokens that are not the hub's answer 401 in the error body", async () => {
    const [header, payload] = pair.access.split(".");
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          headerText(120),
          fc
            .string({ unit: "binary", maxLength: 60 })
            .map((s) => `${header}.${payload}.${Buffer.from(s).toString("base64url")}`),
          fc
            .string({ unit: "binary", maxLength: 60 })
            .map((s) => `${Buffer.from(s).toString("base64url")}.${payload}.`),
        ),
        async (token) => {
          const sent: Sent = {
            method: "GET",
            path: "/v0/entities",
            headers: { authorization: `Bearer ${token}` },
          };
          const answer = await send(base, sent);
          assertNoServerError(answer, sent);
          assert.equal(answer.status, 401, answer.text);
        },
      ),
      fuzzBudget(200),
    );
  });
});
