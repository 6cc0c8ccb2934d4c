/**
 * Bearer-token checks for vigil processes other than the hub (DESIGN 5.4, 5.4a): with security
 * enabled, the gateway's command API, items, message tap, status and metrics require a hub-issued
 * access token carrying the endpoint's role, verified against the key set the hub publishes at
 * `/.well-known/jwks.json` and confirmed with the hub (`/v1/whoami`, cached a few seconds). jose
 * fetches and caches that key set and fetches it again when a token names a key it has not seen
 * (a key rotation).
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";
import { createRemoteJWKSet, customFetch, type FetchImplementation, jwtVerify } from "jose";
import {
  RETRY_AFTER_SECONDS,
  TOKEN_GRANT_CACHE_ENTRIES,
  TOKEN_GRANT_CACHE_MS,
  TOKEN_GRANT_TIMEOUT_MS,
} from "../config/defaults.js";
import { VigilError } from "../errors/catalog.js";
import { type BoundedAnswer, boundedRequest } from "../http/bounded-request.js";
import { sendError } from "../http/error-handler.js";
import { trustCertificate } from "../http/pinned-certificate.js";
import { commonRoles, demandRole, isRole, type Role, rolesClaim, type TokenGrant } from "./roles.js";
import {
  DEFAULT_TOKEN_AUDIENCE,
  DEFAULT_TOKEN_ISSUER,
  JWKS_URL,
  TOKEN_ALGORITHM,
  TOKEN_GRANT_URL,
  TOKEN_REQUIRED_CLAIMS,
} from "./token-claims.js";

/**
 * Checks a bearer token and resolves to what it grants now; rejects when it is not a valid
 * hub-issued token (or its key is gone). A rejection with a VigilError (the hub could not be asked)
 * is answered as it is; any other rejection is a 401.
 */
export type TokenVerifier = (token: string) => Promise<TokenGrant>;

/** What the token of each authenticated request grants, and the token (set by {@link requireBearer}). */
const grants = new WeakMap<IncomingMessage, TokenGrant>();
const tokens = new WeakMap<IncomingMessage, string>();

/** The bearer token `request` was authorised with, to check again on a long-lived answer. */
export function bearerToken(request: IncomingMessage): string | undefined {
  return tokens.get(request);
}

/** What the token of `request` grants, when {@link requireBearer} checked one. */
export function tokenGrant(request: IncomingMessage): TokenGrant | undefined {
  return grants.get(request);
}

/** When the token of `request` expires (epoch ms), when {@link requireBearer} checked one. */
export function tokenExpiresAt(request: IncomingMessage): number | undefined {
  return grants.get(request)?.expiresAt;
}

export interface HubTokenVerifierOptions {
  /** The hub's certificate (PEM text of `hub.tls.certificate`), trusted for an HTTPS hub. */
  readonly hubCertificate?: string;
  /** How long the hub's answer on a token is trusted; default TOKEN_GRANT_CACHE_MS (5 s). */
  readonly grantCacheMs?: number;
  /** Clock in epoch milliseconds; default Date.now. */
  readonly now?: () => number;
}

/**
 * A verifier that trusts the key set served by the hub at `hubUrl` (`<hubUrl>/.well-known/jwks.json`).
 * It accepts what the hub itself accepts: an EdDSA signature by one of those keys, `iss` "vigil-hub",
 * `aud` "vigil", an `exp` in the future (no clock tolerance), `sub`, `iat`, `jti` present, and a
 * `roles` claim listing distinct roles. Then it asks the hub what the token grants now
 * (`GET <hubUrl>/v1/whoami` with the token), so a key removed from the hub's setup, or whose roles
 * shrank, counts at once here too (DESIGN 5.4a); the answer is remembered `grantCacheMs` (default
 * TOKEN_GRANT_CACHE_MS, 5 s) per token, for at most TOKEN_GRANT_CACHE_ENTRIES tokens. A hub that
 * cannot be asked makes the check fail closed with 503 SERVICE_UNAVAILABLE.
 */
