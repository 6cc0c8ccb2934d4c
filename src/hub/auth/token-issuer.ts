/**
 * Issues and verifies the hub's tokens (DESIGN 5.4): JWT access tokens signed with the hub's Ed25519
 * key (claims `sub`, `aud`, `iss`, `iat`, `exp`, `jti`; RFC 7519 §4.1) and opaque refresh tokens
 * that rotate on use.
 */
import { randomUUID } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";
import type { RefreshTokens, TokenOwner } from "./refresh-tokens.js";
import { SIGNING_ALGORITHM, type SigningKey } from "./signing-key.js";

/** A fresh access and refresh token pair. */
export interface IssuedTokens {
  readonly accessToken: string;
  /** Epoch seconds at which the access token expires (its `exp` claim). */
  readonly expires: number;
  /** Seconds the access token lives (RFC 6749 §5.1 `expires_in`). */
  readonly expiresIn: number;
  readonly refreshToken: string;
}

export interface TokenIssuerOptions {
  readonly key: SigningKey;
  readonly refreshTokens: RefreshTokens;
  readonly issuer: string;
  readonly audience: string;
  /** Access token lifetime in seconds. */
  readonly tokenLifetime: number;
}

/** Signs access tokens, hands out refresh tokens, and verifies access tokens with the same key. */
export class TokenIssuer {
  constructor(private readonly options: TokenIssuerOptions) {}

  /**
   * Issues a new pair for `owner`: an access token for `owner.sub` expiring `tokenLifetime` seconds
   * from now and a new refresh token that only `owner` can spend. `iat` and `exp` are whole epoch
   * seconds (RFC 7519 NumericDate).
   */
  async issue(owner: TokenOwner): Promise<IssuedTokens> {
    const { sub } = owner;
    const { key, issuer, audience, tokenLifetime } = this.options;
    const issuedAt = Math.floor(Date.now() / 1000);
    const expires = issuedAt + tokenLifetime;
    const accessToken = await new SignJWT({})
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: key.kid, typ: "JWT" })
      .setSubject(sub)
      .setIssuer(issuer)
      .setAudience(audience)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expires)
      .setJti(randomUUID())
      .sign(key.privateKey);
    return {
      accessToken,
      expires,
      expiresIn: tokenLifetime,
      refreshToken: this.options.refreshTokens.issue(owner),
    };
  }

  /**
   * Verifies an access token: EdDSA signature by the hub's key, `iss` and `aud` equal to the
   * configured ones, `exp` in the future (no clock tolerance), and `sub`, `iat`, `jti` present.
   * Throws jose's error when any check fails; resolves to the subject otherwise.
   */
  async verify(token: string): Promise<{ sub: string }> {
    const { key, issuer, audience } = this.options;
    const { payload } = await jwtVerify(token, key.publicKey, {
      algorithms: [SIGNING_ALGORITHM],
      issuer,
      audience,
      requiredClaims: ["sub", "iat", "exp", "jti"],
    });
    if (typeof payload.sub !== "string" || payload.sub === "") throw new Error("token has an empty subject");
    return { sub: payload.sub };
  }
}
