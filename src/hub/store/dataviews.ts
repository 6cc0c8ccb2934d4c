/**
 * What both stores share about dataviews and probes (DESIGN 5.1 "What the hub says about a metric
 * comes from what it stored"): the cache of dataview rows a write consults so that a batch whose
 * dataviews are known and unchanged writes nothing for them, and the read-time merge of a probe's
 * details into an entity's attributes.
 *
 * A dataview row holds the store's id of (entity, sampler, sampler type, dataview), the plug-in
 * and OS type its messages carried last, and the rows ("" for the headlines) deleted since they
 * were last updated (`dataview_deletes`). It is deleted when its entity is, or when every row name
 * its series have is in that set.
 */
import type { DataviewInput, EntityKey } from "./store.js";

/** A dataview row as a store's cache holds it. */
export interface DataviewState {
  readonly id: number;
  readonly plugin: string | null;
  readonly osType: string | null;
  /** Rows deleted since their last update. */
  readonly deleted: ReadonlySet<string>;
}

/** Dataview rows a store caches at most; past it the cache starts again empty (a miss is read back). */
export const DATAVIEW_CACHE_ENTRIES = 100_000;

/**
 * Bytes of dataview rows a store caches at most, as {@link dataviewStateBytes} counts them: names
 * and deleted rows are client data (up to `limits.nameBytes` each), so the count alone does not
 * bound the memory. Past it the cache starts again empty, like past its entries.
 */
export const DATAVIEW_CACHE_BYTES = 64 * 1024 * 1024;

/** What one cached dataview row holds, counted generously: UTF-16 text and an overhead a string. */
export function dataviewStateBytes(key: string, state: DataviewState): number {
  let bytes = 96 + 2 * key.length + 2 * ((state.plugin?.length ?? 0) + (state.osType?.length ?? 0));
  for (const row of state.deleted) bytes += 48 + 2 * row.length;
  return bytes;
}

/** A dataview's cache key: its entity key and names, length-prefixed (no two dataviews share one). */
export const dataviewKeyString = (
  entity: EntityKey,
  d: { readonly sampler: string; readonly samplerType: string; readonly dataview: string },
): string =>
  `${entity.gateway.length}:${entity.gateway}${entity.probe.length}:${entity.probe}` +
  `${entity.managedEntity.length}:${entity.managedEntity}${d.sampler.length}:${d.sampler}` +
  `${d.samplerType.length}:${d.samplerType}${d.dataview.length}:${d.dataview}`;

/**
 * Whether writing `input` would change the dataview as cached (`state`): always for one not
 * cached; else a new plug-in or OS type, a deleted row, or an update of a row deleted before.
 */
export function dataviewChanges(state: DataviewState | undefined, input: DataviewInput): boolean {
  if (state === undefined) return true;
  if (state.plugin !== input.plugin || state.osType !== input.osType) return true;
  if (input.deleted.length > 0) return true;
  if (state.deleted.size === 0) return false;
  return input.updated.some((row) => state.deleted.has(row));
}

/** The rows deleted after `input`, from those deleted before (`before`). */
export function deletedAfter(before: Iterable<string>, input: DataviewInput): Set<string> {
  const deleted = new Set(before);
  for (const row of input.updated) deleted.delete(row);
  for (const row of input.deleted) deleted.add(row);
  return deleted;
}

/** The bytes each dataview cache holds, by {@link dataviewStateBytes} (kept beside the map). */
const cacheBytes = new WeakMap<Map<string, DataviewState>, number>();

/**
 * Copies committed dataview states into `cache`, emptying it first when it would pass its bound in
 * entries or bytes; entries that would still pass it are left out (a miss is read back).
 */
