/**
 * The bounded, acknowledged hand-off in front of one publish target (DESIGN 1 "Hand-offs").
 *
 * Messages wait in a buffer of at most `bufferMessages` (the publisher stops taking probe changes
 * while a channel has no room: back-pressure, never growth). A pump sends them to the sink in
 * batches of at most `maxBatch`, with at most `windowBatches` batches unacknowledged; while the
 * window is full, the buffer fills and the next batch grows, so batches are large under load and
 * a message waits for nothing when the sink keeps up. A batch the sink rejects is sent again, in
 * order, with a capped exponential back-off; the channel is `failing` meanwhile, logs once when it
 * starts failing and once when it recovers, and never fails the publisher or another channel.
 * Consumers de-duplicate on the envelope ids, so sending a batch again is safe.
 *
 * The buffer, the window and the back-off are the shared parts of `src/flow/`; the channel keeps the
 * order of failed batches and the failing/recovered state.
 */
import type { Logger } from "pino";
import type { Envelope } from "../../bus/envelope.js";
import {
  MAX_BATCH_MESSAGES,
  RETRY_INITIAL_MS,
  RETRY_MAX_MS,
  SINK_BUFFER_MESSAGES,
  SINK_WINDOW_BATCHES,
} from "../../config/defaults.js";
import { Backoff } from "../../flow/backoff.js";
import { BoundedQueue } from "../../flow/bounded-queue.js";
import { CreditWindow } from "../../flow/credit-window.js";
import type { Sink } from "./sink.js";

export interface SinkChannelOptions {
  readonly logger: Logger;
  /** Messages held (waiting or in flight) before `hasRoom` turns false; default SINK_BUFFER_MESSAGES. */
  readonly bufferMessages?: number;
  /** Most messages per batch; default 2,000. */
  readonly maxBatch?: number;
  /** Batches in flight at once; default 4. */
  readonly windowBatches?: number;
  /** First and largest retry delay; defaults 100 ms and 5 s. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
}

/** What `GET /v1/status` shows of a publish target. */
export interface SinkStatus {
  readonly name: string;
  readonly state: "ok" | "failing" | "closed";
  /** Messages waiting or in flight. */
  readonly buffered: number;
  readonly capacity: number;
  readonly inFlightBatches: number;
  /** Messages the sink has acknowledged. */
  readonly acknowledged: number;
  readonly retries: number;
  /** Messages given up at a stop whose deadline passed before the sink took them. */
  readonly abandoned: number;
  readonly lastError?: string;
}

interface Batch {
  /** Order of the batch in this channel, to resend failed batches in order. */
  readonly order: number;
  readonly envelopes: readonly Envelope[];
}

export class SinkChannel {
  private readonly maxBatch: number;
  private readonly log: Logger;

  /**
   * Waiting messages; its bound (`bufferMessages`) also counts the messages in flight and those of
   * failed batches, so room returns only when the sink has acknowledged them.
   */
  private readonly queue: BoundedQueue<Envelope>;
  /** Batches sent and not yet settled: at most `windowBatches`, plus a retry's resend. */
  private readonly window: CreditWindow;
  /** Delays between resends of the failed batches; reset when the target recovers. */
  private readonly backoff: Backoff;
  private nextOrder = 0;
  private readonly failed: Batch[] = [];
  private failing = false;
  private retrying = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private acknowledged = 0;
  private retries = 0;
  private abandoned = 0;
  private lastError: string | undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(
    readonly sink: Sink,
    options: SinkChannelOptions,
  ) {
    this.maxBatch = options.maxBatch ?? MAX_BATCH_MESSAGES;
    this.queue = new BoundedQueue({
      maxItems: options.bufferMessages ?? SINK_BUFFER_MESSAGES,
      held: () => this.window.units + this.failedMessages(),
    });
    this.window = new CreditWindow(options.windowBatches ?? SINK_WINDOW_BATCHES);
    this.backoff = new Backoff({
      initialMs: options.retryInitialMs ?? RETRY_INITIAL_MS,
      maxMs: options.retryMaxMs ?? RETRY_MAX_MS,
    });
    this.log = options.logger.child({ sink: sink.name });
  }

  /** Messages waiting or in flight (including failed batches awaiting their retry). */
  get buffered(): number {
    return this.queue.size;
  }

  /** True while the buffer is below its capacity: the publisher may hand over more. */
  get hasRoom(): boolean {
    return this.queue.hasRoom;
  }

  /** Resolves when the channel has room again (at once when it has, or once it is closed). */
  whenRoom(): Promise<void> {
    return this.queue.whenRoom();
  }

