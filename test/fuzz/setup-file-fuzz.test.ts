/**
 * Hostile setup files, on a time budget (test/helpers/fuzz-budget.ts): random text, YAML
 * hazards (alias bombs, deep nesting, tags, merge keys, duplicate keys) and the sample setup with one
 * node replaced by anything. Invariant: `parseSetup` returns a setup or throws a `SetupError` whose
 * every issue has a path and a message (what `vigil validate` prints, DESIGN 2); nothing else is
 * thrown, and nothing hangs (each case is bounded by the test runner's timeout).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { parse, stringify } from "yaml";
import { parseSetup } from "../../src/config/load-setup.js";
import { SAMPLE_SETUP_YAML } from "../../src/config/sample-setup.js";
import { SetupError } from "../../src/config/setup-issues.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";

/** Parses `text`; a SetupError with at least one well-formed issue is the only allowed failure. */
function parseOrSetupError(text: string): "parsed" | "refused" {
  try {
    parseSetup(text, "fuzz.yaml", "/tmp");
    return "parsed";
  } catch (error) {
    if (!(error instanceof SetupError)) {
      assert.fail(`${(error as Error)?.stack ?? String(error)}\n--- setup text ---\n${text.slice(0, 2_000)}`);
    }
    assert.ok(error.issues.length > 0, "a SetupError lists at least one issue");
    for (const issue of error.issues) {
      assert.equal(typeof issue.path, "string");
      assert.ok(issue.message.length > 0, `issue at ${issue.path} has a message`);
    }
    return "refused";
  }
}

const YAML_TOKENS = [
  "gateway:",
  "probes:",
  "hub:",
  "  name: G",
  "- name: p",
  "  managedEntities:",
  "    - name: m",
  "      samplers: [{name: s, plugin: rest-api}]",
  "port: 0",
  "port: 99999",
  "security: {enabled: false}",
  "publish: [memory, {file: x}]",
  "&a [1, 2]",
  "*a",
  "*undefined",
  "<<: *a",
  "!!binary aGk=",
  "!!js/function 'f() {}'",
  "!custom x",
  "? complex key",
  ": value",
  "{",
  "}",
  "[",
  "]",
  '"\\uD800"',
  "'",
  "|",
  ">-",
  "---",
  "...",
  "%YAML 1.1",
  "#",
  "\t",
  "~",
  "0x10",
  ".inf",
  "1e400",
  "-",
];

/** Text shaped like YAML: lines of setup keys and YAML syntax at random indentation. */
const yamlSoup = fc
  .array(
    fc.tuple(
      fc.integer({ min: 0, max: 6 }),
      fc.constantFrom(...YAML_TOKENS),
      fc.constantFrom(...YAML_TOKENS),
    ),
    {
      maxLength: 20,
    },
  )
  .map((lines) => lines.map(([indent, a, b]) => `${" ".repeat(indent)}${a} ${b}`).join("\n"));

/** Documents that attack the YAML reader itself. */
const hazards = fc.oneof(
  // Billion laughs: each level refers to the one before ten times.
  fc.integer({ min: 1, max: 12 }).map((levels) => {
    const lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i <= levels; i += 1)
      lines.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(", ")}]`,
      );
    return `${lines.join("\n")}\ngateway: {name: G}\n`;
  }),
  fc.integer({ min: 1, max: 5_000 }).map((depth) => `gateway: ${"[".repeat(depth)}${"]".repeat(depth)}\n`),
  fc
    .integer({ min: 1, max: 2_000 })
    .map(
      (depth) =>
        `gateway:\n${Array.from({ length: depth }, (_, i) => `${" ".repeat(i + 1)}k${i}:`).join("\n")} x\n`,
    ),
  fc.integer({ min: 2, max: 50 }).map((n) => `${"gateway: {name: G}\n".repeat(n)}`),
  fc.constantFrom(
    "gateway: &g {name: G}\nhub: *g\n",
    "base: &b {name: G}\ngateway:\n  <<: *b\n",
    "gateway: {name: G}\nprobes: &p [{name: p, managedEntities: *p}]\n",
    "gateway: {name: !!binary aGk=}\n",
    "gateway: {name: G}\n---\ngateway: {name: H}\n",
    "\uFEFFgateway: {name: G}\n",
    "gateway: {name: G, __proto__: {polluted: true}}\n",
    "gateway: {name: G}\nconstructor: {prototype: {x: 1}}\n",
    "gateway: {name: '\uD800'}\n",
    `gateway: {name: ${"x".repeat(100_000)}}\n`,
  ),
);

/** Every path to a node of a parsed YAML document, as key lists. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) {
    for (const [i, child] of value.entries()) out.push(...pathsOf(child, [...prefix, i]));
  } else if (typeof value === "object" && value !== null) {
    for (const [key, child] of Object.entries(value)) out.push(...pathsOf(child, [...prefix, key]));
  }
  return out;
}

const SAMPLE = parse(SAMPLE_SETUP_YAML) as unknown;
const SAMPLE_PATHS = pathsOf(SAMPLE).filter((path) => path.length > 0);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    null,
    "",
    -1,
    0,
    65_536,
    1e308,
    0.5,
    "0",
    "true",
    "../../etc/passwd",
    "\u0000",
    "x".repeat(5_000),
  ),
);

/** The sample setup with one node replaced by a hostile value, or removed, as YAML text. */
const mutatedSample = fc
  .tuple(fc.constantFrom(...SAMPLE_PATHS), hostileValue, fc.boolean())
  .map(([path, value, remove]) => {
    const copy = structuredClone(SAMPLE) as Record<string | number, unknown>;
    let node = copy;
    for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
    const last = path.at(-1) as string | number;
    if (remove) delete node[last];
    else node[last] = value;
    return stringify(copy);
  });

describe("setup file under hostile input", () => {
  test("the sample setup parses (the mutation seed is valid)", () => {
    assert.equal(parseOrSetupError(SAMPLE_SETUP_YAML), "parsed");
  });

  test("random text is a setup or a SetupError, never another error", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), yamlSoup), (text) => {
        parseOrSetupError(text);
      }),
      fuzzBudget(500),
    );
  });

  test("YAML hazards (alias bombs, deep nesting, tags, merge keys, repeats) are SetupErrors or setups", () => {
    fc.assert(
      fc.property(hazards, (text) => {
        parseOrSetupError(text);
      }),
      fuzzBudget(200),
    );
  });

  test("the sample setup with one node replaced or removed is a setup or a SetupError", () => {
    fc.assert(
      fc.property(mutatedSample, (text) => {
        parseOrSetupError(text);
      }),
      fuzzBudget(500),
    );
  });
});

test("an alias inside the node it names is a SetupError at the alias, not a stack overflow", () => {
  assert.throws(
    () => parseSetup("gateway: {name: G}\nprobes: &p [{name: p, managedEntities: *p}]\n", "s.yaml"),
    (error: unknown) =>
      error instanceof SetupError &&
      error.issues[0]?.path === "s.yaml:probes[0].managedEntities" &&
      /refers to a node that contains it/.test(error.issues[0].message),
  );
});
