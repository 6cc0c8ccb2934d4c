/**
 * Refresh tokens (DESIGN 5.4: "Refresh tokens rotate on use"). A refresh token is an opaque random
 * string; the hub keeps only its SHA-256 hash with the subject and expiry, so a memory dump shows
 * no usable token. Spending a token removes it (RFC 6749 §6 and RFC 9700 §4.14.2: rotation). Each
 * token remembers how its client authenticated, so that only that client, authenticated the same
 * way, can spend it (RFC 6749 §6).
 */
import { createHash, randomBytes } from "node:crypto";
import type { ClientMethod } from "./client-auth.js";

/** How long an unspent refresh token stays valid. */
export const REFRESH_TOKEN_LIFETIME_MS = 8 * 60 * 60 * 1000; // 8 hours
/** Live refresh tokens kept at most; the oldest is evicted beyond. */
export const MAX_REFRESH_TOKENS = 100_000; // tokens
const REFRESH_TOKEN_BYTES = 32; // bytes of randomness, 256 bits

/** The client a refresh token was issued to. */
export interface TokenOwner {
  readonly sub: string;
  readonly method: ClientMethod;
}

interface Entry extends TokenOwner {
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
   * Issues a new refresh token for `owner`: 32 random bytes, base64url. Expired tokens at the head
   * of the queue are dropped first, then the oldest live ones while the cap is exceeded.
   */
  issue(owner: TokenOwner): string {
    const now = this.now();
    for (const [hash, entry] of this.entries) {
      if (entry.expiresAt > now && this.entries.size < this.maxTokens) break;
      this.entries.delete(hash);
    }
    const token = randomBytes(REFRESH_TOKEN_BYTES).toString("base64url");
    this.entries.set(digest(token), {
      sub: owner.sub,
      method: owner.method,
      expiresAt: now + this.lifetimeMs,
    });
    return token;
  }

  /**
   * The owner of a live refresh token, without spending it; undefined when the token is unknown,
   * spent, evicted or expired. Lets a caller check the client before spending (RFC 6749 §6).
   */
  owner(token: string): TokenOwner | undefined {
    const entry = this.entries.get(digest(token));
    if (entry === undefined || entry.expiresAt <= this.now()) return undefined;
    return { sub: entry.sub, method: entry.method };
  }

  /**
   * Drops every refresh token whose owner `keep` refuses (a key removed from the setup: its
   * refresh tokens must not outlive it, even if a key of the same id comes back).
   */
  retain(keep: (owner: TokenOwner) => boolean): void {
    for (const [hash, entry] of this.entries) if (!keep(entry)) this.entries.delete(hash);
  }

  /**
   * Spends a refresh token: removes it and returns its owner, or undefined when the token is
   * unknown, already spent, evicted or expired. A token can be spent once only.
   */
  spend(token: string): TokenOwner | undefined {
    const hash = digest(token);
    const entry = this.entries.get(hash);
    if (entry === undefined) return undefined;
    this.entries.delete(hash);
    return entry.expiresAt > this.now() ? { sub: entry.sub, method: entry.method } : undefined;
  }
}
