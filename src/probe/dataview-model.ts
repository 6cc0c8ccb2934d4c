/**
 * One custom dataview of a rest-api sampler, held in the probe's memory (seed B "Probe ingest
 * resources", DESIGN 3.3). Rows keep their arrival order; each has a base name (the value of the
 * first column) and a published name: the first row of a base name keeps it, later ones are
 * `<name>_duplicate1`, `<name>_duplicate2`, … skipping a suffix whose name another row has as its
 * base name (rows `x`, `x`, `x_duplicate1` publish as `x`, `x_duplicate2`, `x_duplicate1`), so no
 * two rows ever share a published name. Published names are a function of the base names
 * in row order alone ({@link publishedNames}), whatever sequence of writes led there.
 *
 * Work is proportional to the change: published names are kept up to date incrementally
 * (a map from published name to row and, per base name, its rows in order), and every operation
 * returns the link changes it causes in published terms: a row PUT is one row upsert; a DELETE of
 * a name with duplicates is the upserts of the renumbered rows and one delete; a PUT dataview is
 * one replace. Only `state()` (GET) builds the whole dataview.
 *
 * Row cells are arrays in column order that are never changed after they are stored (a write
 * stores a new array), so a state snapshot for the link can hold them without copying.
 */
import { LINK_FRAME_HEADROOM_BYTES } from "../config/defaults.js";
import { VigilError } from "../errors/catalog.js";
import { overBytes } from "../limits/data-limits.js";
import { limitError, quoted } from "../limits/limit-refusals.js";
import { type Change, type DataviewAddress, encodeCells, type WireHeadlines } from "../link/protocol.js";

/** The cells of one row as a client sent them: column name → value (names are data: a Map). */
export type RowCells = ReadonlyMap<string, string>;

export interface ReplaceResult {
  readonly rows: number;
  readonly duplicates: number;
  readonly dropped: number;
}

/** What PUT dataview did beyond its answer: `Column-Order` names that no kept row has (not shown). */
export interface ReplaceNotes {
  readonly ignoredColumns: readonly string[];
}

/** What bounds one dataview (seed B row limit; DESIGN 2 `maxColumnsPerDataview`, `maxCellLength`). */
export interface DataviewLimits {
  readonly rowLimit: number;
  readonly maxColumns: number;
  /** Longest cell; checked here for names that become cells (a row name from the path). */
  readonly maxCellLength: number;
  /** Longest row name (the first column's value), in bytes of UTF-8 (`limits.nameBytes`). */
  readonly nameBytes: number;
  /** The link frame limit (`limits.linkFrameBytes`): a change must fit it, less LINK_FRAME_HEADROOM_BYTES. */
  readonly linkFrameBytes: number;
}

/** A row as GET shows it: cells in a prototype-less object, every column present. */
export interface RowState {
  readonly name: string;
  readonly cells: Readonly<Record<string, string>>;
}

/** The dataview as GET shows it (DESIGN 3.1). */
export interface DataviewState {
  readonly columns: readonly string[];
  readonly rows: readonly RowState[];
  readonly headlines: Readonly<Record<string, string>>;
}

/** The dataview at one instant, for the state a probe sends its gateway on (re)connect. */
export interface DataviewSnapshot {
  readonly address: DataviewAddress;
  readonly plugin: string;
  readonly at: number;
  readonly columns: readonly string[];
  readonly headlines: WireHeadlines;
  readonly rows: readonly { readonly name: string; readonly cells: readonly string[]; readonly at: number }[];
}

interface Row {
  /** Arrival order: rows are listed by seq, which a rename keeps. */
  readonly seq: number;
  /** The first column's value when the row was written. */
  base: string;
  /** Published name (`base` or `base_duplicate<suffix>`). */
  name: string;
  /** 0 for the first row of its base name, else the number in its `_duplicateN` name. */
  suffix: number;
  /** Values in column order, possibly shorter than the columns (the rest are blank). */
  cells: readonly string[];
  /** When the probe received this row's data (epoch ms). */
  at: number;
}

