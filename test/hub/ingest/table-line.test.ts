/**
 * The backfill's reader of table and headline lines (src/hub/ingest/table-line.ts) against the
 * general path (`JSON.parse`, the schema's validator, the ingester's checks): a body's lines must
 * come out as the very same checked slice (rows, cells, digests, rejections and their reasons)
 * whether the reader takes the lines it can or every line is parsed. Properties over generated
 * lines of every key order, names a client may send (`__proto__`, digits, quotes, lone surrogates,
 * names past the limits), times the schema or the store refuses, and the same lines mutated
 * (whitespace, a character changed or dropped, a key repeated, a field added); with the default
 * limits and with small ones. Examples: the reader takes a gateway's line and the benches' lines,
 * and leaves each kind of line it cannot decide for certain to the general path.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { checkLines } from "../../../src/hub/ingest/backfill-body.js";
import { readTableLine } from "../../../src/hub/ingest/table-line.js";
import { SampleCells } from "../../../src/hub/store/sample-rows.js";
import { type DataLimits, DEFAULT_DATA_LIMITS } from "../../../src/limits/data-limits.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const SMALL: DataLimits = {
  ...DEFAULT_DATA_LIMITS,
  nameBytes: 6,
  attributeValueBytes: 5,
  cellBytes: 6,
};

/** A JSON value written with keys in the given order, repeated keys kept. */
type Json = string | number | boolean | null | { readonly entries: readonly [string, Json][] };

/** A string as JSON text: raw when JSON needs no escape for it (a lone surrogate stays raw). */
function str(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters JSON must escape
  return /["\\\u0000-\u001f]/.test(s) ? JSON.stringify(s) : `"${s}"`;
}

function write(value: Json): string {
  if (typeof value === "string") return str(value);
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  return `{${value.entries.map(([k, v]) => `${str(k)}:${write(v)}`).join(",")}}`;
}

/** Names a client may send: repeated across lines, awkward, or past the small limits. */
const name = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("GW", "p1", "host-000", "cpu", "cores", "row-1", "") },
  { weight: 1, arbitrary: fc.constantFrom("__proto__", "constructor", "12", "0", 'a"b', "a\\b", "\t") },
  { weight: 1, arbitrary: fc.constantFrom("\ud800", "naïve", "日本語名", "x".repeat(7), "longer-name") },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const value = fc.oneof(
  { weight: 4, arbitrary: fc.double({ noNaN: true, min: -1e6, max: 1e6 }).map(String) },
  { weight: 2, arbitrary: fc.integer({ min: -99_999, max: 99_999 }).map((n) => String(n / 1000)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("", " 7 ", "1e3", "-0", "01.50", "0x10", "Infinity", "1.", ".5", "12 %"),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const time = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .integer({ min: 0, max: 3 })
      .map((k) => new Date(Date.UTC(2026, 0, 14, 0, 0, k * 10)).toISOString()),
  },
  { weight: 1, arbitrary: fc.integer({ min: -1e12, max: 4e12 }).map((ms) => new Date(ms).toISOString()) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "2016-12-31T23:59:60Z",
      "2026-01-01T00:00:00.5+01:00",
      "2026-01-01t00:00:00z",
      "2026-02-30T00:00:00Z",
      "not a time",
      "",
    ),
  },
);

/** Entries in a random order, some optional ones left out. */
const shuffled = (entries: [string, fc.Arbitrary<Json>][]): fc.Arbitrary<Json> =>
  fc
    .tuple(fc.tuple(...entries.map(([k, a]) => a.map((v): [string, Json] => [k, v]))), fc.boolean())
    .chain(([all, inOrder]) =>
      inOrder
        ? fc.constant({ entries: all })
        : fc.shuffledSubarray(all, { minLength: all.length }).map((e) => ({ entries: e })),
    );

const row = fc
  .array(fc.tuple(fc.oneof(fc.constantFrom("metric_0", "metric_1", "metric_2"), name), value), {
    maxLength: 6,
  })
  .map((entries): Json => ({ entries }));

