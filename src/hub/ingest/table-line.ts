/**
 * A reader made for the common line of a backfill body: one public-v2 `table` or `headline` update
 * as a gateway writes it (`JSON.stringify` of the message, no escapes). It reads the line's text
 * without `JSON.parse` and without the schema's validator, and checks exactly what those and the
 * ingester's checks would (check-message.ts), so the line comes out as the same checked row, cells
 * and digest. `JSON.parse` built an object, interning every short string, for every line, and the
 * validator walked it: most of a parse worker's time (docs/performance.md, "Backfill into DuckDB").
 *
 * It takes only what it can decide for certain and leaves every other line to the general path
 * (undefined): a backslash or control character anywhere, any whitespace between tokens, a key it
 * does not expect or one given twice, a value not a string, a `delete` or another type, the
 * optional `computedColumn`/`computedRow`, a row key of digits only (`JSON.parse` puts such keys
 * first), a name or value beyond the setup's `limits`, a time the schema or the store refuses, a lone
 * surrogate, and a setup whose `jsonDepth` is below the message's four levels. Each of those is
 * rare, and the general path gives it its answer, a rejection reason included. A line taken here is
 * `JSON.stringify` of the message it holds (the conditions above are those of canonical-json.ts),
 * so its digest is the SHA-256 of the line. Keys may come in any order (a gateway writes `row`
 * after `filter`; bench/table-messages.ts before it).
 */
import { hash } from "node:crypto";
import { asEpochMs, type EpochMs } from "../../ids.js";
import { type DataLimits, DUPLICATE_SUFFIX_BYTES, overBytes } from "../../limits/data-limits.js";
import type { MetricsTarget } from "../../messages/types.js";
import { isSchemaDateTime } from "../../messages/validate.js";
import { isWellFormed } from "../../text/well-formed.js";
import type { SampleCells } from "../store/sample-rows.js";
import type { MessageKey } from "../store/store.js";
import { entityKeyText, type MetricsRow, metricsRow, numericValue } from "./check-message.js";

/** The nesting of a table message: the message, `data`, `target`, `filter`. */
const MESSAGE_DEPTH = 4;
const QUOTE = 0x22;
/**
 * A backslash (an escape), or a character JSON.parse refuses unescaped in a string or that is
 * whitespace between tokens.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters looked for
const ESCAPE_OR_CONTROL = /[\u0000-\u001f\\]/;
/** A key JSON.parse makes an array index, which objects list before every other key. */
const DIGITS_ONLY = /^\d+$/;

/** The row and key of a line read here; its cells were added to the part's cells. */
export interface TableLine {
  readonly key: MessageKey & { readonly kind: "hash" };
  readonly row: MetricsRow;
}

/**
 * The names of the line read last (its target, columns and entity's key text): the next line mostly
 * repeats them, and takes these strings instead of new copies of the same text.
 */
let previous: Target | undefined;
let previousColumns: readonly string[] = [];
let previousEntityText = "";

/** The last sample time read, and its instant: the lines of one body mostly share it. */
let lastTime = "";
let lastAt = Number.NaN;

/**
 * Reads `line` as a `table` or `headline` update (see the module comment), adding its cells to
 * `cells`; undefined, with `cells` as it was, when the line is left to the general path.
 */
export function readTableLine(line: string, limits: DataLimits, cells: SampleCells): TableLine | undefined {
  if (limits.jsonDepth < MESSAGE_DEPTH || ESCAPE_OR_CONTROL.test(line)) return undefined;
  if (!isWellFormed(line)) return undefined;
  const reader = new LineReader(line);
  const message = reader.message();
  if (message === undefined || reader.at !== line.length) return undefined;
  const { type, operation, data } = message;
  if (type !== "table" && type !== "headline") return undefined;
  if (operation !== "update" && operation !== "create" && operation !== "snapshot") return undefined;
  const { target } = data;
  if ((type === "table") !== (target.row !== undefined)) return undefined;
  const at = timeOf(data.sampleTime);
  if (at === undefined) return undefined;
  if (data.probeTime !== undefined && !isSchemaDateTime(data.probeTime)) return undefined;
  if (
    overBytes(target.row ?? "", limits.nameBytes + DUPLICATE_SUFFIX_BYTES) ||
    overBytes(target.filter.osType, limits.attributeValueBytes)
  )
    return undefined;
  for (const name of [target.gateway, target.probe, target.managedEntity, target.sampler, target.type])
    if (overBytes(name, limits.nameBytes)) return undefined;
  if (overBytes(target.dataview, limits.nameBytes) || overBytes(target.filter.pluginName, limits.nameBytes))
    return undefined;
  // The cells last: nothing is added unless the line is taken.
  const { columns, values } = data.row;
  for (let i = 0; i < columns.length; i++) {
    if (overBytes(columns[i] as string, limits.nameBytes) || overBytes(values[i] as string, limits.cellBytes))
      return undefined;
  }
  for (let i = 0; i < columns.length; i++) {
    const value = values[i] as string;
    // A blank cell is no sample (check-message.ts, addCells).
    if (value !== "") cells.cell(columns[i] as string, value, numericValue(value));
  }
  const { gateway, probe, managedEntity } = target;
  const entityText =
    previous !== undefined &&
    previous.gateway === gateway &&
    previous.probe === probe &&
    previous.managedEntity === managedEntity
      ? previousEntityText
      : entityKeyText(target);
  previous = target;
  previousColumns = columns;
  previousEntityText = entityText;
  return {
    key: { kind: "hash", hash: hash("sha256", line, "hex"), at },
    row: metricsRow(target, entityText, at),
  };
}