/**
 * Published names for base names in order (DESIGN 3.3): the first row of a base name keeps it,
 * later ones are `_duplicate1`, `_duplicate2`, … skipping any suffix whose name is itself a base
 * name in the list. The names are distinct: a base name is published once (by its first row), a
 * skipped suffix never equals a base name, and `<base>_duplicate<N>` determines its base and N.
 */
export function publishedNames(baseNames: readonly string[]): string[] {
  const taken = new Set(baseNames);
  const last = new Map<string, number>();
  return baseNames.map((name) => {
    const previous = last.get(name);
    let suffix = 0;
    if (previous !== undefined) {
      suffix = previous + 1;
      while (taken.has(duplicateName(name, suffix))) suffix += 1;
    }
    last.set(name, suffix);
    return duplicateName(name, suffix);
  });
}

function duplicateName(base: string, suffix: number): string {
  return suffix === 0 ? base : `${base}_duplicate${suffix}`;
}

/** `x_duplicate3` → base `x`, suffix 3 (the last `_duplicate` followed by a number without a leading 0). */
const DUPLICATE_NAME = /^([\s\S]*)_duplicate([1-9][0-9]*)$/;

const NO_ADDRESS: DataviewAddress = { managedEntity: "", sampler: "", samplerType: "", dataview: "" };

/** A prototype-less record, so that column names such as `__proto__` are ordinary keys. */
export function cellsRecord(columns: readonly string[], cells: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (let i = 0; i < columns.length; i += 1) out[columns[i] as string] = cells[i] ?? "";
  return out;
}

/** One dataview in the probe's memory; every write returns its link changes (see the file comment). */
export class DataviewModel {
  private columns: string[] = [];
  private columnIndex = new Map<string, number>();
  /** Rows by seq; a Map iterates in insertion order, which is seq order. */
  private rows = new Map<number, Row>();
  /** Base name → its rows in seq order (index = duplicate number). */
  private groups = new Map<string, Row[]>();
  /** Published name → the row holding it (names are distinct, see publishedNames). */
  private byName = new Map<string, Row>();
  private nextSeq = 0;
  private status = "OK";
  private at = Date.now();
  private lastHeadlines: WireHeadlines;

  /** `address` and `plugin` go into the link changes this dataview produces. */
  constructor(
    readonly address: DataviewAddress = NO_ADDRESS,
    readonly plugin = "rest-api",
  ) {
    this.lastHeadlines = this.headlines();
  }

  /** Number of rows. */
  get size(): number {
    return this.rows.size;
  }

