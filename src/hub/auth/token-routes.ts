/**
 * `GET /token` and `GET /authorize` (seed "Authentication" A.3, A.5; DESIGN 5.4): a client
 * authenticates with HTTP Basic or Kerberos SPNEGO and receives
 * `{access_token, token_type, refresh_token, expires}`. Errors use vigil's `{status, title, body}`
 * shape (DESIGN 3.2): 401 CLIENT_UNAUTHORIZED naming the schemes to use, 429 TOO_MANY_REQUESTS
 * past the rate limits or in a lockout, 503 when too many secret checks wait (docs/security.md).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { RETRY_AFTER_SECONDS } from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import { type ClientAuthenticator, type ClientAuthResult, TooManyAttemptsError } from "./client-auth.js";
import { parseAuthorization } from "./credentials.js";
import type { TokenIssuer } from "./token-issuer.js";
import { WorkQueueFullError } from "./work-limiter.js";

export interface TokenRouteContext {
  readonly clients: ClientAuthenticator;
  readonly issuer: TokenIssuer;
}

/**
 * The vigil error for a request the limits refused: 429 with `Retry-After` for a rate limit or a
 * lockout, 503 with `Retry-After` when the secret-check queue is full; undefined for other errors.
 */
export function limitError(error: unknown): VigilError | undefined {
  if (error instanceof TooManyAttemptsError) {
    const seconds = error.retryAfterSeconds;
    return new VigilError(
      "TOO_MANY_REQUESTS",
      { detail: error.message, seconds },
      { cause: error, headers: { "Retry-After": String(seconds) } },
    );
  }
  if (error instanceof WorkQueueFullError) {
    return new VigilError(
      "SERVICE_UNAVAILABLE",
      { detail: "Too many credential checks are waiting; retry shortly." },
      { cause: error, headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } },
    );
  }
  return undefined;
}

/** The body of a successful `GET /token` or `GET /authorize`. */
export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  refresh_token: string;
  /** Epoch seconds at which the access token expires. */
  expires: number;
  /** Echoed from `/authorize`'s query. */
  state?: string;
}

function badRequest(detail: string): VigilError {
  return new VigilError("BAD_REQUEST", { detail });
}

/** One query parameter as a string; a repeated parameter is a 400 (RFC 6749 §3.1). */
function queryParameter(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined || typeof value === "string") return value;
  throw badRequest(`Query parameter '${name}' must be given once.`);
}

async function issueForHeader(
  context: TokenRouteContext,
  request: FastifyRequest,
  reply: FastifyReply,
  expectedClientId: string | undefined,
  state: string | undefined,
): Promise<TokenResponse> {
  const credentials = parseAuthorization(request.headers.authorization);
  if (
    expectedClientId !== undefined &&
    credentials.kind === "basic" &&
    credentials.user !== expectedClientId
  ) {
    throw badRequest("Query parameter 'client_id' differs from the client id of the Basic credentials.");
  }
  const { clients } = context;
  const clientId = credentials.kind === "basic" ? credentials.user : undefined;
  let result: ClientAuthResult | undefined;
  try {
    const address = clients.admit(request.ip);
    result = await clients.header(credentials);
    clients.settle(address, result);
  } catch (error) {
    const refusal = limitError(error);
    if (refusal === undefined) throw error;
    request.log.info({ clientId, reason: refusal.message }, "token request refused");
    throw refusal;
  }
  if (result?.ok !== true) {
    request.log.info(
      { clientId, scheme: credentials.kind, reason: result?.reason ?? "no Authorization header" },
      "token request refused",
    );
    throw new VigilError(
      "CLIENT_UNAUTHORIZED",
      { detail: clients.schemes() },
      { headers: { "WWW-Authenticate": clients.challenge() } },
    );
  }
  // RFC 4559 §5: the server's last SPNEGO token goes back with the success (mutual authentication).
  if (result.negotiateResponse !== undefined) {
    reply.header("WWW-Authenticate", `Negotiate ${result.negotiateResponse}`);
  }
  const tokens = await context.issuer.issue({ sub: result.sub, method: result.method });
  reply.header("Cache-Control", "no-store"); // RFC 6749 §5.1: tokens must not be cached
  return {
    access_token: tokens.accessToken,
    token_type: "Bearer",
    refresh_token: tokens.refreshToken,
    expires: tokens.expires,
    ...(state === undefined ? {} : { state }),
  };
}

/**
 * Registers `GET /token` and `GET /authorize` (each with 405 for other methods). `/authorize` needs
 * `response_type=token` (400 otherwise), rejects a `client_id` that is not the Basic user (400),
 * and echoes `state`. A failed authentication is 401 CLIENT_UNAUTHORIZED with a Basic challenge,
 * preceded by Negotiate when SPNEGO is on.
 */
export function registerTokenRoutes(app: FastifyInstance, context: TokenRouteContext): void {
  resource(app, "/token", {
    GET: async (request, reply) => issueForHeader(context, request, reply, undefined, undefined),
  });
  resource(app, "/authorize", {
    GET: async (request, reply) => {
      const responseType = queryParameter(request, "response_type");
      if (responseType !== "token") {
        throw badRequest(
          "Query parameter 'response_type' must be 'token' (the implicit grant, RFC 6749 §4.2).",
        );
      }
      const clientId = queryParameter(request, "client_id");
      const state = queryParameter(request, "state");
      return issueForHeader(context, request, reply, clientId, state);
    },
  });
}
