/**
 * The limits on what enters vigil from the network (docs/security.md, "Limits"): the same
 * numbers wherever data enters — the probe's ingest endpoints, the probe link, the hub's backfill
 * (`POST /v0/messages`) and the bus consumer. A name, value, cell or body beyond one of them is
 * refused where it enters (a 4xx, a link close code, or a dead letter) and counted; it never
 * reaches the hierarchy or the store.
 */

/** Every limit, in bytes of UTF-8 unless said otherwise. */
export interface DataLimits {
  /**
   * Longest name: managed entity, sampler, sampler type, dataview, row, column, headline, stream,
   * attribute key, gateway and probe names.
   */
  readonly nameBytes: number;
  /** Longest attribute value (a managed entity's attributes, a probe's parameters). */
  readonly attributeValueBytes: number;
  /** Most attributes one managed entity may have. */
  readonly attributesPerEntity: number;
  /** Longest cell or headline value. */
  readonly cellBytes: number;
  /** Largest probe-link frame (a WebSocket message, however fragmented). */
  readonly linkFrameBytes: number;
  /** Deepest nesting of arrays and objects in any untrusted JSON text. */
  readonly jsonDepth: number;
}

/** The defaults: the bounds of DESIGN 5.4b ("Trust between the parts"). */
export const DEFAULT_DATA_LIMITS: DataLimits = Object.freeze({
  nameBytes: 1_024, // bytes
  attributeValueBytes: 4_096, // bytes
  attributesPerEntity: 64, // attributes
  cellBytes: 65_536, // bytes (64 KiB)
  linkFrameBytes: 8 * 1024 * 1024, // bytes (8 MiB)
  jsonDepth: 64, // levels of arrays and objects
});

/** True when `text` is longer than `limit` bytes of UTF-8 (cheap for short and for long text). */
export function overBytes(text: string, limit: number): boolean {
  if (text.length <= limit / 3) return false; // at most 3 bytes per UTF-16 code unit
  if (text.length > limit) return true; // at least 1 byte per code unit
  return Buffer.byteLength(text, "utf8") > limit;
}

/**
 * Bytes a published row name may have beyond `nameBytes`: the row name a client sends is a name,
 * and a duplicate is published as `<name>_duplicate<N>` (DESIGN 3.3), so whatever carries
 * published names on (the link, the bus, backfill) allows this much more for a row.
 */
export const DUPLICATE_SUFFIX_BYTES = 32; // bytes: "_duplicate" and up to 22 digits
