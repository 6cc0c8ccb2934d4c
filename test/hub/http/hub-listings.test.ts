/**
 * The hub's listing endpoints through real HTTP, with the request shapes ITRS's Go client
 * `cordial/pkg/gwhub` sends (repeated `groupBy`, zero-valued fields of a Go struct) and the
 * response shapes it decodes: entity summary, events recordsQuery, raw metric data, metrics across
 * entities, row names, and the aggregation catalog. Data arrives by backfill.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../../src/hub/app.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: web-01
        samplers:
          - name: orders
            plugin: rest-api
            schema: { columns: { latency: { type: float64, unit: milliseconds } } }
      - name: web-02
        samplers: [{ name: orders, plugin: rest-api }]
hub: { security: { enabled: false } }
`);

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const filter = { osType: "Linux", pluginName: "rest-api" };
const target = (me: string) => ({ gateway: "GW", probe: "p1", managedEntity: me });
const cellTarget = (me: string, row: string, column: string) => ({
  ...target(me),
  type: "",
  sampler: "orders",
  dataview: "queue",
  row,
  column,
});

const entity = (name: string, attributes: Record<string, string>) => ({
  type: "managedEntity",
  operation: "create",
  data: { timestamp: iso(T0), target: target(name), attributes },
});
const table = (me: string, row: string, cells: Record<string, string>, at: number) => ({
  type: "table",
  operation: "update",
  data: {
    sampleTime: iso(at),
    target: { ...target(me), type: "", sampler: "orders", dataview: "queue", row, filter },
    row: cells,
  },
});
const headline = (me: string, cells: Record<string, string>, at: number) => ({
  type: "headline",
  operation: "update",
  data: {
    sampleTime: iso(at),
    target: { ...target(me), type: "", sampler: "orders", dataview: "queue", filter },
    row: cells,
  },
});
const severity = (eventTarget: object, value: string, at: number, cell?: object) => ({
  type: "severity",
  operation: "update",
  data: {
    timestamp: iso(at),
    target: eventTarget,
    data: {
      severity: value,
      active: true,
      snoozed: false,
      snoozedParents: 0,
      userAssigned: false,
      ...(cell === undefined ? {} : { value: cell }),
    },
  },
});
const snooze = (eventTarget: object, at: number) => ({
  type: "snooze",
  operation: "update",
  data: {
    timestamp: iso(at),
    target: eventTarget,
    data: { snoozed: true, snoozedBy: "ann", comment: "maintenance", period: "Manual" },
  },
});
const assign = (eventTarget: object, at: number) => ({
  type: "userassignment",
  operation: "update",
  data: {
    timestamp: iso(at),
    target: eventTarget,
    data: { userAssigned: true, assignedTo: "bob", assignedBy: "ann", comment: "", period: "Manual" },
  },
});

const messages = [
  {
    type: "probe",
    operation: "create",
    data: {
      timestamp: iso(T0),
      target: { gateway: "GW", probe: "p1" },
      parameters: { osType: "Linux", HostName: "h1" },
    },
  },
  entity("web-01", { Region: "emea" }),
  entity("web-02", { Region: "amer" }),
  entity("web-03", { Region: "emea" }),
  table("web-01", "EURUSD", { latency: "10", status: "ok" }, T0 + 1_000),
  table("web-01", "EURUSD", { latency: "20", status: "ok" }, T0 + 2_000),
  table("web-01", "GBPUSD", { latency: "60", status: "slow" }, T0 + 3_000),
  headline("web-01", { totalRows: "2" }, T0 + 3_000),
  table("web-02", "USDJPY", { latency: "1000" }, T0 + 1_000),
  severity(target("web-01"), "WARNING", T0 + 5_000),
  severity(cellTarget("web-01", "EURUSD", "latency"), "WARNING", T0 + 6_000, { cell: "20", number: 20 }),
  snooze(cellTarget("web-01", "EURUSD", "latency"), T0 + 7_000),
  assign(target("web-02"), T0 + 8_000),
  severity(target("web-02"), "OK", T0 + 9_000),
  severity(target("web-01"), "CRITICAL", T0 + 10_500),
];

let hub: Hub;
let base: string;
const ids = new Map<string, number>();
const dataDir = mkdtempSync(join(tmpdir(), "vigil-hub-listings-"));

async function get(url: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}${url}`);
  return { status: response.status, body: await response.json() };
}
async function post(url: string, payload: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}${url}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  return { status: response.status, body: await response.json() };
}
const id = (name: string): number => {
  const found = ids.get(name);
  assert.ok(found !== undefined, name);
  return found;
};
const q = (text: string) => encodeURIComponent(text);

before(async () => {
  const store = await createDuckDbStore({ path: ":memory:" });
  hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  base = await hub.start(0);
  const backfill = await post("/v0/messages", messages);
  assert.equal(backfill.status, 200);
  assert.deepEqual((backfill.body as { rejected: unknown[] }).rejected, []);
  for (const e of (await get("/v0/entities")).body as { id: number; attributes: Record<string, string> }[]) {
    ids.set(e.attributes["svc.name"] ?? "", e.id);
  }
});
after(async () => {
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("GET /v0/entities/summary", () => {
  test("without groupBy: one group counting every entity by its latest entity-level severity", async () => {
    const { status, body } = await get("/v0/entities/summary");
    assert.equal(status, 200);
    assert.deepEqual(body, [
      {
        attributes: {},
        count: 3,
        sampleEntityCount: 3,
        counts: [
          { states: { severity: "UNDEFINED" }, count: 1, sampleEntities: [id("web-03")] },
          { states: { severity: "OK" }, count: 1, sampleEntities: [id("web-02")] },
          { states: { severity: "CRITICAL" }, count: 1, sampleEntities: [id("web-01")] },
        ],
      },
    ]);
  });

  test("groupBy repeated, once per attribute (cordial's shape)", async () => {
    const { status, body } = await get(`/v0/entities/summary?groupBy=user.Region&groupBy=svc.hostname`);
    assert.equal(status, 200);
    assert.deepEqual(body, [
      {
        attributes: { "user.Region": "amer", "svc.hostname": "h1" },
        count: 1,
        sampleEntityCount: 1,
        counts: [{ states: { severity: "OK" }, count: 1, sampleEntities: [id("web-02")] }],
      },
      {
        attributes: { "user.Region": "emea", "svc.hostname": "h1" },
        count: 2,
        sampleEntityCount: 2,
        counts: [
          { states: { severity: "UNDEFINED" }, count: 1, sampleEntities: [id("web-03")] },
          { states: { severity: "CRITICAL" }, count: 1, sampleEntities: [id("web-01")] },
        ],
      },
    ]);
  });

  test("filter and sampleEntityCount narrow it; a missing attribute groups as empty", async () => {
    const { body } = await get(
      `/v0/entities/summary?filter=${q("user.Region = emea")}&groupBy=constructor&nrSamples=0`,
    );
    assert.deepEqual(body, [
      {
        attributes: { constructor: "" },
        count: 2,
        sampleEntityCount: 0,
        counts: [
          { states: { severity: "UNDEFINED" }, count: 1, sampleEntities: [] },
          { states: { severity: "CRITICAL" }, count: 1, sampleEntities: [] },
        ],
      },
    ]);
  });

  const bad: [string, string, RegExp][] = [
    ["the same groupBy twice", "?groupBy=a&groupBy=a", /twice/],
    ["an empty groupBy", "?groupBy=", /empty/],
    ["nrSamples not a number", "?nrSamples=x", /nrSamples/],
    ["a filter syntax error", `?filter=${q("a ==")}`, /position/],
  ];
  for (const [name, query, message] of bad) {
    test(`400 for ${name}`, async () => {
      const { status, body } = await get(`/v0/entities/summary${query}`);
      assert.equal(status, 400);
      assert.match((body as { body: string }).body, message);
    });
  }
});

describe("POST /v0/events/recordsQuery", () => {
  const range = { from: iso(T0), to: iso(T0 + 60_000) };
  /** The body a Go struct with unset fields encodes: null lists, empty zone, zero skip and limit. */
  const cordial = (overrides: Record<string, unknown> = {}) => ({
    filter: { entities: "", range },
    events: null,
    metrics: null,
    zoneId: "",
    skip: 0,
    limit: 0,
    ...overrides,
  });

  test("answers a map from entity id to that entity's records, oldest first", async () => {
    const { status, body } = await post("/v0/events/recordsQuery", cordial());
    assert.equal(status, 200);
    const map = body as Record<string, { type: string; timestamp: string }[]>;
    assert.deepEqual(Object.keys(map).sort(), [String(id("web-01")), String(id("web-02"))].sort());
    assert.deepEqual(
      map[String(id("web-01"))]?.map((r) => [r.type, r.timestamp]),
      [
        ["severity", "2026-03-01T10:00:05.000Z"],
        ["severity", "2026-03-01T10:00:06.000Z"],
        ["snooze", "2026-03-01T10:00:07.000Z"],
        ["severity", "2026-03-01T10:00:10.500Z"],
      ],
    );
  });

  test("each record has cordial's fields: entityId, timestamp, data {severity, active, value of strings}, metric, type", async () => {
    const { body } = await post(
      "/v0/events/recordsQuery",
      cordial({ metrics: ["orders/queue/{rowname}/latency"] }),
    );
    const records = (body as Record<string, unknown[]>)[String(id("web-01"))];
    assert.deepEqual(records, [
      {
        entityId: id("web-01"),
        timestamp: "2026-03-01T10:00:06.000Z",
        type: "severity",
        metric: "orders/queue/EURUSD/latency",
        operation: "update",
        target: cellTarget("web-01", "EURUSD", "latency"),
        data: {
          severity: "WARNING",
          active: true,
          snoozed: false,
          snoozedParents: 0,
          userAssigned: false,
          value: { cell: "20", number: "20" },
        },
      },
      {
        entityId: id("web-01"),
        timestamp: "2026-03-01T10:00:07.000Z",
        type: "snooze",
        metric: "orders/queue/EURUSD/latency",
        operation: "update",
        target: cellTarget("web-01", "EURUSD", "latency"),
        data: {
          snoozed: true,
          snoozedBy: "ann",
          comment: "maintenance",
          period: "Manual",
          value: { snoozed: "true", snoozedBy: "ann", comment: "maintenance", period: "Manual" },
        },
      },
    ]);
  });

  test("events selects types; filter.entities selects entities; zoneId writes local times", async () => {
    const { body } = await post(
      "/v0/events/recordsQuery",
      cordial({
        filter: { entities: "user.Region = amer", range },
        events: ["userassignment"],
        zoneId: "Asia/Kolkata",
      }),
    );
    assert.deepEqual(
      Object.entries(body as Record<string, { type: string; timestamp: string; metric: string }[]>).map(
        ([key, records]) => [key, records.map((r) => [r.type, r.timestamp, r.metric])],
      ),
      [[String(id("web-02")), [["userassignment", "2026-03-01T15:30:08+05:30", ""]]]],
    );
  });

  test("skip and limit page through the whole ordered list", async () => {
    const all = (await post("/v0/events/recordsQuery", cordial())).body as Record<
      string,
      { timestamp: string }[]
    >;
    const flat = Object.values(all)
      .flat()
      .map((r) => r.timestamp)
      .sort();
    assert.equal(flat.length, 6);
    const pages: string[] = [];
    for (let skip = 0; skip < 8; skip += 2) {
      const page = (await post("/v0/events/recordsQuery", cordial({ skip, limit: 2 }))).body as Record<
        string,
        { timestamp: string }[]
      >;
      pages.push(...Object.values(page).flatMap((records) => records.map((r) => r.timestamp)));
    }
    assert.deepEqual(pages.sort(), flat);
  });

  test("the range is [from, to)", async () => {
    const { body } = await post(
      "/v0/events/recordsQuery",
      cordial({ filter: { range: { from: iso(T0 + 6_000), to: iso(T0 + 7_000) } } }),
    );
    assert.deepEqual(
      Object.values(body as Record<string, { timestamp: string }[]>)
        .flat()
        .map((r) => r.timestamp),
      ["2026-03-01T10:00:06.000Z"],
    );
  });

  const bad: [string, unknown, RegExp][] = [
    ["no filter", { events: [] }, /^filter: is required/],
    ["no range", { filter: { entities: "" } }, /^filter\.range: is required/],
    ["an unknown field", cordial({ colour: "red" }), /^colour: is not a field/],
    ["an unknown event type", cordial({ events: ["alarm"] }), /^events\[0\]: must be one of/],
    ["a negative skip", cordial({ skip: -1 }), /^skip:/],
    ["a limit above the maximum", cordial({ limit: 10_001 }), /^limit:/],
    [
      "a date without an offset",
      cordial({ filter: { range: { from: "2026-03-01T10:00:00", to: iso(T0) } } }),
      /^filter\.range\.from:/,
    ],
    ["to before from", cordial({ filter: { range: { from: iso(T0 + 1), to: iso(T0) } } }), /^filter\.range:/],
    ["a bad zone", cordial({ zoneId: "Mars/Olympus" }), /^zoneId:/],
    ["a bad cell reference", cordial({ metrics: ["a/b"] }), /^metrics\[0\]:/],
    ["a body that is not an object", [1, 2], /must be object/],
  ];
  for (const [name, payload, message] of bad) {
    test(`400 for ${name}`, async () => {
      const { status, body } = await post("/v0/events/recordsQuery", payload);
      assert.equal(status, 400);
      assert.deepEqual(Object.keys(body as object).sort(), ["body", "status", "title"]);
      assert.match((body as { body: string }).body, message);
    });
  }
});