/** A sample time the schema accepts and the store can hold (check-message.ts, unstorableTime). */
function timeOf(text: string): EpochMs | undefined {
  if (text !== lastTime) {
    if (!isSchemaDateTime(text)) return undefined;
    lastTime = text;
    lastAt = Date.parse(text);
  }
  return Number.isFinite(lastAt) ? asEpochMs(lastAt) : undefined;
}

/** A target as this reader takes it: a table row's `row`, absent for a headline. */
type Target = Omit<MetricsTarget, "row"> & { row: string | undefined };

interface Row {
  readonly columns: string[];
  readonly values: string[];
}

interface Data {
  sampleTime: string;
  probeTime: string | undefined;
  target: Target;
  row: Row;
}

/**
 * The reader of one line's tokens, each method one object of the message's shape. A method that
 * finds anything else fails the reader (`at` −1, and every later read fails), so nothing read after
 * a failure counts, and the line is left to the general path. Strings need no unescaping: the line
 * holds no backslash. A key is matched where it stands in the line (`is`), not copied out.
 */
class LineReader {
  at = 0;
  /** The current key's text is `[keyStart, keyEnd)` of the line. */
  private keyStart = 0;
  private keyEnd = 0;

  constructor(private readonly line: string) {}

  /** `{"type": string, "operation": string, "data": data}`, in any order. */
  message(): { type: string; operation: string; data: Data } | undefined {
    let type: string | undefined;
    let operation: string | undefined;
    let data: Data | undefined;
    if (!this.open()) return undefined;
    for (let first = true; !this.close(); first = false) {
      if (!this.key(first)) return undefined;
      if (type === undefined && this.is("type")) type = this.string();
      else if (operation === undefined && this.is("operation")) operation = this.string();
      else if (data === undefined && this.is("data")) data = this.data();
      else return this.fail();
    }
    if (type === undefined || operation === undefined || data === undefined) return this.fail();
    return { type, operation, data };
  }

  /** `{"sampleTime", "probeTime"?, "target", "row"}`, in any order. */
  private data(): Data | undefined {
    let sampleTime: string | undefined;
    let probeTime: string | undefined;
    let target: Target | undefined;
    let row: Row | undefined;
    if (!this.open()) return undefined;
    for (let first = true; !this.close(); first = false) {
      if (!this.key(first)) return undefined;
      if (sampleTime === undefined && this.is("sampleTime")) sampleTime = this.string();
      else if (target === undefined && this.is("target")) target = this.target();
      else if (row === undefined && this.is("row")) row = this.row();
      else if (probeTime === undefined && this.is("probeTime")) probeTime = this.string();
      else return this.fail();
    }
    if (sampleTime === undefined || target === undefined || row === undefined) return this.fail();
    return { sampleTime, probeTime, target, row };
  }

  /** The target's names and `filter`, each once, in any order; `row` for a table. */
  private target(): Target | undefined {
    let gateway: string | undefined;
    let probe: string | undefined;
    let managedEntity: string | undefined;
    let type: string | undefined;
    let sampler: string | undefined;
    let dataview: string | undefined;
    let row: string | undefined;
    let filter: Target["filter"] | undefined;
    if (!this.open()) return undefined;
    for (let first = true; !this.close(); first = false) {
      if (!this.key(first)) return undefined;
      const p = previous;
      if (gateway === undefined && this.is("gateway")) gateway = this.string(p?.gateway);
      else if (probe === undefined && this.is("probe")) probe = this.string(p?.probe);
      else if (managedEntity === undefined && this.is("managedEntity"))
        managedEntity = this.string(p?.managedEntity);
      else if (type === undefined && this.is("type")) type = this.string(p?.type);
      else if (sampler === undefined && this.is("sampler")) sampler = this.string(p?.sampler);
      else if (dataview === undefined && this.is("dataview")) dataview = this.string(p?.dataview);
      else if (row === undefined && this.is("row")) row = this.string(p?.row);
      else if (filter === undefined && this.is("filter")) filter = this.filter();
      else return this.fail();
    }
    if (
      gateway === undefined ||
      probe === undefined ||
      managedEntity === undefined ||
      type === undefined ||
      sampler === undefined ||
      dataview === undefined ||
      filter === undefined
    )
      return this.fail();
    return { gateway, probe, managedEntity, type, sampler, dataview, row, filter };
  }

