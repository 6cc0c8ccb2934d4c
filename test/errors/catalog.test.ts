/**
 * STYLE 8: docs/errors.md and the catalog agree both ways (every code documented with its status,
 * title and body; every documented code exists), and errors render the one body shape.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ERRORS, errorBody, VigilError } from "../../src/errors/catalog.js";

const doc = readFileSync(join(import.meta.dirname, "..", "..", "docs", "errors.md"), "utf8");
/** The table rows of docs/errors.md as trimmed cells, whatever the column padding. */
const rows = doc
  .split("\n")
  .filter((line) => line.startsWith("|"))
  .map((line) =>
    line
      .split("|")
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );

describe("error catalog", () => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    test(`${code} is listed in docs/errors.md with its status and title`, () => {
      const row = rows.find((cells) => cells[0] === `\`${code}\``);
      assert.ok(row, `docs/errors.md has no row for ${code}`);
      assert.deepEqual(
        row.slice(1, 4),
        [String(spec.status), spec.title, spec.body.replaceAll("|", "\\|")],
        `row for ${code} is out of date`,
      );
    });
  }

  test("every code docs/errors.md lists is in the catalog", () => {
    const documented = rows
      .map((cells) => /^`([A-Z0-9_]+)`$/.exec(cells[0] ?? "")?.[1])
      .filter((c) => c !== undefined);
    assert.ok(documented.length > 0, "docs/errors.md lists no code");
    const unknown = documented.filter((code) => !Object.hasOwn(ERRORS, code));
    assert.deepEqual(unknown, [], "docs/errors.md lists codes the catalog does not have");
    assert.equal(new Set(documented).size, documented.length, "docs/errors.md lists a code twice");
  });

  test("fields fill the body template; unknown placeholders stay visible", () => {
    const error = new VigilError("DATAVIEW_NOT_FOUND", { sampler: "orders" });
    assert.deepEqual(errorBody(error), {
      status: 404,
      title: "Dataview not found",
      body: "Sampler 'orders' has no dataview '{dataview}'; create it with PUT on the dataview path first.",
    });
  });

  test("a cause is chained", () => {
    const cause = new Error("low level");
    assert.equal(new VigilError("INTERNAL", { requestId: "r1" }, { cause }).cause, cause);
  });
});
