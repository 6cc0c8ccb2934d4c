/**
 * Hub authentication in-process (STYLE 14; DESIGN 5.4, seed "Authentication" A and "Errors"): token
 * endpoints, the bearer-token hook, OAuth 2.0 grants with refresh rotation, and the signing key.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { importJWK, type JWK, SignJWT } from "jose";
import { type Logger, pino } from "pino";
import type { HubSetup } from "../../../src/config/setup.js";
import { resource } from "../../../src/http/routes.js";
import { createHttpApp } from "../../../src/http/server.js";
import { type AuthOptions, type AuthService, registerAuth } from "../../../src/hub/auth/auth.js";
import { basicAuthorization } from "../../../src/hub/auth/credentials.js";
import { loadKerberosBinding } from "../../../src/hub/auth/kerberos.js";
import { needs } from "../../helpers/needs.js";

const CLIENT = "reporting";
const SECRET = "s3cret:with-colon";
const KEY_FILE = join("keys", "hub-signing-key.json");
const UNAUTHORIZED_TITLE = "Authorization failed";
const BASIC_CHALLENGE = 'Basic realm="vigil", charset="UTF-8"';

function security(overrides: Partial<HubSetup["security"]> = {}): HubSetup["security"] {
  return {
    enabled: true,
    tokenLifetime: 300,
    appKeys: [
      { clientId: CLIENT, clientSecret: SECRET, roles: ["read"] },
      { clientId: "other", clientSecret: "other-secret", roles: ["read"] },
    ],
    kerberos: { enabled: false, keytab: "", servicePrincipal: "" },
    kerberosRoles: ["read"],
    ...overrides,
  };
}

const dirs: string[] = [];
const apps: FastifyInstance[] = [];
after(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "vigil-auth-"));
  dirs.push(dir);
  return dir;
}

/** Limits no functional test reaches: each test of the limits sets its own. */
const GENEROUS: NonNullable<AuthOptions["limits"]> = {
  address: { burst: 1_000_000 },
  client: { burst: 1_000_000 },
};

async function hub(
  options: {
    security?: HubSetup["security"];
    dataDir?: string;
    limits?: NonNullable<AuthOptions["limits"]>;
    logger?: Logger;
  } = {},
): Promise<{ app: FastifyInstance; auth: AuthService; dataDir: string }> {
  const dir = options.dataDir ?? (await dataDir());
  const app = createHttpApp({ logger: options.logger ?? pino({ level: "silent" }) });
  apps.push(app);
  const auth = await registerAuth(app, {
    security: options.security ?? security(),
    dataDir: dir,
    limits: options.limits ?? GENEROUS,
  });
  resource(app, "/v0/ping", { GET: async () => ({ status: "OK" }) });
  resource(app, "/v0/entities", { GET: async () => ({ entities: [] }) });
  resource(app, "/v1alpha/metrics/query", { POST: async () => ({ data: [] }) });
  // A plugin registered after registerAuth still gets the hook.
  await app.register(async (scope) => {
    resource(scope, "/v0/plugin", { GET: async () => ({ ok: true }) });
  });
  return { app, auth, dataDir: dir };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, unknown>;
}

async function call(
  app: FastifyInstance,
  method: "GET" | "POST" | "PUT",
  url: string,
  headers: Record<string, string> = {},
  payload?: string,
): Promise<Answer> {
  const response = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  return { status: response.statusCode, body: response.json(), headers: response.headers };
}

const basic = (user: string, password: string) => ({ authorization: basicAuthorization(user, password) });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** Signs a token with the hub's own key file, so that only the claims differ from a real one. */
async function signWithHubKey(
  dir: string,
  claims: { aud?: string; iss?: string; exp?: number },
): Promise<string> {
  const jwk = JSON.parse(await readFile(join(dir, KEY_FILE), "utf8")) as JWK;
  const key = await importJWK(jwk, "EdDSA");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "EdDSA" })
    .setSubject(CLIENT)
    .setIssuer(claims.iss ?? "vigil-hub")
    .setAudience(claims.aud ?? "vigil")
    .setIssuedAt(now - 600)
    .setExpirationTime(claims.exp ?? now + 300)
    .setJti("test")
    .sign(key);
}

