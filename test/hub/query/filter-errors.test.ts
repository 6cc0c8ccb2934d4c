// Entity filter syntax errors (DESIGN 5.2, STYLE 13): exact message, offset and `expected` for bad
// inputs, the caret excerpt, and the length, token and depth limits.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  compileFilter,
  FilterSyntaxError,
  MAX_FILTER_DEPTH,
  MAX_FILTER_LENGTH,
  MAX_FILTER_TOKENS,
  parseFilter,
} from "../../../src/hub/query/filter/filter.js";

const OPERATOR = "an operator (=, !=, >, >=, <, <=, IN, NOT IN, EXISTS or NOT EXISTS)";
const QUOTE_HINT =
  "names and values with characters other than A-Z, a-z, 0-9, '.', '_' and '-' must be quoted";

/** Parses `text` and returns the FilterSyntaxError it must throw. */
function syntaxError(text: string): FilterSyntaxError {
  try {
    parseFilter(text);
  } catch (error) {
    assert.ok(error instanceof FilterSyntaxError, `not a FilterSyntaxError: ${String(error)}`);
    return error;
  }
  assert.fail(`parsed without error: ${text}`);
}

// [what it shows, input, offset, expected, message]
const CASES: readonly (readonly [string, string, number, string, string])[] = [
  [
    "empty filter",
    "",
    0,
    "an attribute name",
    "Expected an attribute name at position 0, found the end of the filter (the filter is empty)",
  ],
  [
    "blank filter",
    " \t ",
    3,
    "an attribute name",
    "Expected an attribute name at position 3, found the end of the filter (the filter is empty)",
  ],
  [
    "name without predicate",
    "svc.name",
    8,
    OPERATOR,
    `Expected ${OPERATOR} after the attribute name at position 8, found the end of the filter`,
  ],
  [
    "missing value after =",
    "svc.name = ",
    11,
    "a value",
    "Expected a value after '=' at position 11, found the end of the filter",
  ],
  [
    "missing value after >=, found AND",
    "a >= AND b = 1",
    5,
    "a value",
    `Expected a value after '>=' at position 5, found the keyword AND; quote it as "AND" to use it as a value`,
  ],
  [
    "keyword as a name, any case",
    "and = 1",
    0,
    "an attribute name or '('",
    `Expected an attribute name or '(' at position 0, found the keyword AND; quote it as "and" to use it as an attribute name`,
  ],
  [
    "empty IN list",
    "a IN ()",
    6,
    "a value",
    "Expected a value after '(' at position 6, found ')'; a list needs at least one value",
  ],
  [
    "list without parentheses",
    "a IN x",
    5,
    "'(' to start the list",
    "Expected '(' to start the list after IN at position 5, found 'x'",
  ],
  [
    "NOT IN list without parentheses",
    "a not in x",
    9,
    "'(' to start the list",
    "Expected '(' to start the list after NOT IN at position 9, found 'x'",
  ],
  [
    "trailing comma in list",
    "a IN (x,)",
    8,
    "a value",
    "Expected a value after ',' at position 8, found ')'",
  ],
  [
    "unclosed list",
    "a IN (x y)",
    8,
    "',' or ')'",
    "Expected ',' or ')' in the list at position 8, found 'y'",
  ],
  [
    "NOT without IN or EXISTS",
    "a NOT = b",
    6,
    "IN or EXISTS",
    "Expected IN or EXISTS after NOT at position 6, found '='",
  ],
  [
    "unclosed parenthesis",
    "(a = 1 OR b = 2",
    15,
    "AND, OR or ')'",
    "Expected AND, OR or ')' at position 15 (to close the '(' at position 0), found the end of the filter",
  ],
  [
    "unopened parenthesis",
    "a = 1)",
    5,
    "AND, OR or the end of the filter",
    "Expected AND, OR or the end of the filter at position 5, found ')'; no '(' is open",
  ],
  [
    "trailing garbage",
    "a = 1 b = 2",
    6,
    "AND, OR or the end of the filter",
    "Expected AND, OR or the end of the filter at position 6, found 'b'",
  ],
  [
    "dangling AND",
    "a = 1 AND",
    9,
    "an attribute name or '('",
    "Expected an attribute name or '(' after AND at position 9, found the end of the filter",
  ],
  [
    "doubled OR",
    "a = 1 OR OR b = 2",
    9,
    "an attribute name or '('",
    `Expected an attribute name or '(' after OR at position 9, found the keyword OR; quote it as "OR" to use it as an attribute name`,
  ],
  [
    "empty parentheses",
    "()",
    1,
    "an attribute name or '('",
    "Expected an attribute name or '(' after '(' at position 1, found ')'",
  ],
  [
    "unterminated quote",
    'a = "x',
    4,
    `a closing '"'`,
    `Unterminated quoted string starting at position 4: expected a closing '"' before the end of the filter`,
  ],
  [
    "quote ending in an escape",
    'a = "x\\"',
    4,
    `a closing '"'`,
    `Unterminated quoted string starting at position 4: expected a closing '"' before the end of the filter`,
  ],
  ["lone !", "a ! b", 3, "'='", "Expected '=' after '!' at position 3"],
  [
    "unquoted non-English value",
    "a = héllo",
    5,
    "AND, OR or the end of the filter",
    `Expected AND, OR or the end of the filter at position 5, found the character 'é'; ${QUOTE_HINT}`,
  ],
  [
    "unquoted space in name",
    "user.display name = x",
    13,
    OPERATOR,
    `Expected ${OPERATOR} after the attribute name at position 13, found 'name'`,
  ],
  [
    "& instead of AND",
    "a = 1 && b = 2",
    6,
    "AND, OR or the end of the filter",
    "Expected AND, OR or the end of the filter at position 6, found the character '&'; combine conditions with AND and OR",
  ],
  [
    "single quotes",
    "a = 'x'",
    4,
    "a value",
    "Expected a value after '=' at position 4, found the character '''; quote names and values with double quotes",
  ],
  [
    "control character",
    "a = \u0007",
    4,
    "a value",
    `Expected a value after '=' at position 4, found the character U+0007; ${QUOTE_HINT}`,
  ],
  [
    "quoted text is shown as written",
    'a = "x" "a long quoted text that is cut"',
    8,
    "AND, OR or the end of the filter",
    `Expected AND, OR or the end of the filter at position 8, found "a long quoted text …`,
  ],
  [
    "offset counts UTF-16 units after an astral char",
    '"😀" = 1 2',
    9,
    "AND, OR or the end of the filter",
    "Expected AND, OR or the end of the filter at position 9, found '2'",
  ],
];

