/**
 * Rule semantics (DESIGN 2, 4.1), one line per case: target globs, the eight operators, numbers
 * compared as numbers only when both sides parse as numbers, the highest severity among the rules
 * that hold, OK when targeted and none holds, UNDEFINED when untargeted.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { RuleOperator, RuleSetup } from "../../../src/config/setup.js";
import { compileRules, evaluate, globTest, parseNumber } from "../../../src/gateway/severity/rules.js";
import type { Severity } from "../../../src/messages/types.js";

const cellRule = (
  operator: RuleOperator,
  value: string | number,
  severity: Severity = "CRITICAL",
): RuleSetup => ({
  name: `${operator} ${value}`,
  target: { managedEntity: "*", sampler: "*", dataview: "*", row: "*", column: "c" },
  when: { operator, value },
  severity,
});

describe("globs", () => {
  const cases: [string, string, boolean][] = [
    ["*", "anything", true],
    ["*", "", true],
    ["web-01", "web-01", true],
    ["web-01", "web-02", false],
    ["web-*", "web-01", true],
    ["web-*", "db-01", false],
    ["*-01", "db-01", true],
    ["*-01", "db-02", false],
    ["a*b*c", "aXbYc", true],
    ["a*b*c", "abc", true],
    ["a*b*c", "acb", false],
    ["ab*ba", "aba", false],
    ["**", "x", true],
    ["__proto__", "__proto__", true],
    [".*", "abc", false], // not a regular expression
  ];
  for (const [glob, name, expected] of cases)
    test(`'${glob}' ${expected ? "matches" : "does not match"} '${name}'`, () =>
      assert.equal(globTest(glob)(name), expected));
});

describe("numbers", () => {
  const cases: [string, number | undefined][] = [
    ["10", 10],
    ["-1.5", -1.5],
    ["1e3", 1000],
    [".5", 0.5],
    ["", undefined],
    [" 1", undefined],
    ["0x10", undefined],
    ["Infinity", undefined],
    ["12abc", undefined],
  ];
  for (const [text, expected] of cases)
    test(`'${text}' → ${expected}`, () => assert.equal(parseNumber(text), expected));
});

describe("operators", () => {
  const cases: [RuleOperator, string | number, string, boolean, string][] = [
    [">", 100, "101", true, "numbers compare as numbers"],
    [">", 100, "99", false, "99 < 100 as numbers (not as strings)"],
    [">", "100", "99", false, "a numeric string rule value is a number too"],
    [">", 100, "abc", true, "a non-number compares as a string: 'abc' > '100'"],
    [">", 100, "", false, "a blank cell is the empty string"],
    [">=", 100, "100.0", true, "100.0 equals 100 numerically"],
    ["<", 5, "4.99", true, "less than"],
    ["<=", 5, "5", true, "less or equal"],
    ["=", 5, "5.0", true, "= compares numbers numerically"],
    ["=", "up", "up", true, "= on strings"],
    ["=", "up", "Up", false, "strings are case-sensitive"],
    ["!=", "up", "down", true, "!= on strings"],
    ["!=", 1, "1", false, "!= on numbers"],
    ["contains", "ERR", "an ERROR here", true, "substring"],
    ["contains", "err", "an ERROR here", false, "substring is case-sensitive"],
    ["contains", 42, "x42y", true, "a number value is its text"],
    ["matches", "^a+$", "aaa", true, "RE2 pattern"],
    ["matches", "^a+$", "aab", false, "RE2 pattern, no match"],
    ["matches", "(a+)+$", `${"a".repeat(5000)}!`, false, "linear time on a catastrophic pattern"],
  ];
  for (const [operator, value, cell, expected, why] of cases) {
    test(`${operator} ${value} on '${cell.slice(0, 20)}': ${why}`, () => {
      const [rule] = compileRules([cellRule(operator, value)]);
      assert.equal(evaluate([rule!], cell), expected ? "CRITICAL" : "OK");
    });
  }
});

describe("evaluation", () => {
  const rules = compileRules([
    cellRule(">", 10, "WARNING"),
    cellRule(">", 100, "CRITICAL"),
    cellRule("=", "!", "UNKNOWN"),
  ]);
  const cases: [string, Severity][] = [
    ["5", "OK"],
    ["50", "WARNING"],
    ["500", "CRITICAL"],
    ["!", "UNKNOWN"], // "!" sorts before "10": only the = rule holds
  ];
  for (const [cell, expected] of cases)
    test(`'${cell}' → ${expected}: the highest that holds`, () =>
      assert.equal(evaluate(rules, cell), expected));
  test("no rule targets the item: UNDEFINED", () => assert.equal(evaluate([], "500"), "UNDEFINED"));
  test("a sampler(type) target matches that type only", () => {
    const [rule] = compileRules([
      {
        ...cellRule(">", 1),
        target: { managedEntity: "*", sampler: "orders(eu)", dataview: "*", row: "*", column: "c" },
      },
    ]);
    assert.equal(rule!.sampler("orders", "eu"), true);
    assert.equal(rule!.sampler("orders", ""), false);
    const [plain] = compileRules([
      {
        ...cellRule(">", 1),
        target: { managedEntity: "*", sampler: "ord*", dataview: "*", row: "*", column: "c" },
      },
    ]);
    assert.equal(plain!.sampler("orders", "eu"), true);
  });
});
