/**
 * ITRS's Go client `cordial/pkg/gwhub` (v1.28.2) against a real hub: every call it makes, sent as
 * gwhub encodes it (go-querystring for GET parameters, `encoding/json` with its `omitempty` tags
 * for POST bodies), answered by a hub fed realistic data (a probe, managed entities with
 * attributes, tables with numeric and text cells, a headline, severity, snooze and user-assignment
 * events), and the answer decoded with the rules of Go's `encoding/json` into the shapes gwhub
 * declares. The shapes below are written from gwhub's Go struct declarations (files named at each
 * one, in github.com/ITRS-Group/cordial `pkg/gwhub/`): field names, JSON types, which fields a hub
 * must send, and that the values are meaningful (non-empty where gwhub's caller needs a value).
 *
 * The decoder follows `encoding/json`: a key matches the field whose tag (or, untagged, whose Go
 * name) equals it, else case-insensitively; unknown keys are ignored; `null` leaves a zero value;
 * an `int` needs an integer literal in range; `time.Time` needs an RFC 3339 string (`T`, `Z` or
 * `±hh:mm`, fractional seconds allowed). It is stricter in one way: a field the hub must send has
 * to be present under its exact JSON name, so a name that only matches case-insensitively fails.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";

// ---- Go shapes and a decoder with encoding/json's rules ----------------------------------------

type Shape =
  | { readonly go: "int" | "string" | "bool" | "time.Time" | "interface{}" }
  | { readonly go: "slice"; readonly of: Shape }
  | { readonly go: "map"; readonly of: Shape }
  | { readonly go: "struct"; readonly name: string; readonly fields: readonly Field[] };

interface Field {
  /** The Go field name. */
  readonly name: string;
  /** The `json:"…"` tag's name, or undefined for an untagged field (matched by its Go name). */
  readonly tag?: string;
  readonly shape: Shape;
  /** The hub sends it always (in the cases decoded here). */
  readonly required?: boolean;
  /** Its value must be meaningful: a non-empty string, slice or map, an int ≥ 1. */
  readonly nonEmpty?: boolean;
}

const INT: Shape = { go: "int" };
const STRING: Shape = { go: "string" };
const BOOL: Shape = { go: "bool" };
const TIME: Shape = { go: "time.Time" };
const ANY: Shape = { go: "interface{}" };
const slice = (of: Shape): Shape => ({ go: "slice", of });
const map = (of: Shape): Shape => ({ go: "map", of });
const struct = (name: string, fields: readonly Field[]): Shape => ({ go: "struct", name, fields });
/** A field the hub always sends; `nonEmpty` unless said otherwise. */
const must = (name: string, tag: string | undefined, shape: Shape, nonEmpty = true): Field => ({
  name,
  ...(tag === undefined ? {} : { tag }),
  shape,
  required: true,
  nonEmpty,
});
const may = (name: string, tag: string | undefined, shape: Shape): Field => ({
  name,
  ...(tag === undefined ? {} : { tag }),
  shape,
});

// entities.go
const ENTITY = struct("Entity", [
  must("ID", "id", INT),
  must("Attributes", "attributes", map(STRING)),
  must("IsDeleted", "isDeleted", BOOL, false),
]);
const ENTITY_METRIC_MAPPING = struct("EntityMetricMapping", [
  must("LegacyPath", "legacyPath", STRING),
  must("DataviewID", "dataviewId", INT),
  must("IsDeleted", "isDeleted", BOOL, false),
]);
/** `EntityMetric`; `Mappings` is untagged (matched as "mappings") and sent with includeMappings only. */
const entityMetric = (withMappings: boolean) =>
  struct("EntityMetric", [
    must("Name", "name", STRING),
    must("Type", "type", STRING),
    must("Unit", "unit", STRING),
    withMappings
      ? must("Mappings", undefined, slice(ENTITY_METRIC_MAPPING))
      : may("Mappings", undefined, slice(ENTITY_METRIC_MAPPING)),
  ]);
