/**
 * What a hub access token is (DESIGN 5.4), shared by the hub that issues tokens and by every
 * process that checks them (the gateway's command API and message tap): its issuer, audience and
 * signature algorithm, the claims it always carries, and where the hub publishes its public keys.
 * Nothing here depends on the hub, so a gateway never imports hub code.
 */

/** `iss` of hub tokens when the caller names none. */
export const DEFAULT_TOKEN_ISSUER = "vigil-hub";
/** `aud` of hub tokens when the caller names none. */
export const DEFAULT_TOKEN_AUDIENCE = "vigil";
/** Where the public signing keys are served (RFC 8414 §2 `jwks_uri`, conventional path). */
export const JWKS_URL = "/.well-known/jwks.json";
/**
 * Where the hub answers what a token grants now (`GET`, the token as bearer): `{sub, roles,
 * expires}`, or 401 when its key is gone. Processes that verify tokens against the hub's key set
 * ask it, so a key removed from the hub's setup stops working there too (DESIGN 5.4a).
 */
export const TOKEN_GRANT_URL = "/v1/whoami";
/** Claim naming how the token's client authenticated: "app-key" or "kerberos". */
export const CLIENT_METHOD_CLAIM = "client_method";
/** The one JWS algorithm of hub tokens (Ed25519 signatures, RFC 8037); a verifier accepts no other. */
export const TOKEN_ALGORITHM = "EdDSA";
/** Claims every hub access token carries besides `iss` and `aud` (RFC 7519 §4.1). */
export const TOKEN_REQUIRED_CLAIMS: readonly string[] = ["sub", "iat", "exp", "jti", "roles"];
