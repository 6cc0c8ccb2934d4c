/**
 * Series ids cached by row: one entry per row of series (an entity's sampler, type,
 * dataview and row), holding the ids by column name, so a write resolves a row's key once and each
 * cell with a lookup of its column — no key text made per cell. Both stores keep their caches so;
 * the bound counts series (a row weighs its columns).
 */
import { RecencyCache } from "./recency-cache.js";

/** Series ids of one row, by column name. */
export type RowSeries = ReadonlyMap<string, number>;

/** A cache of at most `capacity` series ids, by row. */
export const rowSeriesCache = (capacity: number): RecencyCache<string, RowSeries> =>
  new RecencyCache<string, RowSeries>(capacity, (columns) => columns.size);

/** The ids of the row `rowKey` in `rows` (a transaction's own map), made when missing. */
export function rowSeriesOf(rows: Map<string, Map<string, number>>, rowKey: string): Map<string, number> {
  let columns = rows.get(rowKey);
  if (columns === undefined) {
    columns = new Map();
    rows.set(rowKey, columns);
  }
  return columns;
}

/** Copies what a committed transaction learnt (`rows`) into `cache`, merging with rows cached. */
export function applyRowSeries(
  cache: RecencyCache<string, RowSeries>,
  rows: ReadonlyMap<string, RowSeries>,
): void {
  for (const [rowKey, columns] of rows) {
    const cached = cache.get(rowKey);
    if (cached === undefined) cache.set(rowKey, columns);
    else {
      // Set again, so the cache counts the row's new weight.
      const merged = new Map(cached);
      for (const [column, id] of columns) merged.set(column, id);
      cache.set(rowKey, merged);
    }
  }
}
