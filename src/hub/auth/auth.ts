/**
 * Hub authentication (DESIGN 5.4; seed "Authentication" A and "Errors"), the one public entry of
 * src/hub/auth. `registerAuth()` loads the signing key, hashes the application keys, registers the
 * token endpoints and the JWKS, and — with security enabled — a hook that demands a bearer token on
 * every `/v0` and `/v1alpha` URL except `/v0/ping` and the OAuth token endpoint.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DEFAULT_TOKEN_AUDIENCE, DEFAULT_TOKEN_ISSUER, JWKS_URL } from "../../auth/token-claims.js";
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
import { RefreshTokens } from "./refresh-tokens.js";
import { loadSigningKey } from "./signing-key.js";
import { TokenIssuer } from "./token-issuer.js";
import { registerTokenRoutes } from "./token-routes.js";
import { WorkLimiter, type WorkLimiterOptions } from "./work-limiter.js";

/** URL prefixes that need a bearer token when security is enabled (DESIGN 5.4). */
const PROTECTED_PREFIXES = ["/v0", "/v1alpha"] as const;
/** Protected-prefix URLs that stay open: the health check and the way to get a token. */
const OPEN_URLS: ReadonlySet<string> = new Set(["/v0/ping", ...OAUTH2_TOKEN_URLS]);

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
   * Verifies a hub access token (signature, `iss`, `aud`, `exp`); resolves to its subject, or
   * rejects with a 401 UNAUTHORIZED VigilError whose `cause` is the reason.
   */
  verify(token: string): Promise<{ sub: string }>;
}

function isProtected(request: FastifyRequest): boolean {
  // The route pattern, not the raw URL: the router decodes percent-escapes, so `/%760/entities`
  // reaches the `/v0/entities` route while its raw URL does not start with `/v0`.
  const path = request.routeOptions.url ?? request.url.split("?")[0] ?? "";
  if (OPEN_URLS.has(path)) return false;
  return PROTECTED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
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
 * `POST /v0/oauth2/token` and `GET /.well-known/jwks.json`; these work whenever application keys
 * exist, whatever `security.enabled` says. With `security.enabled`, it adds an `onRequest` hook
 * answering 401 UNAUTHORIZED with a Bearer challenge to any `/v0` or `/v1alpha` request without a
 * valid token, except `/v0/ping` and `/v0/oauth2/token`. Defaults: issuer "vigil-hub", audience
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
  const issuer = new TokenIssuer({
    key,
    refreshTokens,
    issuer: options.issuer ?? DEFAULT_TOKEN_ISSUER,
    audience: options.audience ?? DEFAULT_TOKEN_AUDIENCE,
    tokenLifetime: security.tokenLifetime,
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

  const service: AuthService = {
    async verify(token) {
      try {
        return await issuer.verify(token);
      } catch (error) {
        throw unauthorized(true, error);
      }
    },
  };

  if (security.enabled) {
    app.addHook("onRequest", async (request, reply) => {
      if (!isProtected(request)) return;
      const credentials = parseAuthorization(request.headers.authorization);
      if (credentials.kind !== "bearer") {
        request.log.info({ credentials: credentials.kind }, "request without bearer token refused");
        return sendError(reply, unauthorized(false));
      }
      try {
        await issuer.verify(credentials.token);
      } catch (error) {
        // jose's messages name the failed check ("\"exp\" claim timestamp check failed"), never the token.
        request.log.info(
          { reason: error instanceof Error ? error.message : "invalid" },
          "bearer token refused",
        );
        return sendError(reply, unauthorized(true, error));
      }
    });
  }
  return service;
}