const ENTITIES_SUMMARY = struct("EntitiesSummary", [
  must("Attributes", "attributes", map(STRING), false),
  must("Count", "count", INT),
  must("SampleEntityCount", "sampleEntityCount", INT),
  must(
    "Counts",
    "counts",
    slice(
      struct("EntitiesSummariesCount", [
        must("States", "states", map(STRING)),
        must("Count", "count", INT),
        must("SampleEntities", "sampleEntities", slice(INT)),
      ]),
    ),
  ),
]);
const ENTITY_ATTRIBUTES = struct("EntityAttributes", [
  must("Name", "name", STRING),
  must("ValueCount", "valueCount", INT),
]);
/** `EntityMetricsDataResponse`; `Values` is untagged (matched as "values"). */
const ENTITY_METRICS_DATA = struct("EntityMetricsDataResponse", [
  must("TotalCount", "totalCount", INT),
  must(
    "Values",
    undefined,
    slice(
      struct("EntityMetricsDataValue", [
        must("Timestamp", "timestamp", TIME),
        must("Value", "value", STRING),
      ]),
    ),
  ),
]);
// metrics.go
const bucketing = (field: "duration" | "count") =>
  struct("Bucketing", [
    must("Duration", "duration", STRING),
    field === "count" ? must("Count", "count", INT) : may("Count", "count", INT),
  ]);
const metricsQueryResponse = (
  field: "duration" | "count",
  grouping: readonly ("rowname" | "entity" | "attribute")[],
) =>
  struct("MetricsQueryResponse", [
    must(
      "Schema",
      "schema",
      struct("Schema", [
        must("Bucketing", "bucketing", bucketing(field)),
        must("Grouping", "grouping", slice(STRING), grouping.length > 0),
        must("Metrics", "metrics", map(map(ANY))),
      ]),
    ),
    must(
      "Data",
      "data",
      slice(
        struct("Data", [
          must("Bucket", "bucket", TIME),
          must(
            "Grouping",
            "group",
            struct("DataGrouping", [
              grouping.includes("rowname")
                ? must("Rowname", "rowname", STRING)
                : may("Rowname", "rowname", STRING),
              grouping.includes("entity") ? must("Entity", "entity", INT) : may("Entity", "entity", INT),
              grouping.includes("attribute")
                ? must("Attribute", "attribute", STRING)
                : may("Attribute", "attribute", STRING),
            ]),
            false,
          ),
          must("Metrics", "metrics", map(map(ANY))),
        ]),
      ),
    ),
  ]);
const METRICS_AGGREGATIONS = map(
  struct("MetricsAggregation", [
    must("Parameters", "parameters", slice(map(STRING)), false),
    must("Description", "description", STRING),
  ]),
);
// events.go
const EVENT = struct("Event", [
  must("EntityID", "entityId", INT),
  must("Timestamp", "timestamp", TIME),
  must(
    "Data",
    "data",
    struct("EventData", [
      may("Severity", "severity", STRING),
      may("Active", "active", BOOL),
      must("Value", "value", map(STRING), false),
    ]),
  ),
  must("Metric", "metric", STRING, false),
  must("Type", "type", STRING),
]);
const QUERY_EVENT_RECORDS = map(slice(EVENT));

/** RFC 3339 as Go's `time.Time.UnmarshalJSON` parses it (Go 1.20+: two-digit fields, `T`, strict offset). */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|([+-])(\d{2}):(\d{2}))$/;

