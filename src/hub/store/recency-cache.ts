/**
 * A map bounded by count and by bytes that keeps the recently used entries (DESIGN 1: every map a
 * client can grow has a bound). The stores use it for the series-id cache: a forgotten id is read
 * back from the database when next needed, so forgetting loses nothing.
 *
 * It approximates least-recently-used with two generations instead of moving an entry on every hit
 * (a Map delete + set per hit costs the ingest path about a tenth of its time in rehashing): new
 * and reused entries go into the young generation; when that holds half the capacity, or half the
 * byte bound, it becomes the old one and the previous old one is dropped whole. A hit in the old
 * generation copies the entry into the young one. An entry used at least once per half-capacity
 * insertions stays.
 *
 * An entry may weigh more than one (the DuckDB store keeps one entry per row of series, weighing its
 * columns): the capacity then bounds the weight, as counted when each entry was last set. Setting a
 * key again counts it again, which only makes the generations turn sooner; an entry that grows is
 * set again by its owner, so the count never falls below what is held. One entry heavier than half
 * the capacity may take the bound over by its weight.
 *
 * Bytes are counted the same way, by `bytes.of(key, value)` (default {@link estimateBytes}: the
 * key's and value's strings at 2 bytes a UTF-16 code unit, numbers at 8, and a fixed overhead per
 * object, Map entry and cache entry), computed once when an entry is set: names are client data
 * (up to 1 KiB each by default), so a count alone does not bound memory. An entry heavier than half
 * the byte bound is not kept at all, so the bytes held never exceed the bound.
 */
import { RECENCY_CACHE_BYTES } from "../../config/defaults.js";

/** Estimated bytes of one cache entry apart from its key and value (the Map slot and its record). */
const ENTRY_OVERHEAD_BYTES = 64; // bytes (estimate)
/** Estimated bytes of an object, array, Map or Set apart from its contents. */
const OBJECT_OVERHEAD_BYTES = 64; // bytes (estimate)
/** Estimated bytes of one property, element or Map/Set entry apart from its key and value. */
const SLOT_BYTES = 16; // bytes (estimate)
/** Nesting past which a value is counted as OBJECT_OVERHEAD_BYTES without looking inside. */
const MAX_ESTIMATE_DEPTH = 4; // levels

/**
 * An estimate of the memory `value` holds: a string 2 bytes a UTF-16 code unit plus a header, a
 * number 8, an object, array, Map or Set its overhead plus its contents (to MAX_ESTIMATE_DEPTH
 * levels), typed arrays their byte length. Shared parts are counted each time they are reached.
 */
export function estimateBytes(value: unknown, depth = 0): number {
  switch (typeof value) {
    case "string":
      return 16 + 2 * value.length;
    case "number":
    case "boolean":
    case "undefined":
    case "symbol":
      return 8;
    case "bigint":
      return 16;
    case "function":
      return OBJECT_OVERHEAD_BYTES;
    default:
      break;
  }
  if (value === null) return 8;
  if (depth >= MAX_ESTIMATE_DEPTH) return OBJECT_OVERHEAD_BYTES;
  if (ArrayBuffer.isView(value)) return OBJECT_OVERHEAD_BYTES + value.byteLength;
  let bytes = OBJECT_OVERHEAD_BYTES;
  if (value instanceof Map) {
    for (const [k, v] of value)
      bytes += SLOT_BYTES + estimateBytes(k, depth + 1) + estimateBytes(v, depth + 1);
    return bytes;
  }
  if (value instanceof Set) {
    for (const v of value) bytes += SLOT_BYTES + estimateBytes(v, depth + 1);
    return bytes;
  }
  if (Array.isArray(value)) {
    for (const v of value) bytes += SLOT_BYTES / 2 + estimateBytes(v, depth + 1);
    return bytes;
  }
  for (const [k, v] of Object.entries(value as object)) {
    bytes += SLOT_BYTES + estimateBytes(k, depth + 1) + estimateBytes(v, depth + 1);
  }
  return bytes;
}

/** The byte bound of a {@link RecencyCache}. */
export interface ByteBound<K, V> {
  /** Most bytes held, by `of`; 0 holds nothing. */
  readonly max: number;
  /** The bytes one entry holds (default: {@link estimateBytes} of key and value, plus the entry's own). */
  readonly of?: (key: K, value: V) => number;
}

