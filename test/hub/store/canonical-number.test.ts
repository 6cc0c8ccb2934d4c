// The canonical text of a sample's number (src/hub/store/core/canonical-number.ts) against a real
// DuckDB: every text the test calls canonical is stored as NULL by the write path and rendered
// back from the double by the read path's SQL exactly as sent; every other text is stored as sent.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { DuckDBInstance } from "@duckdb/node-api";
import fc from "fast-check";
import { numericValue } from "../../../src/hub/ingest/check-message.js";
import { isCanonicalNumberText } from "../../../src/hub/store/core/canonical-number.js";
import { appendChunks, sampleChunks } from "../../../src/hub/store/duckdb/duckdb-append.js";
import { DUCKDB_SCHEMA, sampleTextSql } from "../../../src/hub/store/duckdb/duckdb-schema.js";
import { SampleRowsBuilder } from "../../../src/hub/store/sample-rows.js";
import { asEpochMs } from "../../../src/ids.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

/** 200 batches or VIGIL_FUZZ_SECONDS, whichever ends first (test/helpers/fuzz-budget.ts). */
const BUDGET = fuzzBudget(200);

const instance = await DuckDBInstance.create(":memory:");
const db = await instance.connect();
for (const statement of DUCKDB_SCHEMA) await db.run(statement);
after(() => {
  db.closeSync();
  instance.closeSync();
});

const ENTITY = { gateway: "gw", probe: "p", managedEntity: "me" };
const NAMES = { sampler: "s", samplerType: "", dataview: "d", row: "r" };

/**
 * Stores `texts` (each with the number the ingester reads from it) through the DuckDB write path,
 * and reads back, in order, what the store keeps and what it reads.
 */
async function roundTrip(
  texts: readonly string[],
  leaveOut = false,
): Promise<{ kept: (string | null)[]; read: string[] }> {
  const rows = new SampleRowsBuilder();
  for (const text of texts) {
    const value = numericValue(text);
    // `leaveOut`: each canonical text left out of the cells, as the backfill's parse workers send them.
    if (leaveOut && value !== null && isCanonicalNumberText(value, text))
      rows.cells.canonicalCell("c", value);
    else rows.cell("c", text, value);
  }
  rows.endRow(ENTITY, NAMES, asEpochMs(0));
  // The cell's index as its series id: the rows read back in the order they were sent.
  const ids = Int32Array.from(texts, (_, i) => i);
  await db.run("DELETE FROM samples");
  await appendChunks(db, "samples", sampleChunks(rows, ids));
  const result = await db.runAndReadAll(
    `SELECT x.text, ${sampleTextSql("x")} FROM samples x ORDER BY x.series_id`,
  );
  const out = result.getRowsJS();
  return {
    kept: out.map(([kept]) => (kept === null ? null : String(kept))),
    read: out.map(([, read]) => String(read)),
  };
}

/** What the write path must keep of `text`: nothing when it is canonical. */
const expectedKept = (text: string): string | null => {
  const value = numericValue(text);
  return value !== null && isCanonicalNumberText(value, text) ? null : text;
};

/** Doubles of every kind, with weight on the edges of the canonical ranges. */
const number = fc.oneof(
  fc.double(),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(Number),
  fc
    .tuple(fc.integer({ min: -99_999_999, max: 99_999_999 }), fc.integer({ min: 0, max: 9 }))
    .map(([n, decimals]) => n / 10 ** decimals),
  fc.constantFrom(1e-4, 9.999999999999999e-5, 1.0000000000000002e-4, -1e-4, 1e-7, 1e21, 2 ** 52 - 0.5),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -Number.MAX_SAFE_INTEGER, -0, 0),
  fc.double({ min: 5e-5, max: 2e-4, noNaN: true }),
  fc.double({ min: 4e15, max: 1e16, noNaN: true }),
);

