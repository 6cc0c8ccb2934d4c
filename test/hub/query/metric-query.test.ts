import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { VigilError } from "../../../src/errors/catalog.js";
import {
  bucketWidthText,
  type ParsedMetricQuery,
  parseCellReference,
  parseMetricQuery,
} from "../../../src/hub/query/metric-query.js";
import type { CellSelector } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";

/** A valid request in the seed's shape; cases change one field of it. */
const BASE = {
  zoneId: "Europe/London",
  filter: {
    entities: 'svc.name = "web-01"',
    range: { from: "2026-03-29T00:00:00Z", to: "2026-03-30T00:00:00+01:00" },
  },
  metrics: [{ identifier: "latency", include: ["orders/queue/{rowname}/latency"] }],
  aggregations: ["svc.avg", "svc.percentile(0.95)"],
  bucketing: { duration: "PT5M" },
};

type Path = readonly (string | number)[];

/** BASE with the value at `path` replaced (`undefined` removes it). */
function changed(path: Path, value: unknown): unknown {
  const body: unknown = structuredClone(BASE);
  let node = body as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return body;
}

const sel = (
  sampler: string,
  dataview: string,
  row: string | null,
  column: string,
  samplerType: string | null = null,
) => ({ sampler, samplerType, dataview, row, column }) satisfies CellSelector;

