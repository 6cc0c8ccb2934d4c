/**
 * Hub authentication and roles (DESIGN 5.4, 5.4a; seed "Authentication" A and "Errors"), the one
 * public entry of src/hub/auth. `registerAuth()` loads the signing key, hashes the application keys,
 * registers the token endpoints, the JWKS and `GET /v1/whoami`, and — with security enabled — a hook
 * that demands a bearer token with the URL's role on every `/v0` and `/v1alpha` URL except
 * `/v0/ping` and the OAuth token endpoint, and on `/v1/status` and `/metrics`. Every token check
 * also confirms that the token's key is still in the setup, so a reload (`AuthService.reload`)
 * revokes a removed key's tokens at once.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { commonRoles, demandRole, type Role, type TokenGrant } from "../../auth/roles.js";
import {
  DEFAULT_TOKEN_AUDIENCE,
  DEFAULT_TOKEN_ISSUER,
  JWKS_URL,
  TOKEN_GRANT_URL,
} from "../../auth/token-claims.js";
import { METRICS_PATH } from "../../config/defaults.js";
import type { HubSetup } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import { checkDataDirModes } from "../../fs/private-files.js";
import { sendError } from "../../http/error-handler.js";
import { resource } from "../../http/routes.js";
import { AppKeys } from "./app-keys.js";
import { type AttemptLimitOptions, AttemptLimits } from "./attempt-limits.js";
import { ClientAuthenticator, REALM } from "./client-auth.js";
import { parseAuthorization } from "./credentials.js";
import { type BindingLoad, setUpKerberos } from "./kerberos.js";
import { OAUTH2_TOKEN_URLS, registerOAuth2Routes } from "./oauth2-routes.js";
import { RefreshTokens, type TokenOwner } from "./refresh-tokens.js";
import { loadSigningKey } from "./signing-key.js";
import { type TokenClaims, TokenIssuer } from "./token-issuer.js";
import { registerTokenRoutes } from "./token-routes.js";
import { WorkLimiter, type WorkLimiterOptions } from "./work-limiter.js";

/** URL prefixes that need a bearer token when security is enabled (DESIGN 5.4). */
const PROTECTED_PREFIXES = ["/v0", "/v1alpha"] as const;
/** Other URLs that need a bearer token with `read` when security is enabled (DESIGN 5.4a). */
const PROTECTED_URLS: ReadonlySet<string> = new Set(["/v1/status", METRICS_PATH]);
/** Protected-prefix URLs that stay open: the health check and the way to get a token. */
const OPEN_URLS: ReadonlySet<string> = new Set(["/v0/ping", ...OAUTH2_TOKEN_URLS]);
/** The one URL that needs `write` (backfill); every other protected URL needs `read`. */
const WRITE_URL = "/v0/messages";

export interface AuthOptions {
  readonly security: HubSetup["security"];
  /** The hub's data directory; the signing key lives in `<dataDir>/keys/`. */
  readonly dataDir: string;
  /** `iss` of issued tokens; default DEFAULT_TOKEN_ISSUER ("vigil-hub"). */
  readonly issuer?: string;
  /** `aud` of issued tokens; default DEFAULT_TOKEN_AUDIENCE ("vigil"). */
  readonly audience?: string;
  /** Rate limits and lockout of the token endpoints; defaults from src/config/defaults.ts. */
  readonly limits?: AttemptLimitOptions;
  /** Concurrency of secret checks (scrypt, Kerberos accept); defaults from src/config/defaults.ts. */
  readonly checks?: WorkLimiterOptions;
  /** How long a verified application-key secret skips scrypt; default VERIFIED_SECRET_TTL_MS. */
  readonly verifiedTtlMs?: number;
  /** The Kerberos binding, for tests that simulate one that does not load; default the real one. */
  readonly kerberosBinding?: BindingLoad;
}

/** What the rest of the hub needs from authentication. */
export interface AuthService {
  /**
   * Verifies a hub access token (signature, `iss`, `aud`, `exp`, `roles`) and that its key is
   * still configured; resolves to its subject and the roles it holds now (the token's, limited to
   * its key's current roles), or rejects with a 401 UNAUTHORIZED VigilError whose `cause` is the
   * reason.
   */
  verify(token: string): Promise<TokenGrant>;
  /**
   * Puts the setup's application keys and Kerberos roles in force (setup reload, DESIGN 5.4a):
   * from when it resolves, a removed key gets no token, its refresh tokens are gone, and its access
   * tokens are refused; a key whose roles changed is held to the new ones. Other security settings
   * need a restart. Reloads apply in the order they are asked for.
   */
  reload(security: HubSetup["security"]): Promise<void>;
}