interface Entry<V> {
  readonly value: V;
  readonly weight: number;
  readonly bytes: number;
}

export class RecencyCache<K, V> {
  private young = new Map<K, Entry<V>>();
  private old = new Map<K, Entry<V>>();
  private youngWeight = 0;
  private oldWeight = 0;
  private youngBytes = 0;
  private oldBytes = 0;
  private readonly half: number;
  private readonly halfBytes: number;
  /** The byte bound. */
  readonly maxBytes: number;
  private readonly bytesOf: (key: K, value: V) => number;

  /**
   * Holds at most `capacity` entries, or entries weighing `capacity` by `weigh` (default: one
   * each), and at most `bytes.max` bytes (default RECENCY_CACHE_BYTES, 64 MiB, by
   * {@link estimateBytes}); 0 holds none (every lookup misses).
   */
  constructor(
    readonly capacity: number,
    private readonly weigh?: (value: V) => number,
    bytes: ByteBound<K, V> = { max: RECENCY_CACHE_BYTES },
  ) {
    for (const [name, n] of [
      ["capacity", capacity],
      ["byte bound", bytes.max],
    ] as const) {
      if (!Number.isSafeInteger(n) || n < 0) {
        throw new RangeError(`cache ${name} must be a non-negative integer, got ${n}`);
      }
    }
    this.half = Math.max(1, Math.floor(capacity / 2));
    this.maxBytes = bytes.max;
    this.halfBytes = Math.floor(bytes.max / 2);
    this.bytesOf =
      bytes.of ?? ((key, value) => ENTRY_OVERHEAD_BYTES + estimateBytes(key) + estimateBytes(value));
  }

  /** Entries held, counting an entry present in both generations twice. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The weight held, as counted when the entries were set (see the class comment). */
  get weight(): number {
    return this.youngWeight + this.oldWeight;
  }

  /** The bytes held, as counted when the entries were set (an entry in both generations twice). */
  get bytes(): number {
    return this.youngBytes + this.oldBytes;
  }

  /** The value for `key`, marking it as recently used; undefined when not held. */
  get(key: K): V | undefined {
    const entry = this.young.get(key);
    if (entry !== undefined) return entry.value;
    const older = this.old.get(key);
    if (older === undefined) return undefined;
    this.put(key, older);
    return older.value;
  }

  /** Stores `value` as recently used, dropping the old generation when the young one is full. */
  set(key: K, value: V): void {
    if (this.capacity === 0 || this.maxBytes === 0) return;
    const bytes = this.bytesOf(key, value);
    if (bytes > this.halfBytes) {
      // Too heavy to keep: it would push out everything else. A copy held before is stale now.
      this.young.delete(key);
      this.old.delete(key);
      return;
    }
    this.put(key, { value, weight: this.weigh === undefined ? 1 : this.weigh(value), bytes });
  }

  private put(key: K, entry: Entry<V>): void {
    // Bytes: the young generation turns before it would hold more than half the bound, so young
    // and old together never hold more than the bound (every entry weighs at most half of it). A
    // value replaced in the young generation is no longer held there, so its bytes leave the count.
    const had = this.young.get(key);
    if (this.youngBytes - (had?.bytes ?? 0) + entry.bytes > this.halfBytes) this.turn();
    const replaced = this.young.get(key);
    this.young.set(key, entry);
    this.youngBytes += entry.bytes - (replaced?.bytes ?? 0);
    // Weighed, a key set again counts again (it may have grown; see the class comment); one each,
    // the count is the young generation's size.
    if (this.weigh !== undefined) this.youngWeight += entry.weight;
    else if (replaced === undefined) this.youngWeight += 1;
    // Young stays below `half` and old at most `half`: together at most `capacity`.
    if (this.youngWeight >= this.half) this.turn();
  }

  /** The young generation becomes the old one; the old one is dropped. */
  private turn(): void {
    this.old = this.young;
    this.oldWeight = this.youngWeight;
    this.oldBytes = this.youngBytes;
    this.young = new Map();
    this.youngWeight = 0;
    this.youngBytes = 0;
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
    this.youngWeight = 0;
    this.oldWeight = 0;
    this.youngBytes = 0;
    this.oldBytes = 0;
  }
}
