import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { ColumnSchema } from "../../../src/config/setup.js";
import { type ParsedMetricQuery, parseMetricQuery } from "../../../src/hub/query/metric-query.js";
import {
  buildMetricResponse,
  compareCodePoints,
  metricResponseBytes,
  pieceElements,
} from "../../../src/hub/query/metric-response.js";
import { formatInZone } from "../../../src/hub/query/zone.js";
import type { CellSelector, MetricQueryRow, MetricRowBatches } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

function query(overrides: Record<string, unknown> = {}): ParsedMetricQuery {
  return parseMetricQuery({
    zoneId: "Europe/London",
    filter: { entities: "", range: { from: "2026-03-29T00:00:00Z", to: "2026-03-29T03:00:00Z" } },
    metrics: [
      { identifier: "lat", include: ["orders/queue/{rowname}/latency", "orders/other/{rowname}/queued"] },
      { identifier: "q", include: ["orders/queue/{rowname}/queued"] },
    ],
    aggregations: ["svc.count", "svc.max", "svc.avg"],
    bucketing: { duration: "PT1H" },
    ...overrides,
  });
}

const COLUMNS: Record<string, ColumnSchema> = {
  latency: { type: "float64", unit: "milliseconds" },
  queued: { type: "int64", unit: "" },
  name: { type: "string", unit: "none" },
};
const schemaOf = (selector: CellSelector): ColumnSchema | undefined => COLUMNS[selector.column];

const row = (
  iso: string,
  identifier: string,
  values: Record<string, number | null>,
  group = {},
): MetricQueryRow => ({
  bucket: asEpochMs(Date.parse(iso)),
  group,
  identifier,
  values,
});

describe("buildMetricResponse schema", () => {
  test("echoes bucketing and grouping and types every identifier × aggregation", () => {
    const q = query({ grouping: ["entity", "entity:user.Region"] });
    const response = buildMetricResponse(q, [], schemaOf);
    assert.deepEqual(response.schema, {
      bucketing: { duration: "PT1H" },
      grouping: ["entity", "entity:user.Region"],
      metrics: {
        lat: {
          "svc.count": { type: "int64", unit: "none" },
          "svc.max": { type: "float64", unit: "milliseconds" },
          "svc.avg": { type: "float64", unit: "milliseconds" },
        },
        q: {
          "svc.count": { type: "int64", unit: "none" },
          "svc.max": { type: "int64", unit: "none" },
          "svc.avg": { type: "float64", unit: "none" },
        },
      },
    });
    assert.deepEqual(response.data, []);
  });

  const aggregations = [
    "svc.count",
    "svc.sum",
    "svc.min",
    "svc.max",
    "svc.avg",
    "svc.var",
    "svc.stddev",
    "svc.first",
    "svc.last",
    "svc.percentile(0.5)",
  ];
  const types: [string, string, Record<string, string>][] = [
    [
      "an int64 column keeps int64 except count/avg/var/stddev",
      "queued",
      { int: "svc.sum svc.min svc.max svc.first svc.last svc.percentile(0.5) svc.count", unit: "none" },
    ],
    [
      "a float64 column gives float64 everywhere but count",
      "latency",
      { int: "svc.count", unit: "milliseconds" },
    ],
    ["a string column counts as float64", "name", { int: "svc.count", unit: "none" }],
    ["an undeclared column is float64 with unit none", "undeclared", { int: "svc.count", unit: "none" }],
  ];
  for (const [name, column, expected] of types) {
    test(name, () => {
      const q = query({ metrics: [{ identifier: "m", include: [`s/d/r/${column}`] }], aggregations });
      const metric = buildMetricResponse(q, [], schemaOf).schema.metrics.m ?? {};
      const ints = (expected.int ?? "").split(" ");
      for (const label of aggregations) {
        const unit = label === "svc.count" ? "none" : expected.unit;
        assert.deepEqual(metric[label], { type: ints.includes(label) ? "int64" : "float64", unit }, label);
      }
    });
  }
});