describe("parseMetricQuery accepts", () => {
  test("the base request as an exact plan", () => {
    const expected: ParsedMetricQuery = {
      entityFilter: 'svc.name = "web-01"',
      from: asEpochMs(Date.UTC(2026, 2, 29)),
      to: asEpochMs(Date.UTC(2026, 2, 29, 23)),
      zone: "Europe/London",
      bucket: { kind: "minutes", minutes: 5 },
      bucketing: { duration: "PT5M" },
      metrics: [{ identifier: "latency", include: [sel("orders", "queue", null, "latency")] }],
      aggregations: [
        { label: "svc.avg", name: "svc.avg" },
        { label: "svc.percentile(0.95)", name: "svc.percentile", p: "0.95" },
      ],
      grouping: [],
      timeWindows: [],
    };
    assert.deepEqual(parseMetricQuery(BASE), expected);
  });

  test("every optional field, as an exact plan", () => {
    const body = {
      token: "eyJhbGciOi",
      zoneId: "+05:30",
      filter: {
        entities: "   ",
        range: { from: "2026-01-01T00:00:00.0001+05:30", to: "2026-01-08T00:00:00.5Z" },
        timeWindows: [
          { from: "09:00", to: "17:30:15", on: ["Friday", "MONDAY"] },
          { from: "22:00:00", to: "06:00:00" },
        ],
      },
      metrics: [
        {
          identifier: "a.b_c-1",
          include: ["orders(sql)/queue//totalRows", "my%2Fsampler()/dv%2Fx/row%20one/col%7Browname%7D"],
        },
        { identifier: "q", include: ["orders/queue/{rowname}/queued"] },
      ],
      aggregations: ["svc.count"],
      bucketing: { duration: "P1W" },
      grouping: ["entity:user.Region", "rowname", "entity"],
    };
    const expected: ParsedMetricQuery = {
      entityFilter: "",
      // .0001 s rounds up to the next millisecond: [from, to) stays exact for millisecond samples.
      from: asEpochMs(Date.UTC(2025, 11, 31, 18, 30, 0, 1)),
      to: asEpochMs(Date.UTC(2026, 0, 8, 0, 0, 0, 500)),
      zone: "+05:30",
      bucket: { kind: "week" },
      bucketing: { duration: "P1W" },
      metrics: [
        {
          identifier: "a.b_c-1",
          include: [
            sel("orders", "queue", "", "totalRows", "sql"),
            sel("my/sampler", "dv/x", "row one", "col{rowname}", ""),
          ],
        },
        { identifier: "q", include: [sel("orders", "queue", null, "queued")] },
      ],
      aggregations: [{ label: "svc.count", name: "svc.count" }],
      grouping: [{ attribute: "user.Region" }, "rowname", "entity"],
      timeWindows: [
        { fromSecond: 9 * 3600, toSecond: 17 * 3600 + 30 * 60 + 15, days: [1, 5] },
        { fromSecond: 22 * 3600, toSecond: 6 * 3600 },
      ],
    };
    assert.deepEqual(parseMetricQuery(body), expected);
  });

  // biome-ignore format: one line per case
  const small: [string, Path, unknown, (plan: ParsedMetricQuery) => unknown, unknown][] = [
    ["null grouping as none", ["grouping"], null, (p) => p.grouping, []],
    ["null timeWindows as none", ["filter", "timeWindows"], null, (p) => p.timeWindows, []],
    ["null token", ["token"], null, (p) => p.zone, "Europe/London"],
    ["Z zone as UTC", ["zoneId"], "Z", (p) => p.zone, "UTC"],
    ["alias zone", ["zoneId"], "Asia/Calcutta", (p) => p.zone, "Asia/Calcutta"],
    ["empty entity filter selects all", ["filter", "entities"], "", (p) => p.entityFilter, ""],
    ["an absent entity filter selects all (gwhub omits an empty one)", ["filter", "entities"], undefined, (p) => p.entityFilter, ""],
    ["an absent zoneId as UTC (gwhub omits an empty one)", ["zoneId"], undefined, (p) => p.zone, "UTC"],
    ["an empty zoneId as UTC", ["zoneId"], "", (p) => p.zone, "UTC"],
    ["count buckets", ["bucketing"], { count: 4 }, (p) => [p.bucket, p.bucketing], [{ kind: "count", count: 4 }, { count: 4, duration: "PT5H45M" }]],
    ["lower-case t and z in a date-time", ["filter", "range", "from"], "2026-03-29t00:00z", (p) => p.from, Date.UTC(2026, 2, 29)],
    ["negative offset", ["filter", "range", "from"], "2026-03-28T20:00:00-04:00", (p) => p.from, Date.UTC(2026, 2, 29)],
    ["leap day", ["filter", "range"], { from: "2024-02-29T00:00:00Z", to: "2024-03-01T00:00:00Z" }, (p) => p.from, Date.UTC(2024, 1, 29)],
    ["weekday names in any case", ["filter", "timeWindows"], [{ from: "00:00", to: "01:00", on: ["sUnDaY"] }], (p) => p.timeWindows, [{ fromSecond: 0, toSecond: 3600, days: [7] }]],
  ];
  for (const [name, path, value, pick, expected] of small) {
    test(name, () => assert.deepEqual(pick(parseMetricQuery(changed(path, value))), expected));
  }

  test("a range of exactly 100 000 one-minute buckets (one more minute is too many)", () => {
    const edge = { from: "2026-03-29T00:00:00Z", to: "2026-06-06T10:39:00Z" };
    const body = { ...BASE, filter: { ...BASE.filter, range: edge }, bucketing: { duration: "PT1M" } };
    assert.equal(parseMetricQuery(body).to, Date.UTC(2026, 5, 6, 10, 39));
    const over = { ...body, filter: { ...body.filter, range: { ...edge, to: "2026-06-06T10:40:00Z" } } };
    assert.throws(() => parseMetricQuery(over), /filter.range: the range spans about 100001 buckets of PT1M/);
  });
});

describe("bucketWidthText writes a count bucket's width as Java's Duration.toString does", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, number, number, string][] = [
    ["an hour in 8 is PT7M30S", 3_600_000, 8, "PT7M30S"],
    ["three days in 2 is PT36H (hours, no days)", 3 * 86_400_000, 2, "PT36H"],
    ["a second in 4 is PT0.25S", 1_000, 4, "PT0.25S"],
    ["a second in 3 is rounded down to the nanosecond", 1_000, 3, "PT0.333333333S"],
    ["2 ms in 2 is PT0.001S", 2, 2, "PT0.001S"],
    ["a day in 1 is PT24H", 86_400_000, 1, "PT24H"],
    ["hours, minutes and a fraction of a second together", 3_723_500, 1, "PT1H2M3.5S"],
  ];
  for (const [name, width, count, expected] of cases) {
    test(name, () => assert.equal(bucketWidthText(width, count), expected));
  }

  test("a count of a second in 3 echoes the width of each bucket", () => {
    const body = changed(["filter", "range"], { from: "2026-03-29T00:00:00Z", to: "2026-03-29T00:00:01Z" });
    const parsed = parseMetricQuery({ ...(body as object), bucketing: { count: 3 } });
    assert.deepEqual(parsed.bucketing, { count: 3, duration: "PT0.333333333S" });
    assert.deepEqual(parsed.bucket, { kind: "count", count: 3 });
  });
});

