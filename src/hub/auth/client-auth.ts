/**
 * Authenticates a client that asks for a token (DESIGN 5.4): an application key sent by HTTP Basic,
 * or Kerberos SPNEGO. SPNEGO is not built yet, so a `Negotiate` header is refused like a bad secret.
 */
import type { AppKeys } from "./app-keys.js";
import { type Credentials, formDecode } from "./credentials.js";

/** Protection space of every hub challenge (RFC 9110 §11.5). */
export const REALM = "vigil";

/**
 * The `WWW-Authenticate` value of a 401 from a token endpoint: Basic with its charset (RFC 7617
 * §2.1), preceded by `Negotiate` (RFC 4559 §4.1) when Kerberos is enabled in the setup.
 */
export function clientChallenge(kerberosEnabled: boolean): string {
  const basic = `Basic realm="${REALM}", charset="UTF-8"`;
  return kerberosEnabled ? `Negotiate, ${basic}` : basic;
}

/** Who a client turned out to be, or why it was refused (for the log; never holds the secret). */
export type ClientAuthResult =
  | { readonly ok: true; readonly sub: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Checks an application key: the client id and secret must match a configured key. When `oauth` is
 * set, Basic credentials that fail as sent are retried form-decoded, since RFC 6749 §2.3.1 asks
 * OAuth clients to form-encode both before Base64 and only some clients do.
 */
export async function authenticateAppKey(
  appKeys: AppKeys,
  clientId: string,
  secret: string,
  oauth = false,
): Promise<ClientAuthResult> {
  if (await appKeys.authenticate(clientId, secret)) return { ok: true, sub: clientId };
  const decodedId = formDecode(clientId);
  const decodedSecret = formDecode(secret);
  if (oauth && (decodedId !== clientId || decodedSecret !== secret)) {
    if (await appKeys.authenticate(decodedId, decodedSecret)) return { ok: true, sub: decodedId };
  }
  return { ok: false, reason: "unknown client id or wrong secret" };
}

/**
 * Authenticates the credentials of an `Authorization` header at `GET /token` and `GET /authorize`.
 * Only Basic with a configured application key succeeds; `Negotiate` fails until SPNEGO is built.
 */
export async function authenticateHeader(
  appKeys: AppKeys,
  credentials: Credentials,
): Promise<ClientAuthResult> {
  switch (credentials.kind) {
    case "basic":
      return authenticateAppKey(appKeys, credentials.user, credentials.password);
    case "negotiate":
      return { ok: false, reason: "Kerberos SPNEGO is not available in this hub" };
    case "bearer":
      return { ok: false, reason: "a bearer token cannot obtain a token; send client credentials" };
    case "none":
      return { ok: false, reason: "no Authorization header" };
    case "malformed":
      return { ok: false, reason: credentials.reason };
  }
}
