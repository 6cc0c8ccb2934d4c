/**
 * `POST /oauth2/token` and `POST /v0/oauth2/token` (DESIGN 5.4): the OAuth 2.0 token endpoint of
 * RFC 6749 for the `client_credentials` (§4.4) and `refresh_token` (§6) grants. Errors are RFC 6749
 * §5.2 bodies `{error, error_description}` — the one place vigil's `{status, title, body}` shape does
 * not apply, because generic OAuth clients expect the standard one. Requests over the token
 * endpoints' limits (docs/security.md) get `temporarily_unavailable` (the RFC 6749 §4.1.2.1 code,
 * from the OAuth Extensions Error Registry) with 429 or 503 and `Retry-After`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { resource } from "../../http/routes.js";
import type { ClientAuthenticator, ClientAuthResult } from "./client-auth.js";
import { parseAuthorization } from "./credentials.js";
import type { RefreshTokens } from "./refresh-tokens.js";
import type { TokenIssuer } from "./token-issuer.js";
import { limitError } from "./token-routes.js";

/** The URLs of the token endpoint; the `/v0` one is reachable without a bearer token. */
export const OAUTH2_TOKEN_URLS = ["/oauth2/token", "/v0/oauth2/token"] as const;
/** Largest token request body; a token request is a few hundred bytes. */
const TOKEN_REQUEST_BODY_LIMIT = 16 * 1024; // bytes

type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unsupported_grant_type"
  | "temporarily_unavailable";

const OAUTH_ERROR_STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unsupported_grant_type: 400,
  temporarily_unavailable: 503,
};

/** An RFC 6749 §5.2 error; answered as `{error, error_description}` by this scope's error handler. */
class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** Status when not the code's usual one (429 for a rate limit), and extra headers. */
    readonly options: { readonly status?: number; readonly headers?: Record<string, string> } = {},
  ) {
    super(`${error}: ${description}`);
    this.name = "OAuthError";
  }
}

export interface OAuth2Context {
  readonly clients: ClientAuthenticator;
  readonly issuer: TokenIssuer;
  readonly refreshTokens: RefreshTokens;
}

/** The RFC 6749 §5.1 success body. */
interface OAuthTokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
}

/**
 * The request parameters from a form or JSON body. RFC 6749 §3.2: parameters sent without a value
 * are treated as omitted, and a parameter must not be given more than once.
 */
function readParameters(body: unknown): ReadonlyMap<string, string> {
  const parameters = new Map<string, string>();
  if (body === undefined || body === null || body === "") return parameters;
  let entries: Iterable<[string, unknown]>;
  if (body instanceof URLSearchParams) entries = body.entries();
  else if (typeof body === "object" && !Array.isArray(body)) entries = Object.entries(body);
  else {
    throw new OAuthError(
      "invalid_request",
      "The body must be application/x-www-form-urlencoded parameters or a JSON object.",
    );
  }
  for (const [name, value] of entries) {
    if (typeof value !== "string") {
      throw new OAuthError("invalid_request", `Parameter '${name}' must be a string.`);
    }
    if (parameters.has(name)) throw new OAuthError("invalid_request", `Parameter '${name}' is given twice.`);
    if (value !== "") parameters.set(name, value);
  }
  return parameters;
}

/**
 * Client authentication (RFC 6749 §2.3): HTTP Basic or the `client_id`/`client_secret` parameters,
 * never both (§2.3.1: "MUST NOT use more than one authentication method"), or Kerberos SPNEGO.
 * Returns undefined when the request carries no client authentication (no Authorization header and
 * no `client_secret`).
 */
async function authenticateClient(
  context: OAuth2Context,
  request: FastifyRequest,
  parameters: ReadonlyMap<string, string>,
): Promise<ClientAuthResult | undefined> {
  const credentials = parseAuthorization(request.headers.authorization);
  const formId = parameters.get("client_id");
  const formSecret = parameters.get("client_secret");
  switch (credentials.kind) {
    case "basic":
      if (formSecret !== undefined) {
        throw new OAuthError(
          "invalid_request",
          "Send client credentials either by Basic or in the body, not both.",
        );
      }
      if (formId !== undefined && formId !== credentials.user) {
        throw new OAuthError("invalid_request", "Parameter 'client_id' differs from the Basic client id.");
      }
      return context.clients.appKey(credentials.user, credentials.password, true);
    case "none":
      // A client_id alone identifies a client but does not authenticate it (RFC 6749 §3.2.1).
      if (formSecret === undefined) return undefined;
      if (formId === undefined) return { ok: false, reason: "client_secret without client_id" };
      return context.clients.appKey(formId, formSecret);
    case "negotiate":
      if (formSecret !== undefined) {
        throw new OAuthError(
          "invalid_request",
          "Send client credentials either by Negotiate or in the body, not both.",
        );
      }
      return context.clients.negotiate(credentials.token);
    case "bearer":
      return { ok: false, reason: "a bearer token is not client authentication" };
    case "malformed":
      return { ok: false, reason: credentials.reason };
  }
}

function refuseClient(
  context: OAuth2Context,
  request: FastifyRequest,
  result: ClientAuthResult | undefined,
): OAuthError {
  request.log.info(
    { reason: result?.ok === false ? result.reason : "no client authentication" },
    "oauth2 client refused",
  );
  return new OAuthError(
    "invalid_client",
    "Client authentication failed: send a valid client id and secret by Basic or in the body" +
      (context.clients.negotiates ? ", or a Kerberos ticket by Negotiate." : "."),
  );
}

