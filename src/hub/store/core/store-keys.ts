/**
 * The in-process keys both stores' caches use, and the attributes they store (DESIGN 5.1). Keys are
 * strings built from names clients send, so every name is length-prefixed or JSON-quoted: no two
 * entities, rows or series share a key whatever their names hold.
 */
import type { EntityId } from "../../../ids.js";
import type { EntityKey, RowNames, SeriesKey } from "../store.js";

/** The cache key of an entity: its gateway, probe and managed entity names. */
export const entityKeyString = (k: EntityKey): string =>
  JSON.stringify([k.gateway, k.probe, k.managedEntity]);

/**
 * The cache key of a row of series: its entity id and names, each name length-prefixed. Built once
 * per row of cells (one message), never per sample: a string key per sample was a tenth of a
 * loaded hub's CPU.
 */
export const rowKeyString = (entity: EntityId, s: RowNames): string =>
  `${entity}|${s.sampler.length}:${s.sampler}${s.samplerType.length}:${s.samplerType}${s.dataview.length}:${s.dataview}${s.row.length}:${s.row}`;

/** The key of one series: its row's key ({@link rowKeyString}) and its column, length-prefixed likewise. */
export const seriesKeyOf = (rowKey: string, column: string): string => `${rowKey}${column.length}:${column}`;

/** The key of one series of an entity. */
export const seriesKeyString = (entity: EntityId, s: SeriesKey): string =>
  seriesKeyOf(rowKeyString(entity, s), s.column);

/**
 * An entity's attributes as stored: DESIGN 5.1, an empty value counts as absent, so it is never
 * stored. `Object.fromEntries` defines each name as an own property, so a name like `__proto__`
 * stays data.
 */
export function storedAttributes(attributes: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== ""));
}
