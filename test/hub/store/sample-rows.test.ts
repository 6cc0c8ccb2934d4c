/**
 * Cells in columns (sample-rows.ts): `SampleCells` keeps its cells in chunks of 4 096,
 * so reading by index must give back each cell as it was added, on both sides of every chunk's
 * end, a cell added without its canonical text with that text written back; and `sampleRowsOf`
 * must carry the cells of `IngestBatch.rows` after the single samples.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { SampleCells, SampleRowsBuilder, sampleRowsOf } from "../../../src/hub/store/sample-rows.js";
import { asEpochMs } from "../../../src/ids.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const entity = { gateway: "g", probe: "p", managedEntity: "m" };

/**
 * What cell `i` holds in these tests: a text, and a number except every seventh; every fifth is the
 * number's canonical text, added without it.
 */
const cellOf = (i: number): [string, string, number | null] => [
  `c${i % 13}`,
  i % 5 === 0 && i % 7 !== 0 ? String(i / 4) : `t${i}`,
  i % 7 === 0 ? null : i / 4,
];

function add(cells: SampleCells, i: number): void {
  const [column, text, value] = cellOf(i);
  if (i % 5 === 0 && value !== null) cells.canonicalCell(column, value);
  else cells.cell(column, text, value);
}

describe("SampleCells", () => {
  test("property: each cell reads back as added, across chunk ends", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 13_000 }), (count) => {
        const cells = new SampleCells();
        for (let i = 0; i < count; i++) add(cells, i);
        assert.equal(cells.length, count);
        for (let i = 0; i < count; i++) {
          const [column, text, value] = cellOf(i);
          assert.equal(cells.column(i), column);
          assert.equal(cells.text(i), text);
          assert.equal(cells.ownText(i), i % 5 === 0 && value !== null ? undefined : text);
          assert.equal(cells.value(i), value ?? Number.NaN);
        }
      }),
      fuzzBudget(40),
    );
  });

  test("a value that is not a finite number reads back as NaN", () => {
    const cells = new SampleCells();
    for (const value of [null, Number.POSITIVE_INFINITY, Number.NaN, -0, 2.5]) cells.cell("c", "t", value);
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((c) => cells.value(c)),
      [Number.NaN, Number.NaN, Number.NaN, -0, 2.5],
    );
  });
});

describe("sampleRowsOf", () => {
  test("rows in columns follow the single samples, each cell with its own column and text", () => {
    const rows = new SampleRowsBuilder();
    // 900 rows of 5 cells: 4 500 cells, past the first chunk.
    for (let r = 0; r < 900; r++) {
      for (let k = 0; k < 5; k++) rows.cell(...cellOf(r * 5 + k));
      rows.endRow(entity, { sampler: "s", samplerType: "", dataview: "d", row: `r${r}` }, asEpochMs(r));
    }
    const series = { sampler: "s", samplerType: "", dataview: "d", row: "single", column: "x" };
    const out = sampleRowsOf({
      entities: [],
      samples: [{ entity, series, at: asEpochMs(-1), text: "one", value: 1 }],
      rows,
    });
    assert.equal(out.rows.length, 901);
    assert.deepEqual([out.cells.column(0), out.cells.text(0), out.cells.value(0)], ["x", "one", 1]);
    for (const r of [0, 818, 819, 899]) {
      const row = out.rows[r + 1];
      assert.equal(row?.row, `r${r}`);
      const read = [];
      for (let c = row?.start ?? 0; c < (row?.end ?? 0); c++) {
        read.push([out.cells.column(c), out.cells.text(c), out.cells.value(c)]);
      }
      assert.deepEqual(
        read,
        Array.from({ length: 5 }, (_, k) => {
          const [column, text, value] = cellOf(r * 5 + k);
          return [column, text, value ?? Number.NaN];
        }),
      );
    }
  });
});