  /** `{"osType": string, "pluginName": string}`, in either order. */
  private filter(): Target["filter"] | undefined {
    let osType: string | undefined;
    let pluginName: string | undefined;
    if (!this.open()) return undefined;
    for (let first = true; !this.close(); first = false) {
      if (!this.key(first)) return undefined;
      const p = previous?.filter;
      if (osType === undefined && this.is("osType")) osType = this.string(p?.osType);
      else if (pluginName === undefined && this.is("pluginName")) pluginName = this.string(p?.pluginName);
      else return this.fail();
    }
    if (osType === undefined || pluginName === undefined) return this.fail();
    const p = previous?.filter;
    return p !== undefined && p.osType === osType && p.pluginName === pluginName ? p : { osType, pluginName };
  }

  /** An object of strings, its keys neither repeated nor of digits only, in the text's order. */
  private row(): Row | undefined {
    const columns: string[] = [];
    const values: string[] = [];
    if (!this.open()) return undefined;
    let seen: Set<string> | undefined;
    for (let first = true; !this.close(); first = false) {
      if (!this.key(first)) return undefined;
      // The previous line's column here when it is the same name (most rows have one set of columns).
      const same = previousColumns[columns.length];
      const column = same !== undefined && this.is(same) ? same : this.line.slice(this.keyStart, this.keyEnd);
      if (DIGITS_ONLY.test(column)) return this.fail();
      // A few columns are compared one by one; a wide row through a set.
      if (seen !== undefined || columns.length >= 16) {
        seen ??= new Set(columns);
        if (seen.has(column)) return this.fail();
        seen.add(column);
      } else if (columns.includes(column)) return this.fail();
      const value = this.string();
      if (value === undefined) return undefined;
      columns.push(column);
      values.push(value);
    }
    if (this.at < 0) return undefined;
    return { columns, values };
  }

  /** `{`, or false (the reader fails). */
  private open(): boolean {
    if (this.line.charCodeAt(this.at) !== 0x7b) {
      this.at = -1;
      return false;
    }
    this.at += 1;
    return true;
  }

  /** `}` ends the object (true); otherwise the object goes on (false). A failed reader ends too. */
  private close(): boolean {
    if (this.at < 0) return true;
    if (this.line.charCodeAt(this.at) !== 0x7d) return false;
    this.at += 1;
    return true;
  }

  /** A key and its colon, after a comma unless it is the object's `first`; false fails the reader. */
  private key(first: boolean): boolean {
    const { line } = this;
    let at = this.at;
    if (!first) {
      if (line.charCodeAt(at) !== 0x2c) return this.failed();
      at += 1;
    }
    if (line.charCodeAt(at) !== QUOTE) return this.failed();
    const end = line.indexOf('"', at + 1);
    if (end < 0 || line.charCodeAt(end + 1) !== 0x3a) return this.failed();
    this.keyStart = at + 1;
    this.keyEnd = end;
    this.at = end + 2;
    return true;
  }

  /** Whether the current key is `name`. */
  private is(name: string): boolean {
    return this.keyEnd - this.keyStart === name.length && this.line.startsWith(name, this.keyStart);
  }

  /**
   * A string (no escapes: the line holds no backslash); `same` itself when the string is that text
   * (a name of the line before), so a repeated name is neither copied nor hashed again.
   */
  private string(same?: string): string | undefined {
    const { line, at } = this;
    if (at < 0 || line.charCodeAt(at) !== QUOTE) return this.fail();
    if (
      same !== undefined &&
      line.charCodeAt(at + 1 + same.length) === QUOTE &&
      line.startsWith(same, at + 1)
    ) {
      this.at = at + same.length + 2;
      return same;
    }
    const end = line.indexOf('"', at + 1);
    if (end < 0) return this.fail();
    this.at = end + 1;
    return line.slice(at + 1, end);
  }

  private fail(): undefined {
    this.at = -1;
    return undefined;
  }

  private failed(): false {
    this.at = -1;
    return false;
  }
}