const message = fc
  .tuple(
    fc.constantFrom("table", "table", "table", "table", "headline", "headline", "severity"),
    fc.constantFrom("update", "update", "update", "update", "create", "snapshot", "delete", "upsert"),
    fc.integer({ min: 0, max: 9 }).map((n) => n > 0),
    fc.boolean(),
    fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
  )
  .chain(([type, operation, rowRight, withProbeTime, extra]) => {
    const target: [string, fc.Arbitrary<Json>][] = [
      ["gateway", name],
      ["probe", name],
      ["managedEntity", name],
      ["type", name],
      ["sampler", name],
      ["dataview", name],
      [
        "filter",
        shuffled([
          ["osType", fc.oneof(name, fc.constant("Linux"))],
          ["pluginName", name],
        ]),
      ],
    ];
    // A table's target names its row, a headline's does not: sometimes the other way round.
    if ((type === "table") === rowRight) target.splice(6, 0, ["row", name]);
    const data: [string, fc.Arbitrary<Json>][] = [
      ["sampleTime", time],
      ["target", shuffled(target)],
      ["row", row],
    ];
    if (withProbeTime) data.splice(1, 0, ["probeTime", time]);
    if (extra)
      data.push([
        fc.sample(fc.constantFrom("computedRow", "computedColumn", "other"), 1)[0] as string,
        fc.oneof(fc.boolean(), name),
      ]);
    return shuffled([
      ["type", fc.constant(type)],
      ["operation", fc.constant(operation)],
      ["data", shuffled(data)],
    ]);
  })
  .map(write);

/** A line changed in one place: whitespace, a character changed or dropped, a pair repeated, a number. */
const mutated = fc
  .tuple(
    message,
    fc.nat(),
    fc.constantFrom("space", "change", "drop", "repeat", "number", "crlf", "nest"),
    fc.string({ minLength: 1, maxLength: 1 }),
  )
  .map(([line, n, how, c]) => {
    const at = n % line.length;
    switch (how) {
      case "space":
        return `${line.slice(0, at)} ${line.slice(at)}`;
      case "change":
        return line.slice(0, at) + c + line.slice(at + 1);
      case "drop":
        return line.slice(0, at) + line.slice(at + 1);
      case "repeat": {
        // The first `"key":"value"` pair after `at`, written twice.
        const pair = /"[^"]*":"[^"]*"/.exec(line.slice(at));
        return pair === null ? line : line.replace(pair[0], `${pair[0]},${pair[0]}`);
      }
      case "number":
        return line.replace(/:"(-?\d+(?:\.\d+)?)"/, ":$1");
      case "crlf":
        return `${line}\r`;
      default:
        return line.replace('"filter":{', '"filter":{"deeper":{},');
    }
  });

const line = fc.oneof({ weight: 3, arbitrary: message }, { weight: 2, arbitrary: mutated });

/** The slice each path makes of `lines`. */
function both(lines: readonly string[], limits: DataLimits) {
  const text = lines.join("\n");
  return { read: checkLines(text, 0, limits, true), parsed: checkLines(text, 0, limits, false) };
}

