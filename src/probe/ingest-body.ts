/**
 * Parsing of ingest request bodies (DESIGN 3.2). The body is parsed as JSON whatever the
 * Content-Type, so curl's default form content type works. Cells may be strings, numbers, booleans
 * or null; they are kept as strings, null as blank; an object or array cell is refused.
 *
 * Values pass through exactly as sent: a number cell's text is its JSON source text
 * (`9007199254740993`, `1.50`, `1e3`, `-0` stay as written), and columns keep the order they were
 * sent in. `JSON.parse` loses both: numbers become doubles, and objects list array-index-like keys
 * (`"10"`, `"2"`) first, which would change the first column and so the row name. So the body is
 * read by {@link ExactReader}, one strict pass over the text for exactly the two body shapes (an
 * array of row objects, one row object, cells scalars) that keeps each number's source text and
 * each row's key order in a `Map`. When it refuses a body, `JSON.parse` and a walk over its value
 * say what is wrong (their messages are the 400 bodies); the reader accepts nothing that
 * `JSON.parse` refuses (test/probe/ingest-exact.test.ts checks both ways on random texts).
 * Measured on a 1 KB row body and a 200-row dataview body: as fast as the
 * previous `JSON.parse` and walk for string cells, about 1.7× faster for number cells (that walk
 * paid for `String(double)`), and 2× faster than lossless-json. lossless-json is not used: it
 * builds plain objects (the key order problem stays), throws on duplicate keys that `JSON.parse`
 * accepts, and recurses per nesting level.
 *
 * Column names are data (house rules): each row becomes a `Map`, so `__proto__` and `constructor`
 * are ordinary columns. The body must be UTF-8 (RFC 8259 §8.1; a malformed byte would otherwise be
 * replaced silently), every name and value well-formed Unicode (a lone surrogate cannot be stored or
 * sent as UTF-8 unchanged), and a cell at most `maxCellLength` long (DESIGN 2 `gateway.maxCellLength`).
 * The setup's `limits` (DESIGN 5.4b) apply beside it, in bytes of UTF-8: a column name at most
 * `limits.nameBytes`, a value at most `limits.cellBytes` (LIMIT_EXCEEDED). A body the reader
 * refuses is scanned for its nesting depth (`limits.jsonDepth`) before JSON.parse builds it; one
 * the reader accepts nests two levels at most.
 * A key repeated in one row object follows `JSON.parse`'s rule: the last value, at the first key's
 * position.
 */
import { isUtf8 } from "node:buffer";
import { type ErrorCode, VigilError } from "../errors/catalog.js";
import { overBytes } from "../limits/data-limits.js";
import { jsonTextTooDeep } from "../limits/json-depth.js";
import { limitError } from "../limits/limit-refusals.js";
import { isWellFormed } from "../text/well-formed.js";
import type { RowCells } from "./dataview-model.js";

/** What bounds the cells of a body. */
export interface BodyLimits {
  /** Longest cell value and column name, in UTF-16 code units (`gateway.maxCellLength`). */
  readonly maxCellLength: number;
  /** Longest column name, in bytes of UTF-8 (`limits.nameBytes`). */
  readonly nameBytes: number;
  /** Longest cell value, in bytes of UTF-8 (`limits.cellBytes`). */
  readonly cellBytes: number;
  /** Deepest nesting of the body (`limits.jsonDepth`). */
  readonly jsonDepth: number;
}

/** The body as text, refused when missing or not UTF-8. */
function bodyText(body: Buffer | undefined, code: ErrorCode, expected: string): string {
  if (body === undefined || body.length === 0) {
    throw new VigilError("NO_BODY", { expected });
  }
  if (!isUtf8(body)) {
    throw new VigilError(code, { detail: `The body is not valid UTF-8; send ${expected} as UTF-8 text.` });
  }
  return body.toString("utf8");
}

function parseJson(text: string, code: ErrorCode, expected: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new VigilError(code, {
      detail: `The body is not valid JSON (${(error as Error).message}); send ${expected}.`,
    });
  }
}

/** A column name as it can be quoted in an error (short, and never a lone surrogate). */
function shown(column: string): string {
  const short = column.length > 64 ? `${column.slice(0, 64)}…` : column;
  // In a `u` regular expression a surrogate range matches lone surrogates only.
  return isWellFormed(short) ? short : short.replace(/[\uD800-\uDFFF]/gu, "\uFFFD");
}

