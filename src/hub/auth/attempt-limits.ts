/**
 * Rate limits and lockout of the token endpoints (docs/security.md). Each key — a remote
 * address, or a configured client id — has a token bucket (a burst, refilled at a steady rate) and
 * a count of failed authentications in a row; that many failures lock the key out for a time that
 * doubles with each further lockout. A refused request costs a map lookup: no secret is checked.
 *
 * No maintained library fits: `@fastify/rate-limit` counts requests, not failed authentications,
 * and is not a dependency. The state is a Map in least-recently-seen order with a fixed cap, so
 * clients that invent addresses cannot grow it; the one forgotten when full is the one seen
 * longest ago. Client ids are only those of the setup (unknown ids fall to the address limits), so
 * that map is bounded by the setup.
 */
import { isIPv6 } from "node:net";
import {
  TOKEN_ADDRESS_BURST,
  TOKEN_ADDRESS_RATE,
  TOKEN_CLIENT_BURST,
  TOKEN_CLIENT_RATE,
  TOKEN_LIMITER_ADDRESSES,
  TOKEN_LOCKOUT_FAILURES,
  TOKEN_LOCKOUT_MAX_MS,
  TOKEN_LOCKOUT_MS,
} from "../../config/defaults.js";

interface Entry {
  tokens: number;
  refilledAt: number; // epoch ms
  failures: number; // in a row
  lockouts: number; // in a row, without a success between
  lockedUntil: number; // epoch ms; 0 = not locked
}

export interface BucketOptions {
  /** Requests in a burst. */
  readonly burst: number;
  /** Requests per second once the burst is spent. */
  readonly perSecond: number;
  /** Failures in a row that lock the key out. */
  readonly lockoutFailures: number;
  /** First lockout, doubled for each further one, up to `lockoutMaxMs`. */
  readonly lockoutMs: number;
  readonly lockoutMaxMs: number;
  /** Keys remembered; the least recently seen is forgotten beyond. */
  readonly maxKeys: number;
}

/** Why a request was refused before its secret was checked, and for how long. */
export interface Refusal {
  readonly reason: "rate" | "lockout";
  /** Milliseconds until a request from this key can succeed. */
  readonly retryAfterMs: number;
}

/** Token buckets and failure counts for one kind of key, in a bounded map. */
export class KeyedLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly options: BucketOptions,
    private readonly now: () => number,
  ) {}

  /** Keys remembered now. */
  get size(): number {
    return this.entries.size;
  }

  private entry(key: string): Entry {
    const now = this.now();
    let entry = this.entries.get(key);
    if (entry === undefined) {
      if (this.entries.size >= this.options.maxKeys) {
        const oldest = this.entries.keys().next();
        if (oldest.done !== true) this.entries.delete(oldest.value);
      }
      entry = { tokens: this.options.burst, refilledAt: now, failures: 0, lockouts: 0, lockedUntil: 0 };
    } else {
      // Re-inserted below: a Map iterates in insertion order, so the first key is the least recent.
      this.entries.delete(key);
      const refill = ((now - entry.refilledAt) / 1000) * this.options.perSecond;
      entry.tokens = Math.min(this.options.burst, entry.tokens + refill);
      entry.refilledAt = now;
    }
    this.entries.set(key, entry);
    return entry;
  }

  /**
   * Takes one request from `key`'s bucket. Returns undefined when the request may go on, or why
   * not: the key is locked out, or its bucket is empty.
   */
  take(key: string): Refusal | undefined {
    const entry = this.entry(key);
    const now = this.now();
    if (entry.lockedUntil > now) return { reason: "lockout", retryAfterMs: entry.lockedUntil - now };
    if (entry.tokens < 1) {
      return { reason: "rate", retryAfterMs: ((1 - entry.tokens) / this.options.perSecond) * 1000 };
    }
    entry.tokens -= 1;
    return undefined;
  }

  /** Counts a failed authentication; returns the lockout it started, if any. */
  fail(key: string): Refusal | undefined {
    const entry = this.entry(key);
    entry.failures++;
    if (entry.failures < this.options.lockoutFailures) return undefined;
    const ms = Math.min(this.options.lockoutMaxMs, this.options.lockoutMs * 2 ** entry.lockouts);
    entry.lockouts++;
    entry.failures = 0;
    entry.lockedUntil = this.now() + ms;
    return { reason: "lockout", retryAfterMs: ms };
  }

  /** A successful authentication clears the failure count and the lockout doubling. */
  succeed(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    entry.failures = 0;
    entry.lockouts = 0;
  }
}

/**
 * The key of a remote address: IPv4 as is, IPv6 by its /64 prefix, since one host commonly holds
 * a whole /64 and could otherwise take a fresh bucket per request. IPv4-mapped IPv6 is IPv4.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped?.[1] !== undefined) return mapped[1];
  if (!isIPv6(ip)) return ip;
  const [head = "", tail = ""] = ip.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === "" ? [] : tail.split(":");
  const groups = ip.includes("::")
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

export interface AttemptLimitOptions {
  readonly address?: Partial<BucketOptions>;
  readonly client?: Partial<BucketOptions>;
  /** Clock in epoch milliseconds; default Date.now. */
  readonly now?: () => number;
}

/**
 * The limits of the token endpoints: per remote address (burst TOKEN_ADDRESS_BURST = 30, then
 * TOKEN_ADDRESS_RATE = 5 per second, 10 000 addresses) and per configured client id (burst 10,
 * then 1 per second); both lock out after TOKEN_LOCKOUT_FAILURES = 10 failures in a row for
 * 1 minute, doubling up to 15 minutes.
 */
export class AttemptLimits {
  readonly addresses: KeyedLimiter;
  readonly clients: KeyedLimiter;

  constructor(options: AttemptLimitOptions = {}) {
    const now = options.now ?? Date.now;
    const lockout = {
      lockoutFailures: TOKEN_LOCKOUT_FAILURES,
      lockoutMs: TOKEN_LOCKOUT_MS,
      lockoutMaxMs: TOKEN_LOCKOUT_MAX_MS,
      maxKeys: TOKEN_LIMITER_ADDRESSES,
    };
    this.addresses = new KeyedLimiter(
      { burst: TOKEN_ADDRESS_BURST, perSecond: TOKEN_ADDRESS_RATE, ...lockout, ...options.address },
      now,
    );
    this.clients = new KeyedLimiter(
      { burst: TOKEN_CLIENT_BURST, perSecond: TOKEN_CLIENT_RATE, ...lockout, ...options.client },
      now,
    );
  }
}
