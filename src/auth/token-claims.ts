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
/** The one JWS algorithm of hub tokens (Ed25519 signatures, RFC 8037); a verifier accepts no other. */
export const TOKEN_ALGORITHM = "EdDSA";
/** Claims every hub access token carries besides `iss` and `aud` (RFC 7519 §4.1). */
export const TOKEN_REQUIRED_CLAIMS: readonly string[] = ["sub", "iat", "exp", "jti"];