export function hubTokenVerifier(hubUrl: string, options: HubTokenVerifierOptions = {}): TokenVerifier {
  const { hubCertificate } = options;
  const cacheMs = options.grantCacheMs ?? TOKEN_GRANT_CACHE_MS;
  const now = options.now ?? Date.now;
  const keys = createRemoteJWKSet(
    new URL(JWKS_URL, hubUrl),
    hubCertificate === undefined ? {} : { [customFetch]: fetchTrusting(hubCertificate) },
  );
  const trust = hubCertificate === undefined ? undefined : trustCertificate(hubCertificate);
  const grantUrl = new URL(TOKEN_GRANT_URL, hubUrl);
  // Keyed by a digest of the token: the cache holds no usable token. A Map iterates in insertion
  // order, so the first entry is the oldest.
  const cache = new Map<string, { readonly grant: TokenGrant; readonly until: number }>();

  const askHub = async (token: string): Promise<readonly Role[]> => {
    let answer: BoundedAnswer;
    try {
      answer = await boundedRequest(grantUrl, {
        method: "GET",
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
        maxBytes: GRANT_MAX_BYTES,
        signal: AbortSignal.timeout(TOKEN_GRANT_TIMEOUT_MS),
        ...(trust === undefined ? {} : { trust }),
      });
    } catch (cause) {
      throw hubUnreachable(cause);
    }
    if (answer.status === 401) throw new Error("the hub no longer accepts the token (its key was removed)");
    if (answer.status !== 200) throw hubUnreachable(new Error(`the hub answered ${answer.status}`));
    try {
      const body = JSON.parse(answer.body.toString("utf8")) as { roles?: unknown };
      return Array.isArray(body.roles) ? body.roles.filter(isRole) : [];
    } catch (cause) {
      throw hubUnreachable(cause);
    }
  };

  return async (token) => {
    const { payload } = await jwtVerify(token, keys, {
      algorithms: [TOKEN_ALGORITHM],
      issuer: DEFAULT_TOKEN_ISSUER,
      audience: DEFAULT_TOKEN_AUDIENCE,
      requiredClaims: [...TOKEN_REQUIRED_CLAIMS],
    });
    const claimed = rolesClaim(payload);
    const key = createHash("sha256").update(token, "utf8").digest("base64url");
    const cached = cache.get(key);
    if (cached !== undefined && cached.until > now()) return cached.grant;
    cache.delete(key);
    const current = await askHub(token);
    const grant: TokenGrant = {
      sub: String(payload.sub),
      roles: commonRoles(claimed, current),
      expiresAt: Number(payload.exp) * 1000,
    };
    for (const [oldest, entry] of cache) {
      if (entry.until > now() && cache.size < TOKEN_GRANT_CACHE_ENTRIES) break;
      cache.delete(oldest);
    }
    cache.set(key, { grant, until: now() + cacheMs });
    return grant;
  };
}

/** The 503 of a token check when the hub cannot say what the token grants: fail closed. */
function hubUnreachable(cause: unknown): VigilError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new VigilError(
    "SERVICE_UNAVAILABLE",
    { detail: `The hub could not confirm the token (${reason}); retry shortly.` },
    { cause, headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } },
  );
}

/** Largest answer on a token's grant read from the hub. */
const GRANT_MAX_BYTES = 16 * 1024;

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

/** A URL prefix that needs a bearer token, and the role the token must carry (DESIGN 5.4a). */
export interface BearerRule {
  readonly prefix: string;
  readonly role: Role;
}

/**
 * Requires `Authorization: Bearer <token>` on the URLs that start with a rule's prefix (matched
 * against the route pattern, else the raw URL; the first matching rule counts). No token or a token
 * the verifier refuses is the catalog's 401 UNAUTHORIZED with a `WWW-Authenticate: Bearer`
 * challenge, adding `error="invalid_token"` when a sent token failed (RFC 6750 §3); a valid token
 * without the rule's role is 403 FORBIDDEN naming the role (RFC 6750 §3.1 `insufficient_scope`);
 * a VigilError from the verifier (the hub could not be asked) is answered as it is. Call it before
 * the routes are registered (Fastify refuses hooks once the app is ready).
 */
export function requireBearer(
  app: FastifyInstance,
  rules: readonly BearerRule[],
  verify: TokenVerifier,
): void {
  app.addHook("onRequest", async (request, reply) => {
    const path = request.routeOptions.url ?? request.url.split("?")[0] ?? "";
    const rule = rules.find(({ prefix }) => path.startsWith(prefix));
    if (rule === undefined) return;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
    const challenge = { "WWW-Authenticate": 'Bearer realm="vigil"' };
    if (match?.[1] === undefined)
      return sendError(reply, new VigilError("UNAUTHORIZED", {}, { headers: challenge }));
    let grant: TokenGrant;
    try {
      grant = await verify(match[1]);
    } catch (error) {
      if (error instanceof VigilError) return sendError(reply, error);
      request.log.info(
        { reason: error instanceof Error ? error.message : "invalid" },
        "bearer token refused",
      );
      return sendError(
        reply,
        new VigilError(
          "UNAUTHORIZED",
          {},
          { cause: error, headers: { "WWW-Authenticate": 'Bearer realm="vigil", error="invalid_token"' } },
        ),
      );
    }
    try {
      demandRole(grant, rule.role);
    } catch (error) {
      request.log.info(
        { sub: grant.sub, roles: grant.roles, needs: rule.role },
        "bearer token lacks the role",
      );
      return sendError(reply, error as VigilError);
    }
    grants.set(request.raw, grant);
    tokens.set(request.raw, match[1]);
  });
}
