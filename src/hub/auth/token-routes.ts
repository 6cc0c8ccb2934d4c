/**
 * `GET /token` and `GET /authorize` (seed "Authentication" A.3, A.5; DESIGN 5.4): a client
 * authenticates with HTTP Basic and receives `{access_token, token_type, refresh_token, expires}`.
 * Errors use vigil's `{status, title, body}` shape (DESIGN 3.2).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import type { AppKeys } from "./app-keys.js";
import { authenticateHeader, clientChallenge } from "./client-auth.js";
import { parseAuthorization } from "./credentials.js";
import type { TokenIssuer } from "./token-issuer.js";

export interface TokenRouteContext {
  readonly appKeys: AppKeys;
  readonly issuer: TokenIssuer;
  readonly kerberosEnabled: boolean;
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
  const result = await authenticateHeader(context.appKeys, credentials);
  if (!result.ok) {
    const clientId = credentials.kind === "basic" ? credentials.user : undefined;
    request.log.info({ clientId, reason: result.reason }, "token request refused");
    throw new VigilError(
      "UNAUTHORIZED",
      {},
      { headers: { "WWW-Authenticate": clientChallenge(context.kerberosEnabled) } },
    );
  }
  const tokens = await context.issuer.issue(result.sub);
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
 * and echoes `state`. A failed authentication is 401 UNAUTHORIZED with a Basic challenge, plus
 * Negotiate when Kerberos is enabled.
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