/**
 * Authenticates the client of a token request within the endpoints' limits (docs/security.md):
 * the remote address is admitted first, then the client is authenticated, and the outcome counted.
 * A refusal by the limits becomes `temporarily_unavailable` with 429 or 503 and `Retry-After`.
 */
async function limitedClient(
  context: OAuth2Context,
  request: FastifyRequest,
  parameters: ReadonlyMap<string, string>,
): Promise<ClientAuthResult | undefined> {
  try {
    const address = context.clients.admit(request.ip);
    const client = await authenticateClient(context, request, parameters);
    context.clients.settle(address, client);
    return client;
  } catch (error) {
    const refusal = limitError(error);
    if (refusal === undefined) throw error;
    request.log.info({ reason: refusal.message }, "oauth2 request refused");
    throw new OAuthError("temporarily_unavailable", refusal.body, {
      status: refusal.status,
      headers: refusal.headers,
    });
  }
}

async function tokenRequest(
  context: OAuth2Context,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<OAuthTokenResponse> {
  const parameters = readParameters(request.body);
  const grantType = parameters.get("grant_type");
  let owner: Extract<ClientAuthResult, { ok: true }>;
  if (grantType === undefined) {
    throw new OAuthError("invalid_request", "Parameter 'grant_type' is missing.");
  } else if (grantType === "client_credentials") {
    const client = await limitedClient(context, request, parameters);
    if (client?.ok !== true) throw refuseClient(context, request, client);
    owner = client;
  } else if (grantType === "refresh_token") {
    const refreshToken = parameters.get("refresh_token");
    if (refreshToken === undefined)
      throw new OAuthError("invalid_request", "Parameter 'refresh_token' is missing.");
    // RFC 6749 §6: the client must authenticate, and be the one the token was issued to, in the
    // same way (application key or Kerberos). The token is looked at before it is spent, so
    // another client, or no client, never uses up the owner's token.
    const client = await limitedClient(context, request, parameters);
    if (client?.ok !== true) throw refuseClient(context, request, client);
    const tokenOwner = context.refreshTokens.owner(refreshToken);
    const mine = tokenOwner?.sub === client.sub && tokenOwner.method === client.method;
    if (!mine || context.refreshTokens.spend(refreshToken) === undefined) {
      throw new OAuthError(
        "invalid_grant",
        "The refresh token is unknown, expired, already used, or not yours.",
      );
    }
    owner = client;
  } else {
    throw new OAuthError(
      "unsupported_grant_type",
      "Parameter 'grant_type' must be 'client_credentials' or 'refresh_token'.",
    );
  }
  const tokens = await context.issuer.issue({ sub: owner.sub, method: owner.method });
  noStore(reply);
  // RFC 4559 §5: the server's last SPNEGO token goes back with the success (mutual authentication).
  if (owner.negotiateResponse !== undefined) {
    reply.header("WWW-Authenticate", `Negotiate ${owner.negotiateResponse}`);
  }
  return {
    access_token: tokens.accessToken,
    token_type: "Bearer",
    expires_in: tokens.expiresIn,
    refresh_token: tokens.refreshToken,
  };
}

/** RFC 6749 §5.1: responses with tokens or credentials must not be cached. */
function noStore(reply: FastifyReply): void {
  reply.header("Cache-Control", "no-store").header("Pragma", "no-cache");
}

function sendOAuthError(reply: FastifyReply, error: OAuthError, clients: ClientAuthenticator): FastifyReply {
  noStore(reply);
  if (error.error === "invalid_client") reply.header("WWW-Authenticate", clients.challenge());
  for (const [name, value] of Object.entries(error.options.headers ?? {})) reply.header(name, value);
  return reply
    .code(error.options.status ?? OAUTH_ERROR_STATUS[error.error])
    .type("application/json")
    .send({ error: error.error, error_description: error.description });
}

/**
 * Registers `POST /oauth2/token` and `POST /v0/oauth2/token` in their own encapsulated scope, which
 * adds a parser for `application/x-www-form-urlencoded` bodies (JSON bodies are accepted too) and an
 * error handler answering RFC 6749 §5.2 bodies for client errors; server errors go on to the app's
 * central handler. Bodies are limited to 16 KiB.
 */
export async function registerOAuth2Routes(app: FastifyInstance, context: OAuth2Context): Promise<void> {
  await app.register(async (scope) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string" },
      (_request, body, done) => done(null, new URLSearchParams(body as string)),
    );
    scope.setErrorHandler(async (error, request, reply) => {
      if (error instanceof OAuthError) return sendOAuthError(reply, error, context.clients);
      const status = (error as { statusCode?: unknown }).statusCode;
      if (typeof status === "number" && status >= 400 && status < 500) {
        // Fastify's own client errors: bad JSON, unsupported content type, body too large.
        request.log.info({ code: (error as { code?: unknown }).code }, "oauth2 request unreadable");
        return sendOAuthError(
          reply,
          new OAuthError("invalid_request", (error as Error).message),
          context.clients,
        );
      }
      throw error;
    });
    for (const url of OAUTH2_TOKEN_URLS) {
      resource(
        scope,
        url,
        { POST: (request, reply) => tokenRequest(context, request, reply) },
        {
          bodyLimit: TOKEN_REQUEST_BODY_LIMIT,
        },
      );
    }
  });
}
