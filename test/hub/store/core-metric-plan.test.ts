import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_SEGMENT_SCANS, scanGroups, splitInstant } from "../../../src/hub/store/core/bucket-grid.js";
import { groupAttributeValues, groupColumns } from "../../../src/hub/store/core/metric-plan.js";
import { decimalFraction } from "../../../src/hub/store/core/percentile-rank.js";
import { parseZone, segments, type ZoneOffsets } from "../../../src/hub/store/core/zone-offsets.js";
import type { BucketSpec } from "../../../src/hub/store/store.js";
import { asEntityId, asEpochMs } from "../../../src/ids.js";

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
