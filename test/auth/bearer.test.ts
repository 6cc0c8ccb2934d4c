/**
 * The shared bearer check (DESIGN 5.4): a gateway-like app protected by `requireBearer` and
 * `hubTokenVerifier` accepts exactly the tokens a real hub issues, fetching the hub's key set over
 * a real socket (jose's remote JWKS needs one; STYLE 14), and refuses the rest with a 401 challenge.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { type CryptoKey, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import { pino } from "pino";
import { requireBearer } from "../../src/auth/bearer.js";
import {
  DEFAULT_TOKEN_AUDIENCE,
  DEFAULT_TOKEN_ISSUER,
  JWKS_URL,
  TOKEN_ALGORITHM,
} from "../../src/auth/token-claims.js";
// The gateway's import path must keep working: it re-exports src/auth/bearer.ts.
import { hubTokenVerifier } from "../../src/gateway/gateway-auth.js";
import { resource } from "../../src/http/routes.js";
import { createHttpApp } from "../../src/http/server.js";
import { registerAuth } from "../../src/hub/auth/auth.js";
import { basicAuthorization } from "../../src/hub/auth/credentials.js";

const CLIENT = "dashboards";
const SECRET = "s3cret";
const CHALLENGE = 'Bearer realm="vigil"';
const INVALID_CHALLENGE = 'Bearer realm="vigil", error="invalid_token"';

let dataDir: string;
let hub: FastifyInstance;
let gateway: FastifyInstance;
let hubToken: string;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "vigil-bearer-"));
  hub = createHttpApp({ logger: pino({ level: "silent" }) });
  await registerAuth(hub, {
    dataDir,
    security: {
      enabled: true,
      tokenLifetime: 300,
      appKeys: [{ clientId: CLIENT, clientSecret: SECRET, roles: ["read"] }],
      kerberos: { enabled: false, keytab: "", servicePrincipal: "" },
      kerberosRoles: ["read"],
    },
  });
  await hub.listen({ host: "127.0.0.1", port: 0 });
  const { port } = hub.server.address() as AddressInfo;

  const answer = await hub.inject({
    method: "GET",
    url: "/token",
    headers: { authorization: basicAuthorization(CLIENT, SECRET) },
  });
  hubToken = String(answer.json<{ access_token: unknown }>().access_token);

  gateway = createHttpApp({ logger: pino({ level: "silent" }) });
  requireBearer(
    gateway,
    [{ prefix: "/v1/commands", role: "read" }],
    hubTokenVerifier(`http://127.0.0.1:${port}`),
  );
  resource(gateway, "/v1/commands", { GET: async () => ({ ok: true }) });
  resource(gateway, "/status", { GET: async () => ({ ok: true }) });
});

after(async () => {
  await gateway?.close();
  await hub?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** Signs a token with `key` (default: the hub's own key file), changing only the given claims. */
async function signed(
  claims: { aud?: string; iss?: string; exp?: number; jti?: string | null; roles?: unknown },
  key?: CryptoKey,
): Promise<string> {
  const signingKey =
    key ??
    (await importJWK(
      JSON.parse(await readFile(join(dataDir, "keys", "hub-signing-key.json"), "utf8")) as JWK,
      TOKEN_ALGORITHM,
    ));
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({
    ...(claims.roles === null ? {} : { roles: claims.roles ?? ["read"] }),
    client_method: "app-key",
  })
    .setProtectedHeader({ alg: TOKEN_ALGORITHM })
    .setSubject(CLIENT)
    .setIssuer(claims.iss ?? DEFAULT_TOKEN_ISSUER)
    .setAudience(claims.aud ?? DEFAULT_TOKEN_AUDIENCE)
    .setIssuedAt(now - 60)
    .setExpirationTime(claims.exp ?? now + 300);
  if (claims.jti !== null) jwt.setJti(claims.jti ?? "t1");
  return jwt.sign(signingKey);
}

describe("requireBearer with hubTokenVerifier", () => {
  test("the hub serves its key set where the verifier looks", async () => {
    const answer = await hub.inject({ method: "GET", url: JWKS_URL });
    assert.equal(answer.statusCode, 200);
  });

  // [what it shows, URL, Authorization header (undefined: none), status, WWW-Authenticate]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, () => Promise<string | undefined>, number, string | undefined][] = [
    ["a token from the hub's /token opens the protected prefix", "/v1/commands", async () => `Bearer ${hubToken}`, 200, undefined],
    ["the scheme is case-insensitive", "/v1/commands", async () => `bearer ${hubToken}`, 200, undefined],
    ["URLs outside the prefixes stay open", "/status", async () => undefined, 200, undefined],
    ["no Authorization header: 401 with a plain challenge", "/v1/commands", async () => undefined, 401, CHALLENGE],
    ["Basic instead of Bearer: 401 with a plain challenge", "/v1/commands", async () => basicAuthorization(CLIENT, SECRET), 401, CHALLENGE],
    ["a token that is not a JWT: invalid_token", "/v1/commands", async () => "Bearer abc.def.ghi", 401, INVALID_CHALLENGE],
    ["another audience: invalid_token", "/v1/commands", async () => `Bearer ${await signed({ aud: "other" })}`, 401, INVALID_CHALLENGE],
    ["another issuer: invalid_token", "/v1/commands", async () => `Bearer ${await signed({ iss: "other" })}`, 401, INVALID_CHALLENGE],
    ["an expired token: invalid_token", "/v1/commands", async () => `Bearer ${await signed({ exp: Math.floor(Date.now() / 1000) - 10 })}`, 401, INVALID_CHALLENGE],
    ["a token without jti (the hub requires one): invalid_token", "/v1/commands", async () => `Bearer ${await signed({ jti: null })}`, 401, INVALID_CHALLENGE],
    ["a token without roles (the hub requires them): invalid_token", "/v1/commands", async () => `Bearer ${await signed({ roles: null })}`, 401, INVALID_CHALLENGE],
    ["a token whose roles are not roles: invalid_token", "/v1/commands", async () => `Bearer ${await signed({ roles: ["admin"] })}`, 401, INVALID_CHALLENGE],
    ["the hub's own key with the right claims is accepted", "/v1/commands", async () => `Bearer ${await signed({})}`, 200, undefined],
    ["a key the hub does not publish: invalid_token", "/v1/commands", async () => `Bearer ${await signed({}, (await generateKeyPair(TOKEN_ALGORITHM, { crv: "Ed25519" })).privateKey)}`, 401, INVALID_CHALLENGE],
  ];
  for (const [name, url, authorization, status, challenge] of cases) {
    test(name, async () => {
      const header = await authorization();
      const answer = await gateway.inject({
        method: "GET",
        url,
        headers: header === undefined ? {} : { authorization: header },
      });
      assert.equal(answer.statusCode, status, answer.body);
      assert.equal(answer.headers["www-authenticate"], challenge);
      if (status === 401) assert.equal(answer.json<{ status: unknown }>().status, 401);
    });
  }
});
