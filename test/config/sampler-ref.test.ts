import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { formatSamplerRef, parseSamplerRef, type SamplerRef } from "../../src/config/sampler-ref.js";

describe("parseSamplerRef", () => {
  // [what it shows, text, lenient result, strict result (null: refused)]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, SamplerRef, SamplerRef | null][] = [
    ["a plain name has no type (any)", "orders", { name: "orders", type: null }, { name: "orders", type: null }],
    ["name(type)", "orders(web)", { name: "orders", type: "web" }, { name: "orders", type: "web" }],
    ["name() is the sampler without a type", "orders()", { name: "orders", type: "" }, { name: "orders", type: "" }],
    ["the empty text is an empty name", "", { name: "", type: null }, { name: "", type: null }],
    ["(type) alone has an empty name", "(web)", { name: "", type: "web" }, { name: "", type: "web" }],
    ["lenient: the final (type) wins, the rest is name", "a(b)(c)", { name: "a(b)", type: "c" }, null],
    ["an unclosed parenthesis: all name, or refused", "orders(web", { name: "orders(web", type: null }, null],
    ["a closing parenthesis alone: all name, or refused", "orders)", { name: "orders)", type: null }, null],
    ["a type holding a parenthesis is not a type", "a(b(c))", { name: "a(b(c))", type: null }, null],
    ["text after the type: all name, or refused", "a(b)c", { name: "a(b)c", type: null }, null],
    ["lenient: a newline in the name is kept", "a\nb(t)", { name: "a\nb", type: "t" }, { name: "a\nb", type: "t" }],
    ["nothing is decoded or trimmed", " o%28x%29 ( t ) ", { name: " o%28x%29 ( t ) ", type: null }, null],
    ["percent-escapes stay for the caller", "o%28x%29(t%20y)", { name: "o%28x%29", type: "t%20y" }, { name: "o%28x%29", type: "t%20y" }],
  ];
  for (const [name, text, lenient, strict] of cases) {
    test(name, () => {
      assert.deepEqual(parseSamplerRef(text), lenient);
      assert.deepEqual(parseSamplerRef(text, "lenient"), lenient);
      assert.deepEqual(parseSamplerRef(text, "strict"), strict);
    });
  }

  test("lenient has the semantics of the probe's former parseSamplerSegment", () => {
    // The regular expression src/probe/sampler-registry.ts used, kept here as the reference.
    const segment = (text: string) => {
      const match = /^(.*)\(([^()]*)\)$/s.exec(text);
      return match === null ? { name: text, type: null } : { name: match[1] ?? "", type: match[2] ?? "" };
    };
    const alphabet = fc.constantFrom("a", "(", ")", "\n", " ", "%", "é");
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 12 }), (text) => {
        assert.deepEqual(parseSamplerRef(text), segment(text));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("formatSamplerRef", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, string | null, string][] = [
    ["no type: the bare name", "orders", null, "orders"],
    ["a type: name(type)", "orders", "web", "orders(web)"],
    ["the empty type: name()", "orders", "", "orders()"],
  ];
  for (const [name, sampler, type, text] of cases) {
    test(name, () => {
      assert.equal(formatSamplerRef(sampler, type), text);
      assert.deepEqual(parseSamplerRef(text), { name: sampler, type });
    });
  }

  test("parse(format(name, type)) round-trips for names and types without parentheses", () => {
    const part = fc.string({ unit: fc.constantFrom("a", "b", " ", "%", "\n", "é"), maxLength: 8 });
    fc.assert(
      fc.property(part, fc.option(part, { nil: null }), (name, type) => {
        const text = formatSamplerRef(name, type);
        assert.deepEqual(parseSamplerRef(text), { name, type });
        assert.deepEqual(parseSamplerRef(text, "strict"), { name, type });
      }),
      { numRuns: 1000 },
    );
  });
});
