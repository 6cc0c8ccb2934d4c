/**
 * Reads the `Authorization` header of a hub request (DESIGN 5.4). Auth schemes are case-insensitive
 * (RFC 9110 §11.1); HTTP Basic is RFC 7617, bearer tokens RFC 6750 §2.1, SPNEGO RFC 4559.
 */

/** What an `Authorization` header carries, keyed on `kind`. */
export type Credentials =
  | { readonly kind: "none" }
  | { readonly kind: "basic"; readonly user: string; readonly password: string }
  | { readonly kind: "bearer"; readonly token: string }
  | { readonly kind: "negotiate"; readonly token: string }
  | { readonly kind: "malformed"; readonly reason: string };

// RFC 9110 §11.2: credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
const SCHEME_AND_PARAMS = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?: +(.*))?$/;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Parses an `Authorization` header value into Credentials. A missing or blank header is `none`;
 * an unknown scheme, a value that is not token68, bad base64, or Basic credentials without a `:`
 * are `malformed` with a reason fit for a log (it never contains the secret). Basic credentials are
 * decoded as UTF-8 and split at the first `:` (RFC 7617 §2: the user-id cannot contain a colon).
 */
export function parseAuthorization(header: string | undefined): Credentials {
  const value = header?.trim() ?? "";
  if (value === "") return { kind: "none" };
  const match = SCHEME_AND_PARAMS.exec(value);
  const scheme = match?.[1]?.toLowerCase();
  const param = match?.[2]?.trim() ?? "";
  if (scheme === undefined) return { kind: "malformed", reason: "unreadable Authorization header" };
  if (scheme !== "basic" && scheme !== "bearer" && scheme !== "negotiate") {
    return { kind: "malformed", reason: `unsupported authorization scheme '${scheme}'` };
  }
  if (!TOKEN68.test(param)) return { kind: "malformed", reason: `${scheme} credentials are not token68` };
  if (scheme === "bearer") return { kind: "bearer", token: param };
  if (scheme === "negotiate") return { kind: "negotiate", token: param };
  if (!BASE64.test(param)) return { kind: "malformed", reason: "Basic credentials are not base64" };
  const decoded = Buffer.from(param, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return { kind: "malformed", reason: "Basic credentials have no ':'" };
  return { kind: "basic", user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Decodes one component of Basic credentials the way RFC 6749 §2.3.1 asks OAuth clients to encode
 * it (application/x-www-form-urlencoded: `+` is a space, `%XX` a byte); returns the input unchanged
 * when it is not valid percent-encoding, since many clients send the raw value.
 */
export function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, " "));
  } catch {
    return value;
  }
}

/** Encodes a client id and secret as a Basic `Authorization` header value (RFC 7617). */
export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
}
