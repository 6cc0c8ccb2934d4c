/**
 * The native memory of DuckDB's results. node-api holds each chunk read from a result in memory
 * outside V8's heap that it frees only when V8 collects the small JavaScript object wrapping it; V8
 * neither sees that memory nor collects those objects before its next full collection, which a hub
 * whose heap barely grows may not run for minutes: after the peers backfill (bench/peers.bench.ts,
 * 100 rows), each metric query of 288 000 answer rows left about 25 MiB, and the hub's RSS climbed
 * query after query to about 500 MiB before V8 collected (docs/performance.md). So the store counts
 * the bytes of the results it has read and let go, and once they pass both
 * {@link NATIVE_COLLECT_MIN_BYTES} and the size of the live heap a collection has to mark, asks V8
 * for a full collection on the next turn of the event loop: the garbage may grow as large as the
 * live heap, as V8's own heap may (HEAP_GROWING_PERCENT), and a collection's pause, which grows
 * with the live heap, stays in proportion to the memory it gives back (30-80 ms, up to 160 ms with
 * DuckDB busy on both cores, for a heap of about 60 MB after the peers backfill).
 */
import { getHeapStatistics } from "node:v8";
import { fullCollection } from "../../../memory/full-collection.js";

/** Least native result memory let go before the store asks for a full collection. */
export const NATIVE_COLLECT_MIN_BYTES = 32 * 1024 * 1024; // bytes

/** How many times the end-of-answer bar the count may reach before an answer has been read. */
export const NATIVE_COLLECT_WITHIN_ANSWER = 4;

/**
 * Bytes counted for a value of a result read: its place in its chunk's vector, 8 for a number and
 * 16 for a string (a long one more besides), counted as 16 for either.
 */
export const NATIVE_BYTES_PER_VALUE = 16; // bytes

/**
 * Counts the native memory of results let go and runs a full collection when it is worth one: at
 * the end of an answer once the count passes {@link NATIVE_COLLECT_MIN_BYTES} and the live heap,
 * and within a long answer once it passes {@link NATIVE_COLLECT_WITHIN_ANSWER} times that.
 */
export class NativeResultMemory {
  private bytes = 0;
  private scheduled = false;
  /** Full collections asked for so far. */
  collections = 0;

  /**
   * `collect` runs the collection (default V8's full collection; null, or a Node without one:
   * nothing is counted); `liveHeapBytes` the heap a collection marks (default V8's used heap size).
   */
  constructor(
    private readonly collect: (() => void) | null = fullCollection() ?? null,
    private readonly liveHeapBytes: () => number = () => getHeapStatistics().used_heap_size,
    private readonly minBytes: number = NATIVE_COLLECT_MIN_BYTES,
  ) {}

  /** Counts `values` values of results read and no longer held, while an answer is being read. */
  release(values: number): void {
    this.bytes += values * NATIVE_BYTES_PER_VALUE;
    this.consider(NATIVE_COLLECT_WITHIN_ANSWER);
  }

  /** An answer has been read to its end. */
  answered(): void {
    this.consider(1);
  }

  private consider(factor: number): void {
    const collect = this.collect;
    if (collect === null || this.scheduled) return;
    const bar = factor * Math.max(this.minBytes, this.liveHeapBytes());
    if (this.bytes < bar) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.bytes = 0;
      this.collections += 1;
      collect();
    });
  }
}