/**
 * Refuses an empty or ill-formed column name, an over-long name or value, an ill-formed value.
 * `decoded` says whether the name or value may hold a lone surrogate: only text decoded from a JSON
 * escape can (text cut from a valid UTF-8 body at ASCII delimiters is well-formed).
 */
function checkCell(
  column: string,
  text: string,
  where: string,
  code: ErrorCode,
  limits: BodyLimits,
  decoded = true,
): void {
  if (column === "") {
    throw new VigilError(code, { detail: `${where} has a column with an empty name; name every column.` });
  }
  if (decoded && !isWellFormed(column)) {
    throw new VigilError(code, {
      detail: `${where} has a column name that is not well-formed Unicode (a lone surrogate, '${shown(column)}'); send valid UTF-16 text.`,
    });
  }
  if (overBytes(column, limits.nameBytes)) {
    throw limitError(
      "nameBytes",
      `${where}, column name '${shown(column)}'`,
      Buffer.byteLength(column),
      limits.nameBytes,
    );
  }
  if (overBytes(text, limits.cellBytes)) {
    throw limitError(
      "cellBytes",
      `${where}, column '${shown(column)}'`,
      Buffer.byteLength(text),
      limits.cellBytes,
    );
  }
  if (column.length > limits.maxCellLength) {
    throw new VigilError("CELL_TOO_LONG", {
      where,
      column: `${shown(column)} (its name)`,
      length: column.length,
      limit: limits.maxCellLength,
    });
  }
  if (text.length > limits.maxCellLength) {
    throw new VigilError("CELL_TOO_LONG", {
      where,
      column: shown(column),
      length: text.length,
      limit: limits.maxCellLength,
    });
  }
  if (decoded && !isWellFormed(text)) {
    throw new VigilError(code, {
      detail: `${where}, column '${shown(column)}': the value is not well-formed Unicode (a lone surrogate); send valid UTF-16 text.`,
    });
  }
}

/**
 * The walk over one row as JSON.parse gave it, run only to say why {@link ExactReader} refused the
 * body: it throws the 400 for a row that is not an object or a cell that is not a scalar, and
 * checks the names and values like the reader's rows.
 */
function toCells(value: unknown, where: string, code: ErrorCode, limits: BodyLimits): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new VigilError(code, { detail: `${where} must be a JSON object of column name to value.` });
  }
  const record = value as Record<string, unknown>;
  for (const column of Object.keys(record)) {
    const cell = record[column];
    if (cell !== null && typeof cell === "object") {
      throw new VigilError(code, {
        detail: `${where}, column '${shown(column)}': a cell must be a string, number, boolean or null, not ${Array.isArray(cell) ? "an array" : "an object"}.`,
      });
    }
    checkCell(column, typeof cell === "string" ? cell : String(cell), where, code, limits);
  }
}

/** Thrown inside {@link ExactReader} when the text is not the expected shape of valid JSON. */
const REFUSED = Symbol("refused");

/** A character JSON does not allow unescaped in a string (RFC 8259 §7). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly the characters to find
const CONTROL = /[\u0000-\u001f]/;

/** Column names of recent rows by position (see ExactReader.column), at most this many and this long. */
const KNOWN_COLUMNS: string[] = [];
const KNOWN_COLUMN_POSITIONS = 256; // columns
const KNOWN_COLUMN_LENGTH = 256; // UTF-16 code units

/** Whether a JSON string's text without escapes is `text` itself: no quote, backslash or control. */
function literal(text: string): boolean {
  return text.indexOf('"') === -1 && text.indexOf("\\") === -1 && !CONTROL.test(text) && isWellFormed(text);
}

/**
 * One strict pass over a body for the two shapes of this API: `[ row, … ]` and `row`, where a row
 * is `{ "column": scalar, … }` and a scalar a string, number, `true`, `false` or `null`. Each row
 * is a Map in key order (a repeated key keeps its first position and takes the last value, as in
 * JSON.parse); each cell its exact text: a number's source text, a string's value (escapes are
 * decoded by JSON.parse on that one string), `true`, `false`, null as blank. Returns undefined
 * for anything else — invalid JSON, another shape, a nested cell — and the caller then lets
 * JSON.parse say what is wrong. Iterative: nesting cannot exhaust the stack.
 */
class ExactReader {
  private i = 0;
  /** Whether the text holds any control character: only then are strings checked for them. */
  private readonly controls: boolean;
  /**
   * Whether a string with an escape was decoded: only such a string can hold a lone surrogate, so
   * without one the cells need no well-formedness check (the body is valid UTF-8).
   */
  escaped = false;

