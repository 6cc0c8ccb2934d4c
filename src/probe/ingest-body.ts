/**
 * Parsing of ingest request bodies (DESIGN 3.2). The body is parsed as JSON whatever the
 * Content-Type, so curl's default form content type works. Cells may be strings, numbers, booleans
 * or null; they are kept as strings, null as blank; an object or array cell is refused.
 */
import { type ErrorCode, VigilError } from "../errors/catalog.js";
import type { Cells } from "./dataview-model.js";

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

function toCells(value: unknown, where: string, code: ErrorCode): Cells {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new VigilError(code, { detail: `${where} must be a JSON object of column name to value.` });
  }
  const cells: Cells = {};
  for (const [column, cell] of Object.entries(value)) {
    if (column === "") {
      throw new VigilError(code, { detail: `${where} has a column with an empty name; name every column.` });
    }
    if (cell === null) cells[column] = "";
    else if (typeof cell === "string") cells[column] = cell;
    else if (typeof cell === "number" || typeof cell === "boolean") cells[column] = String(cell);
    else {
      throw new VigilError(code, {
        detail: `${where}, column '${column}': a cell must be a string, number, boolean or null, not ${Array.isArray(cell) ? "an array" : "an object"}.`,
      });
    }
  }
  return cells;
}

/** Body of PUT dataview: a JSON array of row objects. */
export function parseDataviewBody(body: Buffer | undefined): Cells[] {
  const expected = "a JSON array of row objects (column name to value)";
  const value = parseJson(body, "INVALID_DATAVIEW", expected);
  if (!Array.isArray(value)) {
    throw new VigilError("INVALID_DATAVIEW", { detail: `The body must be ${expected}.` });
  }
  return value.map((row, index) => toCells(row, `Row ${index}`, "INVALID_DATAVIEW"));
}

/** Body of PUT row: one JSON row object. */
export function parseRowBody(body: Buffer | undefined): Cells {
  const value = parseJson(body, "INVALID_ROW", "one JSON row object (column name to value)");
  return toCells(value, "The body", "INVALID_ROW");
}

/** The `Column-Order` header: comma-separated column names, blanks ignored. */
export function parseColumnOrder(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(",") : (header ?? "");
  return text
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
}
