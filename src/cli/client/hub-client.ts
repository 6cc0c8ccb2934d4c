/**
 * The small hub client behind `vigil token|entities|query|replay` (DESIGN 1, 5.4): one base URL, and
 * either a bearer token used as is or an application key (client id and secret) exchanged for a
 * token at `GET /token` with HTTP Basic (RFC 7617). With an application key, a 401 fetches a new
 * token once and repeats the request, so a replay that outlives the token's 5 minutes carries on.
 * A hub error is thrown as a {@link HubError} carrying the hub's own `{status, title, body}`.
 */

/** How the client authenticates, keyed on `kind`. */
export type HubCredentials =
  | { readonly kind: "none" }
  | { readonly kind: "token"; readonly token: string }
  | { readonly kind: "client"; readonly clientId: string; readonly clientSecret: string };

/** The body of `GET /token` (DESIGN 5.4). */
export interface TokenResponse {
  readonly access_token: string;
  readonly token_type: string;
  readonly refresh_token?: string;
  /** Epoch seconds. */
  readonly expires?: number;
}

/** A response of the hub, its body as text (exactly as sent, so `--json` passes values through). */
export interface HubResponse {
  readonly status: number;
  readonly text: string;
}

// A client reads what it asked for; these bound what a wrong or hostile server can make it hold.
export const CLIENT_RESPONSE_LIMIT_BYTES = 256 * 1024 * 1024; // 256 MiB
export const CLIENT_REQUEST_TIMEOUT_MS = 120_000; // 120 s: a backfill batch is committed before the answer
const ERROR_TEXT_CHARS = 300; // of a non-JSON error body, shown to the user

/** An answer of the hub other than 2xx, or a hub that cannot be reached (`status` 0). */
export class HubError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly body: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(status === 0 ? `${title}: ${body}` : `hub answered ${status} ${title}: ${body}`, options);
    this.name = "HubError";
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
  readonly retryAfterSeconds: number | undefined;
}

export interface HubClientOptions {
  /** Base URL of the hub, `http://HOST:PORT` (a path prefix is kept). */
  readonly url: string;
  readonly credentials: HubCredentials;
  /** Per request; default CLIENT_REQUEST_TIMEOUT_MS. */
  readonly timeoutMs?: number;
}

/** Encodes a client id and secret as a Basic `Authorization` header value (RFC 7617, UTF-8). */
export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
}

/** Checks and normalises a hub base URL: http or https, no query, no trailing slash. */
export function parseHubUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`hub URL '${text}' is not a URL; expected http://HOST:PORT`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`hub URL '${text}' must start with http:// or https://`);
  }
  if (url.search !== "" || url.hash !== "") throw new Error(`hub URL '${text}' must not have a query`);
  if (url.username !== "" || url.password !== "") {
    throw new Error(
      `hub URL '${text}' must not hold credentials; use --client-id/--client-secret or --token`,
    );
  }
  return url.href.replace(/\/+$/, "");
}

/** Reads a body as text, refusing more than `limit` bytes. */
async function readText(response: Response, limit: number): Promise<string> {
  if (response.body === null) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > limit) {
      await response.body.cancel().catch(() => undefined);
      throw new Error(`the hub's answer is larger than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The hub's `{status, title, body}` error, or the start of whatever else it sent. */
export function hubErrorFrom(status: number, text: string, retryAfter: string | null): HubError {
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined;
  const options = seconds === undefined ? {} : { retryAfterSeconds: seconds };
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null) {
      const { title, body, error, error_description: description } = parsed as Record<string, unknown>;
      if (typeof title === "string" && typeof body === "string")
        return new HubError(status, title, body, options);
      // RFC 6749 §5.2 bodies (the OAuth endpoint's one exception to the house shape, DESIGN 5.4).
      if (typeof error === "string") {
        return new HubError(status, error, typeof description === "string" ? description : "", options);
      }
    }
  } catch {
    // not JSON: shown as text below
  }
  const shown = text.length > ERROR_TEXT_CHARS ? `${text.slice(0, ERROR_TEXT_CHARS)}…` : text;
  return new HubError(status, "unexpected answer", shown === "" ? "(no body)" : shown, options);
}

/** The hub API over `fetch`, authenticated as its credentials say. */
export class HubClient {
  readonly url: string;
  private readonly credentials: HubCredentials;
  private readonly timeoutMs: number;
  private bearer: string | undefined;

  constructor(options: HubClientOptions) {
    this.url = parseHubUrl(options.url);
    this.credentials = options.credentials;
    this.timeoutMs = options.timeoutMs ?? CLIENT_REQUEST_TIMEOUT_MS;
    if (options.credentials.kind === "token") this.bearer = options.credentials.token;
  }

  /** `GET /token` with the application key: a fresh token. Needs client credentials. */
  async token(): Promise<TokenResponse> {
    const credentials = this.credentials;
    if (credentials.kind !== "client") {
      throw new Error(
        "a token needs an application key: --client-id and --client-secret (or VIGIL_CLIENT_ID and VIGIL_CLIENT_SECRET)",
      );
    }
    const response = await this.send("GET", "/token", {
      authorization: basicAuthorization(credentials.clientId, credentials.clientSecret),
    });
    const parsed: unknown = JSON.parse(response.text);
    if (
      typeof parsed !== "object" ||
      parsed === null ||
      typeof (parsed as Record<string, unknown>).access_token !== "string"
    ) {
      throw new Error("the hub's /token answer has no access_token");
    }
    return parsed as TokenResponse;
  }

  /**
   * Sends one request with the bearer token (fetched first with an application key). A non-2xx
   * answer throws a HubError; a 401 with an application key gets a new token and one more try.
   */
  async request(
    method: "GET" | "POST",
    path: string,
    body?: { readonly text: string; readonly contentType: string },
  ): Promise<HubResponse> {
    if (this.credentials.kind === "client" && this.bearer === undefined) {
      this.bearer = (await this.token()).access_token;
    }
    try {
      return await this.send(method, path, this.headers(body), body?.text);
    } catch (error) {
      if (!(error instanceof HubError) || error.status !== 401 || this.credentials.kind !== "client")
        throw error;
      this.bearer = (await this.token()).access_token;
      return this.send(method, path, this.headers(body), body?.text);
    }
  }

  private headers(body: { readonly contentType: string } | undefined): Record<string, string> {
    return {
      accept: "application/json",
      ...(this.bearer === undefined ? {} : { authorization: `Bearer ${this.bearer}` }),
      ...(body === undefined ? {} : { "content-type": body.contentType }),
    };
  }

  private async send(
    method: "GET" | "POST",
    path: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<HubResponse> {
    const target = `${this.url}${path}`;
    let response: Response;
    try {
      response = await fetch(target, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
      const why =
        typeof cause?.code === "string"
          ? cause.code
          : typeof cause?.message === "string"
            ? cause.message
            : (error as Error).message;
      throw new HubError(0, `cannot reach the hub at ${this.url}`, why, { cause: error });
    }
    const text = await readText(response, CLIENT_RESPONSE_LIMIT_BYTES);
    if (response.status < 200 || response.status > 299) {
      throw hubErrorFrom(response.status, text, response.headers.get("retry-after"));
    }
    return { status: response.status, text };
  }
}