describe("GET /v0/entities/{id}/metrics/data", () => {
  const url = (path: string, extra = "") =>
    `/v0/entities/${id("web-01")}/metrics/data?path=${q(path)}${extra}`;

  test("answers {totalCount, values: [{timestamp, value}]} with values as strings", async () => {
    const { status, body } = await get(url("orders/queue/EURUSD/latency"));
    assert.equal(status, 200);
    assert.deepEqual(body, {
      totalCount: 2,
      values: [
        { timestamp: "2026-03-01T10:00:01.000Z", value: "10" },
        { timestamp: "2026-03-01T10:00:02.000Z", value: "20" },
      ],
    });
  });

  test("from, to, skip and limit; totalCount counts the range before paging", async () => {
    const { body } = await get(
      url("orders/queue/EURUSD/latency", `&from=${q(iso(T0))}&to=${q(iso(T0 + 60_000))}&skip=1&limit=1`),
    );
    assert.deepEqual(body, {
      totalCount: 2,
      values: [{ timestamp: "2026-03-01T10:00:02.000Z", value: "20" }],
    });
    const narrow = await get(url("orders/queue/EURUSD/latency", `&from=${q(iso(T0 + 2_000))}`));
    assert.equal((narrow.body as { totalCount: number }).totalCount, 1);
  });

  test("a text cell and a headline", async () => {
    assert.deepEqual(((await get(url("orders/queue/GBPUSD/status"))).body as { values: unknown }).values, [
      { timestamp: "2026-03-01T10:00:03.000Z", value: "slow" },
    ]);
    assert.equal(((await get(url("orders/queue//totalRows"))).body as { totalCount: number }).totalCount, 1);
  });

  test("400 for a wildcard, a missing path, a bad time; 404 for an unknown entity", async () => {
    for (const bad of [url("orders/queue/{rowname}/latency"), `/v0/entities/${id("web-01")}/metrics/data`]) {
      assert.equal((await get(bad)).status, 400, bad);
    }
    assert.equal((await get(url("orders/queue/EURUSD/latency", "&from=yesterday"))).status, 400);
    assert.equal((await get(url("orders/queue/EURUSD/latency", "&limit=-1"))).status, 400);
    assert.equal(
      (await get(`/v0/entities/4242/metrics/data?path=${q("orders/queue/EURUSD/latency")}`)).status,
      404,
    );
  });
});

