/**
 * The probe's state as the link sends it on every new connection (DESIGN 1 "probe link"): after
 * `welcome`, the probe's dataviews at one instant are cut into `state` batches that no frame's size
 * grows with a dataview's size.
 */

import {
  type Change,
  encodeCells,
  estimateChangeSize,
  type WireRow,
  type WireSeverities,
} from "../link/protocol.js";
import type { DataviewSnapshot } from "./dataview-model.js";

/**
 * A dataview of the probe's state as the link sends it: a custom dataview's snapshot, or a
 * sampler-made one (Streams Dataview, fkm) whose rows may carry the cell severities it sets.
 */
export type StateSnapshot = Omit<DataviewSnapshot, "rows"> & {
  readonly rows: readonly (DataviewSnapshot["rows"][number] & { readonly severities?: WireSeverities })[];
};

/**
 * Turns the probe's state into `state` items: per dataview, one `dataview` item with as many rows
 * as fit the batch's size budget, then `row` items for the rest, so no frame grows with the
 * dataview's size.
 */
export class StateCursor {
  private dataview = 0;
  private row = 0;
  private headerSent = false;

  constructor(private readonly snapshots: readonly StateSnapshot[]) {}

  next(maxItems: number, targetBytes: number): { items: Change[]; last: boolean } {
    const items: Change[] = [];
    let bytes = 0;
    while (items.length < maxItems && bytes < targetBytes && this.dataview < this.snapshots.length) {
      const snapshot = this.snapshots[this.dataview] as StateSnapshot;
      if (!this.headerSent) {
        const rows: WireRow[] = [];
        let size = 0;
        for (const column of snapshot.columns) size += column.length + 3;
        while (this.row < snapshot.rows.length && bytes + size < targetBytes) {
          const row = snapshot.rows[this.row] as StateSnapshot["rows"][number];
          const wire: WireRow = {
            name: row.name,
            cells: encodeCells(row.cells),
            at: row.at,
            ...(row.severities === undefined ? {} : { severities: row.severities }),
          };
          size += estimateRow(wire);
          rows.push(wire);
          this.row += 1;
        }
        items.push({
          kind: "dataview",
          dataview: snapshot.address,
          at: snapshot.at,
          plugin: snapshot.plugin,
          columns: snapshot.columns,
          rows,
          headlines: snapshot.headlines,
        });
        bytes += size + 64;
        this.headerSent = true;
      } else if (this.row < snapshot.rows.length) {
        const row = snapshot.rows[this.row] as StateSnapshot["rows"][number];
        const change: Change = {
          kind: "row",
          dataview: snapshot.address,
          at: row.at,
          name: row.name,
          cells: encodeCells(row.cells),
          ...(row.severities === undefined ? {} : { severities: row.severities }),
        };
        bytes += estimateChangeSize(change);
        items.push(change);
        this.row += 1;
      }
      if (this.headerSent && this.row >= snapshot.rows.length) {
        this.dataview += 1;
        this.row = 0;
        this.headerSent = false;
      }
    }
    return { items, last: this.dataview >= this.snapshots.length };
  }
}

function estimateRow(row: WireRow): number {
  let size = row.name.length + 24;
  for (const cell of row.cells) size += typeof cell === "string" ? cell.length + 3 : 4;
  return size;
}
