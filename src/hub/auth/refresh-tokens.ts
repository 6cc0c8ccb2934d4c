/**
 * Refresh tokens (DESIGN 5.4: "Refresh tokens rotate on use"). A refresh token is an opaque random
 * string; the hub keeps only its SHA-256 hash with the subject and expiry, so a memory dump shows
 * no usable token. Spending a token removes it (RFC 6749 §6 and RFC 9700 §4.14.2: rotation).
 */
import { createHash, randomBytes } from "node:crypto";

/** How long an unspent refresh token stays valid. */
export const REFRESH_TOKEN_LIFETIME_MS = 8 * 60 * 60 * 1000; // 8 hours
/** Live refresh tokens kept at most; the oldest is evicted beyond. */
export const MAX_REFRESH_TOKENS = 100_000; // tokens
const REFRESH_TOKEN_BYTES = 32; // bytes of randomness, 256 bits

interface Entry {
  readonly sub: string;
  readonly expiresAt: number; // epoch ms
}

function digest(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("base64url");
}

export interface RefreshTokenOptions {
  /** Lifetime in milliseconds; default REFRESH_TOKEN_LIFETIME_MS (8 hours). */
  readonly lifetimeMs?: number;
  /** Cap on live tokens; default MAX_REFRESH_TOKENS (100 000). */
  readonly maxTokens?: number;
  /** Clock in epoch milliseconds; default Date.now. */
  readonly now?: () => number;
}

/** The live refresh tokens of one hub process, held as hashes. */
export class RefreshTokens {
  // A Map iterates in insertion order; every token has the same lifetime, so the first entry is
  // both the oldest and the next to expire.
  private readonly entries = new Map<string, Entry>();
  private readonly lifetimeMs: number;
  private readonly maxTokens: number;
  private readonly now: () => number;

  constructor(options: RefreshTokenOptions = {}) {
    this.lifetimeMs = options.lifetimeMs ?? REFRESH_TOKEN_LIFETIME_MS;
    this.maxTokens = options.maxTokens ?? MAX_REFRESH_TOKENS;
    this.now = options.now ?? Date.now;
  }

  /** Number of live tokens held (expired ones are dropped as new tokens are issued). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Issues a new refresh token for `sub`: 32 random bytes, base64url. Expired tokens at the head of
   * the queue are dropped first, then the oldest live ones while the cap is exceeded.
   */
  issue(sub: string): string {
    const now = this.now();
    for (const [hash, entry] of this.entries) {
      if (entry.expiresAt > now && this.entries.size < this.maxTokens) break;
      this.entries.delete(hash);
    }
    const token = randomBytes(REFRESH_TOKEN_BYTES).toString("base64url");
    this.entries.set(digest(token), { sub, expiresAt: now + this.lifetimeMs });
    return token;
  }

  /**
   * Spends a refresh token: removes it and returns its subject, or undefined when the token is
   * unknown, already spent, evicted or expired. A token can be spent once only.
   */
  spend(token: string): { readonly sub: string } | undefined {
    const hash = digest(token);
    const entry = this.entries.get(hash);
    if (entry === undefined) return undefined;
    this.entries.delete(hash);
    return entry.expiresAt > this.now() ? { sub: entry.sub } : undefined;
  }
}
