/**
 * Nothing a client sends to the hub's query API answers 5xx: random metric query bodies (mutations
 * of a valid one, and arbitrary JSON) and random entity filters get a 200 or a documented 400.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";

const setup = parseSetup("gateway: { name: GW }\nhub: { security: { enabled: false } }\n");
const dataDir = mkdtempSync(join(tmpdir(), "vigil-query-fuzz-"));
let hub: Hub;

before(async () => {
  const store = await createDuckDbStore({ path: ":memory:" });
  hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  await store.migrate();
  const t = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
  const filter = { osType: "Linux", pluginName: "rest-api" };
  const messages = Array.from({ length: 50 }, (_, i) => ({
    type: "table",
    operation: "update",
    data: {
      sampleTime: t(i * 60_000),
      target: {
        gateway: "GW",
        probe: "p",
        managedEntity: `me${i % 3}`,
        type: "",
        sampler: "s",
        dataview: "d",
        row: `r${i % 4}`,
        filter,
      },
      row: { name: `r${i % 4}`, v: String(i) },
    },
  }));
  const response = await hub.http.inject({ method: "POST", url: "/v0/messages", payload: messages });
  assert.equal(response.statusCode, 200);
});
after(async () => {
  await hub.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const valid = {
  zoneId: "Europe/London",
  filter: {
    entities: "svc.name EXISTS",
    range: { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" },
  },
  metrics: [{ identifier: "v", include: ["s/d/{rowname}/v"] }],
  aggregations: ["svc.avg", "svc.percentile(0.5)", "svc.first"],
  bucketing: { duration: "PT15M" },
  grouping: ["rowname"],
};

const fieldValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    "Asia/Kolkata",
    "+05:30",
    "PT1M",
    "P1M",
    "svc.percentile(1)",
    "{rowname}",
    "2026-01-01T00:00:00Z",
  ),
);
const paths = [
  ["zoneId"],
  ["filter", "entities"],
  ["filter", "range", "from"],
  ["filter", "range", "to"],
  ["filter", "timeWindows"],
  ["metrics"],
  ["aggregations"],
  ["bucketing", "duration"],
  ["grouping"],
] as const;

function mutate(path: readonly string[], value: unknown): unknown {
  const copy = structuredClone(valid) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path.at(-1) as string] = value;
  return copy;
}

async function query(payload: unknown): Promise<number> {
  const response = await hub.http.inject({
    method: "POST",
    url: "/v0/metrics/query",
    payload: JSON.stringify(payload),
    headers: { "content-type": "application/json" },
  });
  assert.ok(
    response.statusCode === 200 || response.statusCode === 400,
    `${response.statusCode} ${response.body}`,
  );
  return response.statusCode;
}

test("the valid query answers 200", async () => {
  assert.equal(await query(valid), 200);
});

test("a query with one field replaced by anything answers 200 or 400, never 5xx", async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...paths), fieldValue, async (path, value) => {
      await query(mutate(path, value));
    }),
    fuzzBudget(300),
  );
});

test("arbitrary JSON bodies answer 400, never 5xx", async () => {
  await fc.assert(
    fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), async (value) => {
      await query(value);
    }),
    fuzzBudget(200),
  );
});

test("random entity filters answer 200 or 400, never 5xx", async () => {
  await fc.assert(
    fc.asyncProperty(fc.string({ maxLength: 40 }), async (filter) => {
      const response = await hub.http.inject({
        method: "GET",
        url: `/v0/entities?filter=${encodeURIComponent(filter)}`,
      });
      assert.ok(
        response.statusCode === 200 || response.statusCode === 400,
        `${response.statusCode} ${response.body}`,
      );
    }),
    fuzzBudget(300),
  );
});
