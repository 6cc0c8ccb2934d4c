/**
 * Whether the store answers, for `/v0/ping` and `/v1/status` (DESIGN 5.4b: ready only when the
 * store answers). One store ping at a time, whatever the number of callers: `/v0/ping` needs no
 * token, so a flood of it must not become a flood of store statements, and a caller must not wait
 * behind a store that is busy with a long statement (a DuckDB checkpoint, a large commit) while it
 * has answered a moment ago.
 *
 * - The store's own account first: a DuckDB store reopening its file after a fatal error is 503 at once.
 * - The store answered a ping less than STORE_PING_FRESH_MS ago and no ping has failed since: ready,
 *   at once; when that answer is older than STORE_PING_REFRESH_MS a new ping starts in the
 *   background (none while one is in flight).
 * - Otherwise the caller waits for the ping in flight (started when none is), at most until
 *   STORE_PING_TIMEOUT_MS after that ping started: its failure or its silence is the 503's reason.
 *
 * So a store that stops answering is seen at most STORE_PING_FRESH_MS + STORE_PING_TIMEOUT_MS after
 * its last answer, and a failed ping is seen by the next caller.
 */
import {
  RETRY_AFTER_SECONDS,
  STORE_PING_FRESH_MS,
  STORE_PING_REFRESH_MS,
  STORE_PING_TIMEOUT_MS,
} from "../config/defaults.js";
import { VigilError } from "../errors/catalog.js";
import type { Store } from "./store/store.js";

interface InFlight {
  readonly started: number;
  /** Settles when the ping does: true when the store answered. */
  readonly done: Promise<boolean>;
}

export class StorePing {
  private inFlight: InFlight | undefined;
  /** When (performance.now()) the store last answered a ping; undefined before the first answer. */
  private answeredAt: number | undefined;
  /** Why the last ping that settled failed; undefined when it answered. */
  private failure: unknown;

  constructor(private readonly store: Store) {}

  /** Resolves when the store answers (see the module comment); otherwise a 503 that says why. */
  async check(): Promise<void> {
    const health = this.store.health?.();
    if (health?.state === "reopening")
      throw this.unavailable(`reopening after a fatal error: ${health.reason}`);
    const now = performance.now();
    const age = this.answeredAt === undefined ? Number.POSITIVE_INFINITY : now - this.answeredAt;
    if (this.failure === undefined && age < STORE_PING_FRESH_MS) {
      if (age >= STORE_PING_REFRESH_MS) this.start();
      return;
    }
    const ping = this.start();
    const left = ping.started + STORE_PING_TIMEOUT_MS - now;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), Math.max(0, left));
    });
    try {
      const outcome = await Promise.race([ping.done, timeout]);
      if (outcome === "timeout") throw this.unavailable("no answer in time");
      if (!outcome) throw this.unavailable("the ping failed", this.failure);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The ping in flight, or a new one. */
  private start(): InFlight {
    if (this.inFlight !== undefined) return this.inFlight;
    const started = performance.now();
    const done = this.store.ping().then(
      () => {
        this.answeredAt = performance.now();
        this.failure = undefined;
        return true;
      },
      (error: unknown) => {
        this.failure = error;
        return false;
      },
    );
    const ping: InFlight = { started, done };
    this.inFlight = ping;
    void done.then(() => {
      if (this.inFlight === ping) this.inFlight = undefined;
    });
    return ping;
  }

  private unavailable(reason: string, cause?: unknown): VigilError {
    return new VigilError(
      "SERVICE_UNAVAILABLE",
      {
        detail: `The hub's ${this.store.kind} store cannot answer (${reason}); the hub keeps retrying by itself; retry later.`,
      },
      { headers: { "Retry-After": String(RETRY_AFTER_SECONDS) }, ...(cause === undefined ? {} : { cause }) },
    );
  }
}