describe("parseMetricQuery rejects with 400, the field and the reason", () => {
  const longRange = { from: "2026-01-01T00:00:00Z", to: "2026-12-01T00:00:00Z" };
  const many = (n: number, f: (i: number) => unknown) => Array.from({ length: n }, (_, i) => f(i));
  // biome-ignore format: one line per case
  const cases: [string, unknown, string, string][] = [
    ["a body that is an array", [BASE], "body", "must be a JSON object, found an array"],
    ["a body that is null", null, "body", "found null"],
    ["a body that is a string", "{}", "body", "found a string"],
    ["an unknown top-level field", changed(["limit"], 10), "limit", "unknown field; the body has zoneId"],
    ["a token that is not a string", changed(["token"], 42), "token", "must be a string, found a number"],
    ["a zoneId that is a number", changed(["zoneId"], 1), "zoneId", "must be a string"],
    ["an unknown zone", changed(["zoneId"], "Europe/Paris_Nord"), "zoneId", "unknown time zone"],
    ["a missing filter", changed(["filter"], undefined), "filter", "required object is missing"],
    ["a filter that is a string", changed(["filter"], "x"), "filter", "must be an object, found a string"],
    ["an unknown filter field", changed(["filter", "window"], []), "filter.window", "unknown field; filter has entities"],
    ["an entity filter that is null", changed(["filter", "entities"], null), "filter.entities", "found null"],
    ["a missing range", changed(["filter", "range"], undefined), "filter.range", "required object is missing"],
    ["an unknown range field", changed(["filter", "range", "until"], "x"), "filter.range.until", "unknown field"],
    ["a missing from", changed(["filter", "range", "from"], undefined), "filter.range.from", "required string"],
    ["a from without offset", changed(["filter", "range", "from"], "2026-03-29T00:00:00"), "filter.range.from", "this one has no offset"],
    ["a date without time", changed(["filter", "range", "from"], "2026-03-29"), "filter.range.from", "not an ISO 8601 date-time"],
    ["epoch millis as a number", changed(["filter", "range", "to"], 1774742400000), "filter.range.to", "must be a string, found a number"],
    ["an offset without colon", changed(["filter", "range", "to"], "2026-03-30T00:00:00+0100"), "filter.range.to", "not an ISO 8601"],
    ["February 30", changed(["filter", "range", "from"], "2026-02-30T00:00:00Z"), "filter.range.from", "invalid day of the month"],
    ["February 29 in a common year", changed(["filter", "range", "from"], "2026-02-29T00:00:00Z"), "filter.range.from", "invalid day"],
    ["month 13", changed(["filter", "range", "from"], "2026-13-01T00:00:00Z"), "filter.range.from", "invalid month"],
    ["hour 24", changed(["filter", "range", "to"], "2026-03-29T24:00:00Z"), "filter.range.to", "invalid hour"],
    ["a leap second", changed(["filter", "range", "to"], "2026-03-29T23:59:60Z"), "filter.range.to", "leap seconds"],
    ["an offset of 24 hours", changed(["filter", "range", "to"], "2026-03-29T20:00:00+24:00"), "filter.range.to", "invalid offset"],
    ["from equal to to", changed(["filter", "range"], { from: "2026-03-29T01:00:00+01:00", to: "2026-03-29T00:00:00Z" }), "filter.range", "from must be before to"],
    ["from after to", changed(["filter", "range"], { from: "2026-03-30T00:00:00Z", to: "2026-03-29T00:00:00Z" }), "filter.range", "from must be before to"],
    ["too many one-minute buckets", { ...(changed(["filter", "range"], longRange) as object), bucketing: { duration: "PT1M" } }, "filter.range", "at most 100000 are allowed"],
    ["timeWindows not an array", changed(["filter", "timeWindows"], {}), "filter.timeWindows", "must be an array, found an object"],
    ["an empty timeWindows", changed(["filter", "timeWindows"], []), "filter.timeWindows", "must not be empty"],
    ["too many time windows", changed( ["filter", "timeWindows"], many(21, () => ({ from: "09:00", to: "10:00" })), ), "filter.timeWindows", "at most 20"],
    ["a window that is a string", changed(["filter", "timeWindows"], ["09:00-17:00"]), "filter.timeWindows[0]", "must be an object"],
    ["a window without from", changed(["filter", "timeWindows"], [{ to: "10:00" }]), "filter.timeWindows[0].from", "required string"],
    ["a window hour 25", changed(["filter", "timeWindows"], [{ from: "25:00", to: "10:00" }]), "filter.timeWindows[0].from", "not a local time of day"],
    ["a window to 24:00", changed(["filter", "timeWindows"], [{ from: "18:00", to: "24:00" }]), "filter.timeWindows[0].to", "not a local time of day"],
    ["a window time without minutes", changed(["filter", "timeWindows"], [{ from: "9", to: "10:00" }]), "filter.timeWindows[0].from", "HH:MM or HH:MM:SS"],
    ["a window with from equal to to", changed(["filter", "timeWindows"], [{ from: "09:00", to: "09:00:00" }]), "filter.timeWindows[0]", "from equals to"],
    ["an unknown window field", changed(["filter", "timeWindows"], [{ from: "09:00", to: "10:00", days: [] }]), "filter.timeWindows[0].days", "unknown field"],
    ["an empty on", changed(["filter", "timeWindows"], [{ from: "09:00", to: "10:00", on: [] }]), "filter.timeWindows[0].on", "must not be empty"],
    ["an unknown weekday", changed(["filter", "timeWindows"], [{ from: "09:00", to: "10:00", on: ["mon"] }]), "filter.timeWindows[0].on[0]", "'mon' is not a weekday"],
    ["a weekday twice", changed(["filter", "timeWindows"], [{ from: "09:00", to: "10:00", on: ["monday", "Monday"] }]), "filter.timeWindows[0].on[1]", "listed twice"],
    ["a weekday number", changed(["filter", "timeWindows"], [{ from: "09:00", to: "10:00", on: [1] }]), "filter.timeWindows[0].on[0]", "must be a string"],
    ["a missing metrics", changed(["metrics"], undefined), "metrics", "required array is missing"],
    ["an empty metrics", changed(["metrics"], []), "metrics", "must not be empty"],
    ["too many metrics", changed( ["metrics"], many(101, (i) => ({ identifier: `m${i}`, include: ["s/d//h"] })), ), "metrics", "has 101 elements; at most 100"],
    ["a metric that is a string", changed(["metrics"], ["orders/queue//x"]), "metrics[0]", "must be an object"],
    ["an unknown metric field", changed(["metrics", 0, "alias"], "x"), "metrics[0].alias", "unknown field; metrics[0] has identifier, include"],
    ["a missing identifier", changed(["metrics", 0, "identifier"], undefined), "metrics[0].identifier", "required string"],
    ["an identifier with a space", changed(["metrics", 0, "identifier"], "my metric"), "metrics[0].identifier", "only letters, digits, hyphens"],
    ["an empty identifier", changed(["metrics", 0, "identifier"], ""), "metrics[0].identifier", "at least one"],
    ["the identifier __proto__", changed(["metrics", 0, "identifier"], "__proto__"), "metrics[0].identifier", "reserved"],
    ["a duplicate identifier", changed(["metrics", 1], { identifier: "latency", include: ["a/b//c"] }), "metrics[1].identifier", "already the identifier of metrics[0]"],
    ["a missing include", changed(["metrics", 0, "include"], undefined), "metrics[0].include", "required array"],
    ["an include that is a string", changed(["metrics", 0, "include"], "a/b/c/d"), "metrics[0].include", "must be an array, found a string"],
    ["an empty include", changed(["metrics", 0, "include"], []), "metrics[0].include", "must not be empty"],
    ["too many includes", changed( ["metrics", 0, "include"], many(101, (i) => `s/d/r${i}/c`), ), "metrics[0].include", "at most 100"],
    ["an include that is a number", changed(["metrics", 0, "include", 1], 5), "metrics[0].include[1]", "must be a string"],
    ["three segments", changed(["metrics", 0, "include", 0], "orders/queue/latency"), "metrics[0].include[0]", "has 3 segments"],
    ["an unescaped slash", changed(["metrics", 0, "include", 0], "orders/a/b/r/c"), "metrics[0].include[0]", "escape '/' inside a name as %2F"],
    ["a wildcard sampler", changed(["metrics", 0, "include", 0], "*/queue/r/c"), "metrics[0].include[0]", "wildcards are allowed only in the row segment"],
    ["a {rowname} column", changed(["metrics", 0, "include", 0], "orders/queue/r/{rowname}"), "metrics[0].include[0]", "the column segment '{rowname}' holds a wildcard"],
    ["a {dataview} wildcard", changed(["metrics", 0, "include", 0], "orders/{dataview}/r/c"), "metrics[0].include[0]", "the dataview segment"],
    ["a * row", changed(["metrics", 0, "include", 0], "orders/queue/*/c"), "metrics[0].include[0]", "exactly {rowname}"],
    ["a partial row wildcard", changed(["metrics", 0, "include", 0], "orders/queue/web-{rowname}/c"), "metrics[0].include[0]", "the row segment"],
    ["an empty sampler", changed(["metrics", 0, "include", 0], "/queue/r/c"), "metrics[0].include[0]", "empty sampler name"],
    ["an empty sampler name with a type", changed(["metrics", 0, "include", 0], "(sql)/queue/r/c"), "metrics[0].include[0]", "empty sampler name"],
    ["an empty dataview", changed(["metrics", 0, "include", 0], "orders//r/c"), "metrics[0].include[0]", "empty dataview name"],
    ["an empty column", changed(["metrics", 0, "include", 0], "orders/queue/r/"), "metrics[0].include[0]", "empty column"],
    ["a malformed escape", changed(["metrics", 0, "include", 0], "orders/queue/r%2/c"), "metrics[0].include[0]", "row segment 'r%2' has a malformed percent-escape"],
    ["an unbalanced sampler type", changed(["metrics", 0, "include", 0], "orders(sql/queue/r/c"), "metrics[0].include[0]", "must be a name or name(type)"],
    ["a repeated include", changed(["metrics", 0, "include"], ["o/q/r/c", "o/q/%72/c"]), "metrics[0].include[1]", "same cells as metrics[0].include[0]"],
    ["a missing aggregations", changed(["aggregations"], undefined), "aggregations", "required array"],
    ["an empty aggregations", changed(["aggregations"], []), "aggregations", "must not be empty"],
    ["too many aggregations", changed( ["aggregations"], many(21, (i) => `svc.percentile(0.${i})`), ), "aggregations", "at most 20"],
    ["an aggregation that is an object", changed(["aggregations", 0], { name: "svc.avg" }), "aggregations[0]", "must be a string, found an object"],
    ["an unknown aggregation", changed(["aggregations", 1], "svc.mean"), "aggregations[1]", "known: svc.count"],
    ["a percentile above 1", changed(["aggregations", 1], "svc.percentile(95)"), "aggregations[1]", "above 1"],
    ["a repeated aggregation", changed(["aggregations"], ["svc.max", "svc.min", "svc.max"]), "aggregations[2]", "repeats aggregations[0]"],
    ["a missing bucketing", changed(["bucketing"], undefined), "bucketing", "required object"],
    ["a bucketing that is a string", changed(["bucketing"], "PT5M"), "bucketing", "must be an object, found a string"],
    ["an unknown bucketing field", changed(["bucketing", "alignment"], "start"), "bucketing.alignment", "unknown field"],
    ["a bucketing without duration or count", changed(["bucketing", "duration"], undefined), "bucketing", "needs duration"],
    ["a bucketing with both duration and count", changed(["bucketing", "count"], 10), "bucketing", "has both duration and count"],
    ["a count of 0", changed(["bucketing"], { count: 0 }), "bucketing.count", "from 1 to 100000, found 0"],
    ["a count above 100 000", changed(["bucketing"], { count: 100_001 }), "bucketing.count", "from 1 to 100000"],
    ["a fractional count", changed(["bucketing"], { count: 2.5 }), "bucketing.count", "whole number"],
    ["a count as a string", changed(["bucketing"], { count: "10" }), "bucketing.count", "found a string"],
    ["a count of null", changed(["bucketing"], { count: null }), "bucketing.count", "found null"],
    ["more buckets than milliseconds", { ...(changed(["filter", "range"], { from: "2026-03-29T00:00:00Z", to: "2026-03-29T00:00:00.999Z" }) as object), bucketing: { count: 1000 } }, "bucketing.count", "narrower than a millisecond"],
    ["a duration of 7 minutes", changed(["bucketing", "duration"], "PT7M"), "bucketing.duration", "does not divide a day"],
    ["a fractional duration", changed(["bucketing", "duration"], "PT0.5H"), "bucketing.duration", "fractions"],
    ["a grouping that is a string", changed(["grouping"], "rowname"), "grouping", "must be an array"],
    ["an unknown grouping", changed(["grouping"], ["sampler"]), "grouping[0]", "use rowname, entity or entity:<attribute>"],
    ["a grouping entity: without attribute", changed(["grouping"], ["entity:"]), "grouping[0]", "is not a grouping"],
    ["a repeated grouping", changed(["grouping"], ["rowname", "entity", "rowname"]), "grouping[2]", "repeats grouping[0]"],
    ["two attribute groupings", changed(["grouping"], ["entity:a", "entity:b"]), "grouping[1]", "only one entity:<attribute>"],
    ["a grouping that is a number", changed(["grouping"], [1]), "grouping[0]", "must be a string"],
  ];
  for (const [name, body, field, fragment] of cases) {
    test(name, () => {
      assert.throws(
        () => parseMetricQuery(body),
        (error: unknown) => {
          assert.ok(error instanceof VigilError, String(error));
          assert.equal(error.status, 400);
          assert.equal(error.code, "INVALID_QUERY");
          assert.equal(error.fields.field, field);
          const detail = String(error.fields.detail);
          assert.ok(detail.includes(fragment), `'${detail}' lacks '${fragment}'`);
          assert.equal(error.body, `${field}: ${detail}`);
          return true;
        },
      );
    });
  }
});

describe("parseCellReference", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, CellSelector][] = [
    ["a row wildcard is row null", "orders/queue/{rowname}/queued", sel("orders", "queue", null, "queued")],
    ["an empty row is a headline", "orders/queue//totalRows", sel("orders", "queue", "", "totalRows")],
    ["a typed sampler", "orders(sql)/queue/r1/c", sel("orders", "queue", "r1", "c", "sql")],
    ["an empty type means samplers without one", "orders()/queue/r1/c", sel("orders", "queue", "r1", "c", "")],
    ["%2F decodes to a slash after splitting", "a%2Fb/c%2fd/e%2F/f", sel("a/b", "c/d", "e/", "f")],
    ["escaped braces are a literal row name", "s/d/%7Browname%7D/c", sel("s", "d", "{rowname}", "c")],
    ["escaped parentheses are part of the name", "s%28x%29/d/r/c", sel("s(x)", "d", "r", "c")],
    ["a type with an escaped slash", "s(a%2Fb)/d/r/c", sel("s", "d", "r", "c", "a/b")],
    ["spaces and unicode are kept", "my sampler/dv é/row 1/col", sel("my sampler", "dv é", "row 1", "col")],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => assert.deepEqual(parseCellReference(text, "path"), expected));
  }
});
