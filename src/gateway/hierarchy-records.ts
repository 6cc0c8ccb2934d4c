/**
 * What the hierarchy keeps of a probe's dataviews and rows, and the pure functions over it: the
 * keys of samplers and dataviews (names are data: JSON of the path), whether a row or the
 * headlines changed, and the prototype-less records of a row's or headlines' values that
 * messages carry (DESIGN 4.3).
 */
import { DEFAULT_ROW_LIMIT } from "../config/defaults.js";
import type { GatewaySetup, SamplerSetup } from "../config/setup.js";
import type { DataviewAddress, ProbeParameters, WireHeadlines, WireSeverities } from "../link/protocol.js";

/** A row as the gateway last published it. */
export interface RowRecord {
  /** The dataview's columns when the row was last written (its published columns). */
  readonly columns: readonly string[];
  /** Values in that column order, possibly shorter (the rest are blank). */
  readonly cells: readonly string[];
  readonly at: number;
  /** Cell severities its sampler set (fkm `matches`, DESIGN 3.4). */
  readonly severities?: WireSeverities | undefined;
}

/** A dataview of a probe as the gateway holds it. */
export interface DataviewRecord {
  readonly address: DataviewAddress;
  readonly samplerKey: string;
  plugin: string;
  columns: readonly string[];
  readonly rows: Map<string, RowRecord>;
  headlines: WireHeadlines;
  headlinesAt: number;
}

/** The map key of a sampler of a probe: `[managedEntity, sampler, type]`. */
export const samplerKeyOf = (managedEntity: string, sampler: string, type: string): string =>
  JSON.stringify([managedEntity, sampler, type]);

/** The map key of a dataview of a probe: `[managedEntity, sampler, samplerType, dataview]`. */
export const dataviewKeyOf = (a: DataviewAddress): string =>
  JSON.stringify([a.managedEntity, a.sampler, a.samplerType, a.dataview]);

/** Whether a probe's parameters are unchanged. */
export function sameParameters(a: ProbeParameters, b: ProbeParameters): boolean {
  return (
    a.osType === b.osType &&
    a.HostName === b.HostName &&
    a.Port === b.Port &&
    a.OS === b.OS &&
    a.Version === b.Version
  );
}

/** Whether a dataview's headlines are unchanged (names, values and order). */
export function sameHeadlines(a: WireHeadlines, b: WireHeadlines): boolean {
  return a.length === b.length && a.every(([name, value], i) => b[i]?.[0] === name && b[i]?.[1] === value);
}

/** A row's published content, blanks left out (a blank cell and a missing column read the same). */
function content(row: RowRecord): Map<string, string> {
  const out = new Map<string, string>();
  row.columns.forEach((column, i) => {
    const value = row.cells[i] ?? "";
    if (value !== "") out.set(column, value);
  });
  return out;
}

/** Whether two rows publish the same values (a new blank column is no difference). */
export function sameRow(a: RowRecord, b: RowRecord): boolean {
  const sameColumns =
    a.columns === b.columns ||
    (a.columns.length === b.columns.length && a.columns.every((c, i) => b.columns[i] === c));
  if (sameColumns) {
    const n = Math.max(a.cells.length, b.cells.length);
    for (let i = 0; i < n; i += 1) if ((a.cells[i] ?? "") !== (b.cells[i] ?? "")) return false;
    return true;
  }
  const left = content(a);
  const right = content(b);
  if (left.size !== right.size) return false;
  for (const [column, value] of left) if (right.get(column) !== value) return false;
  return true;
}

/**
 * Row templates by columns array: null once the columns were seen, a template from the second
 * time on (a dataview's rows share their columns array until its columns change).
 */
const rowTemplates = new WeakMap<readonly string[], object | null>();

/**
 * A prototype-less record of a row, for one message (column names are data). Such a record made
 * key by key is a dictionary, slow to build and to walk (the schema check, the sinks): from the
 * second row with the same columns it is a copy of a template with those keys, which V8 keeps in
 * its fast form, then its prototype removed. Same keys, order and values either way.
 */
export function rowObject(row: RowRecord): Record<string, string> {
  const { columns, cells } = row;
  let template = rowTemplates.get(columns);
  if (template === null) {
    template = templateOf(columns);
    rowTemplates.set(columns, template);
  } else if (template === undefined) rowTemplates.set(columns, null);
  let out: Record<string, string>;
  if (template === undefined) out = Object.create(null);
  else {
    out = { ...template };
    Object.setPrototypeOf(out, null);
  }
  for (let i = 0; i < columns.length; i += 1) out[columns[i] as string] = cells[i] ?? "";
  return out;
}

/** An object with the keys `columns` in their order, as JSON.parse builds it (own data properties). */
function templateOf(columns: readonly string[]): object {
  const keys: Record<string, string> = Object.create(null);
  for (const column of columns) keys[column] = "";
  return JSON.parse(JSON.stringify(keys)) as object;
}

/** A prototype-less record of headlines (their names are data). */
export function headlinesObject(headlines: WireHeadlines): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of headlines) out[name] = value;
  return out;
}

/** Rows a dataview of the sampler may hold: an fkm its keywords (at least DEFAULT_ROW_LIMIT), else the gateway's `customDataviewMaxRows` or the sampler's `rowLimit`. */
export function maxRowsOf(sampler: SamplerSetup, gateway: GatewaySetup): number {
  if (sampler.plugin === "fkm") return Math.max(sampler.keywords.length, DEFAULT_ROW_LIMIT);
  return gateway.customDataviewMaxRows > 0 ? gateway.customDataviewMaxRows : sampler.rowLimit;
}
