/**
 * A plain-text table for the client commands. Cells hold names that clients of the hub chose, so
 * control and bidirectional-override characters are shown escaped (`\u001b`): printed raw they could
 * move the cursor or recolour the terminal. Widths count code points; a cell longer than
 * TABLE_CELL_MAX_CHARS is cut with `…`. Cells that read as numbers are right-aligned.
 */

export const TABLE_CELL_MAX_CHARS = 80;

// C0, DEL, C1, and the Unicode bidi embeddings, overrides and isolates (UAX #9).
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly the characters to escape
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

/** A cell as it may be printed: unsafe characters escaped, cut to TABLE_CELL_MAX_CHARS code points. */
export function safeCell(text: string): string {
  const escaped = text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const points = [...escaped];
  return points.length > TABLE_CELL_MAX_CHARS
    ? `${points.slice(0, TABLE_CELL_MAX_CHARS - 1).join("")}…`
    : escaped;
}

/** Renders a header line, a rule, and one line per row, columns separated by two spaces. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const head = headers.map(safeCell);
  const body = rows.map((row) => headers.map((_, i) => safeCell(row[i] ?? "")));
  const widths = head.map((h, i) =>
    Math.max([...h].length, ...body.map((row) => [...(row[i] ?? "")].length)),
  );
  const numeric = headers.map(
    (_, i) => body.length > 0 && body.every((row) => isNumberOrBlank(row[i] ?? "")),
  );
  const line = (cells: readonly string[], header: boolean) =>
    cells
      .map((cell, i) => {
        const pad = " ".repeat((widths[i] ?? 0) - [...cell].length);
        return numeric[i] === true && !header ? pad + cell : cell + pad;
      })
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(head, true), rule, ...body.map((row) => line(row, false))].join("\n");
}

function isNumberOrBlank(text: string): boolean {
  return text === "" || NUMBER.test(text);
}
