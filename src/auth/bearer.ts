/**
 * Bearer-token checks for vigil processes other than the hub (DESIGN 5.4): with security enabled,
 * the gateway's command API and message tap require a hub-issued access token, verified against
 * the key set the hub publishes at `/.well-known/jwks.json`. jose fetches and caches that key set
 * and fetches it again when a token names a key it has not seen (a key rotation).
 */
import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";
import { createRemoteJWKSet, customFetch, type FetchImplementation, jwtVerify } from "jose";
import { VigilError } from "../errors/catalog.js";
import { boundedRequest } from "../http/bounded-request.js";
import { sendError } from "../http/error-handler.js";
import { trustCertificate } from "../http/pinned-certificate.js";
import {
  DEFAULT_TOKEN_AUDIENCE,
  DEFAULT_TOKEN_ISSUER,
  JWKS_URL,
  TOKEN_ALGORITHM,
  TOKEN_REQUIRED_CLAIMS,
} from "./token-claims.js";

/**
 * Checks a bearer token; rejects when it is not a valid hub-issued token. It may resolve with the
 * token's expiry as a number (epoch ms), which long-lived answers such as the message tap enforce;
 * any other value means the expiry is not known.
 */
export type TokenVerifier = (token: string) => Promise<unknown>;

/** The expiry of the token each authenticated request carried (set by {@link requireBearer}). */
const expiries = new WeakMap<IncomingMessage, number>();

/** When the token of `request` expires (epoch ms), if its verifier said. */
export function tokenExpiresAt(request: IncomingMessage): number | undefined {
  return expiries.get(request);
}

/**
 * A verifier that trusts the key set served by the hub at `hubUrl` (`<hubUrl>/.well-known/jwks.json`).
 * It accepts what the hub itself accepts: an EdDSA signature by one of those keys, `iss` "vigil-hub",
 * `aud` "vigil", an `exp` in the future (no clock tolerance), and `sub`, `iat`, `jti` present.
 */
export function hubTokenVerifier(hubUrl: string, hubCertificate?: string): TokenVerifier {
  const keys = createRemoteJWKSet(
    new URL(JWKS_URL, hubUrl),
    hubCertificate === undefined ? {} : { [customFetch]: fetchTrusting(hubCertificate) },
  );
  return async (token) => {
    const { payload } = await jwtVerify(token, keys, {
      algorithms: [TOKEN_ALGORITHM],
      issuer: DEFAULT_TOKEN_ISSUER,
      audience: DEFAULT_TOKEN_AUDIENCE,
      requiredClaims: [...TOKEN_REQUIRED_CLAIMS],
    });
    return typeof payload.exp === "number" ? payload.exp * 1000 : undefined;
  };
}

/**
 * A fetch for the hub's key set over HTTPS that accepts the hub's own `hub.tls.certificate` (often
 * self-signed or from a private CA) and otherwise a certificate the public CAs vouch for, for the
 * URL's host (pinned-certificate.ts). So a gateway reading the same setup verifies the tokens of an
 * HTTPS hub without other configuration. The request carries no credential. A key set is a few
 * hundred bytes: the answer is bounded at 64 KiB.
 */
function fetchTrusting(certificate: string): FetchImplementation {
  const trust = trustCertificate(certificate);
  return async (url, options) => {
    const answer = await boundedRequest(new URL(url), {
      method: "GET",
      maxBytes: JWKS_MAX_BYTES,
      trust,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    // A Response of these statuses may not have a body.
    const body = [101, 204, 205, 304].includes(answer.status) ? null : answer.body;
    const headers = { "content-type": answer.headers["content-type"] ?? "application/json" };
    return new Response(body, { status: answer.status, headers });
  };
}

/** Largest key-set answer read from the hub. */
const JWKS_MAX_BYTES = 64 * 1024;

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
      const expiresAt = await verify(match[1]);
      if (typeof expiresAt === "number") expiries.set(request.raw, expiresAt);
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
