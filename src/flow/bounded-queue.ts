/**
 * A bounded first-in first-out buffer of one hand-off (DESIGN 1 "Hand-offs"): bounded by a count of
 * items and, optionally, by their estimated bytes. It does not refuse an item: the producer asks
 * `hasRoom` (or waits in `whenRoom`) before it accepts more work, so the buffer passes its bound by
 * at most one producer's call and the slowness of the consumer reaches the producer — back-pressure,
 * never growth. The probe's outgoing link buffer and a publish target's channel are such buffers.
 *
 * The consumer takes batches from the head (`take`). Items it has taken but not yet had
 * acknowledged may still count against the bound (`held`): a channel's room then returns with the
 * acknowledgement. The producers waiting for room are woken by `notify()`, which the owner calls
 * once its own counts are settled (after a take has been counted as in flight, after an ack): a
 * waiter never wakes to a room that the same turn takes back.
 */

export interface BoundedQueueOptions {
  /** Items (waiting, plus `held`) at which `hasRoom` turns false. */
  readonly maxItems: number;
  /** Estimated bytes of the waiting items at which `hasRoom` turns false; default no bound. */
  readonly maxBytes?: number;
  /** Items taken and not yet acknowledged, counted against `maxItems`; default none. */
  readonly held?: () => number;
}

/** Consumed items are dropped from the array's front in one splice once this many have gone. */
const COMPACT_AFTER = 1024; // items

export class BoundedQueue<T> {
  private readonly maxItems: number;
  private readonly maxBytes: number;
  private readonly held: (() => number) | undefined;
  /** Items and their estimated sizes; `head` indexes the first waiting one. */
  private items: T[] = [];
  private sizes: number[] = [];
  private head = 0;
  private waitingBytes = 0;
  private readonly waiters = new Set<() => void>();
  private closed = false;

  constructor(options: BoundedQueueOptions) {
    this.maxItems = options.maxItems;
    this.maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.held = options.held;
  }

  /** Items waiting to be taken. */
  get length(): number {
    return this.items.length - this.head;
  }

  /** Estimated bytes of the items waiting. */
  get bytes(): number {
    return this.waitingBytes;
  }

  /** Items counted against the bound: waiting, plus `held`. */
  get size(): number {
    return this.items.length - this.head + (this.held === undefined ? 0 : this.held());
  }

  /** The bound on `size`. */
  get capacity(): number {
    return this.maxItems;
  }

  /** True while the producer may hand over more: below the item bound and the byte bound. */
  get hasRoom(): boolean {
    return this.size < this.maxItems && this.waitingBytes < this.maxBytes;
  }

  /**
   * The bound the queue is at, for a refusal that names the limit that tripped: `"items"` when the
   * count has reached `maxItems`, else `"bytes"` when the estimate has reached `maxBytes`, else
   * undefined (it has room).
   */
  get boundReached(): { readonly bound: "items" | "bytes"; readonly limit: number } | undefined {
    if (this.size >= this.maxItems) return { bound: "items", limit: this.maxItems };
    if (this.waitingBytes >= this.maxBytes) return { bound: "bytes", limit: this.maxBytes };
    return undefined;
  }

  /** Producers waiting in `whenRoom`. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Appends one item of `bytes` estimated bytes. Never refuses (see the module's comment). */
  push(item: T, bytes = 0): void {
    this.items.push(item);
    this.sizes.push(bytes);
    this.waitingBytes += bytes;
  }

  /** Appends items of no estimated size, in order. Never refuses. */
  pushAll(items: readonly T[]): void {
    for (const item of items) {
      this.items.push(item);
      this.sizes.push(0);
    }
  }

  /**
   * Takes the next batch from the head: up to `maxItems` items, and no more once their estimated
   * bytes reach `targetBytes` (the first item is taken whatever its size).
   */
  take(maxItems: number, targetBytes = Number.POSITIVE_INFINITY): T[] {
    const out: T[] = [];
    let bytes = 0;
    while (
      this.head < this.items.length &&
      out.length < maxItems &&
      (out.length === 0 || bytes < targetBytes)
    ) {
      out.push(this.items[this.head] as T);
      bytes += this.sizes[this.head] as number;
      this.head += 1;
    }
    this.waitingBytes -= bytes;
    this.compact();
    return out;
  }

  /** Drops every waiting item (their data is carried another way); returns how many there were. */
  clear(): number {
    const dropped = this.length;
    this.items = [];
    this.sizes = [];
    this.head = 0;
    this.waitingBytes = 0;
    return dropped;
  }

  /**
   * Resolves when there is room (at once when there is), after `timeoutMs` when given, or when the
   * queue is closed, whichever is first. Never rejects: the caller checks `hasRoom` again.
   */
  whenRoom(timeoutMs?: number): Promise<void> {
    if (this.closed || this.hasRoom) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const wake = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      this.waiters.add(wake);
      if (timeoutMs !== undefined) timer = setTimeout(wake, Math.max(0, timeoutMs));
    });
  }

  /** Wakes the producers waiting for room if there is (after a take, a clear, or when `held` fell). */
  notify(): void {
    if (this.waiters.size === 0 || !this.hasRoom) return;
    for (const wake of [...this.waiters]) wake();
  }

  /** Wakes every waiting producer, and answers every later `whenRoom` at once: the consumer is gone. */
  close(): void {
    this.closed = true;
    for (const wake of [...this.waiters]) wake();
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.sizes.length = 0;
      this.head = 0;
    } else if (this.head > COMPACT_AFTER && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.sizes.splice(0, this.head);
      this.head = 0;
    }
  }
}