describe("filter syntax errors", () => {
  for (const [name, text, offset, expected, message] of CASES) {
    test(name, () => {
      const error = syntaxError(text);
      assert.deepEqual(
        { message: error.message, offset: error.offset, expected: error.expected, source: error.source },
        { message, offset, expected, source: text },
      );
      assert.equal(error.name, "FilterSyntaxError");
    });
  }
});

// [what it shows, input, excerpt]
const EXCERPTS: readonly (readonly [string, string, string])[] = [
  ["caret under the missing value", "svc.name = ", "svc.name = \n           ^"],
  ["caret at the start", "OR", "OR\n^"],
  ["only the line of the error, tabs as spaces", "a = 1\nAND\tb =", "AND b =\n       ^"],
  ["astral characters before the caret count once", '"😀😀" = 1 2', '"😀😀" = 1 2\n         ^'],
  [
    "long lines are cut around the offset",
    `a = ${"x".repeat(100)} b`,
    `…${"x".repeat(38)} b\n${" ".repeat(40)}^`,
  ],
  ["long tails are cut too", `(a = 1 ${"y".repeat(100)}`, `(a = 1 ${"y".repeat(39)}…\n       ^`],
];

describe("filter syntax error excerpts", () => {
  for (const [name, text, excerpt] of EXCERPTS) {
    test(name, () => assert.equal(syntaxError(text).excerpt, excerpt));
  }
});

describe("filter limits", () => {
  test("a filter of MAX_FILTER_LENGTH characters is parsed", () => {
    const text = `a = ${"x".repeat(MAX_FILTER_LENGTH - 4)}`;
    assert.deepEqual(parseFilter(text), {
      kind: "compare",
      name: "a",
      operator: "=",
      value: "x".repeat(8188),
    });
  });
  test("one more character is an error at the limit", () => {
    const error = syntaxError(`a = ${"x".repeat(MAX_FILTER_LENGTH - 3)}`);
    assert.equal(
      error.message,
      "The filter is 8193 characters long; the limit of 8192 is exceeded at position 8192",
    );
    assert.equal(error.offset, 8192);
  });
  test("MAX_FILTER_TOKENS tokens are parsed", () => {
    // "a IN (x, x, …)" has 4 + 2n tokens for n values
    const values = Array.from({ length: (MAX_FILTER_TOKENS - 4) / 2 }, () => "x").join(",");
    assert.equal(parseFilter(`a IN (${values})`).kind, "in");
  });
  test("the token after MAX_FILTER_TOKENS is an error at its position", () => {
    const values = Array.from({ length: (MAX_FILTER_TOKENS - 4) / 2 + 1 }, () => "x").join(",");
    const text = `a IN (${values})`;
    const error = syntaxError(text);
    assert.equal(
      error.message,
      `The filter has more than 2000 tokens; the limit is reached at position ${text.length - 1}`,
    );
    assert.equal(error.offset, text.length - 1);
  });
  test("MAX_FILTER_DEPTH nested parentheses are parsed", () => {
    const text = `${"(".repeat(MAX_FILTER_DEPTH)}a EXISTS${")".repeat(MAX_FILTER_DEPTH)}`;
    assert.deepEqual(parseFilter(text), { kind: "exists", name: "a", negated: false });
  });
  test("one more level is an error at its '('", () => {
    const error = syntaxError(`a = 1 AND ${"(".repeat(MAX_FILTER_DEPTH + 1)}a EXISTS${")".repeat(65)}`);
    assert.equal(error.message, "Parentheses nest more than 64 levels deep at position 74");
    assert.equal(error.offset, 74);
  });
  test("deep nesting far beyond the limit throws the depth error, not a stack overflow", () => {
    assert.equal(syntaxError("(".repeat(MAX_FILTER_LENGTH)).offset, 64);
  });
});

describe("compileFilter", () => {
  test("undefined matches everything", () => assert.equal(compileFilter(undefined)({}), true));
  test("empty text matches everything", () => assert.equal(compileFilter("")({}), true));
  test("whitespace-only text matches everything", () => assert.equal(compileFilter(" \n\t ")({}), true));
  test("other text is parsed and evaluated", () => {
    const matches = compileFilter("svc.name = a");
    assert.deepEqual([matches({ "svc.name": "a" }), matches({ "svc.name": "b" })], [true, false]);
  });
  test("bad text throws FilterSyntaxError", () => {
    assert.throws(() => compileFilter("svc.name ="), FilterSyntaxError);
  });
});
