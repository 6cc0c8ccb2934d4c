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
  private readonly capacity: number;
  private readonly maxBatch: number;
  private readonly window: number;
  private readonly retryInitialMs: number;
  private readonly retryMaxMs: number;
  private readonly log: Logger;

  /** Waiting messages, as the chunks they were offered in; `head` indexes into the first chunk. */
  private readonly chunks: (readonly Envelope[])[] = [];
  private head = 0;
  private waiting = 0;
  private inFlight = 0;
  private inFlightMessages = 0;
  private nextOrder = 0;
  private readonly failed: Batch[] = [];
  private failing = false;
  private retrying = false;
  private backoffMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private acknowledged = 0;
  private retries = 0;
  private abandoned = 0;
  private lastError: string | undefined;
  private roomWaiters: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];

  constructor(
    readonly sink: Sink,
    options: SinkChannelOptions,
  ) {
    this.capacity = options.bufferMessages ?? SINK_BUFFER_MESSAGES;
    this.maxBatch = options.maxBatch ?? MAX_BATCH_MESSAGES;
    this.window = options.windowBatches ?? SINK_WINDOW_BATCHES;
    this.retryInitialMs = options.retryInitialMs ?? RETRY_INITIAL_MS;
    this.retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS;
    this.backoffMs = this.retryInitialMs;
    this.log = options.logger.child({ sink: sink.name });
  }

  /** Messages waiting or in flight (including failed batches awaiting their retry). */
  get buffered(): number {
    return this.waiting + this.inFlightMessages + this.failed.reduce((n, b) => n + b.envelopes.length, 0);
  }

  /** True while the buffer is below its capacity: the publisher may hand over more. */
  get hasRoom(): boolean {
    return this.buffered < this.capacity;
  }

  /** Resolves when the channel has room again (at once when it has). */
  whenRoom(): Promise<void> {
    if (this.hasRoom || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /**
   * Appends envelopes for this sink. Never refuses: the publisher checks `hasRoom` before it takes
   * more work, so the buffer passes its capacity by at most one publisher call.
   */
  offer(envelopes: readonly Envelope[]): void {
    if (this.closed) throw new Error(`publish target ${this.sink.name} is closed`);
    if (envelopes.length === 0) return;
    this.chunks.push(envelopes);
    this.waiting += envelopes.length;
    this.pump();
  }

  status(): SinkStatus {
    return {
      name: this.sink.name,
      state: this.closed ? "closed" : this.failing ? "failing" : "ok",
      buffered: this.buffered,
      capacity: this.capacity,
      inFlightBatches: this.inFlight,
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
    for (const wake of this.roomWaiters.splice(0)) wake();
    await this.sink.close().catch((error: unknown) => {
      this.log.error({ err: error }, "publish target failed to close");
    });
  }

  private pump(): void {
    while (!this.closed && !this.failing && this.inFlight < this.window && this.waiting > 0) {
      this.send({ order: this.nextOrder++, envelopes: this.take() });
    }
  }

  /** Takes up to maxBatch waiting envelopes, in order. */
  private take(): Envelope[] {
    const out: Envelope[] = [];
    while (out.length < this.maxBatch && this.chunks.length > 0) {
      const chunk = this.chunks[0];
      if (chunk === undefined) break;
      const n = Math.min(this.maxBatch - out.length, chunk.length - this.head);
      for (let i = 0; i < n; i++) out.push(chunk[this.head + i] as Envelope);
      this.head += n;
      if (this.head >= chunk.length) {
        this.chunks.shift();
        this.head = 0;
      }
    }
    this.waiting -= out.length;
    return out;
  }

  private send(batch: Batch): void {
    this.inFlight += 1;
    this.inFlightMessages += batch.envelopes.length;
    let settled: Promise<void>;
    try {
      settled = this.sink.publish(batch.envelopes);
    } catch (error) {
      settled = Promise.reject(error);
    }
    settled.then(
      () => this.settle(batch, undefined),
      (error: unknown) => this.settle(batch, error ?? new Error("publish failed")),
    );
  }

  private settle(batch: Batch, error: unknown): void {
    this.inFlight -= 1;
    this.inFlightMessages -= batch.envelopes.length;
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
    if (this.retrying || this.inFlight > 0 || this.closed) return;
    this.retrying = true;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.retryMaxMs, this.backoffMs * 2);
    this.retryTimer = setTimeout(() => void this.retryFailed(), delay);
  }

  private async retryFailed(): Promise<void> {
    while (!this.closed && this.failed.length > 0) {
      const batch = this.failed[0] as Batch;
      this.retries += 1;
      this.inFlight += 1;
      this.inFlightMessages += batch.envelopes.length;
      try {
        await this.sink.publish(batch.envelopes);
        this.failed.shift();
        this.acknowledged += batch.envelopes.length;
      } catch (error) {
        this.lastError = error instanceof Error ? error.message : String(error);
        this.inFlight -= 1;
        this.inFlightMessages -= batch.envelopes.length;
        this.retrying = false;
        this.scheduleRetry();
        return;
      }
      this.inFlight -= 1;
      this.inFlightMessages -= batch.envelopes.length;
      this.wake();
    }
    this.retrying = false;
    if (this.closed) return;
    this.failing = false;
    this.backoffMs = this.retryInitialMs;
    this.log.info({ retries: this.retries }, "publish target recovered");
    this.pump();
    this.wake();
  }

  private wake(): void {
    if (this.hasRoom) for (const wake of this.roomWaiters.splice(0)) wake();
    if (this.buffered === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }
}