describe("GET /token and /authorize", () => {
  let app: FastifyInstance;
  before(async () => {
    ({ app } = await hub());
  });

  const refusals: [name: string, headers: Record<string, string>][] = [
    ["wrong secret", basic(CLIENT, "wrong")],
    ["unknown client", basic("nobody", SECRET)],
    ["secret of another client", basic(CLIENT, "other-secret")],
    ["no Authorization header", {}],
    ["Basic without a colon", { authorization: `Basic ${Buffer.from("reporting").toString("base64")}` }],
    ["Basic that is not base64", { authorization: "Basic %%%" }],
    ["Basic with no credentials", { authorization: "Basic" }],
    ["unknown scheme", { authorization: "Digest username=reporting" }],
    ["Negotiate while Kerberos is disabled", { authorization: "Negotiate YIIBhgYGKwYBBQUCoIIBejCCAXag" }],
    ["a bearer token instead of a key", bearer("abc.def.ghi")],
  ];
  for (const [name, headers] of refusals) {
    test(`/token refuses ${name} with 401, the seed title, a Basic challenge and a body naming Basic`, async () => {
      const r = await call(app, "GET", "/token", headers);
      assert.equal(r.status, 401);
      assert.equal(r.body.title, UNAUTHORIZED_TITLE);
      assert.equal(
        r.body.body,
        "Client authentication failed: send an application key as 'Authorization: Basic <base64 of client-id:secret>'.",
      );
      assert.equal(r.headers["www-authenticate"], BASIC_CHALLENGE);
    });
  }

  const grants: [name: string, url: string, headers: Record<string, string>, state: string | undefined][] = [
    ["/token with Basic", "/token", basic(CLIENT, SECRET), undefined],
    [
      "/token with a lower-case scheme",
      "/token",
      { authorization: basicAuthorization(CLIENT, SECRET).replace("Basic", "basic") },
      undefined,
    ],
    [
      "/authorize echoes state",
      `/authorize?response_type=token&client_id=${CLIENT}&state=xyz%201`,
      basic(CLIENT, SECRET),
      "xyz 1",
    ],
    [
      "/authorize without client_id or state",
      "/authorize?response_type=token",
      basic(CLIENT, SECRET),
      undefined,
    ],
  ];
  for (const [name, url, headers, state] of grants) {
    test(`${name} answers a bearer token, a refresh token and its expiry`, async () => {
      const before = Math.floor(Date.now() / 1000);
      const r = await call(app, "GET", url, headers);
      assert.equal(r.status, 200);
      assert.equal(r.body.token_type, "Bearer");
      assert.equal(typeof r.body.access_token, "string");
      assert.match(String(r.body.refresh_token), /^[A-Za-z0-9_-]{43}$/);
      assert.ok(Number(r.body.expires) >= before + 300 && Number(r.body.expires) <= before + 301);
      assert.equal(r.body.state, state);
      assert.equal(r.headers["cache-control"], "no-store");
    });
  }

  const badAuthorize: [name: string, query: string][] = [
    ["missing response_type", "client_id=reporting"],
    ["response_type=code", "response_type=code"],
    ["client_id other than the Basic user", "response_type=token&client_id=other"],
    ["repeated state", "response_type=token&state=a&state=b"],
  ];
  for (const [name, query] of badAuthorize) {
    test(`/authorize answers 400 for ${name}`, async () => {
      const r = await call(app, "GET", `/authorize?${query}`, basic(CLIENT, SECRET));
      assert.equal(r.status, 400);
      assert.equal(r.body.title, "Bad request");
    });
  }

  test("/token answers 405 with Allow to POST", async () => {
    const r = await call(app, "POST", "/token", basic(CLIENT, SECRET));
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, "GET, HEAD");
  });
});

