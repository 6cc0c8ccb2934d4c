/**
 * One custom dataview of a rest-api sampler, held in the probe's memory (seed B "Probe ingest
 * resources", DESIGN 3.3). Rows are kept in arrival order under their base name (the value of the
 * first column); duplicates get their published names `<name>_duplicateN` only when the state is
 * read, so deleting a row renumbers the rest for free.
 */
import { VigilError } from "../errors/catalog.js";
import type { DataviewRowState, DataviewState } from "../link/probe-link.js";

export type Cells = Record<string, string>;

interface Row {
  /** Base name: the first column's value when the row was written. */
  name: string;
  cells: Cells;
}

export interface ReplaceResult {
  readonly rows: number;
  readonly duplicates: number;
  readonly dropped: number;
}

/** Published names for rows in order: the first keeps its name, later ones `_duplicate1`, `_duplicate2`, … */
export function publishedNames(baseNames: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return baseNames.map((name) => {
    const count = seen.get(name) ?? 0;
    seen.set(name, count + 1);
    return count === 0 ? name : `${name}_duplicate${count}`;
  });
}

export class DataviewModel {
  private columns: string[] = [];
  private rows: Row[] = [];
  private status = "OK";

  /**
   * PUT dataview: replaces every row. Columns follow `columnOrder` (the `Column-Order` header) and
   * then first appearance across the rows; the first column names each row. Rows beyond `rowLimit`
   * are dropped and `samplingStatus` says how many.
   */
  replace(rows: readonly Cells[], columnOrder: readonly string[], rowLimit: number): ReplaceResult {
    const columns = [...new Set(columnOrder)];
    const known = new Set(columns);
    for (const row of rows) {
      for (const column of Object.keys(row)) {
        if (!known.has(column)) {
          known.add(column);
          columns.push(column);
        }
      }
    }
    const first = columns[0];
    const named: Row[] = rows.map((cells, index) => {
      const name = first === undefined ? "" : (cells[first] ?? "");
      if (name === "") {
        throw new VigilError("INVALID_DATAVIEW", {
          detail: `Row ${index} has no value in the first column '${first ?? ""}', which names the row; give every row a value there.`,
        });
      }
      return { name, cells: fillCells(columns, cells) };
    });
    const kept = named.slice(0, rowLimit);
    const dropped = named.length - kept.length;
    this.columns = columns;
    this.rows = kept;
    this.status =
      dropped > 0
        ? `Row limit of ${rowLimit} reached: ${dropped} row${dropped === 1 ? "" : "s"} dropped`
        : "OK";
    const duplicates = kept.length - new Set(kept.map((r) => r.name)).size;
    return { rows: kept.length, duplicates, dropped };
  }

  /**
   * PUT row: creates or replaces the row addressed by `pathName` (its published name). Cells missing
   * from the body become blank; a first-column value different from `pathName` renames the row
   * (seed B rules 4–5). New columns in the body are appended. Returns the row's published name.
   */
  putRow(pathName: string, body: Cells, rowLimit: number): string {
    for (const column of Object.keys(body)) {
      if (!this.columns.includes(column)) this.columns.push(column);
    }
    const first = this.columns[0];
    if (first === undefined) {
      throw new VigilError("INVALID_ROW", {
        detail: "The row has no cells and the dataview has no columns; send at least the first column.",
      });
    }
    const given = body[first];
    const name = given === undefined || given === "" ? pathName : given;
    const cells = fillCells(this.columns, { ...body, [first]: name });
    const index = this.indexOf(pathName);
    if (index === -1) {
      if (this.rows.length >= rowLimit) {
        throw new VigilError("ROW_LIMIT_REACHED", { limit: rowLimit });
      }
      this.rows.push({ name, cells });
    } else {
      this.rows[index] = { name, cells };
    }
    this.status = "OK";
    const names = publishedNames(this.rows.map((r) => r.name));
    return names[index === -1 ? this.rows.length - 1 : index] ?? name;
  }

  /**
   * DELETE row: removes the row with that published name; for a base name that is the first of its
   * duplicates, and the rest are renumbered from 1 (seed B, States). False when there is none.
   */
  deleteRow(pathName: string): boolean {
    const index = this.indexOf(pathName);
    if (index === -1) return false;
    this.rows.splice(index, 1);
    return true;
  }

  /** The dataview as published: columns, rows under their published names, headlines. */
  state(): DataviewState {
    const names = publishedNames(this.rows.map((r) => r.name));
    const rows: DataviewRowState[] = this.rows.map((row, i) => ({
      name: names[i] ?? row.name,
      cells: fillCells(this.columns, row.cells),
    }));
    return {
      columns: [...this.columns],
      rows,
      headlines: { samplingStatus: this.status, totalRows: String(this.rows.length) },
    };
  }

  private indexOf(publishedName: string): number {
    const names = publishedNames(this.rows.map((r) => r.name));
    return names.indexOf(publishedName);
  }
}

function fillCells(columns: readonly string[], cells: Readonly<Cells>): Cells {
  const out: Cells = {};
  for (const column of columns) out[column] = cells[column] ?? "";
  return out;
}