function goTime(text: string): boolean {
  const m = RFC3339.exec(text);
  if (m === null) return false;
  const [, , mo, d, h, mi, s, , oh, om] = m.map(Number);
  return (
    (mo ?? 0) >= 1 &&
    (mo ?? 0) <= 12 &&
    (d ?? 0) >= 1 &&
    (d ?? 0) <= 31 &&
    (h ?? 99) < 24 &&
    (mi ?? 99) < 60 &&
    (s ?? 99) < 60 &&
    (Number.isNaN(oh) || (oh ?? 99) < 24) &&
    (Number.isNaN(om) || (om ?? 99) < 60)
  );
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Decodes `value` (parsed JSON) into `shape` as Go would, and checks the required and meaningful
 * fields; returns every problem with its path (empty when it decodes).
 */
function decode(value: unknown, shape: Shape, path = "$"): string[] {
  if (value === null) return []; // encoding/json: null leaves the zero value
  switch (shape.go) {
    case "interface{}":
      return [];
    case "string":
      return typeof value === "string" ? [] : [`${path}: cannot unmarshal ${typeof value} into Go string`];
    case "bool":
      return typeof value === "boolean" ? [] : [`${path}: cannot unmarshal ${typeof value} into Go bool`];
    case "int":
      return typeof value === "number" && Number.isSafeInteger(value) && Math.abs(value) < 2 ** 63
        ? []
        : [`${path}: cannot unmarshal ${JSON.stringify(value)} into Go int`];
    case "time.Time":
      return typeof value === "string" && goTime(value)
        ? []
        : [`${path}: ${JSON.stringify(value)} is not RFC 3339 for time.Time`];
    case "slice":
      if (!Array.isArray(value)) return [`${path}: cannot unmarshal ${typeof value} into a Go slice`];
      return value.flatMap((item, i) => decode(item, shape.of, `${path}[${i}]`));
    case "map":
      if (!isObject(value))
        return [`${path}: cannot unmarshal ${Array.isArray(value) ? "array" : typeof value} into a Go map`];
      return Object.entries(value).flatMap(([key, item]) =>
        decode(item, shape.of, `${path}[${JSON.stringify(key)}]`),
      );
    case "struct": {
      if (!isObject(value))
        return [
          `${path}: cannot unmarshal ${Array.isArray(value) ? "array" : typeof value} into Go ${shape.name}`,
        ];
      const problems: string[] = [];
      for (const field of shape.fields) {
        const key = field.tag ?? field.name;
        // Go: the exact name first, else the first key equal to it under case folding.
        const exact = Object.hasOwn(value, key);
        const found = exact ? key : Object.keys(value).find((k) => k.toLowerCase() === key.toLowerCase());
        const at = `${path}.${key}`;
        const strictlyNamed = field.tag === undefined ? found !== undefined : exact;
        if (field.required === true && !strictlyNamed) {
          problems.push(`${at}: missing (${shape.name}.${field.name})`);
          continue;
        }
        if (found === undefined) continue;
        const item = value[found];
        problems.push(...decode(item, field.shape, at));
        if (field.required === true && field.nonEmpty === true && !meaningful(item)) {
          problems.push(`${at}: ${JSON.stringify(item)} is empty (${shape.name}.${field.name})`);
        }
      }
      return problems;
    }
  }
}

function meaningful(value: unknown): boolean {
  if (typeof value === "string") return value !== "";
  if (typeof value === "number") return value >= 1;
  if (Array.isArray(value)) return value.length > 0;
  if (isObject(value)) return Object.keys(value).length > 0;
  return value !== null && value !== undefined;
}

describe("the decoder follows encoding/json", () => {
  const POINT = struct("Point", [
    must("X", "x", INT),
    may("Label", undefined, STRING),
    must("At", "at", TIME),
  ]);
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, unknown, Shape, string[]][] = [
    ["a struct with its fields", { x: 1, Label: "a", at: "2026-03-01T10:00:00Z" }, POINT, []],
    ["an untagged field matches case-insensitively", { x: 1, label: "a", at: "2026-03-01T10:00:00.5+05:30" }, POINT, []],
    ["unknown keys are ignored", { x: 1, at: "2026-03-01T10:00:00Z", extra: [1] }, POINT, []],
    ["null leaves a zero value (then it is empty)", { x: null, at: "2026-03-01T10:00:00Z" }, POINT, ["$.x: null is empty (Point.X)"]],
    ["a fraction does not fit an int", { x: 1.5, at: "2026-03-01T10:00:00Z" }, POINT, ["$.x: cannot unmarshal 1.5 into Go int"]],
    ["a string does not fit an int", { x: "1", at: "2026-03-01T10:00:00Z" }, POINT, ['$.x: cannot unmarshal "1" into Go int']],
    ["a time without an offset", { x: 1, at: "2026-03-01T10:00:00" }, POINT, ['$.at: "2026-03-01T10:00:00" is not RFC 3339 for time.Time']],
    ["a time with a space", { x: 1, at: "2026-03-01 10:00:00Z" }, POINT, ['$.at: "2026-03-01 10:00:00Z" is not RFC 3339 for time.Time']],
    ["a required tagged field only in another case", { X: 1, at: "2026-03-01T10:00:00Z" }, POINT, ["$.x: missing (Point.X)"]],
    ["a map of strings holding a number", { a: "x", b: 2 }, map(STRING), ['$["b"]: cannot unmarshal number into Go string']],
  ];
  for (const [name, value, shape, expected] of cases) {
    test(name, () => assert.deepEqual(decode(value, shape), expected));
  }
});