describe("bearer tokens on protected URLs", () => {
  let app: FastifyInstance;
  let dir: string;
  let token: string;
  before(async () => {
    ({ app, dataDir: dir } = await hub());
    token = String((await call(app, "GET", "/token", basic(CLIENT, SECRET))).body.access_token);
  });

  const accepted: [
    name: string,
    method: "GET" | "POST",
    url: string,
    headers: () => Record<string, string>,
  ][] = [
    ["a token from /token opens /v0/entities", "GET", "/v0/entities", () => bearer(token)],
    ["the scheme is case-insensitive", "GET", "/v0/entities", () => ({ authorization: `bEaReR ${token}` })],
    ["a token opens /v1alpha", "POST", "/v1alpha/metrics/query", () => bearer(token)],
    ["a token opens a plugin's route", "GET", "/v0/plugin", () => bearer(token)],
    ["/v0/ping is open without a token", "GET", "/v0/ping", () => ({})],
    ["/.well-known/jwks.json is open without a token", "GET", "/.well-known/jwks.json", () => ({})],
  ];
  for (const [name, method, url, headers] of accepted) {
    test(name, async () => {
      const r = await call(app, method, url, headers());
      assert.equal(r.status, 200);
    });
  }

  const refused: [
    name: string,
    url: string,
    headers: () => Promise<Record<string, string>>,
    challenge: string,
  ][] = [
    ["no token", "/v0/entities", async () => ({}), 'Bearer realm="vigil"'],
    ["Basic credentials", "/v0/entities", async () => basic(CLIENT, SECRET), 'Bearer realm="vigil"'],
    [
      "a garbage token",
      "/v0/entities",
      async () => bearer("garbage"),
      'Bearer realm="vigil", error="invalid_token"',
    ],
    ["an empty bearer", "/v0/entities", async () => ({ authorization: "Bearer " }), 'Bearer realm="vigil"'],
    [
      "an expired token",
      "/v0/entities",
      async () => bearer(await signWithHubKey(dir, { exp: Math.floor(Date.now() / 1000) - 10 })),
      'Bearer realm="vigil", error="invalid_token"',
    ],
    [
      "a token for another audience",
      "/v0/entities",
      async () => bearer(await signWithHubKey(dir, { aud: "elsewhere" })),
      'Bearer realm="vigil", error="invalid_token"',
    ],
    [
      "a token from another issuer",
      "/v0/entities",
      async () => bearer(await signWithHubKey(dir, { iss: "someone" })),
      'Bearer realm="vigil", error="invalid_token"',
    ],
    [
      "a tampered token",
      "/v0/entities",
      async () => {
        const [header, payload, signature] = token.split(".");
        const claims = JSON.parse(Buffer.from(String(payload), "base64url").toString()) as Record<
          string,
          unknown
        >;
        const forged = Buffer.from(JSON.stringify({ ...claims, sub: "admin" })).toString("base64url");
        return bearer(`${header}.${forged}.${signature}`);
      },
      'Bearer realm="vigil", error="invalid_token"',
    ],
    ["no token on /v1alpha", "/v1alpha/metrics/query", async () => ({}), 'Bearer realm="vigil"'],
    ["no token on a plugin's route", "/v0/plugin", async () => ({}), 'Bearer realm="vigil"'],
    ["no token on a percent-encoded /v0 path", "/%760/entities", async () => ({}), 'Bearer realm="vigil"'],
    ["no token on an unknown /v0 URL", "/v0/nothing-here", async () => ({}), 'Bearer realm="vigil"'],
  ];
  for (const [name, url, headers, challenge] of refused) {
    test(`${name} is refused with 401, the seed body and a Bearer challenge`, async () => {
      const method = url.startsWith("/v1alpha") ? "POST" : "GET";
      const r = await call(app, method, url, await headers());
      assert.equal(r.status, 401);
      assert.deepEqual(Object.keys(r.body).sort(), ["body", "status", "title"]);
      assert.equal(r.body.status, 401);
      assert.equal(r.body.title, UNAUTHORIZED_TITLE);
      assert.match(String(r.body.body), /^A valid authorization token is needed/);
      assert.equal(r.headers["www-authenticate"], challenge);
    });
  }

  test("AuthService.verify gives the subject of a good token and rejects a bad one", async () => {
    const { auth } = await hub({ dataDir: dir });
    const grant = await auth.verify(token);
    assert.deepEqual([grant.sub, grant.roles], [CLIENT, ["read"]]);
    await assert.rejects(auth.verify(`${token}x`), { code: "UNAUTHORIZED" });
  });
});