/**
 * The role a request needs with security enabled (DESIGN 5.4a), or undefined when it is open:
 * `write` for backfill, `read` for every other `/v0` and `/v1alpha` URL, `/v1/status` and
 * `/metrics`; `/v0/ping` and the token endpoint are open.
 */
function requiredRole(request: FastifyRequest): Role | undefined {
  // The route pattern, not the raw URL: the router decodes percent-escapes, so `/%760/entities`
  // reaches the `/v0/entities` route while its raw URL does not start with `/v0`.
  const path = request.routeOptions.url ?? request.url.split("?")[0] ?? "";
  if (OPEN_URLS.has(path)) return undefined;
  if (path === WRITE_URL) return "write";
  if (PROTECTED_URLS.has(path)) return "read";
  return PROTECTED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
    ? "read"
    : undefined;
}

/** RFC 6750 §3: the Bearer challenge, with `error="invalid_token"` when a sent token was bad. */
function unauthorized(tokenWasSent: boolean, cause?: unknown): VigilError {
  const challenge = tokenWasSent
    ? `Bearer realm="${REALM}", error="invalid_token"`
    : `Bearer realm="${REALM}"`;
  return new VigilError("UNAUTHORIZED", {}, { cause, headers: { "WWW-Authenticate": challenge } });
}

/**
 * Sets up hub authentication on `app` and returns the token verifier. It loads or creates the
 * Ed25519 signing key in `<dataDir>/keys/hub-signing-key.json`, warns about data dir entries other
 * users can read, hashes the configured application keys (scrypt), sets up Kerberos SPNEGO when
 * the setup enables it (rejecting, so the hub does not start, when the `kerberos` binding does not
 * load: kerberos.ts), and registers `GET /token`, `GET /authorize`, `POST /oauth2/token`,
 * `POST /v0/oauth2/token`, `GET /.well-known/jwks.json` and `GET /v1/whoami`; these work whenever
 * application keys exist, whatever `security.enabled` says. With `security.enabled`, it adds an
 * `onRequest` hook answering 401 UNAUTHORIZED with a Bearer challenge to any `/v0` or `/v1alpha`
 * request (except `/v0/ping` and `/v0/oauth2/token`), `/v1/status` or `/metrics` request without a
 * valid token, and 403 FORBIDDEN when the token lacks the role (`write` for `POST /v0/messages`,
 * `read` for the rest). Application keys have the roles of the setup (default `[read]`), Kerberos
 * principals `security.kerberosRoles`. Defaults: issuer "vigil-hub", audience
 * "vigil", access tokens live `security.tokenLifetime` seconds, refresh tokens 8 hours. Call it before
 * the app is ready (Fastify refuses hooks after).
 */
