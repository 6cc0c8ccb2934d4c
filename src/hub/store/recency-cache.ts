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
 *
 * An entry may weigh more than one (the DuckDB store keeps one entry per row of series, weighing its
 * columns): the capacity then bounds the weight, as counted when each entry was last set. Setting a
 * key again counts it again, which only makes the generations turn sooner; an entry that grows is
 * set again by its owner, so the count never falls below what is held. One entry heavier than half
 * the capacity may take the bound over by its weight.
 */
export class RecencyCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private youngWeight = 0;
  private oldWeight = 0;
  private readonly half: number;

  /**
   * Holds at most `capacity` entries, or entries weighing `capacity` by `weigh` (default: one
   * each); 0 holds none (every lookup misses).
   */
  constructor(
    readonly capacity: number,
    private readonly weigh?: (value: V) => number,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new RangeError(`cache capacity must be a non-negative integer, got ${capacity}`);
    }
    this.half = Math.max(1, Math.floor(capacity / 2));
  }

  /** Entries held, counting an entry present in both generations twice. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The weight held, as counted when the entries were set (see the class comment). */
  get weight(): number {
    return this.youngWeight + this.oldWeight;
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
    const before = this.young.size;
    this.young.set(key, value);
    // Weighed, a key set again counts again (it may have grown; see the class comment); one each,
    // the count is the young generation's size.
    if (this.weigh !== undefined) this.youngWeight += this.weigh(value);
    else if (this.young.size > before) this.youngWeight += 1;
    // Young stays below `half` and old at most `half`: together at most `capacity`.
    if (this.youngWeight >= this.half) {
      this.old = this.young;
      this.oldWeight = this.youngWeight;
      this.young = new Map();
      this.youngWeight = 0;
    }
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
    this.youngWeight = 0;
    this.oldWeight = 0;
  }
}