  /**
   * PUT dataview: replaces every row. Rows beyond `limits.rowLimit` are dropped and
   * `samplingStatus` says how many. Columns are those of the kept rows: first the ones that
   * `columnOrder` (the `Column-Order` header) names, in its order, then the rest by first
   * appearance; the first column names each row. A `columnOrder` name that no kept row has is not
   * shown and is returned in `notes.ignoredColumns` for the caller to log (the real product's
   * documented behaviour). More than `limits.maxColumns` distinct columns is a 400
   * (TOO_MANY_COLUMNS) and changes nothing.
   */
  replace(
    rows: readonly RowCells[],
    columnOrder: readonly string[],
    limits: DataviewLimits,
    at: number = Date.now(),
  ): { result: ReplaceResult; changes: Change[]; notes: ReplaceNotes } {
    const kept = rows.slice(0, Math.max(0, limits.rowLimit));
    const dropped = rows.length - kept.length;
    const present = new Set<string>();
    for (const row of kept) {
      for (const column of row.keys()) {
        if (present.has(column)) continue;
        if (present.size >= limits.maxColumns) this.tooManyColumns(limits.maxColumns);
        present.add(column);
      }
    }
    const columns: string[] = [];
    const columnIndex = new Map<string, number>();
    const ignoredColumns: string[] = [];
    const add = (column: string) => {
      if (columnIndex.has(column)) return;
      columnIndex.set(column, columns.length);
      columns.push(column);
    };
    for (const column of columnOrder) {
      if (present.has(column)) add(column);
      else if (!ignoredColumns.includes(column)) ignoredColumns.push(column);
    }
    for (const column of present) add(column);

    const first = columns[0];
    kept.forEach((cells, index) => {
      const name = first === undefined ? "" : (cells.get(first) ?? "");
      if (name === "") {
        throw new VigilError("INVALID_DATAVIEW", {
          detail: `Row ${index} has no value in the first column '${first ?? ""}', which names the row; give every row a value there.`,
        });
      }
      if (overBytes(name, limits.nameBytes)) throw rowNameTooLong(`Row ${index}`, name, limits.nameBytes);
    });

    checkFitsFrame("The dataview", columns, kept, limits.linkFrameBytes);
    this.columns = columns;
    this.columnIndex = columnIndex;
    this.rows = new Map();
    this.groups = new Map();
    this.byName = new Map();
    this.nextSeq = 0;
    for (const cells of kept) {
      const row: Row = {
        seq: this.nextSeq++,
        base: cells.get(first as string) ?? "",
        name: "",
        suffix: 0,
        cells: columns.map((column) => cells.get(column) ?? ""),
        at,
      };
      this.rows.set(row.seq, row);
      this.groupOf(row.base).push(row);
    }
    // Names once every base name is known: a suffix is skipped when its name is a base name.
    for (const group of this.groups.values()) {
      let suffix = 0;
      group.forEach((row, i) => {
        if (i > 0) suffix = this.nextSuffix(row.base, suffix);
        row.suffix = suffix;
        row.name = duplicateName(row.base, suffix);
        this.byName.set(row.name, row);
      });
    }
    this.status =
      dropped > 0
        ? `Row limit of ${limits.rowLimit} reached: ${dropped} row${dropped === 1 ? "" : "s"} dropped`
        : "OK";
    this.at = at;
    this.lastHeadlines = this.headlines();
    const change: Change = {
      kind: "dataview",
      dataview: this.address,
      at,
      plugin: this.plugin,
      columns: [...columns],
      rows: [...this.rows.values()].map((row) => ({ name: row.name, cells: encodeCells(row.cells) })),
      headlines: this.lastHeadlines,
    };
    return {
      result: { rows: kept.length, duplicates: kept.length - this.groups.size, dropped },
      changes: [change],
      notes: { ignoredColumns },
    };
  }

