import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { MAX_SEGMENT_SCANS, scanGroups, splitInstant } from "../../../src/hub/store/core/bucket-grid.js";
import {
  groupAttributeValues,
  groupColumns,
  matchesMayRepeat,
} from "../../../src/hub/store/core/metric-plan.js";
import { decimalFraction } from "../../../src/hub/store/core/percentile-rank.js";
import { parseZone, segments, type ZoneOffsets } from "../../../src/hub/store/core/zone-offsets.js";
import type {
  BucketSpec,
  CellSelector,
  EntityRecord,
  MetricQueryPlan,
} from "../../../src/hub/store/store.js";
import { asEntityId, asEpochMs } from "../../../src/ids.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const HOUR = 3_600_000;
const utc = (iso: string): number => Date.parse(`${iso}Z`);
/** Europe/London around the spring change of 2024: GMT until 01:00 UTC on 31 March, then BST. */
const spring = { atMs: utc("2024-03-31T01:00:00"), beforeMs: 0, afterMs: HOUR };
const london: ZoneOffsets = { initialMs: 0, transitions: [spring] };

describe("parseZone", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: { zone: string; spec: ReturnType<typeof parseZone> }[] = [
    { zone: "Europe/London", spec: { kind: "named", name: "Europe/London" } },
    { zone: "+05:30", spec: { kind: "fixed", offsetSeconds: 19_800 } },
    { zone: "-0800", spec: { kind: "fixed", offsetSeconds: -28_800 } },
    { zone: "UTC+01:00", spec: { kind: "fixed", offsetSeconds: 3600 } },
    { zone: "GMT-3", spec: { kind: "fixed", offsetSeconds: -10_800 } },
    { zone: "Z", spec: { kind: "fixed", offsetSeconds: 0 } },
  ];
  for (const c of cases) it(`reads ${c.zone}`, () => assert.deepEqual(parseZone(c.zone), c.spec));
  it("refuses an offset beyond 18 hours", () => assert.throws(() => parseZone("+19:00"), RangeError));
});

describe("segments", () => {
  it("a range without a transition is one segment that keeps the initial offset", () => {
    const window = { from: utc("2024-03-01T00:00:00"), to: utc("2024-03-02T00:00:00") };
    assert.deepEqual(segments(london, window), [{ ...window, offsetMs: 0, opened: null }]);
  });
  it("a range across the change is cut at the change instant", () => {
    const window = { from: utc("2024-03-30T00:00:00"), to: utc("2024-04-01T00:00:00") };
    assert.deepEqual(segments(london, window), [
      { from: window.from, to: spring.atMs, offsetMs: 0, opened: null },
      { from: spring.atMs, to: window.to, offsetMs: HOUR, opened: spring },
    ]);
  });
  it("a range after the change keeps the transition that opened its offset", () => {
    const window = { from: utc("2024-04-02T00:00:00"), to: utc("2024-04-03T00:00:00") };
    assert.deepEqual(segments(london, window), [{ ...window, offsetMs: HOUR, opened: spring }]);
  });
});

describe("scanGroups", () => {
  it("never makes more scans than MAX_SEGMENT_SCANS, each of consecutive segments", () => {
    for (const n of [1, 2, MAX_SEGMENT_SCANS, MAX_SEGMENT_SCANS + 1, 100]) {
      const all = Array.from({ length: n }, (_, i) => i);
      const groups = scanGroups(all);
      assert.ok(groups.length <= MAX_SEGMENT_SCANS);
      assert.deepEqual(groups.flat(), all);
    }
  });
});

describe("splitInstant", () => {
  const window = { from: utc("2024-03-30T00:00:00"), to: utc("2024-04-02T00:00:00") };
  // biome-ignore format: one line per case (STYLE 16)
  const cases: { name: string; bucket: BucketSpec; at: number; split: number | undefined }[] = [
    { name: "a day bucket splits at the local midnight before, in GMT", bucket: { kind: "day" }, at: utc("2024-03-30T13:00:00"), split: utc("2024-03-30T00:00:00") + 24 * HOUR },
    { name: "a day bucket after the change splits at local midnight in BST", bucket: { kind: "day" }, at: utc("2024-04-01T05:00:00"), split: utc("2024-03-31T23:00:00") },
    { name: "an hour bucket splits on the hour", bucket: { kind: "minutes", minutes: 60 }, at: utc("2024-03-31T05:30:00"), split: utc("2024-03-31T05:00:00") },
    { name: "a month bucket never splits", bucket: { kind: "month" }, at: utc("2024-03-31T05:00:00"), split: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(splitInstant(c.bucket, london, window, c.at), c.split));
  }
  it("count buckets split at a boundary of the range they divide", () => {
    const range = { from: asEpochMs(0), to: asEpochMs(1000) };
    assert.equal(splitInstant({ kind: "count", count: 3 }, london, { from: 0, to: 1000 }, 500, range), 334);
  });
});

describe("plan columns", () => {
  it("groups in grouping order, entity ids numeric", () => {
    assert.deepEqual(groupColumns(["entity", { attribute: "site" }, "rowname"]), [
      { key: "entity", column: "entity_id", numeric: true },
      { key: "attribute", column: "attr", numeric: false },
      { key: "rowname", column: "row_name", numeric: false },
    ]);
  });
  it("an attribute named like a prototype member is data", () => {
    const entity = (attributes: Record<string, string>) => ({
      id: asEntityId(1),
      attributes,
      isDeleted: false,
    });
    const plan = {
      grouping: [{ attribute: "constructor" }],
      entities: [entity({}), entity({ constructor: "x" })],
    };
    assert.deepEqual(groupAttributeValues(plan), ["", "x"]);
  });
});