  /** Whether the text holds any backslash: only then are strings searched for escapes. */
  private readonly backslashes: boolean;

  constructor(private readonly text: string) {
    this.controls = CONTROL.test(text);
    this.backslashes = text.indexOf("\\") !== -1;
  }

  /** `[ row, … ]` and nothing after it but whitespace. */
  rows(): Map<string, string>[] | undefined {
    return this.whole(() => {
      if (this.space() !== 0x5b) throw REFUSED; // [
      this.i += 1;
      const rows: Map<string, string>[] = [];
      if (this.space() === 0x5d) {
        this.i += 1;
        return rows;
      }
      for (;;) {
        rows.push(this.row());
        const c = this.space();
        this.i += 1;
        if (c === 0x5d) return rows; // ]
        if (c !== 0x2c) throw REFUSED; // ,
        this.space();
      }
    });
  }

  /** One row object and nothing after it but whitespace. */
  singleRow(): Map<string, string> | undefined {
    return this.whole(() => {
      this.space();
      return this.row();
    });
  }

  private whole<T>(read: () => T): T | undefined {
    try {
      const value = read();
      this.space();
      return this.i === this.text.length ? value : undefined;
    } catch (error) {
      if (error === REFUSED) return undefined;
      throw error;
    }
  }

  /** `{ "column": scalar, … }` at the offset. */
  private row(): Map<string, string> {
    const text = this.text;
    if (text.charCodeAt(this.i) !== 0x7b) throw REFUSED; // {
    this.i += 1;
    const cells = new Map<string, string>();
    let c = this.space();
    if (c === 0x7d) {
      this.i += 1;
      return cells;
    }
    for (let position = 0; ; position += 1) {
      if (c !== 0x22) throw REFUSED; // "
      const column = this.column(position);
      if (this.space() !== 0x3a) throw REFUSED; // :
      this.i += 1;
      c = this.space();
      let value: string;
      if (c === 0x22) value = this.string();
      else if (c === 0x74) value = this.word("true");
      else if (c === 0x66) value = this.word("false");
      else if (c === 0x6e) value = this.word("null") && "";
      else value = this.number();
      cells.set(column, value);
      c = this.space();
      this.i += 1;
      if (c === 0x7d) return cells; // }
      if (c !== 0x2c) throw REFUSED; // ,
      c = this.space();
    }
  }

  /**
   * A column name at the offset (its opening quote): the very string an earlier row had at this
   * position when the text spells it (rows repeat their column names, so most names
   * cost neither a new string nor hashing it again in the Maps that use it), else a new one.
   */
  private column(position: number): string {
    const known = KNOWN_COLUMNS[position];
    if (known !== undefined) {
      const start = this.i + 1;
      const end = start + known.length;
      // `known` holds no quote, backslash or control character: the text between these quotes is
      // exactly `known` and that is also its decoded value.
      if (this.text.charCodeAt(end) === 0x22 && this.text.startsWith(known, start)) {
        this.i = end + 1;
        return known;
      }
    }
    const column = this.string();
    if (position < KNOWN_COLUMN_POSITIONS && column.length <= KNOWN_COLUMN_LENGTH && literal(column)) {
      KNOWN_COLUMNS[position] = column;
    }
    return column;
  }

  /** A string at the offset (its opening quote), decoded. */
  private string(): string {
    const text = this.text;
    const start = this.i;
    let end = start;
    for (;;) {
      end = text.indexOf('"', end + 1);
      if (end === -1) throw REFUSED;
      let slashes = 0;
      while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes += 1;
      if (slashes % 2 === 0) break;
    }
    this.i = end + 1;
    const raw = text.slice(start + 1, end);
    if (this.backslashes && raw.indexOf("\\") !== -1) {
      // Escapes are decoded by JSON.parse itself, so `\uD800` and the rest mean what they mean there.
      this.escaped = true;
      try {
        return JSON.parse(text.slice(start, end + 1)) as string;
      } catch {
        throw REFUSED;
      }
    }
    if (this.controls && CONTROL.test(raw)) throw REFUSED;
    return raw;
  }

