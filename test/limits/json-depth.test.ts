/**
 * The JSON depth scan: for every JSON value (property, random values and their text), the scan's
 * answer is the value's real nesting depth compared with the limit, on bytes and on text; strings
 * holding brackets, quotes and backslashes do not count.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { jsonTextTooDeep, jsonTooDeep } from "../../src/limits/json-depth.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";

function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === "object" && value !== null)
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe("JSON depth", () => {
  test("examples: brackets inside strings and escaped quotes do not count", () => {
    const cases: [string, number][] = [
      ["1", 0],
      ['"[[[["', 0],
      ["[]", 1],
      ["[[]]", 2],
      ['{"a":[{"b":"]]]}}}"}]}', 3],
      ['["\\"[[[", [[]]]', 3],
      ['["\\\\", [[]]]', 3],
      ['{"k\\\\\\"[": {}}', 2],
    ];
    for (const [text, depth] of cases) {
      const bytes = Buffer.from(text);
      assert.equal(jsonTooDeep(bytes, depth), false, text);
      assert.equal(jsonTextTooDeep(text, depth), false, text);
      if (depth > 0) {
        assert.equal(jsonTooDeep(bytes, depth - 1), true, text);
        assert.equal(jsonTextTooDeep(text, depth - 1), true, text);
      }
    }
  });

  test("a deep text is found without building it: 1,000,000 levels", () => {
    const text = "[".repeat(1_000_000) + "]".repeat(1_000_000);
    assert.equal(jsonTooDeep(Buffer.from(text), 64), true);
    assert.equal(jsonTextTooDeep(text, 64), true);
  });

  test("a Uint8Array view that is not a Buffer is read in place", () => {
    const whole = new TextEncoder().encode("xx[[1]]yy");
    const view = whole.subarray(2, 7);
    assert.equal(jsonTooDeep(view, 1), true);
    assert.equal(jsonTooDeep(view, 2), false);
  });

  test("property: the scan agrees with the parsed value's depth", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, limit) => {
        const text = JSON.stringify(value);
        const deep = depthOf(value) > limit;
        assert.equal(jsonTooDeep(Buffer.from(text), limit), deep);
        assert.equal(jsonTextTooDeep(text, limit), deep);
      }),
      fuzzBudget(500),
    );
  });
});