describe("the backfill's table-line reader", () => {
  it("property: a body's slice is the same whether the reader takes its lines or every line is parsed", () =>
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 12 }),
        fc.constantFrom(
          DEFAULT_DATA_LIMITS,
          SMALL,
          { ...DEFAULT_DATA_LIMITS, jsonDepth: 3 },
          { ...DEFAULT_DATA_LIMITS, jsonDepth: 4 },
        ),
        (lines, limits) => {
          const { read, parsed } = both(lines, limits);
          assert.deepEqual(read, parsed);
        },
      ),
      fuzzBudget(3_000),
    ));

  it("property: a line the reader takes is one the general path stores, with the same row, cells and digest", () => {
    let taken = 0;
    let runs = 0;
    fc.assert(
      fc.property(message, (text) => {
        const cells = new SampleCells();
        const got = readTableLine(text, DEFAULT_DATA_LIMITS, cells);
        const { parsed } = both([text], DEFAULT_DATA_LIMITS);
        runs += 1;
        if (got === undefined) return;
        taken += 1;
        assert.equal(parsed.rejected.length, 0);
        assert.deepEqual(parsed.digests, [got.key.hash]);
        assert.equal(parsed.columns.length, cells.length);
      }),
      fuzzBudget(3_000),
    );
    // Enough of the generated lines are ones the reader takes (about a fifth) for the property to
    // say something.
    assert.ok(taken * 20 > runs, `the reader took ${taken} of ${runs} lines`);
  });

  const gateway =
    '{"type":"table","operation":"update","data":{"sampleTime":"2026-01-14T00:00:10.000Z","probeTime":"2026-01-14T00:00:09.500Z","target":{"gateway":"GW","probe":"p1","managedEntity":"host-000","type":"","sampler":"cpu","dataview":"cores","filter":{"osType":"Linux","pluginName":"cpu"},"row":"row-1"},"row":{"name":"row-1","__proto__":"1.5","c0":"","c1":"-0.25"}}}';
  const headline =
    '{"type":"headline","operation":"create","data":{"sampleTime":"2026-01-14T00:00:10.000Z","target":{"gateway":"GW","probe":"p1","managedEntity":"host-000","type":"","sampler":"cpu","dataview":"cores","filter":{"osType":"Linux","pluginName":"cpu"}},"row":{"totalRows":"4"}}}';

  it("takes a gateway's table line (probeTime, `row` after `filter`) and a headline line", () => {
    for (const text of [gateway, headline]) {
      assert.notEqual(readTableLine(text, DEFAULT_DATA_LIMITS, new SampleCells()), undefined);
      const { read, parsed } = both([text, text], DEFAULT_DATA_LIMITS);
      assert.deepEqual(read, parsed);
    }
    // `__proto__` is a column like any other, and a blank cell is no sample.
    const { read } = both([gateway], DEFAULT_DATA_LIMITS);
    assert.deepEqual(
      Array.from(read.columns, (c) => read.names[c]),
      ["name", "__proto__", "c1"],
    );
  });

  // biome-ignore format: one case per line
  const leftToParse: [string, string][] = [
    ["whitespace between tokens", gateway.replace('"update",', '"update", ')],
    ["an escape", gateway.replace("host-000", "host\\u002d000")],
    ["a repeated column", gateway.replace('"c0":""', '"c0":"","c0":"2"')],
    ["a repeated target name", gateway.replace('"probe":"p1"', '"probe":"p1","probe":"p2"')],
    ["a column of digits only", gateway.replace('"c0"', '"7"')],
    ["a delete", gateway.replace('"update"', '"delete"')],
    ["a number for a cell", gateway.replace('"-0.25"', "-0.25")],
    ["computedRow", gateway.replace('"row":{"name"', '"computedRow":true,"row":{"name"')],
    ["a leap second", gateway.replace("2026-01-14T00:00:10.000Z", "2016-12-31T23:59:60Z")],
    ["a probeTime the schema refuses", gateway.replace("2026-01-14T00:00:09.500Z", "yesterday")],
    ["a headline with a row", headline.replace('"cores",', '"cores","row":"r",')],
    ["a name past nameBytes", gateway.replace("host-000", "h".repeat(1025))],
    ["a lone surrogate", gateway.replace("host-000", "host-\ud800")],
    ["a CR at the end", `${gateway}\r`],
  ];
  for (const [what, text] of leftToParse) {
    it(`leaves ${what} to the general path, which answers the same`, () => {
      const cells = new SampleCells();
      assert.equal(readTableLine(text, DEFAULT_DATA_LIMITS, cells), undefined);
      assert.equal(cells.length, 0);
      const { read, parsed } = both([gateway, text, headline], DEFAULT_DATA_LIMITS);
      assert.deepEqual(read, parsed);
    });
  }

  it("leaves every line to the general path under a jsonDepth below the message's four levels", () => {
    assert.equal(
      readTableLine(gateway, { ...DEFAULT_DATA_LIMITS, jsonDepth: 3 }, new SampleCells()),
      undefined,
    );
  });
});