describe("POST /oauth2/token (RFC 6749)", () => {
  let app: FastifyInstance;
  before(async () => {
    ({ app } = await hub());
  });

  const clientCredentials: [name: string, url: string, headers: Record<string, string>, payload: string][] = [
    [
      "form fields",
      "/oauth2/token",
      FORM,
      form({ grant_type: "client_credentials", client_id: CLIENT, client_secret: SECRET }),
    ],
    [
      "Basic",
      "/oauth2/token",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "client_credentials" }),
    ],
    [
      "Basic with a form-encoded secret (RFC 6749 §2.3.1)",
      "/oauth2/token",
      { ...FORM, ...basic(CLIENT, encodeURIComponent(SECRET)) },
      form({ grant_type: "client_credentials" }),
    ],
    [
      "Basic plus a matching client_id",
      "/oauth2/token",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "client_credentials", client_id: CLIENT }),
    ],
    [
      "a charset on the content type",
      "/oauth2/token",
      { "content-type": "application/x-www-form-urlencoded; charset=UTF-8", ...basic(CLIENT, SECRET) },
      "grant_type=client_credentials",
    ],
    [
      "a JSON body",
      "/oauth2/token",
      { "content-type": "application/json" },
      JSON.stringify({ grant_type: "client_credentials", client_id: CLIENT, client_secret: SECRET }),
    ],
    [
      "the /v0 URL without a bearer token",
      "/v0/oauth2/token",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "client_credentials" }),
    ],
  ];
  for (const [name, url, headers, payload] of clientCredentials) {
    test(`client_credentials by ${name} answers a token pair`, async () => {
      const r = await call(app, "POST", url, headers, payload);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(Object.keys(r.body).sort(), [
        "access_token",
        "expires_in",
        "refresh_token",
        "token_type",
      ]);
      assert.equal(r.body.token_type, "Bearer");
      assert.equal(r.body.expires_in, 300);
      assert.equal(r.headers["cache-control"], "no-store");
      assert.equal((await call(app, "GET", "/v0/entities", bearer(String(r.body.access_token)))).status, 200);
    });
  }

  const errors: [
    name: string,
    headers: Record<string, string>,
    payload: string,
    status: number,
    error: string,
  ][] = [
    [
      "wrong secret in the form",
      FORM,
      form({ grant_type: "client_credentials", client_id: CLIENT, client_secret: "x" }),
      401,
      "invalid_client",
    ],
    [
      "wrong secret by Basic",
      { ...FORM, ...basic(CLIENT, "x") },
      form({ grant_type: "client_credentials" }),
      401,
      "invalid_client",
    ],
    ["no client authentication", FORM, form({ grant_type: "client_credentials" }), 401, "invalid_client"],
    [
      "client_id without a secret",
      FORM,
      form({ grant_type: "client_credentials", client_id: CLIENT }),
      401,
      "invalid_client",
    ],
    [
      "Basic and form secret at once",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "client_credentials", client_id: CLIENT, client_secret: SECRET }),
      400,
      "invalid_request",
    ],
    [
      "Basic and another client_id",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "client_credentials", client_id: "other" }),
      400,
      "invalid_request",
    ],
    ["no grant_type", FORM, form({ client_id: CLIENT, client_secret: SECRET }), 400, "invalid_request"],
    [
      "grant_type given twice",
      FORM,
      "grant_type=client_credentials&grant_type=client_credentials",
      400,
      "invalid_request",
    ],
    [
      "unsupported grant type",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "password" }),
      400,
      "unsupported_grant_type",
    ],
    [
      "refresh_token grant without refresh_token",
      FORM,
      form({ grant_type: "refresh_token" }),
      400,
      "invalid_request",
    ],
    [
      "unknown refresh token",
      { ...FORM, ...basic(CLIENT, SECRET) },
      form({ grant_type: "refresh_token", refresh_token: "nope" }),
      400,
      "invalid_grant",
    ],
    [
      "a refresh token without client authentication",
      FORM,
      form({ grant_type: "refresh_token", refresh_token: "nope" }),
      401,
      "invalid_client",
    ],
    ["malformed JSON", { "content-type": "application/json" }, "{", 400, "invalid_request"],
    ["a JSON array", { "content-type": "application/json" }, "[]", 400, "invalid_request"],
    [
      "a non-string JSON field",
      { "content-type": "application/json" },
      '{"grant_type": 1}',
      400,
      "invalid_request",
    ],
    ["an empty body", {}, "", 400, "invalid_request"],
  ];
  for (const [name, headers, payload, status, error] of errors) {
    test(`${name} answers ${status} ${error} in the RFC 6749 §5.2 shape`, async () => {
      const r = await call(app, "POST", "/oauth2/token", headers, payload);
      assert.equal(r.status, status);
      assert.deepEqual(Object.keys(r.body).sort(), ["error", "error_description"]);
      assert.equal(r.body.error, error);
      assert.equal(r.headers["cache-control"], "no-store");
      assert.equal(r.headers["www-authenticate"], status === 401 ? BASIC_CHALLENGE : undefined);
    });
  }

  test("a refresh token rotates: it yields a new pair once, then invalid_grant", async () => {
    const first = await call(app, "GET", "/token", basic(CLIENT, SECRET));
    const spend = (token: unknown) =>
      call(
        app,
        "POST",
        "/oauth2/token",
        { ...FORM, ...basic(CLIENT, SECRET) },
        form({ grant_type: "refresh_token", refresh_token: String(token) }),
      );
    const second = await spend(first.body.refresh_token);
    assert.equal(second.status, 200);
    assert.notEqual(second.body.refresh_token, first.body.refresh_token);
    assert.equal(
      (await call(app, "GET", "/v0/entities", bearer(String(second.body.access_token)))).status,
      200,
    );
    const replay = await spend(first.body.refresh_token);
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, "invalid_grant");
    assert.equal((await spend(second.body.refresh_token)).status, 200);
  });

  const refreshClients: [
    name: string,
    source: string,
    headers: Record<string, string>,
    extra: Record<string, string>,
    status: number,
  ][] = [
    [
      "from /authorize by its own client over Basic",
      "/authorize?response_type=token",
      basic(CLIENT, SECRET),
      {},
      200,
    ],
    ["from /oauth2/token by its own client over Basic", "/oauth2/token", basic(CLIENT, SECRET), {}, 200],
    ["by its own client in the body", "/token", {}, { client_id: CLIENT, client_secret: SECRET }, 200],
    ["with no client authentication", "/authorize?response_type=token", {}, {}, 401],
    ["with a matching client_id alone", "/token", {}, { client_id: CLIENT }, 401],
    ["by another authenticated client", "/token", basic("other", "other-secret"), {}, 400],
    ["with another client_id", "/token", {}, { client_id: "other" }, 401],
    ["with a wrong client secret", "/token", basic(CLIENT, "x"), {}, 401],
  ];
  for (const [name, source, headers, extra, status] of refreshClients) {
    test(`refresh token ${name} answers ${status}`, async () => {
      const issued =
        source === "/oauth2/token"
          ? await call(
              app,
              "POST",
              source,
              { ...FORM, ...basic(CLIENT, SECRET) },
              form({ grant_type: "client_credentials" }),
            )
          : await call(app, "GET", source, basic(CLIENT, SECRET));
      const refreshToken = String(issued.body.refresh_token);
      const r = await call(
        app,
        "POST",
        "/v0/oauth2/token",
        { ...FORM, ...headers },
        form({ grant_type: "refresh_token", refresh_token: refreshToken, ...extra }),
      );
      assert.equal(r.status, status, JSON.stringify(r.body));
      // RFC 6749 §6: a refused client never spends the owner's token.
      const owner = await call(
        app,
        "POST",
        "/v0/oauth2/token",
        { ...FORM, ...basic(CLIENT, SECRET) },
        form({ grant_type: "refresh_token", refresh_token: refreshToken }),
      );
      assert.equal(owner.status, status === 200 ? 400 : 200, JSON.stringify(owner.body));
    });
  }

  test("GET on /oauth2/token answers 405 with Allow", async () => {
    const r = await call(app, "GET", "/oauth2/token");
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, "POST");
  });
});

