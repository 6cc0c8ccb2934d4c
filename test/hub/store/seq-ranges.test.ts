import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { planSeqClaim, type SeqRange } from "../../../src/hub/store/seq-ranges.js";

const r = (first: number, last: number): SeqRange => ({ first, last });

describe("planSeqClaim", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: { name: string; stored: SeqRange[]; seqs: number[]; fresh: boolean[]; update: [SeqRange, SeqRange][]; remove: SeqRange[]; insert: SeqRange[] }[] = [
    { name: "the first seqs of an origin make one run", stored: [], seqs: [1, 2, 3], fresh: [true, true, true], update: [], remove: [], insert: [r(1, 3)] },
    { name: "in-order seqs widen the run before them", stored: [r(1, 10)], seqs: [11, 12], fresh: [true, true], update: [[r(1, 10), r(1, 12)]], remove: [], insert: [] },
    { name: "stored seqs are not new and change nothing", stored: [r(1, 10)], seqs: [3, 10], fresh: [false, false], update: [], remove: [], insert: [] },
    { name: "a repeat within the list is new once", stored: [], seqs: [4, 4], fresh: [true, false], update: [], remove: [], insert: [r(4, 4)] },
    { name: "a seq apart from every run starts its own", stored: [r(1, 3)], seqs: [6], fresh: [true], update: [], remove: [], insert: [r(6, 6)] },
    { name: "a seq just before a run widens it downwards", stored: [r(5, 9)], seqs: [4], fresh: [true], update: [[r(5, 9), r(4, 9)]], remove: [], insert: [] },
    { name: "filling a gap merges the two runs", stored: [r(1, 3), r(5, 9)], seqs: [4], fresh: [true], update: [[r(1, 3), r(1, 9)]], remove: [r(5, 9)], insert: [] },
    { name: "one batch can bridge several runs", stored: [r(1, 1), r(3, 3), r(5, 5)], seqs: [2, 4, 6], fresh: [true, true, true], update: [[r(1, 1), r(1, 6)]], remove: [r(3, 3), r(5, 5)], insert: [] },
    { name: "seqs in any order, around a run", stored: [r(5, 6)], seqs: [9, 2, 7, 1], fresh: [true, true, true, true], update: [[r(5, 6), r(5, 7)]], remove: [], insert: [r(1, 2), r(9, 9)] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planSeqClaim(c.stored, c.seqs);
      assert.deepEqual(plan.fresh, c.fresh);
      assert.deepEqual(
        plan.update.map((u) => [u.from, u.to]),
        c.update,
      );
      assert.deepEqual(plan.remove, c.remove);
      assert.deepEqual(plan.insert, c.insert);
    });
  }

  it("property: applying plans keeps disjoint, non-adjacent runs holding exactly the claimed seqs", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 20 }), { maxLength: 10 }),
        (batches) => {
          let runs: SeqRange[] = [];
          const claimed = new Set<number>();
          for (const seqs of batches) {
            const plan = planSeqClaim(runs, seqs);
            const seen = new Set<number>();
            seqs.forEach((seq, i) => {
              assert.equal(plan.fresh[i], !claimed.has(seq) && !seen.has(seq));
              seen.add(seq);
            });
            for (const seq of seqs) claimed.add(seq);
            const same = (a: SeqRange) => (b: SeqRange) => a.first === b.first && a.last === b.last;
            const gone = [...plan.remove, ...plan.update.map((u) => u.from)];
            runs = [
              ...runs.filter((run) => !gone.some(same(run))),
              ...plan.update.map((u) => u.to),
              ...plan.insert,
            ].sort((a, b) => a.first - b.first);
            runs.forEach((run, i) => {
              const next = runs[i + 1];
              if (next !== undefined)
                assert.ok(next.first > run.last + 1, "runs are disjoint and not adjacent");
            });
            const held = runs.flatMap((run) =>
              Array.from({ length: run.last - run.first + 1 }, (_, k) => run.first + k),
            );
            assert.deepEqual(
              held,
              [...claimed].sort((a, b) => a - b),
            );
          }
        },
      ),
      { numRuns: 300, seed: 7 },
    );
  });

  it("answers right for overlapping stored runs (left by writers that raced)", () => {
    const plan = planSeqClaim([r(1, 5), r(3, 8)], [7, 9]);
    assert.deepEqual(plan.fresh, [false, true]);
    assert.deepEqual(plan.update, [{ from: r(1, 5), to: r(1, 9) }]);
    assert.deepEqual(plan.remove, [r(3, 8)]);
  });
});
