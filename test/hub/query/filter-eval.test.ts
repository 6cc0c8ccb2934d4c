// Entity filter semantics (DESIGN 5.1, 5.2; seed "Entity filter syntax"): one table over a fixed
// entity, plus code point ordering and canonical printing.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  compareCodePoints,
  compileFilter,
  evaluateFilter,
  parseFilter,
  printFilter,
} from "../../../src/hub/query/filter/filter.js";

const ENTITY: Readonly<Record<string, string>> = {
  "svc.name": "orders-db",
  "svc.os-type": "Linux",
  "svc.hostname": "db1.example.com",
  "user.Environment": "prod",
  "user.Tier": "2",
  "user.empty": "",
  "user.Région": "Île-de-France",
  "user.display name": 'Orders "primary" DB',
  "user.path": "C:\\data",
  "user.astral": "😀", // U+1F600: one code point, two UTF-16 units (D83D DE00)
  "user.private": "\uE000",
  AND: "keyword-named",
};

// [what it shows, filter, matches ENTITY]
const CASES: readonly (readonly [string, string, boolean])[] = [
  ["= matches an equal value", "svc.name = orders-db", true],
  ["= is case-sensitive on values", "svc.os-type = linux", false],
  ["= is case-sensitive on names", "SVC.NAME = orders-db", false],
  ["!= is false for an equal value", "svc.name != orders-db", false],
  ["!= is true for a different value", "svc.name != web", true],
  ["!= is true for a missing attribute", "user.Owner != alice", true],
  ["= is false for a missing attribute", "user.Owner = alice", false],
  ['= "" never matches: empty is absent', 'user.empty = ""', false],
  ['= "" never matches a missing attribute either', 'user.Owner = ""', false],
  ['!= "" always matches', 'user.empty != ""', true],
  ["> compares lexicographically, not numerically", "user.Tier > 10", true],
  [">= is true for an equal value", "user.Tier >= 2", true],
  ["< is false when greater", "user.Tier < 10", false],
  ["<= is true for an equal value", "svc.os-type <= Linux", true],
  ["< is false for a missing attribute", "user.Owner < zzz", false],
  [">= is false for a missing attribute", "user.Owner >= 0", false],
  ["> is false for an empty attribute", "user.empty > 0", false],
  ["<= is false for an empty attribute", "user.empty <= zzz", false],
  ["IN matches a listed value", "user.Environment IN (dev, prod)", true],
  ["IN is false when not listed", "user.Environment IN (dev, test)", false],
  ["IN is false for a missing attribute", "user.Owner IN (alice, bob)", false],
  ['IN ("") is false for an empty attribute', 'user.empty IN ("", x)', false],
  ["NOT IN is false for a listed value", "user.Environment NOT IN (prod)", false],
  ["NOT IN is true when not listed", "user.Environment NOT IN (dev)", true],
  ["NOT IN is true for a missing attribute", "user.Owner NOT IN (alice)", true],
  ["EXISTS is true for a present attribute", "svc.hostname EXISTS", true],
  ["EXISTS is false for a missing attribute", "user.Owner EXISTS", false],
  ["EXISTS is false for an empty attribute", "user.empty EXISTS", false],
  ["NOT EXISTS is true for an empty attribute", "user.empty NOT EXISTS", true],
  ["NOT EXISTS is false for a present attribute", "svc.name NOT EXISTS", false],
  ["inherited keys are not attributes", "constructor EXISTS OR __proto__ EXISTS", false],
  ["hyphenated bare names and values", "svc.os-type = Linux AND svc.name = orders-db", true],
  [
    "quoted name with a space, value with escaped quotes",
    '"user.display name" = "Orders \\"primary\\" DB"',
    true,
  ],
  ["quoted value with an escaped backslash", 'user.path = "C:\\\\data"', true],
  ["quoted non-English name and value", '"user.Région" = "Île-de-France"', true],
  ["quoted bare text means the same as bare", '"svc.name" = "orders-db"', true],
  ["escaping an ordinary character keeps it", 'svc.name = "\\orders-db"', true],
  ["a quoted keyword is a name", '"AND" = keyword-named', true],
  ["keywords are case-insensitive", "svc.name in (orders-db) and user.Tier not in (1) Or x exists", true],
  ["mixed-case NOT EXISTS", "user.Owner Not Exists", true],
  [
    "AND binds tighter than OR (true OR false AND false)",
    "svc.name = orders-db OR svc.name = x AND user.Tier = 9",
    true,
  ],
  [
    "AND binds tighter than OR (false AND true OR false)",
    "svc.name = x AND user.Tier = 2 OR user.Tier = 9",
    false,
  ],
  ["parentheses override precedence", "(svc.name = orders-db OR svc.name = x) AND user.Tier = 9", false],
  ["nested parentheses", "((svc.name = x) OR (user.Tier = 2 AND (svc.os-type EXISTS)))", true],
  [
    "whitespace between tokens is free",
    "svc.name=orders-db AND(user.Tier>=2)AND user.Environment IN(prod,dev)",
    true,
  ],
  ["newlines and tabs are whitespace", "svc.name\n=\torders-db", true],
  ["astral char sorts above a BMP char above U+E000", 'user.astral > "\uFFFD"', true],
  ["BMP U+E000 sorts below an astral char", 'user.private < "😀"', true],
  ["astral char is not below U+E000", 'user.astral < "\uE000"', false],
];

