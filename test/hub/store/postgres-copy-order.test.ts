/**
 * The order in which the PostgreSQL store copies a batch's samples (postgres-copy.ts): by
 * series id, each series' cells in the order they came, with each cell's own time; every cell the
 * rows name exactly once (and none they skip). Property over dense ids (the counting sort) and
 * sparse ones (the comparison sort).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { copyOrder } from "../../../src/hub/store/postgres/postgres-copy.js";
import { SampleCells } from "../../../src/hub/store/sample-rows.js";
import type { SampleRow, SampleRows } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const entity = { gateway: "g", probe: "p", managedEntity: "m" };

/** Rows over `cells` cells: consecutive ranges, some cells skipped between rows. */
const batch = fc
  .record({
    sizes: fc.array(
      fc.record({ cells: fc.nat(5), skip: fc.nat(2), at: fc.integer({ min: -1e12, max: 4e12 }) }),
      {
        maxLength: 30,
      },
    ),
    sparse: fc.boolean(),
  })
  .chain(({ sizes, sparse }) => {
    const total = sizes.reduce((n, s) => n + s.cells + s.skip, 0);
    const id = sparse ? fc.integer({ min: 1, max: 2 ** 31 - 1 }) : fc.integer({ min: 1, max: 6 });
    return fc.record({
      sizes: fc.constant(sizes),
      ids: fc.array(id, { minLength: total, maxLength: total }),
    });
  });

describe("copyOrder", () => {
  test("property: series order, arrival order within a series, each named cell once with its time", () => {
    fc.assert(
      fc.property(batch, ({ sizes, ids }) => {
        const rows: SampleRow[] = [];
        let c = 0;
        const named: { cell: number; at: number }[] = [];
        for (const s of sizes) {
          c += s.skip;
          const row: SampleRow = {
            entity,
            sampler: "s",
            samplerType: "",
            dataview: "d",
            row: "r",
            at: asEpochMs(s.at),
            start: c,
            end: c + s.cells,
          };
          for (let k = row.start; k < row.end; k++) named.push({ cell: k, at: s.at });
          rows.push(row);
          c += s.cells;
        }
        const cells: SampleRows = { rows, cells: new SampleCells() };
        const { order, times } = copyOrder(cells, ids);
        // Stable by id: the named cells sorted by id, ties in arrival order.
        const expected = named
          .map((n, arrival) => ({ ...n, arrival }))
          .sort((a, b) => (ids[a.cell] as number) - (ids[b.cell] as number) || a.arrival - b.arrival);
        assert.deepEqual(
          [...order],
          expected.map((e) => e.cell),
        );
        assert.deepEqual(
          [...times],
          expected.map((e) => e.at),
        );
      }),
      fuzzBudget(1_000),
    );
  });
});
