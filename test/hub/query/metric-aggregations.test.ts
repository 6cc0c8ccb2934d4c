import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { VigilError } from "../../../src/errors/catalog.js";
import { AGGREGATIONS, parseAggregation } from "../../../src/hub/query/aggregations.js";
import type { Aggregation } from "../../../src/hub/store/store.js";

describe("AGGREGATIONS", () => {
  test("lists the seed's ten aggregations; only svc.percentile has a parameter, p", () => {
    assert.deepEqual(Object.keys(AGGREGATIONS).sort(), [
      "svc.avg",
      "svc.count",
      "svc.first",
      "svc.last",
      "svc.max",
      "svc.min",
      "svc.percentile",
      "svc.stddev",
      "svc.sum",
      "svc.var",
    ]);
    for (const [name, info] of Object.entries(AGGREGATIONS)) {
      assert.deepEqual(
        info.parameters.map((p) => p.name),
        name === "svc.percentile" ? ["p"] : [],
        name,
      );
      // cordial/pkg/gwhub decodes each parameter as a map of strings.
      for (const parameter of info.parameters) {
        for (const value of Object.values(parameter)) assert.equal(typeof value, "string", name);
      }
      assert.ok(info.description.length > 0, name);
    }
  });
});

describe("parseAggregation accepts", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, Aggregation][] = [
    ["a plain name", "svc.avg", { label: "svc.avg", name: "svc.avg" }],
    ["count", "svc.count", { label: "svc.count", name: "svc.count" }],
    ["last", "svc.last", { label: "svc.last", name: "svc.last" }],
    ["percentile", "svc.percentile(0.95)", { label: "svc.percentile(0.95)", name: "svc.percentile", p: "0.95" }],
    ["p = 0", "svc.percentile(0)", { label: "svc.percentile(0)", name: "svc.percentile", p: "0" }],
    ["p = 1", "svc.percentile(1)", { label: "svc.percentile(1)", name: "svc.percentile", p: "1" }],
    ["p = 1.000", "svc.percentile(1.000)", { label: "svc.percentile(1.000)", name: "svc.percentile", p: "1.000" }],
    ["p without a leading zero", "svc.percentile(.5)", { label: "svc.percentile(.5)", name: "svc.percentile", p: ".5" }],
    ["spaces around p are trimmed, label kept", "svc.percentile( 0.07 )", { label: "svc.percentile( 0.07 )", name: "svc.percentile", p: "0.07" }],
    ["surrounding spaces, label kept", " svc.max ", { label: " svc.max ", name: "svc.max" }],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => assert.deepEqual(parseAggregation(text, 0), expected));
  }
});

describe("parseAggregation rejects", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, string][] = [
    ["unknown name, listing the known ones", "svc.median", "known: svc.count, svc.sum"],
    ["wrong case", "SVC.AVG", "unknown aggregation 'SVC.AVG'"],
    ["empty", "", "unknown aggregation ''"],
    ["percentile without parentheses", "svc.percentile", "needs its parameter p"],
    ["percentile with empty parentheses", "svc.percentile()", "needs p between 0 and 1"],
    ["unclosed parenthesis", "svc.percentile(0.5", "malformed parentheses"],
    ["unopened parenthesis", "svc.percentile0.5)", "malformed parentheses"],
    ["parameter on an aggregation without one", "svc.avg(1)", "svc.avg takes no parameters"],
    ["p above 1", "svc.percentile(1.01)", "is above 1"],
    ["p of 2", "svc.percentile(2)", "is above 1"],
    ["negative p", "svc.percentile(-0.5)", "not a plain decimal"],
    ["exponent", "svc.percentile(5e-1)", "not a plain decimal"],
    ["NaN", "svc.percentile(NaN)", "not a plain decimal"],
    ["trailing dot", "svc.percentile(1.)", "not a plain decimal"],
    ["two parameters", "svc.percentile(0.5,0.9)", "not a plain decimal"],
    ["p too long", `svc.percentile(0.${"1".repeat(40)})`, "more than 32 characters"],
  ];
  for (const [name, text, fragment] of cases) {
    test(name, () => {
      assert.throws(
        () => parseAggregation(text, 3),
        (error: unknown) => {
          assert.ok(error instanceof VigilError);
          assert.equal(error.status, 400);
          assert.equal(error.fields.field, "aggregations[3]");
          const detail = String(error.fields.detail);
          assert.ok(detail.includes(fragment), detail);
          return true;
        },
      );
    });
  }
});

test("p with more decimal places than the stores compute exactly is a 400, trailing zeros aside", () => {
  assert.throws(() => parseAggregation(`svc.percentile(0.${"1".repeat(25)})`, 0), /at most 24/);
  assert.equal(parseAggregation(`svc.percentile(0.${"1".repeat(24)}00)`, 0).p, `0.${"1".repeat(24)}00`);
});