describe("filter evaluation", () => {
  for (const [name, filter, expected] of CASES) {
    test(name, () => {
      assert.equal(evaluateFilter(parseFilter(filter), ENTITY), expected);
      assert.equal(compileFilter(filter)(ENTITY), expected);
    });
  }
});

// [what it shows, a, b, sign of compareCodePoints(a, b)]
const ORDER: readonly (readonly [string, string, string, number])[] = [
  ["equal strings", "abc", "abc", 0],
  ["a prefix sorts first", "ab", "abc", -1],
  ["upper case sorts before lower case", "Z", "a", -1],
  ["astral above U+FFFD although its first UTF-16 unit is lower", "😀", "\uFFFD", 1],
  ["astral above U+E000", "😀", "\uE000", 1],
  ["U+E000 above U+D7FF", "\uE000", "\uD7FF", 1],
  ["two astral chars by code point", "😀", "😁", -1],
  ["astral above BMP in a later position", "x😀", "x\uFFFF", 1],
];

describe("compareCodePoints", () => {
  for (const [name, a, b, sign] of ORDER) {
    test(name, () => assert.equal(Math.sign(compareCodePoints(a, b)), sign));
  }
});

// [what it shows, input, canonical text]
const PRINTS: readonly (readonly [string, string, string])[] = [
  ["keywords upper-case, one space around operators", "a=1 and b!=2", "a = 1 AND b != 2"],
  ["lists with ', '", "a not in(x,y)", "a NOT IN (x, y)"],
  ["EXISTS and NOT EXISTS", "a exists or b not exists", "a EXISTS OR b NOT EXISTS"],
  ["redundant parentheses dropped", "((a = 1)) OR (b = 2 AND c = 3)", "a = 1 OR b = 2 AND c = 3"],
  ["needed parentheses kept", "(a = 1 OR b = 2) AND c = 3", "(a = 1 OR b = 2) AND c = 3"],
  ["grouping of the same operator kept as written", "a = 1 OR (b = 2 OR c = 3)", "a = 1 OR (b = 2 OR c = 3)"],
  ["unneeded quotes dropped", '"svc.os-type" = "Linux"', "svc.os-type = Linux"],
  ["keywords quoted as names and values", '"in" = "Not"', '"in" = "Not"'],
  ["spaces and non-English characters quoted", '"user.a b" = "Île"', '"user.a b" = "Île"'],
  ["quotes and backslashes escaped", '"q\\"" = "b\\\\"', '"q\\"" = "b\\\\"'],
  ["needless escapes dropped", '"\\a" = x', "a = x"],
  ["empty string quoted", 'a != ""', 'a != ""'],
];

describe("filter printing", () => {
  for (const [name, input, text] of PRINTS) {
    test(name, () => assert.equal(printFilter(parseFilter(input)), text));
  }
});
