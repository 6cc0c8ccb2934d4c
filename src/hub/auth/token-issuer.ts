/**
 * Issues and verifies the hub's tokens (DESIGN 5.4, 5.4a): JWT access tokens signed with the hub's
 * Ed25519 key (claims `sub`, `aud`, `iss`, `iat`, `exp`, `jti` of RFC 7519 §4.1, `roles` and
 * `client_method`) and opaque refresh tokens that rotate on use.
 */
import { randomUUID } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";
import { type Role, rolesClaim } from "../../auth/roles.js";
import { CLIENT_METHOD_CLAIM, TOKEN_REQUIRED_CLAIMS } from "../../auth/token-claims.js";
import type { ClientMethod } from "./client-auth.js";
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

/** What a verified access token says, before the hub compares it with its setup. */
export interface TokenClaims {
  readonly sub: string;
  readonly roles: readonly Role[];
  readonly method: ClientMethod;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
  /** Epoch seconds (the `iat` claim). */
  readonly issuedAt: number;
}

export interface TokenIssuerOptions {
  readonly key: SigningKey;
  readonly refreshTokens: RefreshTokens;
  readonly issuer: string;
  readonly audience: string;
  /** Access token lifetime in seconds. */
  readonly tokenLifetime: number;
  /** The roles `owner` holds now (its key's, or the Kerberos roles); undefined when it has no key. */
  readonly rolesOf: (owner: TokenOwner) => readonly Role[] | undefined;
}

/** Signs access tokens, hands out refresh tokens, and verifies access tokens with the same key. */
export class TokenIssuer {
  constructor(private readonly options: TokenIssuerOptions) {}

  /**
   * Issues a new pair for `owner`: an access token for `owner.sub`, carrying the roles `owner`
   * holds now, expiring `tokenLifetime` seconds from now, and a new refresh token that only `owner`
   * can spend. `iat` and `exp` are whole epoch seconds (RFC 7519 NumericDate). Throws when `owner`
   * holds no roles (its key was removed while it authenticated).
   */
  async issue(owner: TokenOwner): Promise<IssuedTokens> {
    const { sub, method } = owner;
    const { key, issuer, audience, tokenLifetime } = this.options;
    const roles = this.options.rolesOf(owner);
    if (roles === undefined) throw new Error(`client '${sub}' is no longer configured`);
    const issuedAt = Math.floor(Date.now() / 1000);
    const expires = issuedAt + tokenLifetime;
    const accessToken = await new SignJWT({ roles: [...roles], [CLIENT_METHOD_CLAIM]: method })
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
   * configured ones, `exp` in the future (no clock tolerance), `sub`, `iat`, `jti` present, `roles`
   * a non-empty list of distinct roles and `client_method` one of the two methods. Throws jose's
   * error (or an Error naming the claim) when any check fails; resolves to the claims otherwise.
   */
  async verify(token: string): Promise<TokenClaims> {
    const { key, issuer, audience } = this.options;
    const { payload } = await jwtVerify(token, key.publicKey, {
      algorithms: [SIGNING_ALGORITHM],
      issuer,
      audience,
      requiredClaims: [...TOKEN_REQUIRED_CLAIMS, CLIENT_METHOD_CLAIM],
    });
    if (typeof payload.sub !== "string" || payload.sub === "") throw new Error("token has an empty subject");
    const method = payload[CLIENT_METHOD_CLAIM];
    if (method !== "app-key" && method !== "kerberos") throw new Error("token has no valid client method");
    return {
      sub: payload.sub,
      roles: rolesClaim(payload),
      method,
      expiresAt: Number(payload.exp) * 1000,
      issuedAt: Number(payload.iat),
    };
  }
}
