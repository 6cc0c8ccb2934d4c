import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  type ClaimStatements,
  claimMessageKeys,
  claimNewDigests,
  type OriginRun,
  type OriginWindow,
} from "../../../src/hub/store/core/message-claims.js";
import type { SeqRange } from "../../../src/hub/store/seq-ranges.js";
import { type MessageKey, StoreDataError } from "../../../src/hub/store/store.js";

/**
 * A store of runs and digests in memory, with the statements' own rules: the read returns the runs
 * that overlap or touch a window, and a change names a run that must be stored.
 */
class MemoryClaims implements ClaimStatements {
  readonly stored = new Map<string, SeqRange[]>();
  readonly digests = new Set<string>();
  readonly reads: (readonly OriginWindow[])[] = [];

  checkKey(): void {}

  readonly runs = {
    read: async (windows: readonly OriginWindow[]): Promise<OriginRun[]> => {
      this.reads.push(windows);
      return windows.flatMap(({ origin, lo, hi }) =>
        (this.stored.get(origin) ?? [])
          .filter((r) => r.last >= lo - 1 && r.first <= hi + 1)
          .map((range) => ({ origin, range })),
      );
    },
    remove: async (runs: readonly OriginRun[]): Promise<void> => {
      for (const { origin, range } of runs) this.stored.set(origin, this.without(origin, range));
    },
    update: async (changes: readonly { origin: string; from: SeqRange; to: SeqRange }[]): Promise<void> => {
      for (const { origin, from, to } of changes)
        this.stored.set(origin, [...this.without(origin, from), to]);
    },
    insert: async (runs: readonly OriginRun[]): Promise<void> => {
      for (const { origin, range } of runs)
        this.stored.set(origin, [...(this.stored.get(origin) ?? []), range]);
    },
  };

  readonly claimHashes = claimNewDigests<string>({
    digest: (h) => h.hash,
    insertNew: async (digests) => {
      const added = digests.filter((d) => !this.digests.has(d));
      for (const d of added) this.digests.add(d);
      return added;
    },
  });

  /** Every seq stored of `origin`, from its runs. */
  seqs(origin: string): number[] {
    return (this.stored.get(origin) ?? [])
      .flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, i) => r.first + i))
      .sort((a, b) => a - b);
  }

  private without(origin: string, range: SeqRange): SeqRange[] {
    const runs = this.stored.get(origin) ?? [];
    const i = runs.findIndex((r) => r.first === range.first && r.last === range.last);
    assert.notEqual(i, -1, `no stored run ${origin} ${range.first}-${range.last}`);
    return runs.filter((_, k) => k !== i);
  }
}

const seq = (origin: string, n: number): MessageKey => ({ kind: "seq", origin, seq: n });
const hash = (h: string): MessageKey => ({ kind: "hash", hash: h });

describe("claimMessageKeys (core)", () => {
  it("a key is new once: within one claim and across claims", async () => {
    const store = new MemoryClaims();
    assert.deepEqual(await claimMessageKeys(store, [seq("a", 1), seq("a", 1), hash("h1"), hash("h1")]), [
      true,
      false,
      true,
      false,
    ]);
    assert.deepEqual(await claimMessageKeys(store, [seq("a", 1), seq("a", 2), hash("h1"), hash("h2")]), [
      false,
      true,
      false,
      true,
    ]);
    assert.deepEqual(store.stored.get("a"), [{ first: 1, last: 2 }]);
  });

  it("reads the origins in code-point order, each with its lowest and highest seq", async () => {
    const store = new MemoryClaims();
    await claimMessageKeys(store, [seq("b", 7), seq("B", 3), seq("b", 2), seq("é", 1)]);
    assert.deepEqual(store.reads, [
      [
        { origin: "B", lo: 3, hi: 3 },
        { origin: "b", lo: 2, hi: 7 },
        { origin: "é", lo: 1, hi: 1 },
      ],
    ]);
  });

  it("refuses a malformed key before any statement", async () => {
    const store = new MemoryClaims();
    await assert.rejects(claimMessageKeys(store, [seq("a", 1), seq("a", 0)]), StoreDataError);
    assert.deepEqual(store.reads, []);
  });

  it("any sequence of claims stores exactly the seqs claimed, each new the first time", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(fc.tuple(fc.constantFrom("a", "b"), fc.integer({ min: 1, max: 40 })), { maxLength: 12 }),
          {
            maxLength: 8,
          },
        ),
        async (claims) => {
          const store = new MemoryClaims();
          const seen = new Set<string>();
          for (const claim of claims) {
            const fresh = await claimMessageKeys(
              store,
              claim.map(([o, n]) => seq(o, n)),
            );
            claim.forEach(([o, n], i) => {
              assert.equal(fresh[i], !seen.has(`${o}.${n}`));
              seen.add(`${o}.${n}`);
            });
          }
          for (const origin of ["a", "b"]) {
            const expected = [...seen]
              .filter((k) => k.startsWith(`${origin}.`))
              .map((k) => Number(k.slice(2)))
              .sort((x, y) => x - y);
            assert.deepEqual(store.seqs(origin), expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
