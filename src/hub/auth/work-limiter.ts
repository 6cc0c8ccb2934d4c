/**
 * Bounded concurrency for secret checks. scrypt and the Kerberos accept run on libuv's
 * thread pool (4 threads by default), which the DuckDB binding also uses for every query; a flood
 * of wrong secrets with unbounded concurrency fills that pool and queries wait behind it. The
 * limiter lets a few checks run at once, queues a bounded number more, and refuses the rest at
 * once, so a flood costs at most `concurrency` pool threads and a bounded queue.
 */
import { CREDENTIAL_CHECK_CONCURRENCY, CREDENTIAL_CHECK_QUEUE } from "../../config/defaults.js";

/** Thrown by `WorkLimiter.run` when every slot is busy and the queue is full (answered 503). */
export class WorkQueueFullError extends Error {
  constructor() {
    super("too many credential checks are waiting");
    this.name = "WorkQueueFullError";
  }
}

export interface WorkLimiterOptions {
  /** Tasks running at once; default CREDENTIAL_CHECK_CONCURRENCY (1). */
  readonly concurrency?: number;
  /** Tasks waiting for a slot; default CREDENTIAL_CHECK_QUEUE (32). */
  readonly queue?: number;
}

/** A semaphore with a bounded FIFO wait queue. */
export class WorkLimiter {
  private readonly concurrency: number;
  private readonly maxWaiting: number;
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  /** Tasks refused because the queue was full, since start (for the log and tests). */
  refused = 0;

  constructor(options: WorkLimiterOptions = {}) {
    this.concurrency = options.concurrency ?? CREDENTIAL_CHECK_CONCURRENCY;
    this.maxWaiting = options.queue ?? CREDENTIAL_CHECK_QUEUE;
    if (!(this.concurrency >= 1)) throw new RangeError(`concurrency must be ≥ 1, got ${this.concurrency}`);
    if (!(this.maxWaiting >= 0)) throw new RangeError(`queue must be ≥ 0, got ${this.maxWaiting}`);
  }

  /** Tasks running and waiting now. */
  get load(): { readonly running: number; readonly waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /**
   * Runs `task` when a slot is free. Rejects with WorkQueueFullError, without running it, when all
   * slots are busy and `queue` tasks already wait.
   */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxWaiting) {
        this.refused++;
        throw new WorkQueueFullError();
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, so `running` never drops below what runs.
      const next = this.waiting.shift();
      if (next === undefined) this.running--;
      else next();
    }
  }
}