  /**
   * PUT row: creates or replaces the row addressed by `pathName` (its published name). Cells missing
   * from the body become blank; a first-column value different from the row's name renames the row
   * (seed B rules 4–5); without one, the row keeps its name. New columns in the body are appended. Returns the row's published name and
   * the changes: one row upsert, plus the renumbered rows when a rename moves duplicates.
   */
  putRow(
    pathName: string,
    body: RowCells,
    limits: DataviewLimits,
    at: number = Date.now(),
  ): { name: string; changes: Change[] } {
    // One lookup per sent column: its index, or -1 for a column new to the dataview.
    const indexes = new Array<number>(body.size);
    const added: string[] = [];
    let k = 0;
    for (const column of body.keys()) {
      const index = this.columnIndex.get(column);
      if (index === undefined) added.push(column);
      indexes[k] = index ?? -1;
      k += 1;
    }
    const known = this.columns.length;
    if (known + added.length > limits.maxColumns) this.tooManyColumns(limits.maxColumns);
    const first = this.columns[0] ?? added[0];
    if (first === undefined) {
      throw new VigilError("INVALID_ROW", {
        detail: "The row has no cells and the dataview has no columns; send at least the first column.",
      });
    }
    const target = this.byName.get(pathName);
    // Without a first-column value the row keeps its name: the path's name for a new row, the
    // row's own base name for an existing one (so `/row/a_duplicate1` stays a duplicate of `a`).
    const given = body.get(first);
    const base = given === undefined || given === "" ? (target?.base ?? pathName) : given;
    if (base === "") {
      throw new VigilError("INVALID_ROW", { detail: "The row needs a name: a value in the first column." });
    }
    if (overBytes(base, limits.nameBytes)) throw rowNameTooLong("The row", base, limits.nameBytes);
    if (base.length > limits.maxCellLength) {
      throw new VigilError("CELL_TOO_LONG", {
        where: "The row name in the path",
        column: first,
        length: base.length,
        limit: limits.maxCellLength,
      });
    }
    if (target === undefined && this.rows.size >= limits.rowLimit) {
      throw new VigilError("ROW_LIMIT_REACHED", { dataview: this.address.dataview, limit: limits.rowLimit });
    }
    checkFitsFrame("The row", added, [body], limits.linkFrameBytes);

    for (const column of added) {
      this.columnIndex.set(column, this.columns.length);
      this.columns.push(column);
    }
    const columns = this.columns;
    // Blank where the body has no value; the body's values at their columns (new ones were
    // appended in body order); the first column is the row's name.
    const cells = new Array<string>(columns.length).fill("");
    k = 0;
    let next = known;
    for (const value of body.values()) {
      const index = indexes[k] as number;
      k += 1;
      cells[index === -1 ? next++ : index] = value;
    }
    cells[0] = base;
    if (target !== undefined && target.base === base) {
      // The common write: the row keeps its name, so no row is renamed and the only
      // change is its upsert (what the general path below gives for it, without its bookkeeping).
      target.cells = cells;
      target.at = at;
      this.status = "OK";
      const changes: Change[] = [
        {
          kind: "row",
          dataview: this.address,
          at,
          name: target.name,
          cells: encodeCells(cells),
          ...(added.length > 0 ? { columns: [...columns] } : {}),
        },
      ];
      this.emitHeadlines(changes, at);
      return { name: target.name, changes };
    }
    const renamed = new Map<Row, string>();
    let written: Row;
    if (target === undefined) {
      written = { seq: this.nextSeq++, base, name: "", suffix: 0, cells, at };
      this.rows.set(written.seq, written);
      const created = !this.groups.has(base);
      const group = this.groupOf(base);
      group.push(written);
      renamed.set(written, "");
      if (created) this.baseAdded(base, renamed);
      this.renumber(group, group.length - 1, renamed);
    } else {
      written = target;
      written.cells = cells;
      written.at = at;
      if (target.base !== base) this.rebase(target, base, renamed);
    }
    this.commitNames(renamed);
    const affected = [written, ...renamed.keys()];
    const vacated = [...renamed.values()].filter((name) => name !== "");
    this.status = "OK";
    const changes = this.emit(affected, vacated, added.length > 0, at);
    this.emitHeadlines(changes, at);
    return { name: written.name, changes };
  }

  /**
   * DELETE row: removes the row with that published name; for a base name that is the first of its
   * duplicates, and the rest are renumbered from 1 (seed B, States). Undefined when there is none;
   * otherwise the changes: upserts of the renumbered rows and the delete of the last name.
   */
  deleteRow(pathName: string, at: number = Date.now()): Change[] | undefined {
    const target = this.byName.get(pathName);
    if (target === undefined) return undefined;
    this.rows.delete(target.seq);
    this.byName.delete(target.name);
    const renamed = new Map<Row, string>();
    const group = this.groups.get(target.base) ?? [];
    const index = group.indexOf(target);
    group.splice(index, 1);
    if (group.length === 0) {
      this.groups.delete(target.base);
      this.baseRemoved(target.base, renamed);
    } else this.renumber(group, index, renamed);
    this.commitNames(renamed);
    const followers = [...renamed.keys()];
    const vacated = [target.name, ...renamed.values()];
    const changes = this.emit(followers, vacated, false, at);
    this.emitHeadlines(changes, at);
    return changes;
  }

  /** The dataview as GET shows it: columns, rows under their published names, headlines. */
  state(): DataviewState {
    const rows: RowState[] = [];
    for (const row of this.rows.values())
      rows.push({ name: row.name, cells: cellsRecord(this.columns, row.cells) });
    const headlines: Record<string, string> = Object.create(null);
    for (const [name, value] of this.headlines()) headlines[name] = value;
    return { columns: [...this.columns], rows, headlines };
  }

  /** One row as GET shows it, by published name; undefined when there is none. */
  row(publishedName: string): RowState | undefined {
    const row = this.byName.get(publishedName);
    return row === undefined ? undefined : { name: row.name, cells: cellsRecord(this.columns, row.cells) };
  }

