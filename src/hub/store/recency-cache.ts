/**
 * A map bounded to a fixed number of entries that keeps the recently used ones (DESIGN 1: every map
 * a client can grow has a bound). The stores use it for the series-id cache: a forgotten id is read
 * back from the database when next needed, so forgetting loses nothing.
 *
 * It approximates least-recently-used with two generations instead of moving an entry on every hit
 * (a Map delete + set per hit costs the ingest path about a tenth of its time in rehashing): new
 * and reused entries go into the young generation; when that holds half the capacity it becomes
 * the old one and the previous old one is dropped whole. A hit in the old generation copies the
 * entry into the young one. An entry used at least once per half-capacity insertions stays.
 */
export class RecencyCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private readonly half: number;

  /** Holds at most `capacity` entries; 0 holds none (every lookup misses). */
  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new RangeError(`cache capacity must be a non-negative integer, got ${capacity}`);
    }
    this.half = Math.max(1, Math.floor(capacity / 2));
  }

  /** Entries held, counting an entry present in both generations twice. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The value for `key`, marking it as recently used; undefined when not held. */
  get(key: K): V | undefined {
    const value = this.young.get(key);
    if (value !== undefined) return value;
    const older = this.old.get(key);
    if (older !== undefined) this.set(key, older);
    return older;
  }

  /** Stores `value` as recently used, dropping the old generation when the young one is full. */
  set(key: K, value: V): void {
    if (this.capacity === 0) return;
    this.young.set(key, value);
    // Young stays below `half` and old at most `half`: together at most `capacity`.
    if (this.young.size >= this.half) {
      this.old = this.young;
      this.young = new Map();
    }
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
  }
}
