/**
 * Parsing of ingest request bodies (DESIGN 3.2). The body is parsed as JSON whatever the
 * Content-Type, so curl's default form content type works. Cells may be strings, numbers, booleans
 * or null; they are kept as strings, null as blank; an object or array cell is refused.
 *
 * Column names are data (STYLE, house rules): each row becomes a `Map`, so `__proto__` and
 * `constructor` are ordinary columns. Every name and value must be well-formed Unicode (a lone
 * surrogate cannot be stored or sent as UTF-8 unchanged) and a cell at most `maxCellLength` long
 * (DESIGN 2 `gateway.maxCellLength`).
 */
import { type ErrorCode, VigilError } from "../errors/catalog.js";
import { isWellFormed } from "../text/well-formed.js";
import type { RowCells } from "./dataview-model.js";

/** What bounds the cells of a body. */
export interface BodyLimits {
  /** Longest cell value and column name, in UTF-16 code units. */
  readonly maxCellLength: number;
}

function parseJson(body: Buffer | undefined, code: ErrorCode, expected: string): unknown {
  if (body === undefined || body.length === 0) {
    throw new VigilError("NO_BODY", { expected });
  }
  try {
    return JSON.parse(body.toString("utf8"));
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

function toCells(value: unknown, where: string, code: ErrorCode, limits: BodyLimits): Map<string, string> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new VigilError(code, { detail: `${where} must be a JSON object of column name to value.` });
  }
  const cells = new Map<string, string>();
  for (const [column, cell] of Object.entries(value)) {
    if (column === "") {
      throw new VigilError(code, { detail: `${where} has a column with an empty name; name every column.` });
    }
    if (!isWellFormed(column)) {
      throw new VigilError(code, {
        detail: `${where} has a column name that is not well-formed Unicode (a lone surrogate, '${shown(column)}'); send valid UTF-16 text.`,
      });
    }
    if (column.length > limits.maxCellLength) {
      throw new VigilError("CELL_TOO_LONG", {
        where,
        column: `${shown(column)} (its name)`,
        length: column.length,
        limit: limits.maxCellLength,
      });
    }
    let text: string;
    if (cell === null) text = "";
    else if (typeof cell === "string") text = cell;
    else if (typeof cell === "number" || typeof cell === "boolean") text = String(cell);
    else {
      throw new VigilError(code, {
        detail: `${where}, column '${shown(column)}': a cell must be a string, number, boolean or null, not ${Array.isArray(cell) ? "an array" : "an object"}.`,
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
    if (!isWellFormed(text)) {
      throw new VigilError(code, {
        detail: `${where}, column '${shown(column)}': the value is not well-formed Unicode (a lone surrogate); send valid UTF-16 text.`,
      });
    }
    cells.set(column, text);
  }
  return cells;
}

/** Body of PUT dataview: a JSON array of row objects. */
export function parseDataviewBody(body: Buffer | undefined, limits: BodyLimits): RowCells[] {
  const expected = "a JSON array of row objects (column name to value)";
  const value = parseJson(body, "INVALID_DATAVIEW", expected);
  if (!Array.isArray(value)) {
    throw new VigilError("INVALID_DATAVIEW", { detail: `The body must be ${expected}.` });
  }
  return value.map((row, index) => toCells(row, `Row ${index}`, "INVALID_DATAVIEW", limits));
}

/** Body of PUT row: one JSON row object. */
export function parseRowBody(body: Buffer | undefined, limits: BodyLimits): RowCells {
  const value = parseJson(body, "INVALID_ROW", "one JSON row object (column name to value)");
  return toCells(value, "The body", "INVALID_ROW", limits);
}

/** The `Column-Order` header: comma-separated column names, blanks ignored. */
export function parseColumnOrder(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(",") : (header ?? "");
  return text
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
}
