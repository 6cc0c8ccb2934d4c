/**
 * The console's session when hub security is on (DESIGN 5.4): an access token obtained with an
 * application key (`GET /token`, HTTP Basic) or pasted by the user. The token, the refresh token
 * and the key live in this module's variables only: never in storage, cookies or the URL, so
 * closing or reloading the tab ends the session. A token from a key is refreshed before it
 * expires (`POST /oauth2/token`, `grant_type=refresh_token`, RFC 6749 §6, which needs the client's
 * authentication again; failing that, a new `GET /token`).
 */
import { ApiError, errorOf, useToken } from "./api.js";

interface Session {
  token: string;
  /** Epoch ms at which the access token expires, when known. */
  expiresAt?: number;
  refreshToken?: string;
  /** The application key, for refreshing; absent for a pasted token. */
  key?: { readonly clientId: string; readonly secret: string };
}

let session: Session | undefined;
let refreshTimer: ReturnType<typeof setTimeout> | undefined;
let listener: (reason: ApiError | undefined) => void = () => {};

/** How long before expiry a token is refreshed: a fifth of its life, at most a minute. */
const REFRESH_AHEAD_MAX_MS = 60_000; // 1 min

/** Sets what happens when the session ends (sign-out, refusal, failed refresh). */
export function onSessionEnd(callback: (reason: ApiError | undefined) => void): void {
  listener = callback;
}

useToken(
  () => session?.token,
  (error) => end(error),
);

export function signedIn(): boolean {
  return session !== undefined;
}

/** The token's subject (`sub`), read without verification, for showing who acts; "" when unknown. */
export function subject(): string {
  const payload = session?.token.split(".")[1];
  if (payload === undefined) return "";
  try {
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    const sub = (JSON.parse(json) as { sub?: unknown }).sub;
    return typeof sub === "string" ? sub : "";
  } catch {
    return "";
  }
}

function basic(clientId: string, secret: string): string {
  const bytes = new TextEncoder().encode(`${clientId}:${secret}`);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

/** Exchanges an application key for a token at the hub's `GET /token`; rejects with the refusal. */
export async function signInWithKey(clientId: string, secret: string): Promise<void> {
  const answer = await requestToken(clientId, secret);
  start({ ...answer, key: { clientId, secret } });
}

/** Uses a token the user pasted, after checking that the hub accepts it. */
export async function signInWithToken(token: string): Promise<void> {
  const response = await fetch("/v0/entities/attributes", {
    headers: { authorization: `Bearer ${token}`, accept: "application/json" },
    credentials: "omit",
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  start({ token, ...expiryOf(token) });
}

/** Ends the session on the user's request. */
export function signOut(): void {
  end(undefined);
}

function end(reason: ApiError | undefined): void {
  if (session === undefined) return;
  session = undefined;
  clearTimeout(refreshTimer);
  listener(reason);
}

function expiryOf(token: string): { expiresAt?: number } {
  try {
    const payload = JSON.parse(atob((token.split(".")[1] ?? "").replace(/-/g, "+").replace(/_/g, "/"))) as {
      exp?: unknown;
    };
    return typeof payload.exp === "number" ? { expiresAt: payload.exp * 1000 } : {};
  } catch {
    return {};
  }
}

async function requestToken(clientId: string, secret: string): Promise<Session> {
  let response: Response;
  try {
    response = await fetch("/token", {
      headers: { authorization: basic(clientId, secret), accept: "application/json" },
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, "No answer", "The hub did not answer; check that it is running.");
  }
  if (!response.ok) throw await errorOf(response);
  const body = (await response.json()) as { access_token: string; refresh_token: string; expires: number };
  return { token: body.access_token, refreshToken: body.refresh_token, expiresAt: body.expires * 1000 };
}

async function refreshWith(key: NonNullable<Session["key"]>, refreshToken: string): Promise<Session> {
  const response = await fetch("/oauth2/token", {
    method: "POST",
    headers: {
      authorization: basic(key.clientId, key.secret),
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken }).toString(),
    credentials: "omit",
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  const body = (await response.json()) as { access_token: string; refresh_token: string; expires_in: number };
  return {
    token: body.access_token,
    refreshToken: body.refresh_token,
    expiresAt: Date.now() + body.expires_in * 1000,
  };
}

function start(next: Session): void {
  session = next;
  clearTimeout(refreshTimer);
  const { expiresAt, key } = next;
  if (expiresAt === undefined || key === undefined) return;
  const life = expiresAt - Date.now();
  const ahead = Math.min(REFRESH_AHEAD_MAX_MS, life / 5);
  refreshTimer = setTimeout(() => void refresh(), Math.max(0, life - ahead));
}

async function refresh(): Promise<void> {
  const current = session;
  if (current?.key === undefined) return;
  try {
    const next =
      current.refreshToken === undefined
        ? await requestToken(current.key.clientId, current.key.secret)
        : await refreshWith(current.key, current.refreshToken).catch(() =>
            requestToken(current.key!.clientId, current.key!.secret),
          );
    if (session === current) start({ ...next, key: current.key });
  } catch (error) {
    if (session === current)
      end(
        error instanceof ApiError
          ? error
          : new ApiError(0, "Session ended", "The token could not be renewed."),
      );
  }
}
