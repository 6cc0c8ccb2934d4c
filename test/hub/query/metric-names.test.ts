/**
 * Metric names as the hub lists them read back to the same cells (metric-names.ts): any names,
 * `/`, `%`, `(`, `{` and `*` included, survive `cellReference` → `parseCellReference`; and the
 * entity summary's grouping and ordering rules (summary.ts), one line per case (STYLE 16).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { cellReference, legacyPath } from "../../../src/hub/query/metric-names.js";
import { parseCellReference } from "../../../src/hub/query/metric-query.js";
import { targetMetric } from "../../../src/hub/query/records-query.js";
import { entitySummary } from "../../../src/hub/query/summary.js";
import type { EntityRecord } from "../../../src/hub/store/store.js";
import { asEntityId } from "../../../src/ids.js";

describe("legacyPath", () => {
  const base = {
    gateway: "GW1",
    probe: "probe1",
    managedEntity: "web-01",
    sampler: "orders",
    samplerType: "",
    dataview: "queue",
  };
  const me =
    '/geneos/gateway[(@name="GW1")]/directory/probe[(@name="probe1")]/managedEntity[(@name="web-01")]';
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, Parameters<typeof legacyPath>[0], string][] = [
    ["a table column (DESIGN 5.1's example)", { ...base, headline: false, column: "latency" }, `${me}/sampler[(@name="orders")][(@type="")]/dataview[(@name="queue")]/rows/row[(@name="{rowname}")]/cell[(@column="latency")]`],
    ["a headline", { ...base, headline: true, column: "totalRows" }, `${me}/sampler[(@name="orders")][(@type="")]/dataview[(@name="queue")]/headlines/cell[(@name="totalRows")]`],
    ["a sampler type", { ...base, samplerType: "linux", headline: false, column: "c" }, `${me}/sampler[(@name="orders")][(@type="linux")]/dataview[(@name="queue")]/rows/row[(@name="{rowname}")]/cell[(@column="c")]`],
    ["quotes and ampersands as XML entities", { ...base, dataview: 'a "b" & c', headline: true, column: "/x]" }, `${me}/sampler[(@name="orders")][(@type="")]/dataview[(@name="a &quot;b&quot; &amp; c")]/headlines/cell[(@name="/x]")]`],
  ];
  for (const [name, cell, expected] of cases) test(name, () => assert.equal(legacyPath(cell), expected));
});

describe("cellReference", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, Parameters<typeof cellReference>[0], string][] = [
    ["a table column", { sampler: "orders", samplerType: "", dataview: "queue", row: null, column: "latency" }, "orders/queue/{rowname}/latency"],
    ["a headline", { sampler: "orders", samplerType: "", dataview: "queue", row: "", column: "total" }, "orders/queue//total"],
    ["a sampler type", { sampler: "cpu", samplerType: "linux", dataview: "cpu", row: "r1", column: "util" }, "cpu(linux)/cpu/r1/util"],
    ["escapes", { sampler: "a(b)", samplerType: "", dataview: "x/y", row: "{rowname}", column: "50%*" }, "a%28b%29/x%2Fy/%7Browname%7D/50%25%2A"],
  ];
  for (const [name, cell, expected] of cases) test(name, () => assert.equal(cellReference(cell), expected));

  test("parseCellReference reads every reference back to the same names", () => {
    const name = fc.string({
      minLength: 1,
      maxLength: 12,
      unit: fc.constantFrom("a", "/", "%", "(", ")", "{", "}", "*", " ", "é", "2"),
    });
    fc.assert(
      fc.property(
        name,
        fc.option(name, { nil: "" }),
        name,
        fc.option(fc.string({ maxLength: 6 }), { nil: null }),
        name,
        (sampler, samplerType, dataview, row, column) => {
          const selector = parseCellReference(
            cellReference({ sampler, samplerType, dataview, row, column }),
            "f",
          );
          assert.deepEqual(selector, {
            sampler,
            samplerType: samplerType === "" ? null : samplerType,
            dataview,
            row,
            column,
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  test("an event target names its cell, a headline, or nothing", () => {
    assert.equal(
      targetMetric({
        gateway: "g",
        probe: "p",
        managedEntity: "m",
        type: "",
        sampler: "s",
        dataview: "d",
        row: "r",
        column: "c",
      }),
      "s/d/r/c",
    );
    assert.equal(
      targetMetric({
        gateway: "g",
        probe: "p",
        managedEntity: "m",
        type: "t",
        sampler: "s",
        dataview: "d",
        column: "h",
      }),
      "s(t)/d//h",
    );
    assert.equal(
      targetMetric({ gateway: "g", probe: "p", managedEntity: "m", type: "", sampler: "s", dataview: "d" }),
      "",
    );
    assert.equal(targetMetric({ gateway: "g" }), "");
  });
});

describe("entitySummary", () => {
  const e = (id: number, attributes: Record<string, string>): EntityRecord => ({
    id: asEntityId(id),
    attributes,
    isDeleted: false,
  });
  const entities = [e(5, { r: "b" }), e(2, { r: "a" }), e(9, {}), e(3, { r: "a" }), e(7, { r: "b" })];
  const severities = new Map<number, string>([
    [5, "CRITICAL"],
    [2, "OK"],
    [3, "OK"],
    [7, "MAJOR"],
  ]);
  const attr = (entity: EntityRecord, name: string) =>
    Object.hasOwn(entity.attributes, name) ? (entity.attributes[name] ?? "") : "";
  const summary = (groupBy: string[], samples = 10) =>
    entitySummary(entities, groupBy, (x) => severities.get(x.id), attr, samples);

  test("groups by value in code-point order, the missing value '' first", () => {
    assert.deepEqual(
      summary(["r"]).map((g) => [g.attributes.r, g.count]),
      [
        ["", 1],
        ["a", 2],
        ["b", 2],
      ],
    );
  });

  test("severities in the seed's order, an unknown text last; ids smallest first", () => {
    const [b] = summary(["r"]).slice(2);
    assert.deepEqual(
      b?.counts.map((c) => [c.states.severity, c.sampleEntities]),
      [
        ["CRITICAL", [5]],
        ["MAJOR", [7]],
      ],
    );
    const [a] = summary(["r"]).slice(1);
    assert.deepEqual(a?.counts, [{ states: { severity: "OK" }, count: 2, sampleEntities: [2, 3] }]);
  });

  test("sampleEntityCount counts the listed ids", () => {
    const [all] = summary([], 1);
    assert.equal(all?.count, 5);
    assert.equal(all?.sampleEntityCount, 4);
    assert.deepEqual(
      all?.counts.map((c) => c.sampleEntities.length),
      [1, 1, 1, 1],
    );
  });

  test("without entities: one empty group, or none when grouped", () => {
    assert.deepEqual(JSON.parse(JSON.stringify(entitySummary([], [], () => undefined, attr, 10))), [
      { attributes: {}, count: 0, sampleEntityCount: 0, counts: [] },
    ]);
    assert.deepEqual(
      entitySummary([], ["r"], () => undefined, attr, 10),
      [],
    );
  });

  test("__proto__ is an ordinary groupBy attribute", () => {
    const [group] = entitySummary([e(1, { ["__proto__"]: "x" })], ["__proto__"], () => undefined, attr, 10);
    assert.equal(JSON.stringify(group?.attributes), '{"__proto__":"x"}');
  });
});
