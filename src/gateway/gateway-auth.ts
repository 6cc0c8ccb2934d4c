/**
 * With security enabled, the gateway's command API and message tap require a hub-issued bearer
 * token, verified against the hub's published key set (DESIGN 5.4). The key set is fetched from
 * the hub's `/.well-known/jwks.json` and cached by jose; a key rotation is picked up on a miss.
 */
import type { FastifyInstance } from "fastify";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { VigilError } from "../errors/catalog.js";
import { sendError } from "../http/error-handler.js";
import { DEFAULT_TOKEN_AUDIENCE, DEFAULT_TOKEN_ISSUER, JWKS_URL } from "../hub/auth/auth.js";

/** Checks a bearer token; rejects when it is not a valid hub-issued token. */
export type TokenVerifier = (token: string) => Promise<void>;

/** A verifier that trusts the key set served by the hub at `hubUrl`. */
export function hubTokenVerifier(hubUrl: string): TokenVerifier {
  const keys = createRemoteJWKSet(new URL(JWKS_URL, hubUrl));
  return async (token) => {
    await jwtVerify(token, keys, { issuer: DEFAULT_TOKEN_ISSUER, audience: DEFAULT_TOKEN_AUDIENCE });
  };
}

/**
 * Requires `Authorization: Bearer <token>` on the given URL prefixes; anything else is the
 * catalog's 401 with a `WWW-Authenticate: Bearer` challenge.
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
