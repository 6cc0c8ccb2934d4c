import assert from "node:assert/strict";
import { test } from "node:test";
import { compilePattern, PatternError, patternProblem } from "../../src/text/pattern.js";

test("a pattern is found anywhere in the text, case-sensitively, without implicit anchors", () => {
  const error = compilePattern("ERROR");
  assert.equal(error.test("12:00 ERROR disk full"), true);
  assert.equal(error.test("12:00 error disk full"), false);
  assert.equal(compilePattern("^disk").test("12:00 disk"), false);
  assert.equal(compilePattern("(?i)warn").test("a WARNing"), true);
});

test("a pattern that backtracks catastrophically elsewhere runs in linear time here", () => {
  const pattern = compilePattern("(a+)+$");
  const message = `${"a".repeat(10_000)}!`;
  // Counted, not timed: a backtracking engine would not come back from this call at all.
  assert.equal(pattern.test(message), false);
  assert.equal(pattern.test("aaa"), true);
});

test("patterns outside RE2 are refused with the reason", () => {
  assert.throws(() => compilePattern("(a"), PatternError);
  assert.match(patternProblem("a(?=b)") ?? "", /invalid|missing|unsupported/);
  assert.match(patternProblem("(a)\\1") ?? "", /invalid|escape/);
  assert.equal(patternProblem("[0-9]+ms"), undefined);
});