export function applyDataviews(
  cache: Map<string, DataviewState>,
  learnt: ReadonlyMap<string, DataviewState>,
  maxBytes = DATAVIEW_CACHE_BYTES,
): void {
  // A cache emptied by its store (a reload of its caches) holds nothing.
  let bytes = cache.size === 0 ? 0 : (cacheBytes.get(cache) ?? 0);
  let adding = 0;
  for (const [k, v] of learnt) adding += dataviewStateBytes(k, v);
  if (cache.size + learnt.size > DATAVIEW_CACHE_ENTRIES || bytes + adding > maxBytes) {
    cache.clear();
    bytes = 0;
  }
  for (const [k, v] of learnt) {
    const old = cache.get(k);
    const weight = dataviewStateBytes(k, v);
    const freed = old === undefined ? 0 : dataviewStateBytes(k, old);
    if (bytes - freed + weight > maxBytes) {
      if (old !== undefined) {
        cache.delete(k);
        bytes -= freed;
      }
      continue;
    }
    cache.set(k, v);
    bytes += weight - freed;
  }
  cacheBytes.set(cache, bytes);
}

/** The bytes {@link applyDataviews} counts `cache` as holding. */
export function dataviewCacheBytes(cache: Map<string, DataviewState>): number {
  return cache.size === 0 ? 0 : (cacheBytes.get(cache) ?? 0);
}

/**
 * An entity's attributes with its probe's details (`svc.hostname`, `svc.os-type`) as stored,
 * in the order entity-attributes.ts writes them; without a probe row, the stored attributes as
 * they are. An empty value counts as absent.
 */
export function withProbe(
  attributes: Record<string, string>,
  probe: { readonly osType: string | null; readonly hostname: string | null } | undefined,
): Record<string, string> {
  if (probe === undefined) return attributes;
  // Object.fromEntries defines own properties: `__proto__` stays an ordinary attribute name.
  const out: [string, string][] = [];
  const put = (name: string, value: string | null | undefined) => {
    if (value !== undefined && value !== null && value !== "") out.push([name, value]);
  };
  const own = (name: string) => (Object.hasOwn(attributes, name) ? attributes[name] : undefined);
  put("svc.name", own("svc.name"));
  put("svc.gateway", own("svc.gateway"));
  put("svc.probe", own("svc.probe"));
  put("svc.hostname", probe.hostname);
  put("svc.os-type", probe.osType);
  const placed = new Set(["svc.name", "svc.gateway", "svc.probe", "svc.hostname", "svc.os-type"]);
  for (const [k, v] of Object.entries(attributes)) if (!placed.has(k)) out.push([k, v]);
  return Object.fromEntries(out);
}

/**
 * The series of the entities `where` selects with their dataview row, their numeric flag, and
 * whether every row of their dataview is deleted (`dv_deleted`); shared by both stores' SQL.
 */
export const METRIC_NAMES_CTE = (where: string): string => `WITH s AS (
    SELECT s.entity_id, s.sampler, s.sampler_type, s.dataview, s.row_name, s.column_name,
           d.id AS dv, d.plugin, d.os_type, x.row_name IS NOT NULL AS row_deleted,
           n.series_id IS NOT NULL AS is_numeric
    FROM series s
    JOIN dataviews d ON d.entity_id = s.entity_id AND d.sampler = s.sampler
      AND d.sampler_type = s.sampler_type AND d.dataview = s.dataview
    LEFT JOIN dataview_deletes x ON x.dataview_id = d.id AND x.row_name = s.row_name
    LEFT JOIN numeric_series n ON n.series_id = s.id
    WHERE ${where}
  ), w AS (SELECT *, bool_and(row_deleted) OVER (PARTITION BY dv) AS dv_deleted FROM s)`;

/**
 * Schema migration of both stores: an entity's stored attributes (JSON text) without the probe
 * details earlier releases copied into them, and those details; undefined when it holds neither.
 */
export function stripProbeDetails(
  text: string,
):
  | { readonly attributes: string; readonly osType: string | null; readonly hostname: string | null }
  | undefined {
  const parsed = JSON.parse(text) as Record<string, string>;
  const osType = Object.hasOwn(parsed, "svc.os-type") ? (parsed["svc.os-type"] ?? null) : null;
  const hostname = Object.hasOwn(parsed, "svc.hostname") ? (parsed["svc.hostname"] ?? null) : null;
  if (osType === null && hostname === null) return undefined;
  const kept: Record<string, string> = Object.create(null);
  for (const [k, v] of Object.entries(parsed)) if (k !== "svc.os-type" && k !== "svc.hostname") kept[k] = v;
  return { attributes: JSON.stringify(kept), osType: osType || null, hostname: hostname || null };
}