describe("buildMetricResponse data", () => {
  const cases: [string, ParsedMetricQuery, MetricQueryRow[], unknown][] = [
    [
      "rows of one bucket merge; a missing identifier has count 0 and nulls",
      query(),
      [
        row("2026-03-29T00:00:00Z", "lat", { "svc.count": 2, "svc.max": 9.5, "svc.avg": 7 }),
        row("2026-03-29T00:00:00Z", "q", { "svc.count": 1, "svc.max": 3, "svc.avg": 3 }),
        row("2026-03-29T01:00:00Z", "q", { "svc.count": 4, "svc.max": 8, "svc.avg": 5.5 }),
      ],
      [
        {
          bucket: "2026-03-29T00:00:00+00:00",
          group: {},
          metrics: {
            lat: { "svc.count": 2, "svc.max": 9.5, "svc.avg": 7 },
            q: { "svc.count": 1, "svc.max": 3, "svc.avg": 3 },
          },
        },
        {
          bucket: "2026-03-29T02:00:00+01:00",
          group: {},
          metrics: {
            lat: { "svc.count": 0, "svc.max": null, "svc.avg": null },
            q: { "svc.count": 4, "svc.max": 8, "svc.avg": 5.5 },
          },
        },
      ],
    ],
    [
      "groups split a bucket, in the store's order: by bucket, then by entity id numerically",
      query({
        grouping: ["entity"],
        metrics: [{ identifier: "q", include: ["s/d//c"] }],
        aggregations: ["svc.sum"],
      }),
      [
        row("2026-03-29T00:00:00Z", "q", { "svc.sum": 4 }, { entity: 9 }),
        row("2026-03-29T00:00:00Z", "q", { "svc.sum": 3 }, { entity: 10 }),
        row("2026-03-29T01:00:00Z", "q", { "svc.sum": 1 }, { entity: 2 }),
      ],
      [
        { bucket: "2026-03-29T00:00:00+00:00", group: { entity: 9 }, metrics: { q: { "svc.sum": 4 } } },
        { bucket: "2026-03-29T00:00:00+00:00", group: { entity: 10 }, metrics: { q: { "svc.sum": 3 } } },
        { bucket: "2026-03-29T02:00:00+01:00", group: { entity: 2 }, metrics: { q: { "svc.sum": 1 } } },
      ],
    ],
    [
      "rowname and attribute groups, by code point in grouping order, merge identifiers",
      query({
        grouping: ["entity:user.Region", "rowname"],
        metrics: [
          { identifier: "a", include: ["s/d/{rowname}/c"] },
          { identifier: "b", include: ["s/d/{rowname}/e"] },
        ],
        aggregations: ["svc.last"],
      }),
      [
        row("2026-03-29T00:00:00Z", "a", { "svc.last": 3 }, { attribute: "", rowname: "r9" }),
        row("2026-03-29T00:00:00Z", "b", { "svc.last": 4 }, { attribute: "emea", rowname: "R1" }),
        row("2026-03-29T00:00:00Z", "a", { "svc.last": 1 }, { attribute: "emea", rowname: "r2" }),
        row("2026-03-29T00:00:00Z", "b", { "svc.last": 2 }, { attribute: "emea", rowname: "r2" }),
      ],
      [
        {
          bucket: "2026-03-29T00:00:00+00:00",
          group: { attribute: "", rowname: "r9" },
          metrics: { a: { "svc.last": 3 }, b: { "svc.last": null } },
        },
        {
          bucket: "2026-03-29T00:00:00+00:00",
          group: { attribute: "emea", rowname: "R1" },
          metrics: { a: { "svc.last": null }, b: { "svc.last": 4 } },
        },
        {
          bucket: "2026-03-29T00:00:00+00:00",
          group: { attribute: "emea", rowname: "r2" },
          metrics: { a: { "svc.last": 1 }, b: { "svc.last": 2 } },
        },
      ],
    ],
    [
      "non-finite and missing values become null, a null count 0",
      query({
        metrics: [{ identifier: "x", include: ["s/d//c"] }],
        aggregations: ["svc.count", "svc.var", "svc.min"],
      }),
      [row("2026-03-29T00:00:00Z", "x", { "svc.count": null, "svc.var": Number.NaN })],
      [
        {
          bucket: "2026-03-29T00:00:00+00:00",
          group: {},
          metrics: { x: { "svc.count": 0, "svc.var": null, "svc.min": null } },
        },
      ],
    ],
    [
      "a fixed-offset zone labels buckets with its offset",
      query({
        zoneId: "+05:30",
        metrics: [{ identifier: "x", include: ["s/d//c"] }],
        aggregations: ["svc.max"],
      }),
      [row("2026-03-28T18:30:00Z", "x", { "svc.max": 1 })],
      [{ bucket: "2026-03-29T00:00:00+05:30", group: {}, metrics: { x: { "svc.max": 1 } } }],
    ],
  ];
  for (const [name, q, rows, expected] of cases) {
    test(name, () => assert.deepEqual(buildMetricResponse(q, rows, schemaOf).data, expected));
  }

  test("the response survives JSON as the same object", () => {
    const response = buildMetricResponse(
      query(),
      [row("2026-03-29T00:00:00Z", "lat", { "svc.count": 1 })],
      schemaOf,
    );
    assert.deepEqual(JSON.parse(JSON.stringify(response)), response);
  });

  test("rows out of the answer's order are refused, not answered twice", () => {
    const q = query({ grouping: ["entity"], metrics: [{ identifier: "q", include: ["s/d//c"] }] });
    for (const rows of [
      [
        row("2026-03-29T01:00:00Z", "q", {}, { entity: 1 }),
        row("2026-03-29T00:00:00Z", "q", {}, { entity: 1 }),
      ],
      [
        row("2026-03-29T00:00:00Z", "q", {}, { entity: 10 }),
        row("2026-03-29T00:00:00Z", "q", {}, { entity: 9 }),
      ],
      [
        row("2026-03-29T00:00:00Z", "q", {}, { entity: 1 }),
        row("2026-03-29T00:00:00Z", "q", {}, { entity: 2 }),
        row("2026-03-29T00:00:00Z", "q", {}, { entity: 1 }),
      ],
    ]) {
      assert.throws(() => buildMetricResponse(q, rows, schemaOf), /out of order/);
    }
  });

  test("the text is the whole response's JSON, written in pieces", async () => {
    const text = async (batches: MetricRowBatches): Promise<string[]> => {
      const pieces: string[] = [];
      for await (const piece of metricResponseBytes(q, batches, schemaOf))
        pieces.push(piece.toString("utf8"));
      return pieces;
    };
    const q = query({ grouping: ["rowname"], aggregations: ["svc.count", "svc.max"] });
    const rows: MetricQueryRow[] = [];
    for (let h = 0; h < 3; h++) {
      for (let r = 0; r < pieceElements(q.metrics.length, q.aggregations.length); r++) {
        const group = { rowname: `r${String(r).padStart(4, "0")}` };
        rows.push(row(`2026-03-29T0${h}:00:00Z`, "lat", { "svc.count": r, "svc.max": r / 3 }, group));
        if (r % 3 === 0)
          rows.push(row(`2026-03-29T0${h}:00:00Z`, "q", { "svc.count": 1, "svc.max": -0 }, group));
      }
    }
    // Batches of any size, split inside an element's rows too.
    const batches = [rows.slice(0, 1), rows.slice(1, 700), rows.slice(700)];
    const pieces = await text(batches);
    assert.ok(pieces.length > 3);
    assert.equal(pieces.join(""), JSON.stringify(buildMetricResponse(q, rows, schemaOf)));
    // Batches that come as the database answers them.
    const later = (async function* () {
      for (const batch of batches) {
        await new Promise((resolve) => setImmediate(resolve));
        yield batch;
      }
    })();
    assert.equal((await text(later)).join(""), pieces.join(""));
    assert.equal((await text([])).join(""), JSON.stringify(buildMetricResponse(q, [], schemaOf)));
  });

  test("pieces of names outside ASCII are the UTF-8 bytes of the whole response", async () => {
    const q = query({ grouping: ["rowname"], aggregations: ["svc.count"] });
    // Names of 1 to 4 UTF-8 bytes a character, sorted by code point as a store answers them.
    const names = ["a", "\u00e9", "\u20ac", "\u{1f600}", 'quote"back\\slash'];
    const groups = Array.from({ length: 2 * pieceElements(q.metrics.length, 1) + 7 }, (_, i) =>
      names.map((n) => `${n}${String(i).padStart(5, "0")}`),
    )
      .flat()
      .sort(compareCodePoints);
    const rows = groups.map((rowname, i) =>
      row("2026-03-29T00:00:00Z", "q", { "svc.count": i }, { rowname }),
    );
    const pieces: Buffer[] = [];
    for await (const piece of metricResponseBytes(q, [rows.slice(0, 100), rows.slice(100)], schemaOf)) {
      pieces.push(piece);
    }
    assert.ok(pieces.length > 4, "several pieces");
    const whole = JSON.stringify(buildMetricResponse(q, rows, schemaOf));
    assert.ok(Buffer.concat(pieces).equals(Buffer.from(whole, "utf8")));
    assert.deepEqual(JSON.parse(Buffer.concat(pieces).toString("utf8")), JSON.parse(whole));
  });

  test("code-point order is the order of the strings' UTF-8 bytes (property)", () => {
    const text = fc.string({
      unit: fc.constantFrom("a", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\u{10000}", "\u{1f600}"),
    });
    fc.assert(
      fc.property(
        fc.oneof(text, fc.string({ unit: "binary" })),
        fc.oneof(text, fc.string({ unit: "binary" })),
        (a, b) => {
          const bytes = Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
          assert.equal(Math.sign(compareCodePoints(a, b)), bytes);
        },
      ),
      fuzzBudget(200),
    );
  });

  test("answers as a plain model of the merge, for rows in the answer's order; refuses others (property)", () => {
    // The model: an element per bucket and group, every identifier and label filled in, a later
    // row of the same bucket, group and identifier winning; ordered by bucket, then group.
    type Element = {
      bucket: number;
      group: Record<string, string | number>;
      metrics: Map<string, Record<string, number | null>>;
    };
    // Every generated row has both fields: the row name by code point, then the entity id.
    const byGroup = (a: MetricQueryRow["group"], b: MetricQueryRow["group"]) => {
      const [x, y] = [String(a.rowname), String(b.rowname)];
      return x < y ? -1 : x > y ? 1 : Number(a.entity) - Number(b.entity);
    };
    const byKey = (a: MetricQueryRow, b: MetricQueryRow) => a.bucket - b.bucket || byGroup(a.group, b.group);
    const model = (q: ParsedMetricQuery, rows: readonly MetricQueryRow[]) => {
      const elements = new Map<string, Element>();
      for (const r of rows) {
        const key = JSON.stringify([r.bucket, r.group.rowname ?? null, r.group.entity ?? null]);
        let e = elements.get(key);
        if (e === undefined) {
          e = { bucket: r.bucket, group: { ...r.group }, metrics: new Map() };
          elements.set(key, e);
        }
        if (!q.metrics.some((m) => m.identifier === r.identifier)) continue;
        const values = q.aggregations.map((a) => {
          const v = r.values[a.label];
          const f = typeof v === "number" && Number.isFinite(v) ? v : null;
          return [a.label, f === null && a.name === "svc.count" ? 0 : f];
        });
        e.metrics.set(r.identifier, Object.fromEntries(values));
      }
      const empty = Object.fromEntries(
        q.aggregations.map((a) => [a.label, a.name === "svc.count" ? 0 : null]),
      );
      return [...elements.values()]
        .sort((a, b) => a.bucket - b.bucket || byGroup(a.group, b.group))
        .map((e) => ({
          bucket: formatInZone(e.bucket, q.zone),
          group: e.group,
          metrics: Object.fromEntries(
            q.metrics.map((m) => [m.identifier, e.metrics.get(m.identifier) ?? empty]),
          ),
        }));
    };
    const q = query({
      grouping: ["rowname", "entity"],
      aggregations: ["svc.count", "svc.max", "svc.percentile(0.5)"],
    });
    const value = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.constantFrom(null, undefined, Number.NaN, Number.POSITIVE_INFINITY, -0),
    );
    const aRow = fc.record({
      bucket: fc.integer({ min: 0, max: 3 }).map((h) => asEpochMs(Date.UTC(2026, 2, 29, h))),
      group: fc.record({
        rowname: fc.constantFrom("a", "b", "é", 'q"', "10", "9", "constructor"),
        entity: fc.integer({ min: 1, max: 3 }),
      }),
      identifier: fc.constantFrom("lat", "q", "other", "constructor", "toString"),
      values: fc.oneof(
        fc.record({ "svc.count": value, "svc.max": value, "svc.percentile(0.5)": value }),
        fc.record({ "svc.count": value, "svc.max": value }),
        fc.record({ "svc.count": value, "svc.max": value, "svc.percentile(0.5)": value, extra: value }),
      ),
    });
    fc.assert(
      fc.property(fc.array(aRow, { maxLength: 40 }), fc.boolean(), (generated, sort) => {
        // Sorted (stably: rows of one element keep their order), or as generated.
        const rows = (
          sort ? [...(generated as MetricQueryRow[])].sort(byKey) : generated
        ) as MetricQueryRow[];
        const ordered = rows.every((r, i) => i === 0 || byKey(rows[i - 1] as MetricQueryRow, r) <= 0);
        if (!ordered) {
          assert.throws(() => buildMetricResponse(q, rows, schemaOf), /out of order/);
          return;
        }
        const built = buildMetricResponse(q, rows, schemaOf).data;
        assert.deepEqual(JSON.parse(JSON.stringify(built)), JSON.parse(JSON.stringify(model(q, rows))));
      }),
      fuzzBudget(300),
    );
  });
});