  /**
   * Appends envelopes for this sink. Never refuses: the publisher checks `hasRoom` before it takes
   * more work, so the buffer passes its capacity by at most one publisher call.
   */
  offer(envelopes: readonly Envelope[]): void {
    if (this.closed) throw new Error(`publish target ${this.sink.name} is closed`);
    if (envelopes.length === 0) return;
    this.queue.pushAll(envelopes);
    this.pump();
  }

  status(): SinkStatus {
    return {
      name: this.sink.name,
      state: this.closed ? "closed" : this.failing ? "failing" : "ok",
      buffered: this.buffered,
      capacity: this.queue.capacity,
      inFlightBatches: this.window.batches,
      acknowledged: this.acknowledged,
      retries: this.retries,
      abandoned: this.abandoned,
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
    };
  }

  /**
   * Stops taking messages, waits until the sink has acknowledged everything or `deadlineMs` has
   * passed, then closes the sink. Messages still held at the deadline are counted as abandoned and
   * logged (they were never acknowledged, so no consumer counts them as stored).
   */
  async close(deadlineMs: number): Promise<void> {
    if (this.closed) return;
    const idle = new Promise<void>((resolve) => {
      if (this.buffered === 0) resolve();
      else this.idleWaiters.push(resolve);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, deadlineMs));
    });
    await Promise.race([idle, timeout]);
    clearTimeout(timer);
    this.closed = true;
    clearTimeout(this.retryTimer);
    const left = this.buffered;
    if (left > 0) {
      this.abandoned += left;
      this.log.error(
        { messages: left, lastError: this.lastError },
        "publish target did not take every message before the stop deadline; they were not delivered",
      );
    }
    this.queue.close();
    await this.sink.close().catch((error: unknown) => {
      this.log.error({ err: error }, "publish target failed to close");
    });
  }

  /** Messages of the failed batches awaiting their resend. */
  private failedMessages(): number {
    let n = 0;
    for (const batch of this.failed) n += batch.envelopes.length;
    return n;
  }

  private pump(): void {
    while (!this.closed && !this.failing && this.window.hasCredit && this.queue.length > 0) {
      this.send({ order: this.nextOrder++, envelopes: this.queue.take(this.maxBatch) });
    }
  }

  private send(batch: Batch): void {
    const seq = this.window.open(batch.envelopes.length);
    let settled: Promise<void>;
    try {
      settled = this.sink.publish(batch.envelopes);
    } catch (error) {
      settled = Promise.reject(error);
    }
    settled.then(
      () => this.settle(seq, batch, undefined),
      (error: unknown) => this.settle(seq, batch, error ?? new Error("publish failed")),
    );
  }

  private settle(seq: number, batch: Batch, error: unknown): void {
    this.window.settle(seq);
    if (error === undefined) {
      this.acknowledged += batch.envelopes.length;
    } else {
      this.failed.push(batch);
      this.failed.sort((a, b) => a.order - b.order);
      this.lastError = error instanceof Error ? error.message : String(error);
      if (!this.failing) {
        this.failing = true;
        this.log.warn(
          { err: error, messages: batch.envelopes.length },
          "publish target failing; retrying with back-off, other targets go on",
        );
      }
    }
    if (this.failing) this.scheduleRetry();
    else this.pump();
    this.wake();
  }

  /** Once nothing is in flight, resends the failed batches in order after the back-off. */
  private scheduleRetry(): void {
    if (this.retrying || this.window.batches > 0 || this.closed) return;
    this.retrying = true;
    this.retryTimer = setTimeout(() => void this.retryFailed(), this.backoff.next());
  }

  private async retryFailed(): Promise<void> {
    while (!this.closed && this.failed.length > 0) {
      const batch = this.failed[0] as Batch;
      this.retries += 1;
      const seq = this.window.open(batch.envelopes.length);
      try {
        await this.sink.publish(batch.envelopes);
        this.failed.shift();
        this.acknowledged += batch.envelopes.length;
      } catch (error) {
        this.lastError = error instanceof Error ? error.message : String(error);
        this.window.settle(seq);
        this.retrying = false;
        this.scheduleRetry();
        return;
      }
      this.window.settle(seq);
      this.wake();
    }
    this.retrying = false;
    if (this.closed) return;
    this.failing = false;
    this.backoff.reset();
    this.log.info({ retries: this.retries }, "publish target recovered");
    this.pump();
    this.wake();
  }

  private wake(): void {
    this.queue.notify();
    if (this.buffered === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }
}