// ---- the hub and its data ----------------------------------------------------------------------

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: web-01
        attributes: { Region: emea }
        samplers:
          - name: orders
            plugin: rest-api
            schema: { columns: { latency: { type: float64, unit: milliseconds } } }
hub: { security: { enabled: false } }
`);

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const filter = { osType: "Linux", pluginName: "rest-api" };
const entityTarget = (me: string) => ({ gateway: "GW", probe: "p1", managedEntity: me });
const dataview = (me: string) => ({ ...entityTarget(me), type: "", sampler: "orders", dataview: "queue" });
const cell = (me: string, row: string, column: string) => ({ ...dataview(me), row, column });
const table = (me: string, row: string, cells: Record<string, string>, at: number) => ({
  type: "table",
  operation: "update",
  data: { sampleTime: iso(at), target: { ...dataview(me), row, filter }, row: { name: row, ...cells } },
});
const event = (type: string, target: object, at: number, data: object) => ({
  type,
  operation: "update",
  data: { timestamp: iso(at), target, data },
});
const severity = (target: object, value: string, at: number, cellValue?: object) =>
  event("severity", target, at, {
    severity: value,
    active: true,
    snoozed: false,
    snoozedParents: 0,
    userAssigned: false,
    ...(cellValue === undefined ? {} : { value: cellValue }),
  });

const MESSAGES = [
  {
    type: "probe",
    operation: "create",
    data: {
      timestamp: iso(T0),
      target: { gateway: "GW", probe: "p1" },
      parameters: { osType: "Linux", HostName: "lon-1" },
    },
  },
  ...["web-01", "web-02"].map((me, i) => ({
    type: "managedEntity",
    operation: "create",
    data: { timestamp: iso(T0), target: entityTarget(me), attributes: { Region: i === 0 ? "emea" : "amer" } },
  })),
  ...[0, 1, 2, 3, 4, 5].flatMap((minute) => [
    table(
      "web-01",
      "EURUSD",
      { latency: String(10 + minute), status: minute < 3 ? "ok" : "slow" },
      T0 + minute * 60_000,
    ),
    table("web-01", "GBPUSD", { latency: String(20 + 2 * minute), status: "ok" }, T0 + minute * 60_000 + 500),
  ]),
  table("web-02", "USDJPY", { latency: "1000", status: "stale" }, T0 + 30_000),
  {
    type: "headline",
    operation: "update",
    data: {
      sampleTime: iso(T0 + 1_000),
      target: { ...dataview("web-01"), filter },
      row: { totalRows: "2", feed: "primary" },
    },
  },
  severity(cell("web-01", "EURUSD", "latency"), "WARNING", T0 + 200_000, { cell: "13", number: 13 }),
  event("snooze", cell("web-01", "EURUSD", "latency"), T0 + 210_000, {
    snoozed: true,
    snoozedBy: "ann",
    comment: "maintenance window",
    period: "Manual",
  }),
  event("userassignment", entityTarget("web-02"), T0 + 220_000, {
    userAssigned: true,
    assignedTo: "bob",
    assignedBy: "ann",
    comment: "look at the feed",
    period: "Manual",
  }),
  severity(entityTarget("web-01"), "CRITICAL", T0 + 230_000),
  severity(entityTarget("web-02"), "OK", T0 + 240_000),
];

let hub: Hub;
let web01 = 0;
const dataDir = mkdtempSync(join(tmpdir(), "vigil-gwhub-"));

/**
 * A GET as gwhub sends it: go-querystring's `url.Values.Encode()`, keys sorted, values escaped
 * with `+` for a space; booleans as true/false, `time.Time` as RFC 3339 without fractions.
 */
async function get(path: string, params: readonly [string, string][] = []): Promise<unknown> {
  const query = new URLSearchParams([...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))).toString();
  const response = await hub.http.inject({ method: "GET", url: query === "" ? path : `${path}?${query}` });
  assert.equal(response.statusCode, 200, `GET ${path}?${query}: ${response.body.slice(0, 300)}`);
  return response.json();
}

/** A POST as gwhub sends it: `json.Marshal` of the request struct, `content-type: application/json`. */
async function post(path: string, body: unknown): Promise<unknown> {
  const response = await hub.http.inject({
    method: "POST",
    url: path,
    headers: { "content-type": "application/json" },
    payload: JSON.stringify(body),
  });
  assert.equal(response.statusCode, 200, `POST ${path}: ${response.body.slice(0, 300)}`);
  return response.json();
}

/** `time.Time.Format(time.RFC3339)`: no fractional seconds. */
const goRfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

function assertDecodes(body: unknown, shape: Shape): void {
  assert.deepEqual(decode(body, shape), [], JSON.stringify(body).slice(0, 600));
}

before(async () => {
  hub = await buildHub({
    setup,
    store: await createDuckDbStore({ path: ":memory:" }),
    logger: pino({ level: "silent" }),
    dataDir,
  });
  await hub.start(0);
  const backfill = (await post("/v0/messages", MESSAGES)) as { accepted: number; rejected: unknown[] };
  assert.deepEqual(backfill.rejected, []);
  const entities = (await get("/v0/entities", [["includeDeleted", "false"]])) as {
    id: number;
    attributes: Record<string, string>;
  }[];
  web01 = entities.find((e) => e.attributes["svc.name"] === "web-01")?.id ?? 0;
  assert.ok(web01 > 0);
});
after(async () => {
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

// ---- every gwhub call --------------------------------------------------------------------------

const LATENCY = "orders/queue/{rowname}/latency";
const RANGE = { from: goRfc3339(T0), to: goRfc3339(T0 + 3_600_000) };

describe("gwhub's calls decode into gwhub's shapes", () => {
  test("Entities: GET /entities (includeDeleted always sent) → []Entity", async () => {
    const body = await get("/v0/entities", [
      ["filter", 'user.Region = "emea"'],
      ["includeDeleted", "false"],
    ]);
    assertDecodes(body, slice(ENTITY));
    assert.equal((body as unknown[]).length, 1);
  });

  test("Entity: GET /entities/{id} → Entity", async () => {
    const body = (await get(`/v0/entities/${web01}`)) as { attributes: Record<string, string> };
    assertDecodes(body, ENTITY);
    assert.equal(body.attributes["svc.os-type"], "Linux");
  });

  test("EntitiesSummary: GET /entities/summary (groupBy repeated, nrSamples) → []EntitiesSummary", async () => {
    const body = await get("/v0/entities/summary", [
      ["groupBy", "user.Region"],
      ["groupBy", "svc.probe"],
      ["nrSamples", "5"],
    ]);
    assertDecodes(body, slice(ENTITIES_SUMMARY));
    assert.equal((body as unknown[]).length, 2);
  });

  test("EntitiesAttributes: GET /entities/attributes (filter) → []EntityAttributes", async () => {
    const body = await get("/v0/entities/attributes", [["filter", "svc.probe = p1"]]);
    assertDecodes(body, slice(ENTITY_ATTRIBUTES));
    assert.ok((body as { name: string }[]).some((a) => a.name === "user.Region"));
  });

  test("EntityAttributeValues: GET /entities/attributes/{name} (no parameters) → []string", async () => {
    const body = await get("/v0/entities/attributes/user.Region");
    assertDecodes(body, slice(STRING));
    assert.deepEqual(body, ["amer", "emea"]);
  });

  test("EntityMetrics: GET /entities/{id}/metrics (includeNonNumeric) → []EntityMetric", async () => {
    const body = (await get(`/v0/entities/${web01}/metrics`, [["includeNonNumeric", "true"]])) as {
      name: string;
    }[];
    assertDecodes(body, slice(entityMetric(false)));
    const names = body.map((m) => m.name);
    for (const name of [
      LATENCY,
      "orders/queue/{rowname}/status",
      "orders/queue//totalRows",
      "orders/queue//feed",
    ]) {
      assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
    }
  });

  test("EntitiesMetrics: GET /entities/metrics (filter, plugin) → []EntityMetric", async () => {
    const body = await get("/v0/entities/metrics", [
      ["filter", "svc.probe = p1"],
      ["plugin", "rest-api"],
    ]);
    assertDecodes(body, slice(entityMetric(false)));
    assert.ok((body as unknown[]).length > 0);
  });

  // ---- includeMappings ------------------------------------------------------------------------
  test("EntitiesMetrics with includeMappings: GET /entities/metrics → []EntityMetric with Mappings", async () => {
    const body = (await get("/v0/entities/metrics", [
      ["includeMappings", "true"],
      ["includeNonNumeric", "true"],
    ])) as { name: string; mappings: { legacyPath: string; dataviewId: number; isDeleted: boolean }[] }[];
    assertDecodes(body, slice(entityMetric(true)));
    const dataviewOf = (me: string) =>
      `/geneos/gateway[(@name="GW")]/directory/probe[(@name="p1")]/managedEntity[(@name="${me}")]` +
      '/sampler[(@name="orders")][(@type="")]/dataview[(@name="queue")]';
    const latency = body.find((m) => m.name === LATENCY);
    assert.deepEqual(
      latency?.mappings.map((m) => m.legacyPath),
      ["web-01", "web-02"].map(
        (me) => `${dataviewOf(me)}/rows/row[(@name="{rowname}")]/cell[(@column="latency")]`,
      ),
    );
    const totalRows = body.find((m) => m.name === "orders/queue//totalRows");
    assert.deepEqual(
      totalRows?.mappings.map((m) => m.legacyPath),
      [`${dataviewOf("web-01")}/headlines/cell[(@name="totalRows")]`],
    );
    // One id per dataview: web-01's latency, status and headlines share it; web-02's differs.
    const ids = (name: string) => body.find((m) => m.name === name)?.mappings.map((m) => m.dataviewId);
    const [web01Queue, web02Queue] = ids(LATENCY) ?? [];
    assert.ok(Number.isInteger(web01Queue) && Number.isInteger(web02Queue) && web01Queue !== web02Queue);
    assert.deepEqual(ids("orders/queue/{rowname}/status"), [web01Queue, web02Queue]);
    assert.deepEqual(ids("orders/queue//totalRows"), [web01Queue]);
    assert.ok(body.every((m) => m.mappings.every((x) => x.isDeleted === false)));
    // Without the parameter, no mappings.
    const plain = (await get("/v0/entities/metrics")) as object[];
    assert.ok(plain.every((m) => !("mappings" in m)));
  });

  test("EntityMetricsRows: GET /entities/{id}/metrics/rows (path, updatedSince) → []string", async () => {
    const body = await get(`/v0/entities/${web01}/metrics/rows`, [
      ["path", LATENCY],
      ["updatedSince", goRfc3339(T0)],
    ]);
    assertDecodes(body, slice(STRING));
    assert.deepEqual(body, ["EURUSD", "GBPUSD"]);
  });

  test("EntitiesMetricsRows: GET /entities/metrics/rows (path; gwhub sends no filter) → []string", async () => {
    const body = await get("/v0/entities/metrics/rows", [["path", "orders/queue/{rowname}/status"]]);
    assertDecodes(body, slice(STRING));
    assert.deepEqual(body, ["EURUSD", "GBPUSD", "USDJPY"]);
  });

  test("EntityMetricsData: GET /entities/{id}/metrics/data (from, to, skip and limit always) → EntityMetricsDataResponse", async () => {
    const body = (await get(`/v0/entities/${web01}/metrics/data`, [
      ["path", "orders/queue/EURUSD/status"],
      ["from", RANGE.from],
      ["to", RANGE.to],
      ["skip", "0"],
      ["limit", "0"],
    ])) as { totalCount: number; values: { value: string }[] };
    assertDecodes(body, ENTITY_METRICS_DATA);
    assert.equal(body.totalCount, 6);
    assert.deepEqual(
      body.values.map((v) => v.value),
      ["ok", "ok", "ok", "slow", "slow", "slow"],
    );
  });

  test("MetricsAggregations: GET /metrics/aggregations → map[string]MetricsAggregation", async () => {
    const body = await get("/v0/metrics/aggregations");
    assertDecodes(body, METRICS_AGGREGATIONS);
    assert.equal((body as Record<string, { parameters: unknown[] }>)["svc.percentile"]?.parameters.length, 1);
  });

  /** gwhub's `MetricsQueryRequest` as json.Marshal writes it: omitempty drops empty fields. */
  const metricsQuery = (bucketing: { duration?: string; count?: number }, grouping?: string[]) => ({
    ...(grouping === undefined ? {} : { grouping }),
    filter: { entities: "svc.probe = p1", range: RANGE },
    aggregations: ["svc.count", "svc.avg", "svc.max", "svc.percentile(0.5)"],
    metrics: [{ identifier: "latency", include: [LATENCY] }],
    zoneId: "Europe/London",
    bucketing,
  });

  test("MetricsQuery with bucketing.duration → MetricsQueryResponse", async () => {
    const body = (await post(
      "/v0/metrics/query",
      metricsQuery({ duration: "PT5M" }, ["rowname", "entity"]),
    )) as {
      data: { metrics: { latency: Record<string, number> } }[];
    };
    assertDecodes(body, metricsQueryResponse("duration", ["rowname", "entity"]));
    assert.equal(
      body.data.reduce((n, d) => n + (d.metrics.latency["svc.count"] ?? 0), 0),
      13,
    );
  });

  test("MetricsQuery with bucketing.count, no zoneId and no entity filter (omitempty) → MetricsQueryResponse", async () => {
    const request = { ...metricsQuery({ count: 12 }, ["entity:user.Region"]), zoneId: undefined };
    const { entities: _omitted, ...filterWithoutEntities } = request.filter;
    const body = (await post("/v1alpha/metrics/query", { ...request, filter: filterWithoutEntities })) as {
      schema: { bucketing: unknown };
      data: { bucket: string; group: { attribute: string } }[];
    };
    assertDecodes(body, metricsQueryResponse("count", ["attribute"]));
    assert.deepEqual(body.schema.bucketing, { count: 12, duration: "PT5M" });
    assert.deepEqual(
      body.data.map((d) => `${d.bucket} ${d.group.attribute}`),
      ["2026-03-01T10:00:00+00:00 amer", "2026-03-01T10:00:00+00:00 emea", "2026-03-01T10:05:00+00:00 emea"],
    );
  });

  test("QueryEventRecords: POST /events/recordsQuery → map[string][]Event", async () => {
    // json.Marshal of QueryEventRecordsRequest: skip, metrics and zoneId omitted when empty; limit
    // always (0: the default); events null when the slice is nil.
    const body = (await post("/v0/events/recordsQuery", {
      filter: { range: RANGE },
      limit: 0,
      events: null,
    })) as Record<
      string,
      { type: string; metric: string; data: { severity?: string; value: Record<string, string> } }[]
    >;
    assertDecodes(body, QUERY_EVENT_RECORDS);
    const records = Object.values(body).flat();
    assert.deepEqual(records.map((r) => r.type).sort(), [
      "severity",
      "severity",
      "severity",
      "snooze",
      "userassignment",
    ]);
    // Severity records carry the severity; cell events name their cell; every record has values.
    for (const r of records) {
      if (r.type === "severity") assert.ok((r.data.severity ?? "") !== "", JSON.stringify(r));
      else assert.ok(Object.keys(r.data.value).length > 0, JSON.stringify(r));
    }
    assert.ok(records.some((r) => r.metric === "orders/queue/EURUSD/latency"));
  });
});