describe("security switches", () => {
  test("with security disabled, protected URLs are open and tokens are still issued", async () => {
    const { app } = await hub({ security: security({ enabled: false }) });
    assert.equal((await call(app, "GET", "/v0/entities")).status, 200);
    assert.equal((await call(app, "GET", "/token", basic(CLIENT, SECRET))).status, 200);
  });

  // SPNEGO is offered only when the optional kerberos binding loads (scripts/services.sh installs
  // the Kerberos libraries it builds against); without it the hub logs why and offers Basic alone.
  const binding = loadKerberosBinding();
  const noBinding = binding.ok ? false : `SPNEGO needs the kerberos binding: ${binding.reason}`;
  test("with Kerberos enabled, 401s also offer Negotiate and a Negotiate header is still refused", {
    skip: needs(noBinding),
  }, async () => {
    const kerberos = { enabled: true, keytab: "/etc/hub.keytab", servicePrincipal: "HTTP/hub@EXAMPLE.COM" };
    const { app } = await hub({ security: security({ kerberos }) });
    const r = await call(app, "GET", "/token", { authorization: "Negotiate YIIBhgYGKwYBBQUCoIIBejCCAXag" });
    assert.equal(r.status, 401);
    assert.equal(r.headers["www-authenticate"], `Negotiate, ${BASIC_CHALLENGE}`);
  });

  test("two application keys with one client id are refused at registration", async () => {
    const app = createHttpApp({ logger: pino({ level: "silent" }) });
    apps.push(app);
    const appKeys = [
      { clientId: "a", clientSecret: "1", roles: ["read" as const] },
      { clientId: "a", clientSecret: "2", roles: ["read" as const] },
    ];
    await assert.rejects(
      registerAuth(app, { security: security({ appKeys }), dataDir: await dataDir() }),
      /twice/,
    );
  });
});

