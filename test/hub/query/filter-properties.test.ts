// Entity filter properties on a time budget (STYLE 13; graphql-js printer-test.ts, undici fuzzing):
// random trees round-trip through print and parse, random text throws only FilterSyntaxError, and
// printing then parsing never changes what a filter matches.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  COMPARE_OPERATORS,
  compareCodePoints,
  evaluateFilter,
  type FilterNode,
  FilterSyntaxError,
  parseFilter,
  printFilter,
} from "../../../src/hub/query/filter/filter.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

/** 300 runs or VIGIL_FUZZ_SECONDS, whichever ends first (test/helpers/fuzz-budget.ts). */
const BUDGET = fuzzBudget(300);

/** fast-check builds null-prototype records by default; the parser builds plain objects. */
const PLAIN = { noNullPrototype: true } as const;

/** Names and values: a small pool (so random attribute maps hit), keywords, and arbitrary text. */
const word = fc.oneof(
  fc.constantFrom("svc.name", "svc.os-type", "a", "b", "1", "", "AND", "or", "In", "nOT", "Exists"),
  fc.constantFrom("x y", 'q"uote', "back\\slash", "Région", "😀", "\uE000", "\uFFFD", "(", ","),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,6}$/),
  fc.string({ unit: "grapheme", maxLength: 6 }),
  fc.string({ unit: "binary", maxLength: 6 }),
);

const { node: filterNode } = fc.letrec<{ node: FilterNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", maxDepth: 4 },
    fc.record(
      {
        kind: fc.constant("compare"),
        name: word,
        operator: fc.constantFrom(...COMPARE_OPERATORS),
        value: word,
      },
      PLAIN,
    ),
    fc.record(
      {
        kind: fc.constant("in"),
        name: word,
        values: fc
          .tuple(word, fc.array(word, { maxLength: 3 }))
          .map(([first, rest]): [string, ...string[]] => [first, ...rest]),
        negated: fc.boolean(),
      },
      PLAIN,
    ),
    fc.record({ kind: fc.constant("exists"), name: word, negated: fc.boolean() }, PLAIN),
    fc
      .tuple(fc.constantFrom("and", "or"), tie("node"), tie("node"), fc.array(tie("node"), { maxLength: 2 }))
      .map(([kind, first, second, rest]): FilterNode => ({ kind, operands: [first, second, ...rest] })),
  ),
}));

const attributes = fc.dictionary(word, fc.oneof(word, fc.constant("")), { maxKeys: 6 });

/** Text built from filter tokens, so random input reaches deep into the parser, not only the lexer. */
const tokenSoup = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "(",
        ")",
        ",",
        "=",
        "!=",
        ">",
        ">=",
        "<",
        "<=",
        "!",
        "AND",
        "or",
        "in",
        "NOT",
        "exists",
      ),
      fc.constantFrom('"', '\\"', "\\", "é", "&", "\t", "\n", " "),
      word,
      word.map((text) => `"${text}"`),
    ),
    { maxLength: 20 },
  )
  .chain((tokens) => fc.constantFrom(tokens.join(" "), tokens.join("")));

/** A printed random tree with one cut, insertion or deletion: almost valid text. */
const mutatedFilter = fc
  .tuple(filterNode, fc.nat(), fc.nat(), fc.constantFrom("", "(", ")", '"', "\\", ",", "=", " AND ", " NOT "))
  .map(([ast, at, length, insert]) => {
    const text = printFilter(ast);
    const start = at % (text.length + 1);
    return text.slice(0, start) + insert + text.slice(start + (length % 3));
  });

/** Parses `text`; any exception other than FilterSyntaxError fails the property. */
function parseOrSyntaxError(text: string): FilterNode | FilterSyntaxError {
  try {
    return parseFilter(text);
  } catch (error) {
    if (error instanceof FilterSyntaxError) return error;
    throw error;
  }
}

describe("filter properties", () => {
  test("random trees round-trip: parse(print(ast)) deep-equals ast", () => {
    fc.assert(
      fc.property(filterNode, (ast) => {
        assert.deepEqual(parseFilter(printFilter(ast)), ast);
      }),
      BUDGET,
    );
  });

  test("printing is canonical: print(parse(print(ast))) equals print(ast)", () => {
    fc.assert(
      fc.property(filterNode, (ast) => {
        const text = printFilter(ast);
        assert.equal(printFilter(parseFilter(text)), text);
      }),
      BUDGET,
    );
  });

  test("printed-then-parsed trees match the same attribute maps as the original", () => {
    fc.assert(
      fc.property(filterNode, fc.array(attributes, { minLength: 1, maxLength: 5 }), (ast, maps) => {
        const reparsed = parseFilter(printFilter(ast));
        for (const map of maps) assert.equal(evaluateFilter(reparsed, map), evaluateFilter(ast, map));
      }),
      BUDGET,
    );
  });

  test("negated predicates are the exact negation of the positive ones", () => {
    fc.assert(
      fc.property(filterNode, attributes, (ast, map) => {
        if (ast.kind === "in" || ast.kind === "exists") {
          const flipped = { ...ast, negated: !ast.negated };
          assert.equal(evaluateFilter(flipped, map), !evaluateFilter(ast, map));
        }
      }),
      BUDGET,
    );
  });

  test("random unicode text throws nothing but FilterSyntaxError", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), (text) => {
        parseOrSyntaxError(text);
      }),
      BUDGET,
    );
  });

  test("token soup and mutated filters throw nothing but FilterSyntaxError; what parses round-trips", () => {
    fc.assert(
      fc.property(fc.oneof(tokenSoup, mutatedFilter), (text) => {
        const result = parseOrSyntaxError(text);
        if (result instanceof FilterSyntaxError) {
          assert.ok(
            result.offset >= 0 && result.offset <= text.length,
            `offset ${result.offset} outside the text`,
          );
          assert.match(result.message, /position \d+/);
        } else {
          assert.deepEqual(parseFilter(printFilter(result)), result);
        }
      }),
      BUDGET,
    );
  });

  test("compareCodePoints agrees with comparing arrays of code points", () => {
    const codePoints = (text: string): number[] => Array.from(text, (char) => char.codePointAt(0)!);
    const reference = (a: string, b: string): number => {
      const [x, y] = [codePoints(a), codePoints(b)];
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    };
    const text = fc.string({ unit: "grapheme", maxLength: 6 });
    fc.assert(
      fc.property(text, text, (a, b) => {
        assert.equal(Math.sign(compareCodePoints(a, b)), Math.sign(reference(a, b)));
      }),
      BUDGET,
    );
  });
});