export async function registerAuth(app: FastifyInstance, options: AuthOptions): Promise<AuthService> {
  const { security } = options;
  const log = app.log.child({ component: "auth" });
  const warn = (message: string) => log.warn(message);
  // First: a setup enabling Kerberos without a working binding stops the start before anything is created.
  const kerberos = await setUpKerberos(security.kerberos, warn, options.kerberosBinding);
  const key = await loadSigningKey(options.dataDir, warn);
  await checkDataDirModes(options.dataDir, warn);
  const limiter = new WorkLimiter(options.checks);
  const appKeys = await AppKeys.create(security.appKeys, {
    limiter,
    ...(options.verifiedTtlMs === undefined ? {} : { verifiedTtlMs: options.verifiedTtlMs }),
    ...(options.limits?.now === undefined ? {} : { now: options.limits.now }),
  });
  const refreshTokens = new RefreshTokens();
  let kerberosRoles = security.kerberosRoles;
  // `clients.appKeys` is the key set in force; a reload replaces it.
  const rolesOf = (owner: TokenOwner): readonly Role[] | undefined =>
    owner.method === "kerberos" ? kerberosRoles : clients.appKeys.rolesOf(owner.sub);
  const issuer = new TokenIssuer({
    key,
    refreshTokens,
    issuer: options.issuer ?? DEFAULT_TOKEN_ISSUER,
    audience: options.audience ?? DEFAULT_TOKEN_AUDIENCE,
    tokenLifetime: security.tokenLifetime,
    rolesOf,
  });
  if (kerberos.state === "on") {
    log.info({ servicePrincipal: security.kerberos.servicePrincipal }, "Kerberos SPNEGO is on");
  }
  const clients = new ClientAuthenticator({
    appKeys,
    limits: new AttemptLimits(options.limits),
    kerberos,
    limiter,
  });
  if (security.enabled && appKeys.size === 0) {
    log.warn("hub security is enabled but no application key is configured; no token can be issued");
  }

  const jwks = { keys: [key.publicJwk] };
  resource(app, JWKS_URL, { GET: async () => jwks });
  registerTokenRoutes(app, { clients, issuer });
  await registerOAuth2Routes(app, { clients, issuer, refreshTokens });

  let keysInForce = JSON.stringify([security.appKeys, security.kerberosRoles]);
  // When each client id added by a reload appeared (epoch seconds): a token issued before is from
  // an earlier key of that id, removed since, and stays refused (keys of the starting setup have none).
  const addedAt = new Map<string, number>();
  let reloading = Promise.resolve();
  const applyKeys = async (next: HubSetup["security"]): Promise<void> => {
    const wanted = JSON.stringify([next.appKeys, next.kerberosRoles]);
    if (wanted === keysInForce) return;
    const nextKeys = await AppKeys.create(next.appKeys, {
      limiter,
      ...(options.verifiedTtlMs === undefined ? {} : { verifiedTtlMs: options.verifiedTtlMs }),
      ...(options.limits?.now === undefined ? {} : { now: options.limits.now }),
    });
    const now = Math.floor(Date.now() / 1000);
    for (const id of nextKeys.clientIds()) if (!clients.appKeys.has(id)) addedAt.set(id, now);
    clients.appKeys = nextKeys;
    kerberosRoles = next.kerberosRoles;
    keysInForce = wanted;
    refreshTokens.retain((owner) => rolesOf(owner) !== undefined);
    log.info({ appKeys: nextKeys.size, kerberosRoles }, "application keys and roles reloaded");
  };

  const service: AuthService = {
    async verify(token) {
      let claims: TokenClaims;
      try {
        claims = await issuer.verify(token);
      } catch (error) {
        throw unauthorized(true, error);
      }
      const current = rolesOf(claims);
      if (current === undefined) {
        throw unauthorized(true, new Error(`client '${claims.sub}' is no longer configured`));
      }
      const since = claims.method === "app-key" ? addedAt.get(claims.sub) : undefined;
      if (since !== undefined && claims.issuedAt < since) {
        throw unauthorized(true, new Error(`the token predates client '${claims.sub}' being added again`));
      }
      return { sub: claims.sub, roles: commonRoles(claims.roles, current), expiresAt: claims.expiresAt };
    },
    reload(next) {
      reloading = reloading.then(
        () => applyKeys(next),
        () => applyKeys(next),
      );
      return reloading;
    },
  };

  // What a token grants now (DESIGN 5.4a): the gateway asks here, with the token as bearer, so a
  // key removed from this hub's setup stops working there too. Open to any valid token, whatever
  // `security.enabled` says (a token is checked only against itself; nothing else is told).
  resource(app, TOKEN_GRANT_URL, {
    GET: async (request, reply) => {
      const credentials = parseAuthorization(request.headers.authorization);
      if (credentials.kind !== "bearer") throw unauthorized(false);
      const grant = await service.verify(credentials.token);
      reply.header("Cache-Control", "no-store");
      return { sub: grant.sub, roles: grant.roles, expires: Math.floor(grant.expiresAt / 1000) };
    },
  });

  if (security.enabled) {
    app.addHook("onRequest", async (request, reply) => {
      const role = requiredRole(request);
      if (role === undefined) return;
      const credentials = parseAuthorization(request.headers.authorization);
      if (credentials.kind !== "bearer") {
        request.log.info({ credentials: credentials.kind }, "request without bearer token refused");
        return sendError(reply, unauthorized(false));
      }
      let grant: TokenGrant;
      try {
        grant = await service.verify(credentials.token);
      } catch (error) {
        // jose's messages name the failed check ("\"exp\" claim timestamp check failed"), never the token.
        const cause = error instanceof VigilError ? error.cause : error;
        request.log.info(
          { reason: cause instanceof Error ? cause.message : "invalid" },
          "bearer token refused",
        );
        return sendError(reply, error instanceof VigilError ? error : unauthorized(true, error));
      }
      if (!grant.roles.includes(role)) {
        request.log.info({ sub: grant.sub, roles: grant.roles, needs: role }, "bearer token lacks the role");
      }
      try {
        demandRole(grant, role);
      } catch (error) {
        return sendError(reply, error as VigilError);
      }
    });
  }
  return service;
}