test("no secret, key or token reaches the log, even at trace level", async () => {
  const lines: string[] = [];
  const logger = pino({ level: "trace" }, { write: (line: string) => void lines.push(line) });
  const app = createHttpApp({ logger });
  apps.push(app);
  await registerAuth(app, { security: security(), dataDir: await dataDir() });
  resource(app, "/v0/entities", { GET: async () => ({}) });
  const good = await call(app, "GET", "/token", basic(CLIENT, SECRET));
  await call(app, "GET", "/token", basic(CLIENT, `${SECRET}-wrong`));
  await call(
    app,
    "POST",
    "/oauth2/token",
    FORM,
    form({ grant_type: "client_credentials", client_id: CLIENT, client_secret: `${SECRET}-bad` }),
  );
  await call(app, "GET", "/v0/entities", bearer(`${String(good.body.access_token)}x`));
  await call(
    app,
    "POST",
    "/oauth2/token",
    FORM,
    form({ grant_type: "refresh_token", refresh_token: String(good.body.refresh_token) }),
  );
  const log = lines.join("");
  assert.match(log, /token request refused/);
  for (const secret of [SECRET, String(good.body.access_token), String(good.body.refresh_token)]) {
    assert.equal(log.includes(secret), false);
  }
});

describe("signing key", () => {
  test("is kept in the data dir with mode 0600 and reused: a token from the first hub verifies on the second", async () => {
    const first = await hub();
    const token = String((await call(first.app, "GET", "/token", basic(CLIENT, SECRET))).body.access_token);
    const keyFile = join(first.dataDir, KEY_FILE);
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    const before = await readFile(keyFile, "utf8");
    const second = await hub({ dataDir: first.dataDir });
    assert.equal(await readFile(keyFile, "utf8"), before);
    assert.equal((await second.auth.verify(token)).sub, CLIENT);
    assert.equal((await call(second.app, "GET", "/v0/entities", bearer(token))).status, 200);
  });

  test("two hubs starting together on one empty data dir end up with the same key", async () => {
    const dir = await dataDir();
    const [a, b] = await Promise.all([hub({ dataDir: dir }), hub({ dataDir: dir })]);
    const jwks = await Promise.all([a, b].map(({ app }) => call(app, "GET", "/.well-known/jwks.json")));
    assert.deepEqual(jwks[0]?.body, jwks[1]?.body);
  });

  test("a fresh data dir gets a new key whose tokens the first hub refuses", async () => {
    const first = await hub();
    const other = await hub();
    const token = String((await call(other.app, "GET", "/token", basic(CLIENT, SECRET))).body.access_token);
    await assert.rejects(first.auth.verify(token), { code: "UNAUTHORIZED" });
  });

  test("the JWKS serves the public key with its thumbprint kid and without the private d", async () => {
    const { app, dataDir: dir } = await hub();
    const r = await call(app, "GET", "/.well-known/jwks.json");
    assert.equal(r.status, 200);
    const keys = r.body.keys as Record<string, unknown>[];
    assert.equal(keys.length, 1);
    const [key] = keys;
    assert.equal(key?.d, undefined);
    assert.deepEqual(Object.keys(key ?? {}).sort(), ["alg", "crv", "kid", "kty", "use", "x"]);
    assert.equal(key?.kty, "OKP");
    assert.equal(key?.crv, "Ed25519");
    const stored = JSON.parse(await readFile(join(dir, KEY_FILE), "utf8")) as Record<string, unknown>;
    assert.equal(key?.x, stored.x);
    const token = String((await call(app, "GET", "/token", basic(CLIENT, SECRET))).body.access_token);
    const header = JSON.parse(Buffer.from(String(token.split(".")[0]), "base64url").toString()) as Record<
      string,
      unknown
    >;
    assert.equal(header.kid, key?.kid);
    assert.equal(header.alg, "EdDSA");
  });

  test("a key file that is not an Ed25519 JWK stops registration with the fix", async () => {
    const dir = await dataDir();
    await mkdir(join(dir, "keys"));
    await writeFile(join(dir, KEY_FILE), '{"kty":"oct","k":"abc"}');
    const app = createHttpApp({ logger: pino({ level: "silent" }) });
    apps.push(app);
    await assert.rejects(
      registerAuth(app, { security: security(), dataDir: dir }),
      /delete it to create a new key/,
    );
  });
});
