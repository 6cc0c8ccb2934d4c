/**
 * The buffer of one stream of a rest-api sampler (DESIGN 3.4, seed B "Streams Dataview"): the
 * messages PUT to the stream wait here until their consumers (the `fkm` samplers whose `source`
 * names the stream) take them at their next sample.
 *
 * - Every PUT is one message and counts in `totalMessagesReceived` (seed: "every request counts as
 *   a message").
 * - A stream without a consumer keeps nothing: the message is purged at once (seed "Limits" rule 1).
 *   It is received, not lost: `totalMessagesLost` counts only the messages "dropped because the
 *   buffer was full" (seed), so a purge without a consumer never grows it.
 * - At most `maxSize` messages (the sampler's `bufferSize`) are held; a new message beyond drops
 *   the oldest and counts it in `totalMessagesLost`. Shrinking `bufferSize` drops the oldest too.
 * - Several consumers may read one stream: each has its own cursor and sees every message; a
 *   message leaves the buffer once every consumer has taken it.
 *
 * Message bodies are Buffers kept exactly as received; nothing here reads them.
 */

/** One message of a stream, byte for byte as PUT, with the time the probe received it. */
export interface StreamMessage {
  readonly body: Buffer;
  /** When the probe received it (epoch ms). */
  readonly at: number;
}

/** The counters of a stream, as its Streams Dataview row and GET show them. */
export interface StreamCounters {
  readonly name: string;
  readonly currentBufferSize: number;
  readonly maxBufferSize: number;
  readonly totalMessagesReceived: number;
  readonly totalMessagesLost: number;
}

const RELEASED: StreamMessage = Object.freeze({ body: Buffer.alloc(0), at: 0 });

/** The messages of one stream and its counters; consumers are identified by any key. */
export class StreamBuffer<Consumer = unknown> {
  /** Held messages; `messages[head]` has sequence number `firstSeq`. */
  private messages: StreamMessage[] = [];
  private head = 0;
  private firstSeq = 0;
  /** Per consumer, the sequence number of the next message it has not taken yet. */
  private readonly cursors = new Map<Consumer, number>();
  private received = 0;
  private lost = 0;

  constructor(
    readonly name: string,
    private maxSize: number,
  ) {}

  /** Messages held now. */
  get size(): number {
    return this.messages.length - this.head;
  }

  /** The sequence number the next message will get. */
  private get endSeq(): number {
    return this.firstSeq + this.size;
  }

  counters(): StreamCounters {
    return {
      name: this.name,
      currentBufferSize: this.size,
      maxBufferSize: this.maxSize,
      totalMessagesReceived: this.received,
      totalMessagesLost: this.lost,
    };
  }

  /** Whether any consumer reads this stream. */
  get consumed(): boolean {
    return this.cursors.size > 0;
  }

  /**
   * Takes one message: counted as received; kept for the consumers, or purged at once when there
   * is none; the oldest dropped (and counted lost) when the buffer is full.
   */
  push(message: StreamMessage): void {
    this.received += 1;
    if (this.cursors.size === 0) return;
    this.messages.push(message);
    if (this.size > this.maxSize) this.dropOldest(this.size - this.maxSize);
  }

  /** Every message `consumer` has not taken yet, oldest first; they are then taken. */
  take(consumer: Consumer): StreamMessage[] {
    const cursor = this.cursors.get(consumer);
    if (cursor === undefined) return [];
    const from = Math.max(cursor, this.firstSeq);
    const out = this.messages.slice(this.head + (from - this.firstSeq));
    this.cursors.set(consumer, this.endSeq);
    this.trim();
    return out;
  }

  /** Adds a consumer; it sees the messages that arrive from now on. */
  addConsumer(consumer: Consumer): void {
    if (!this.cursors.has(consumer)) this.cursors.set(consumer, this.endSeq);
  }

  /** Removes a consumer; messages nobody else waits for leave (all of them when none is left). */
  removeConsumer(consumer: Consumer): void {
    if (!this.cursors.delete(consumer)) return;
    this.trim();
  }

  /** Applies a new `bufferSize`: when it is smaller than what is held, the oldest are lost. */
  resize(maxSize: number): void {
    this.maxSize = maxSize;
    if (this.size > maxSize) this.dropOldest(this.size - maxSize);
  }

  private dropOldest(count: number): void {
    this.lost += count;
    this.release(count);
  }

  /** Drops the messages every consumer has taken (every message when there is no consumer). */
  private trim(): void {
    let min = this.endSeq;
    for (const cursor of this.cursors.values()) min = Math.min(min, cursor);
    const taken = Math.max(0, min - this.firstSeq);
    if (taken > 0) this.release(taken);
  }

  /**
   * Lets go of the `count` oldest messages: their slots stop holding the bodies at once, and the
   * array is cut once the released slots are half of it (amortised O(1) per message).
   */
  private release(count: number): void {
    for (let i = this.head; i < this.head + count; i += 1) this.messages[i] = RELEASED;
    this.head += count;
    this.firstSeq += count;
    if (this.head === this.messages.length) {
      this.messages = [];
      this.head = 0;
    } else if (this.head > 64 && this.head * 2 > this.messages.length) {
      this.messages = this.messages.slice(this.head);
      this.head = 0;
    }
  }
}
