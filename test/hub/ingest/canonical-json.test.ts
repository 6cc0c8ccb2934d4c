/**
 * The canonical-text check behind the digest of a message without an id: `true` must
 * mean `JSON.stringify(JSON.parse(text)) === text`, checked by properties over arbitrary JSON
 * written canonically and otherwise (indented, respaced, re-escaped, keys repeated, numbers
 * rewritten); it must also hold for plain `JSON.stringify` output, or the shortcut never fires. A
 * table of the cases that must be `false`, and the digest checked unchanged either way.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { isCanonicalJson } from "../../../src/hub/ingest/canonical-json.js";
import { messageKey } from "../../../src/hub/ingest/ingester.js";
import type { PublicV2Message } from "../../../src/messages/types.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

/** True exactly when `text` is what JSON.stringify writes of the value it parses to. */
const reallyCanonical = (text: string): boolean => JSON.stringify(JSON.parse(text)) === text;

/** Rewrites of a JSON text that keep it JSON (most make it non-canonical). */
const rewrite = fc.constantFrom(
  (t: string) => t,
  (t: string) => JSON.stringify(JSON.parse(t), null, 1),
  (t: string) => t.replace(/:/g, ": "),
  (t: string) => t.replace(/,/g, " ,"),
  (t: string) => ` ${t}`,
  (t: string) => `${t}\r`,
  (t: string) => t.replace(/\//g, "\\/"),
  (t: string) => t.replace(/\{"/, '{"k":1,"'),
  (t: string) => t.replace(/\{"([^"\\]*)":/, '{"$1":0,"$1":'),
  (t: string) => t.replace(/(\d)([,}\]])/, "$1.0$2"),
  (t: string) => t.replace(/(\d)([,}\]])/, "$1e0$2"),
  (t: string) => t.replace(/:(\d)/, ':-0,"z":$1'),
  (t: string) => t.replace(/\{"/, '{"7":1,"'),
  (t: string) => t.replace(/\{"/, '{"12345678901234567":1,"'),
);

const json = fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4, stringUnit: "binary" }));

describe("isCanonicalJson", () => {
  test("property: true only for the text JSON.stringify writes", () => {
    fc.assert(
      fc.property(json, rewrite, (value, change) => {
        let text: string;
        try {
          text = change(JSON.stringify(value));
          JSON.parse(text);
        } catch {
          return; // not JSON after the rewrite: nothing to check
        }
        if (text.includes("\\u")) return; // the caller never passes such text
        if (isCanonicalJson(text, JSON.parse(text))) assert.ok(reallyCanonical(text), text);
      }),
      fuzzBudget(2_000),
    );
  });

  test("property: true for JSON.stringify output without escapes, digit keys or long numbers", () => {
    const plain = fc.jsonValue({ maxDepth: 4 }).filter((value) => {
      const text = JSON.stringify(value);
      return (
        !text.includes("\\") && !/"\d+":/.test(text) && !/[\d.eE]\d{15}/.test(text) && !/\d[.eE]/.test(text)
      );
    });
    fc.assert(
      fc.property(plain, (value) => {
        const text = JSON.stringify(value);
        assert.ok(isCanonicalJson(text, JSON.parse(text)), text);
      }),
      fuzzBudget(2_000),
    );
  });

  const cases: [string, string, boolean][] = [
    ["a message as JSON.stringify writes it", '{"type":"table","data":{"row":{"a":"1.50","b":""}}}', true],
    ["escapes, even those JSON.stringify writes (left to it)", '{"a":"x\\"y\\\\z\\n"}', false],
    ["integers, literals and empties", '{"a":[0,-12,123456789012345,true,false,null,{},[]]}', true],
    ["a space after a colon", '{"a": 1}', false],
    ["a space before the text", ' {"a":1}', false],
    ["a repeated key", '{"a":1,"a":2}', false],
    ["a repeated key in a nested object", '{"x":{"a":1,"a":1},"y":0}', false],
    ["a key of digits, listed first by an object", '{"b":1,"2":2}', false],
    ["an escaped slash", '{"a":"\\/"}', false],
    ["a fraction", '{"a":1.5}', false],
    ["an exponent", '{"a":1e3}', false],
    ["minus zero", '{"a":-0}', false],
    ["a leading zero", "[01]", false],
    ["16 digits", '{"a":1234567890123456}', false],
  ];
  for (const [name, text, expected] of cases) {
    test(`${name} → ${expected}`, () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        assert.equal(expected, false);
        return;
      }
      assert.equal(isCanonicalJson(text, parsed), expected);
      if (expected) assert.ok(reallyCanonical(text));
    });
  }

  test("the digest of a message is the same whether its text is given or not", () => {
    const message = {
      type: "table",
      operation: "update",
      data: { sampleTime: "2026-01-01T00:00:00.000Z", row: { name: "r", v: "1" } },
    };
    const canonical = JSON.stringify(message);
    for (const text of [
      canonical,
      JSON.stringify(message, null, 2),
      canonical.replace('"v"', '"v":"0","v"'),
    ]) {
      const parsed = JSON.parse(text) as PublicV2Message;
      assert.deepEqual(messageKey(undefined, parsed, text), messageKey(undefined, parsed));
    }
  });
});