  /** The dataview now, for the state sent on (re)connect: O(rows), sharing the row arrays. */
  snapshot(): DataviewSnapshot {
    const rows: { name: string; cells: readonly string[]; at: number }[] = [];
    for (const row of this.rows.values()) rows.push({ name: row.name, cells: row.cells, at: row.at });
    return {
      address: this.address,
      plugin: this.plugin,
      at: this.at,
      columns: [...this.columns],
      headlines: this.headlines(),
      rows,
    };
  }

  private headlines(): WireHeadlines {
    return [
      ["samplingStatus", this.status],
      ["totalRows", String(this.rows.size)],
    ];
  }

  private emitHeadlines(changes: Change[], at: number): void {
    // `lastHeadlines` always comes from headlines(): the same names in the same order.
    const last = this.lastHeadlines;
    if (last.length === 2 && last[0]?.[1] === this.status && last[1]?.[1] === String(this.rows.size)) return;
    const now = this.headlines();
    const same = now.every(([name, value], i) => {
      const before = this.lastHeadlines[i];
      return before !== undefined && before[0] === name && before[1] === value;
    });
    if (same) return;
    this.lastHeadlines = now;
    this.at = at;
    changes.push({ kind: "headlines", dataview: this.address, at, headlines: now });
  }

  /**
   * Moves `row` from its base name's group to `base`'s, at its place in row order. Every row whose
   * published name changes (in either group, or in a group whose skipped suffixes changed) is
   * recorded in `renamed` with its old name; names are committed by the caller.
   */
  private rebase(row: Row, base: string, renamed: Map<Row, string>): void {
    const oldBase = row.base;
    const oldGroup = this.groups.get(oldBase) ?? [];
    const oldIndex = oldGroup.indexOf(row);
    oldGroup.splice(oldIndex, 1);
    row.base = base;
    const created = !this.groups.has(base);
    const newGroup = this.groupOf(base);
    let lo = 0;
    let hi = newGroup.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((newGroup[mid] as Row).seq < row.seq) lo = mid + 1;
      else hi = mid;
    }
    newGroup.splice(lo, 0, row);
    if (!renamed.has(row)) renamed.set(row, row.name);
    if (oldGroup.length === 0) {
      this.groups.delete(oldBase);
      this.baseRemoved(oldBase, renamed);
    } else this.renumber(oldGroup, oldIndex, renamed);
    if (created) this.baseAdded(base, renamed);
    this.renumber(newGroup, lo, renamed);
  }

  /** The first duplicate suffix after `after` whose name is not a base name in use. */
  private nextSuffix(base: string, after: number): number {
    let suffix = after + 1;
    while (this.groups.has(duplicateName(base, suffix))) suffix += 1;
    return suffix;
  }

  /**
   * Recomputes the suffixes and names of `group` from index `from` on, recording each row whose
   * name changes (with its old name, the first one recorded) in `renamed`; byName is updated by
   * {@link commitNames}.
   */
  private renumber(group: readonly Row[], from: number, renamed: Map<Row, string>): void {
    let suffix = from === 0 ? -1 : (group[from - 1] as Row).suffix;
    for (let i = from; i < group.length; i += 1) {
      const row = group[i] as Row;
      suffix = i === 0 ? 0 : this.nextSuffix(row.base, suffix);
      const name = duplicateName(row.base, suffix);
      if (name === row.name && suffix === row.suffix) continue;
      if (!renamed.has(row)) renamed.set(row, row.name);
      row.suffix = suffix;
      row.name = name;
    }
  }

  /** A base name `x_duplicateN` now in use: the rows of `x` from suffix N on skip it. */
  private baseAdded(base: string, renamed: Map<Row, string>): void {
    this.parentRenumber(base, renamed);
  }

  /** A base name `x_duplicateN` no longer in use: the rows of `x` may take suffix N again. */
  private baseRemoved(base: string, renamed: Map<Row, string>): void {
    this.parentRenumber(base, renamed);
  }

  private parentRenumber(base: string, renamed: Map<Row, string>): void {
    const match = DUPLICATE_NAME.exec(base);
    if (match === null) return;
    const parent = this.groups.get(match[1] as string);
    if (parent === undefined) return;
    const n = Number(match[2]);
    const from = parent.findIndex((row, i) => i > 0 && row.suffix >= n);
    if (from !== -1) this.renumber(parent, from, renamed);
  }

  /** Moves the renamed rows in byName: old names out first, then new names in (names are distinct). */
  private commitNames(renamed: ReadonlyMap<Row, string>): void {
    for (const [row, old] of renamed) if (old !== "" && this.byName.get(old) === row) this.byName.delete(old);
    for (const row of renamed.keys()) if (this.rows.has(row.seq)) this.byName.set(row.name, row);
  }

  /**
   * The changes for rows whose published name or content changed: an upsert per affected row (in
   * row order; the first carries the column list when it changed: a write always upserts its own
   * row), then, for every name no longer held, a delete (a name another row took over is that
   * row's upsert, already sent).
   */
  private emit(
    affected: readonly Row[],
    vacated: readonly string[],
    columnsChanged: boolean,
    at: number,
  ): Change[] {
    const rows = [...new Set(affected)].sort((a, b) => a.seq - b.seq);
    const changes: Change[] = [];
    const upserted = new Set<string>();
    const upsert = (row: Row) => {
      upserted.add(row.name);
      const withColumns = columnsChanged && changes.length === 0;
      changes.push({
        kind: "row",
        dataview: this.address,
        at: row.at,
        name: row.name,
        cells: encodeCells(row.cells),
        ...(withColumns ? { columns: [...this.columns] } : {}),
      });
    };
    for (const row of rows) upsert(row);
    for (const name of new Set(vacated)) {
      if (upserted.has(name)) continue;
      const holder = this.byName.get(name);
      if (holder !== undefined) upsert(holder);
      else changes.push({ kind: "rowDelete", dataview: this.address, at, name });
    }
    return changes;
  }

  private groupOf(base: string): Row[] {
    let group = this.groups.get(base);
    if (group === undefined) {
      group = [];
      this.groups.set(base, group);
    }
    return group;
  }

  private tooManyColumns(limit: number): never {
    throw new VigilError("TOO_MANY_COLUMNS", { dataview: this.address.dataview, limit });
  }
}

