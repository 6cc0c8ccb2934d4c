/**
 * The DuckDB store's sample chunks (duckdb-append.ts `sampleChunks`), written column by column into
 * typed arrays and copied into each DataChunk's vectors: appended to a table of the four sample
 * columns, every row named must come back in order with its series id, time, value (NULL for no
 * number) and text (NULL for the canonical text of its number, whether the cell held it or was added
 * without it), across chunk ends and in the short last chunk; cells no row names are not written.
 * Property over random rows of random cells. The appender kept from one transaction to the next
 * (`KeptAppender`): a commit keeps what it appended, a rollback takes it back, and after a failed
 * append (a chunk of the wrong shape) nothing of it is stored and the next append works.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { DuckDBDataChunk, DuckDBInstance, INTEGER } from "@duckdb/node-api";
import fc from "fast-check";
import { numericValue } from "../../../src/hub/ingest/check-message.js";
import { isCanonicalNumberText } from "../../../src/hub/store/core/canonical-number.js";
import { appendChunks, KeptAppender, sampleChunks } from "../../../src/hub/store/duckdb/duckdb-append.js";
import { SampleRowsBuilder } from "../../../src/hub/store/sample-rows.js";
import { asEpochMs } from "../../../src/ids.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const instance = await DuckDBInstance.create(":memory:");
const db = await instance.connect();
await db.run(
  "CREATE TABLE samples (series_id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL, value DOUBLE, text VARCHAR)",
);
after(() => {
  db.closeSync();
  instance.closeSync();
});

const ENTITY = { gateway: "gw", probe: "p", managedEntity: "me" };
const NAMES = { sampler: "s", samplerType: "", dataview: "d", row: "r" };

const text = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -99_999_999, max: 99_999_999 }).map((n) => String(n / 1000)) },
  { weight: 1, arbitrary: fc.constantFrom("1.50", "-0", "1e3", " 7", "n/a", "Infinity", "日本", "0.00001") },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 5 }) },
);

/** A row: its time, its cells' texts, and whether each canonical text is left out of the cells. */
const row = fc.record({
  at: fc.integer({ min: 0, max: 4e12 }),
  texts: fc.array(text, { maxLength: 700 }),
  leaveOut: fc.boolean(),
  skipped: fc.boolean(),
});

interface Stored {
  readonly id: number;
  readonly ms: number;
  readonly value: number | null;
  readonly text: string | null;
}

describe("DuckDB sample chunks", () => {
  it("property: every cell a row names is stored in order with its id, time, value and text", () =>
    fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 12 }), async (rows) => {
        const builder = new SampleRowsBuilder();
        const expected: Stored[] = [];
        let cell = 0;
        for (const r of rows) {
          const start = cell;
          for (const t of r.texts) {
            const value = numericValue(t);
            const canonical = value !== null && isCanonicalNumberText(value, t);
            if (r.leaveOut && canonical) builder.cells.canonicalCell("c", value);
            else builder.cell("c", t, value);
            // A row left unnamed: its cells are in the columns but in no row.
            if (!r.skipped) expected.push({ id: cell, ms: r.at, value, text: canonical ? null : t });
            cell += 1;
          }
          if (!r.skipped)
            builder.row(ENTITY, NAMES.sampler, "", NAMES.dataview, NAMES.row, asEpochMs(r.at), start, cell);
        }
        // The cell's index as its series id.
        const ids = Int32Array.from({ length: cell }, (_, i) => i);
        await db.run("DELETE FROM samples");
        await appendChunks(db, "samples", sampleChunks(builder, ids));
        const result = await db.runAndReadAll(
          "SELECT series_id, epoch_ms(ts), value, text FROM samples ORDER BY rowid",
        );
        const stored = result.getRowsJS().map(([id, ms, value, t]) => ({
          id: Number(id),
          ms: Number(ms),
          value: value === null ? null : Number(value),
          text: t === null ? null : String(t),
        }));
        assert.deepEqual(stored, expected);
      }),
      fuzzBudget(100),
    ));
});

describe("DuckDB appender kept across transactions", () => {
  it("appends into each open transaction: a commit keeps the rows, a rollback or a failed append drops them", async () => {
    await db.run("CREATE TABLE kept (x INTEGER)");
    const kept = new KeptAppender(db, "kept");
    const chunk = (...xs: number[]) => {
      const c = DuckDBDataChunk.create([INTEGER], xs.length);
      c.setColumnValues(0, xs);
      return c;
    };
    const stored = async () =>
      (await db.runAndReadAll("SELECT x FROM kept ORDER BY x")).getRowsJS().map(([x]) => Number(x));
    try {
      await db.run("BEGIN TRANSACTION");
      await kept.append([chunk(1, 2)]);
      assert.deepEqual(await stored(), [1, 2], "inside its transaction, the rows are there");
      await db.run("COMMIT");
      await db.run("BEGIN TRANSACTION");
      await kept.append([chunk(3)]);
      await db.run("ROLLBACK");
      assert.deepEqual(await stored(), [1, 2]);
      await db.run("BEGIN TRANSACTION");
      const wrong = DuckDBDataChunk.create([INTEGER, INTEGER], 1);
      wrong.setColumnValues(0, [9]);
      wrong.setColumnValues(1, [9]);
      await assert.rejects(kept.append([chunk(4), wrong]), /column count/);
      // Committed all the same: the rows the failed append had buffered are not flushed into it.
      await db.run("COMMIT");
      assert.deepEqual(await stored(), [1, 2]);
      await db.run("BEGIN TRANSACTION");
      await kept.append([chunk(5)]);
      await db.run("COMMIT");
      assert.deepEqual(await stored(), [1, 2, 5]);
    } finally {
      kept.close();
      await db.run("DROP TABLE kept");
    }
  });
});