  /**
   * A JSON number token (RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`) at
   * the offset: its source text. Scanned by hand: a sticky regular expression per cell cost about a
   * tenth of a number-heavy row body's time.
   */
  private number(): string {
    const text = this.text;
    const start = this.i;
    let i = start;
    let c = text.charCodeAt(i);
    if (c === 0x2d) c = text.charCodeAt(++i); // -
    // 0, or a digit 1-9 and more digits
    if (c === 0x30) c = text.charCodeAt(++i);
    else if (c >= 0x31 && c <= 0x39) {
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    } else throw REFUSED;
    if (c === 0x2e) {
      // . and at least one digit
      c = text.charCodeAt(++i);
      if (!(c >= 0x30 && c <= 0x39)) throw REFUSED;
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    }
    if (c === 0x65 || c === 0x45) {
      // e or E, an optional sign and at least one digit
      c = text.charCodeAt(++i);
      if (c === 0x2b || c === 0x2d) c = text.charCodeAt(++i);
      if (!(c >= 0x30 && c <= 0x39)) throw REFUSED;
      do c = text.charCodeAt(++i);
      while (c >= 0x30 && c <= 0x39);
    }
    this.i = i;
    return text.slice(start, i);
  }

  private word(word: string): string {
    if (!this.text.startsWith(word, this.i)) throw REFUSED;
    this.i += word.length;
    return word;
  }

  /** Skips JSON whitespace; returns the character code at the new offset (NaN at the end). */
  private space(): number {
    const text = this.text;
    let c = text.charCodeAt(this.i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++this.i);
    return c;
  }
}

/** Checks the names and values of a row the reader gave (`decoded`: see {@link checkCell}). */
function checkRow(
  row: Map<string, string>,
  where: string,
  code: ErrorCode,
  limits: BodyLimits,
  decoded: boolean,
): Map<string, string> {
  // forEach: no [name, value] pair allocated per cell.
  row.forEach((text, column) => {
    checkCell(column, text, where, code, limits, decoded);
  });
  return row;
}

/** The error for a body the reader refused: JSON.parse and the walk say what is wrong. */
function refusal(
  text: string,
  code: ErrorCode,
  expected: string,
  limits: BodyLimits,
  walk: (value: unknown) => void,
): Error {
  // Before JSON.parse builds it: a deep text costs the parse and whatever walks it next.
  if (jsonTextTooDeep(text, limits.jsonDepth)) {
    throw limitError(
      "jsonDepth",
      "The body nests arrays and objects",
      limits.jsonDepth + 1,
      limits.jsonDepth,
      "levels or more",
    );
  }
  walk(parseJson(text, code, expected));
  // The walk found nothing wrong: the reader refused what JSON.parse accepts, a bug of the reader
  // (the central handler logs it and answers 500).
  return new Error("the exact JSON reader refused a body that JSON.parse accepts");
}

/** Body of PUT dataview: a JSON array of row objects. */
export function parseDataviewBody(body: Buffer | undefined, limits: BodyLimits): RowCells[] {
  const expected = "a JSON array of row objects (column name to value)";
  const code = "INVALID_DATAVIEW";
  const text = bodyText(body, code, expected);
  const reader = new ExactReader(text);
  const rows = reader.rows();
  if (rows !== undefined) {
    return rows.map((row, index) => checkRow(row, `Row ${index}`, code, limits, reader.escaped));
  }
  throw refusal(text, code, expected, limits, (value) => {
    if (!Array.isArray(value)) throw new VigilError(code, { detail: `The body must be ${expected}.` });
    for (const [index, row] of value.entries()) toCells(row, `Row ${index}`, code, limits);
  });
}

/** Body of PUT row: one JSON row object. */
export function parseRowBody(body: Buffer | undefined, limits: BodyLimits): RowCells {
  const expected = "one JSON row object (column name to value)";
  const code = "INVALID_ROW";
  const text = bodyText(body, code, expected);
  const reader = new ExactReader(text);
  const row = reader.singleRow();
  if (row !== undefined) return checkRow(row, "The body", code, limits, reader.escaped);
  throw refusal(text, code, expected, limits, (value) => toCells(value, "The body", code, limits));
}

/**
 * The `Column-Order` header: comma-separated column names, blanks ignored; a name longer than
 * `nameBytes` is refused (LIMIT_EXCEEDED).
 */
export function parseColumnOrder(header: string | string[] | undefined, nameBytes: number): string[] {
  const text = Array.isArray(header) ? header.join(",") : (header ?? "");
  if (text === "") return [];
  const names = text
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  for (const name of names) {
    if (overBytes(name, nameBytes)) {
      throw limitError(
        "nameBytes",
        `The Column-Order header, column name '${shown(name)}'`,
        Buffer.byteLength(name),
        nameBytes,
      );
    }
  }
  return names;
}