/** Texts of those numbers: their `String` form mostly, and other forms of the same number. */
const text = fc.oneof(
  { weight: 4, arbitrary: number.map(String) },
  { weight: 1, arbitrary: fc.tuple(number, fc.integer({ min: 0, max: 20 })).map(([n, d]) => n.toFixed(d)) },
  {
    weight: 1,
    arbitrary: fc.tuple(number, fc.integer({ min: 1, max: 21 })).map(([n, p]) => n.toPrecision(p)),
  },
  { weight: 1, arbitrary: number.map((n) => n.toExponential()) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(number.map(String), fc.constantFrom("0", " ", "+", "0.", ".0", "-"), fc.boolean())
      .map(([s, extra, before]) => (before ? extra + s : s + extra)),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);

describe("canonical number texts", () => {
  // biome-ignore format: one case per line
  const canonical: [string, number][] = [
    ["7", 7], ["0", 0], ["-7", -7], ["0.1", 0.1], ["-0.5", -0.5], ["123.456", 123.456], ["0.0001", 1e-4],
    ["0.00015", 1.5e-4], ["9007199254740991", Number.MAX_SAFE_INTEGER], ["-9007199254740991", -Number.MAX_SAFE_INTEGER],
    ["0.30000000000000004", 0.1 + 0.2], ["4503599627370495.5", 2 ** 52 - 0.5],
  ];
  for (const [t, value] of canonical) {
    it(`${JSON.stringify(t)} is canonical`, () => assert.equal(isCanonicalNumberText(value, t), true));
  }

  // biome-ignore format: one case per line
  const notCanonical: [string, number][] = [
    ["1.50", 1.5], ["01", 1], ["1e3", 1000], ["-0", -0], ["0.1000", 0.1], [" 1", 1], ["NaN", Number.NaN],
    ["+1", 1], ["7.0", 7], [".5", 0.5], ["1e21", 1e21], ["0.000001", 1e-6], ["1e-7", 1e-7], ["0.00009", 9e-5],
    ["123456789012345678", Number("123456789012345678")], ["9007199254740992", 2 ** 53], ["Infinity", Number.POSITIVE_INFINITY],
  ];
  for (const [t, value] of notCanonical) {
    it(`${JSON.stringify(t)} is not canonical`, () => assert.equal(isCanonicalNumberText(value, t), false));
  }

  it("a text of another number is not canonical", () => assert.equal(isCanonicalNumberText(2, "1"), false));

  it("every one of them is stored as the store must keep it and reads back as sent", async () => {
    const texts = [...canonical, ...notCanonical].map(([t]) => t);
    const { kept, read } = await roundTrip(texts);
    assert.deepEqual(read, texts);
    assert.deepEqual(
      kept,
      texts.map((t) => expectedKept(t)),
    );
    // The examples above are what the store sees: canonical ones are left out, the rest kept.
    assert.deepEqual(
      kept.map((k) => k === null),
      texts.map((_, i) => i < canonical.length),
    );
  });

  it("a cell added without its canonical text is stored and read back as the cell with it", async () => {
    const texts = [...canonical, ...notCanonical].map(([t]) => t);
    assert.deepEqual(await roundTrip(texts, true), await roundTrip(texts));
  });

  it("property: DuckDB renders every canonical text back from its double; every other text is kept", () =>
    fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 300 }), async (texts) => {
        const { kept, read } = await roundTrip(texts);
        assert.deepEqual(read, texts);
        assert.deepEqual(
          kept,
          texts.map((t) => expectedKept(t)),
        );
      }),
      BUDGET,
    ));

  it("property: the check reads the text as `String(value)` compared with it would, for texts of every form", () =>
    fc.assert(
      fc.property(
        fc.oneof(text, fc.stringMatching(/^-?[0-9]{0,20}(\.[0-9]{0,20})?$/)),
        number,
        fc.boolean(),
        (t, n, own) => {
          // Mostly the text's own number (as the ingester pairs them), sometimes another one.
          const value = own ? Number(t) : n;
          const inRange = Number.isInteger(value)
            ? Math.abs(value) <= Number.MAX_SAFE_INTEGER
            : Number.isFinite(value) && Math.abs(value) >= 1e-4;
          assert.equal(isCanonicalNumberText(value, t), inRange && t === String(value));
        },
      ),
      fuzzBudget(20_000),
    ));

  it("property: a canonical text is the one `String` writes, within the ranges DuckDB writes alike", () =>
    fc.assert(
      fc.property(number, fc.string({ maxLength: 4 }), (n, other) => {
        const t = String(n);
        const inRange = Number.isInteger(n)
          ? Math.abs(n) <= Number.MAX_SAFE_INTEGER
          : Number.isFinite(n) && Math.abs(n) >= 1e-4;
        assert.equal(isCanonicalNumberText(n, t), inRange);
        if (other !== t) assert.equal(isCanonicalNumberText(n, other), false);
      }),
      fuzzBudget(2_000),
    ));
});