describe("decimalFraction", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: { p: string; numerator: bigint; denominator: bigint }[] = [
    { p: "0.07", numerator: 7n, denominator: 100n },
    { p: "0.50", numerator: 1n, denominator: 2n },
    { p: "5e-2", numerator: 1n, denominator: 20n },
    { p: "1", numerator: 1n, denominator: 1n },
  ];
  for (const c of cases) {
    it(`reads ${c.p} exactly`, () =>
      assert.deepEqual(decimalFraction(c.p), { numerator: c.numerator, denominator: c.denominator }));
  }
  it("refuses p above 1", () => assert.throws(() => decimalFraction("1.5"), RangeError));
});

describe("matchesMayRepeat", () => {
  const entity = (id: number) => ({ id: asEntityId(id) }) as unknown as EntityRecord;
  const cell = (row: string | null, samplerType: string | null = null, column = "c"): CellSelector => ({
    sampler: "s",
    samplerType,
    dataview: "d",
    row,
    column,
  });
  const plan = (
    metrics: [string, CellSelector[]][],
    ids = [1, 2],
  ): Pick<MetricQueryPlan, "metrics" | "entities"> => ({
    entities: ids.map(entity),
    metrics: metrics.map(([identifier, include]) => ({ identifier, include })),
  });
  // biome-ignore format: one line per case (STYLE 16)
  const cases: { name: string; plan: Pick<MetricQueryPlan, "metrics" | "entities">; repeat: boolean }[] = [
    { name: "one selector a metric", plan: plan([["m", [cell(null)]], ["n", [cell(null, null, "x")]]]), repeat: false },
    { name: "one series under two identifiers is two matches", plan: plan([["m", [cell(null)]], ["n", [cell(null)]]]), repeat: false },
    { name: "two named rows", plan: plan([["m", [cell("r1"), cell("r2")]]]), repeat: false },
    { name: "the same named row twice", plan: plan([["m", [cell("r1"), cell("r1")]]]), repeat: true },
    { name: "every row and a named row", plan: plan([["m", [cell(null), cell("r1")]]]), repeat: true },
    { name: "every row and the headline", plan: plan([["m", [cell(null), cell("")]]]), repeat: false },
    { name: "two sampler types", plan: plan([["m", [cell("r1", "a"), cell("r1", "b")]]]), repeat: false },
    { name: "any sampler type and one", plan: plan([["m", [cell("r1", "a"), cell("r1", null)]]]), repeat: true },
    { name: "two columns", plan: plan([["m", [cell(null, null, "x"), cell(null, null, "y")]]]), repeat: false },
    { name: "two metrics of one identifier", plan: plan([["m", [cell(null)]], ["m", [cell("r1")]]]), repeat: true },
    { name: "an entity listed twice", plan: plan([["m", [cell(null)]]], [1, 1]), repeat: true },
    { name: "entities out of id order", plan: plan([["m", [cell(null)]]], [2, 1]), repeat: true },
    { name: "no entities", plan: plan([["m", [cell(null)]]], []), repeat: false },
  ];
  for (const c of cases) it(c.name, () => assert.equal(matchesMayRepeat(c.plan), c.repeat));

  it("says no only when no series is matched twice under one identifier (property)", () => {
    const text = (values: string[]) => fc.constantFrom(...values);
    const selector = fc.record({
      sampler: text(["s", "t"]),
      samplerType: fc.option(text(["", "a"]), { nil: null }),
      dataview: text(["d"]),
      row: fc.option(text(["", "r1", "r2"]), { nil: null }),
      column: text(["c", "x"]),
    });
    const metrics = fc.array(
      fc.record({
        identifier: text(["m", "n"]),
        include: fc.array(selector, { minLength: 1, maxLength: 3 }),
      }),
      { minLength: 1, maxLength: 3 },
    );
    // Every series those selectors can name, in one entity.
    const series: Omit<CellSelector, "samplerType" | "row">[] = [];
    for (const sampler of ["s", "t"])
      for (const column of ["c", "x"]) series.push({ sampler, dataview: "d", column });
    const all = series.flatMap((s) =>
      ["", "a"].flatMap((type) => ["", "r1", "r2"].map((row) => ({ ...s, type, row }))),
    );
    const matches = (q: CellSelector, s: (typeof all)[number]) =>
      q.sampler === s.sampler &&
      q.dataview === s.dataview &&
      q.column === s.column &&
      (q.samplerType === null || q.samplerType === s.type) &&
      (q.row === null ? s.row !== "" : q.row === s.row);
    fc.assert(
      fc.property(metrics, (ms) => {
        const p = { entities: [entity(1)], metrics: ms };
        if (matchesMayRepeat(p)) return;
        for (const s of all) {
          for (const identifier of new Set(ms.map((m) => m.identifier))) {
            const n = ms
              .filter((m) => m.identifier === identifier)
              .reduce((k, m) => k + m.include.filter((q) => matches(q, s)).length, 0);
            assert.ok(n <= 1, `${JSON.stringify(s)} matched ${n} times under ${identifier}`);
          }
        }
      }),
      fuzzBudget(300),
    );
  });
});