describe("metric names and row names", () => {
  test("GET /v0/entities/metrics lists the numeric metrics of the selected entities", async () => {
    const { status, body } = await get(
      `/v0/entities/metrics?filter=${q("user.Region = emea")}&plugin=&includeNonNumeric=false&includeDeleted=false`,
    );
    assert.equal(status, 200);
    // Sorted by code point: '/' sorts before '{'.
    assert.deepEqual(body, [
      { name: "orders/queue//totalRows", type: "float64", unit: "none" },
      { name: "orders/queue/{rowname}/latency", type: "float64", unit: "milliseconds" },
    ]);
  });

  test("includeNonNumeric=true adds text-only cells; plugin filters by the setup's plug-in", async () => {
    const names = async (query: string) =>
      ((await get(`/v0/entities/metrics?${query}`)).body as { name: string }[]).map((m) => m.name);
    assert.deepEqual(await names("includeNonNumeric=true"), [
      "orders/queue//totalRows",
      "orders/queue/{rowname}/latency",
      "orders/queue/{rowname}/status",
    ]);
    assert.deepEqual(await names("plugin=rest-api"), [
      "orders/queue//totalRows",
      "orders/queue/{rowname}/latency",
    ]);
    assert.deepEqual(await names("plugin=fkm"), []);
  });

  test("GET /v0/entities/{id}/metrics takes includeNonNumeric too", async () => {
    const { body } = await get(`/v0/entities/${id("web-02")}/metrics`);
    assert.deepEqual(body, [
      { name: "orders/queue/{rowname}/latency", type: "float64", unit: "milliseconds" },
    ]);
  });

  test("row names of one entity's path, and updatedSince", async () => {
    const rows = async (query: string) =>
      (await get(`/v0/entities/${id("web-01")}/metrics/rows?${query}`)).body;
    assert.deepEqual(await rows(`path=${q("orders/queue/{rowname}/latency")}`), ["EURUSD", "GBPUSD"]);
    assert.deepEqual(
      await rows(`path=${q("orders/queue/{rowname}/latency")}&updatedSince=${q(iso(T0 + 3_000))}`),
      ["GBPUSD"],
    );
    assert.deepEqual(await rows(`path=${q("orders/queue")}`), ["EURUSD", "GBPUSD"]);
  });

  test("row names across the entities a filter selects", async () => {
    const { status, body } = await get(
      `/v0/entities/metrics/rows?filter=&path=${q("orders/queue")}&updatedSince=`,
    );
    assert.equal(status, 200);
    assert.deepEqual(body, ["EURUSD", "GBPUSD", "USDJPY"]);
  });

  test("a row path must end in {rowname}/<column> or stop at the dataview", async () => {
    for (const path of ["orders/queue/EURUSD/latency", "orders", ""]) {
      const { status } = await get(`/v0/entities/metrics/rows?path=${q(path)}`);
      assert.equal(status, 400, path);
    }
  });
});

describe("GET /v0/metrics/aggregations", () => {
  test("parameters are lists of objects whose values are strings (cordial decodes them so)", async () => {
    const { body } = await get("/v0/metrics/aggregations");
    const catalog = body as Record<string, { parameters: Record<string, unknown>[]; description: string }>;
    assert.deepEqual(catalog["svc.avg"]?.parameters, []);
    const [p, ...rest] = catalog["svc.percentile"]?.parameters ?? [];
    assert.deepEqual(rest, []);
    assert.equal(p?.name, "p");
    assert.equal(p?.type, "float64");
    for (const entry of Object.values(catalog)) {
      for (const parameter of entry.parameters) {
        for (const value of Object.values(parameter)) assert.equal(typeof value, "string");
      }
    }
  });
});
