/**
 * Bearer-token checks for vigil processes other than the hub (DESIGN 5.4): with security enabled,
 * the gateway's command API and message tap require a hub-issued access token, verified against
 * the key set the hub publishes at `/.well-known/jwks.json`. jose fetches and caches that key set
 * and fetches it again when a token names a key it has not seen (a key rotation).
 */
import type { FastifyInstance } from "fastify";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { VigilError } from "../errors/catalog.js";
import { sendError } from "../http/error-handler.js";
import {
  DEFAULT_TOKEN_AUDIENCE,
  DEFAULT_TOKEN_ISSUER,
  JWKS_URL,
  TOKEN_ALGORITHM,
  TOKEN_REQUIRED_CLAIMS,
} from "./token-claims.js";

/** Checks a bearer token; rejects when it is not a valid hub-issued token. */
export type TokenVerifier = (token: string) => Promise<void>;

/**
 * A verifier that trusts the key set served by the hub at `hubUrl` (`<hubUrl>/.well-known/jwks.json`).
 * It accepts what the hub itself accepts: an EdDSA signature by one of those keys, `iss` "vigil-hub",
 * `aud` "vigil", an `exp` in the future (no clock tolerance), and `sub`, `iat`, `jti` present.
 */
export function hubTokenVerifier(hubUrl: string): TokenVerifier {
  const keys = createRemoteJWKSet(new URL(JWKS_URL, hubUrl));
  return async (token) => {
    await jwtVerify(token, keys, {
      algorithms: [TOKEN_ALGORITHM],
      issuer: DEFAULT_TOKEN_ISSUER,
      audience: DEFAULT_TOKEN_AUDIENCE,
      requiredClaims: [...TOKEN_REQUIRED_CLAIMS],
    });
  };
}

/**
 * Requires `Authorization: Bearer <token>` on the given URL prefixes (matched against the route
 * pattern, else the raw URL); anything else is the catalog's 401 UNAUTHORIZED with a
 * `WWW-Authenticate: Bearer` challenge, adding `error="invalid_token"` when a sent token failed
 * (RFC 6750 §3). Call it before the app is ready (Fastify refuses hooks after).
 */
export function requireBearer(
  app: FastifyInstance,
  prefixes: readonly string[],
  verify: TokenVerifier,
): void {
  app.addHook("onRequest", async (request, reply) => {
    const path = request.routeOptions.url ?? request.url;
    if (!prefixes.some((prefix) => path.startsWith(prefix))) return;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
    const challenge = { "WWW-Authenticate": 'Bearer realm="vigil"' };
    if (match?.[1] === undefined)
      return sendError(reply, new VigilError("UNAUTHORIZED", {}, { headers: challenge }));
    try {
      await verify(match[1]);
    } catch (error) {
      return sendError(
        reply,
        new VigilError(
          "UNAUTHORIZED",
          {},
          { cause: error, headers: { "WWW-Authenticate": 'Bearer realm="vigil", error="invalid_token"' } },
        ),
      );
    }
  });
}
