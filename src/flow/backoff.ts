/**
 * The capped exponential back-off of every retry loop between vigil's parts (DESIGN 1 "Hand-offs"):
 * the probe's reconnects to its gateway, a publish target's resent batches, the NATS connection.
 *
 * The delay of attempt `n` (counting from 0) is `initialMs · 2^n`, at most `maxMs`. With `jitter`
 * (a fraction in [0, 1]) each delay is shortened by up to that fraction of itself, chosen at random,
 * so many clients that lost one server together do not come back in step; `jitter: 0` (the
 * default) keeps the delays exact.
 */

/** Above this exponent the doubling stops: `2^30 · initialMs` is past any cap in use. */
const MAX_EXPONENT = 30;

/** The delays of one back-off. */
export interface BackoffOptions {
  /** The first delay. */
  readonly initialMs: number;
  /** The longest delay. */
  readonly maxMs: number;
  /** Fraction of each delay taken off at random, in [0, 1]; default 0 (exact delays). */
  readonly jitter?: number;
  /** Source of randomness in [0, 1) for the jitter; default `Math.random` (tests pass their own). */
  readonly random?: () => number;
}

/**
 * The delay of attempt `attempt` (from 0): `initialMs · 2^attempt`, at most `maxMs`, less up to
 * `jitter` of it at random.
 */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const capped = Math.min(
    options.maxMs,
    options.initialMs * 2 ** Math.min(Math.max(0, attempt), MAX_EXPONENT),
  );
  const jitter = options.jitter ?? 0;
  if (jitter <= 0) return capped;
  const random = options.random ?? Math.random;
  return capped * (1 - Math.min(1, jitter) * random());
}

/**
 * A back-off that counts its own attempts: `next()` gives the delay before the next attempt and
 * counts it; `reset()` after a success starts again from the first delay.
 */
export class Backoff {
  private failed = 0;
  private longestNext = false;

  constructor(private readonly options: BackoffOptions) {}

  /** Attempts counted since the last `reset()`. */
  get attempts(): number {
    return this.failed;
  }

  /** The delay before the next attempt; counts the attempt. */
  next(): number {
    const delay = this.longestNext ? this.options.maxMs : backoffDelay(this.failed, this.options);
    this.longestNext = false;
    this.failed += 1;
    return delay;
  }

  /**
   * Makes the next delay the longest one, whatever the count: for a refusal the next attempt, soon
   * after, would meet again. The count goes on as before; `reset()` leaves this in place.
   */
  waitLongest(): void {
    this.longestNext = true;
  }

  /** Starts the count again, so the next delay is the first one (after a success). */
  reset(): void {
    this.failed = 0;
  }
}