/** The 400 for a row name (a first column's value) longer than `limits.nameBytes`. */
/**
 * Throws LIMIT_EXCEEDED (`linkFrameBytes`) when `rows` under `columns` would not travel to the
 * gateway in one link frame (less LINK_FRAME_HEADROOM_BYTES for the changes batched before it):
 * refused here, the client is told, where a frame past the limit would close the link at every
 * try. Counting UTF-16 code units bounds the JSON bytes (at most 6 each) without encoding anything;
 * only a change that may not fit is measured exactly.
 */
function checkFitsFrame(
  what: string,
  columns: readonly string[],
  rows: readonly RowCells[],
  linkFrameBytes: number,
): void {
  const room = linkFrameBytes - LINK_FRAME_HEADROOM_BYTES;
  let units = 64;
  for (const column of columns) units += column.length + 3;
  for (const row of rows) {
    units += 32;
    for (const value of row.values()) units += 2 * (value.length + 3); // in the cells and as the name
  }
  if (units * 6 <= room) return;
  let bytes = 64;
  for (const column of columns) bytes += jsonBytes(column) + 1;
  for (const row of rows) {
    bytes += 32;
    for (const value of row.values()) bytes += 2 * (jsonBytes(value) + 1);
  }
  if (bytes > room)
    throw limitError(
      "linkFrameBytes",
      `${what}, encoded for the probe link (which keeps ${LINK_FRAME_HEADROOM_BYTES} bytes of each frame for the changes beside it)`,
      bytes + LINK_FRAME_HEADROOM_BYTES,
      linkFrameBytes,
    );
}

/** Bytes of `text` as a JSON string, quotes included. */
function jsonBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), "utf8");
}

function rowNameTooLong(where: string, name: string, nameBytes: number): VigilError {
  return limitError("nameBytes", `${where}, its name ${quoted(name)}`, Buffer.byteLength(name), nameBytes);
}
