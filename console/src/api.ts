/**
 * The console's only way to the network: requests to the hub that served it (same origin, so the
 * Content-Security-Policy's `connect-src 'self'` holds), with the bearer token when security is on.
 * Every vigil API answers errors as `{status, title, body}` (DESIGN 3.2); {@link ApiError} keeps them.
 */

/** An error answer of the hub or the gateway, or a request that got no answer at all (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly body: string,
  ) {
    super(`${title}: ${body}`);
    this.name = "ApiError";
  }
}

/** Reads an error answer into an ApiError; bodies that are not vigil's shape are quoted as text. */
export async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    if (typeof parsed.title === "string" && typeof parsed.body === "string") {
      return new ApiError(response.status, parsed.title, parsed.body);
    }
    // RFC 6749 §5.2 bodies of the OAuth token endpoint.
    if (typeof parsed.error === "string") {
      const description = typeof parsed.error_description === "string" ? parsed.error_description : "";
      return new ApiError(response.status, parsed.error, description);
    }
  } catch {
    // not JSON: quoted below
  }
  return new ApiError(response.status, response.statusText || `HTTP ${response.status}`, text.slice(0, 300));
}

/** Where the token comes from; set by the session (auth.ts). */
let tokenSource: () => string | undefined = () => undefined;
/** Called when the hub refuses the token (401): the session asks for credentials again. */
let onRefused: (error: ApiError) => void = () => {};

export function useToken(source: () => string | undefined, refused: (error: ApiError) => void): void {
  tokenSource = source;
  onRefused = refused;
}

export interface RequestOptions {
  readonly method?: "GET" | "POST";
  readonly body?: unknown;
  readonly signal?: AbortSignal;
}

/** Sends a JSON request to `path` on the hub; resolves with the parsed answer or rejects with an ApiError. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const token = tokenSource();
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      credentials: "omit",
      cache: "no-store",
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new ApiError(0, "No answer", "The hub did not answer; check that it is running.");
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401) onRefused(error);
    throw error;
  }
  return (await response.json()) as T;
}

/** A query string from pairs; repeated names are kept (`groupBy`). */
export function query(pairs: readonly (readonly [string, string | undefined])[]): string {
  const params = new URLSearchParams();
  for (const [name, value] of pairs) if (value !== undefined && value !== "") params.append(name, value);
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}
