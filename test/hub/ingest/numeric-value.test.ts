/**
 * A cell's number (`numericValue`, src/hub/ingest/check-message.ts): the usual cell is read without
 * `Number` (its digits over a power of ten), and must give the double `Number` gives, `-0` included;
 * every text is read as the definition says: trimmed, a plain decimal, finite. Property against the
 * definition written out, and examples.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { numericValue } from "../../../src/hub/ingest/check-message.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

/** The definition: a plain decimal once trimmed, read by `Number`, when finite. */
function defined(text: string): number | null {
  const trimmed = text.trim();
  if (!/^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : null;
}

describe("a cell's number", () => {
  // biome-ignore format: one case per line
  const cases: [string, number | null][] = [
    ["7", 7], ["-0", -0], ["0.1", 0.1], ["-12.5", -12.5], ["123456789012345", 123456789012345],
    ["1234567890123456789", 1234567890123456800], ["0.30000000000000004", 0.30000000000000004],
    ["1.", 1], [".5", 0.5], [" 7 ", 7], ["+1", 1], ["1e3", 1000], ["1e999", null], ["-", null],
    ["", null], ["1.2.3", null], ["0x10", null], ["Infinity", null], ["12 %", null],
  ];
  for (const [text, value] of cases) {
    it(`${JSON.stringify(text)} is ${String(value)}`, () => assert.ok(Object.is(numericValue(text), value)));
  }

  it("property: every text reads as the definition reads it, to the bit", () =>
    fc.assert(
      fc.property(
        fc.oneof(
          fc.stringMatching(/^-?[0-9]{0,18}(\.[0-9]{0,18})?$/),
          fc.double().map(String),
          fc.integer({ min: -1e9, max: 1e9 }).map((n) => String(n / 1000)),
          fc.stringMatching(/^[ +-]?[0-9.]{0,17}[ eE]?[0-9]?$/),
          fc.string({ maxLength: 8 }),
        ),
        (text) => assert.ok(Object.is(numericValue(text), defined(text)), JSON.stringify(text)),
      ),
      fuzzBudget(50_000),
    ));
});
