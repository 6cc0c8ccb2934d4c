import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_BODY_LIMIT_BYTES, MESSAGES_BODY_LIMIT_BYTES } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { SAMPLE_SETUP_YAML, sampleSetup } from "../../src/config/sample-setup.js";
import type { ManagedEntitySetup } from "../../src/config/setup.js";

describe("the built-in sample setup", () => {
  const setup = sampleSetup();
  const entity = (name: string): ManagedEntitySetup | undefined =>
    setup.probes[0]?.managedEntities.find((e) => e.name === name);
  const ORDERS_COLUMNS = {
    latency: { type: "float64", unit: "milliseconds" },
    queued: { type: "int64", unit: "none" },
    cpu: { type: "float64", unit: "percent" },
  };
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, () => unknown, unknown][] = [
    ["gateway GW1 publishes to memory on port 7039", () => setup.gateway, { name: "GW1", port: 7039, customDataviewMaxRows: 0, maxColumnsPerDataview: 256, maxCellLength: 8192, memoryProtection: { limitMb: 2048, ratio: 0.9 }, publish: [{ kind: "memory" }], tls: { certificate: "", key: "" } }],
    ["one probe on 127.0.0.1 with the default ports", () => setup.probes.map((p) => [p.name, p.hostname, p.restApiHttpPort, p.restApiHttpsPort]), [["probe1", "127.0.0.1", 7136, 7137]]],
    ["three managed entities", () => setup.probes[0]?.managedEntities.map((e) => e.name), ["web-01", "web-02", "db-01"]],
    ["web-01 is prod in emea", () => entity("web-01")?.attributes, { Environment: "prod", Region: "emea" }],
    ["web-02 is prod in amer", () => entity("web-02")?.attributes, { Environment: "prod", Region: "amer" }],
    ["db-01 is staging in emea", () => entity("db-01")?.attributes, { Environment: "staging", Region: "emea" }],
    ["every entity has the rest-api sampler orders with latency, queued, cpu", () => setup.probes[0]?.managedEntities.map((e) => e.samplers[0]?.plugin === "rest-api" && e.samplers[0].schema.columns), [ORDERS_COLUMNS, ORDERS_COLUMNS, ORDERS_COLUMNS]],
    ["only web-01 has the fkm sampler errors", () => setup.probes[0]?.managedEntities.map((e) => e.samplers.map((s) => s.name)), [["orders", "errors"], ["orders"], ["orders"]]],
    ["errors reads app-log of orders: ERROR critical, WARN warning", () => entity("web-01")?.samplers[1], { name: "errors", type: "", plugin: "fkm", sampleInterval: 20, source: { sampler: "orders", stream: "app-log" }, keywords: [{ pattern: "ERROR", severity: "CRITICAL" }, { pattern: "WARN", severity: "WARNING" }] }],
    ["rule 'queue too long': queued > 100 on any row of dataview queue is CRITICAL", () => setup.rules[0], { name: "queue too long", target: { managedEntity: "*", sampler: "orders", dataview: "queue", row: "*", column: "queued" }, when: { operator: ">", value: 100 }, severity: "CRITICAL" }],
    ["rule 'slow': latency > 250 is WARNING", () => setup.rules[1], { name: "slow", target: { managedEntity: "*", sampler: "orders", dataview: "*", row: "*", column: "latency" }, when: { operator: ">", value: 250 }, severity: "WARNING" }],
    ["hub security on with the demo app key", () => [setup.hub.port, setup.hub.security.enabled, setup.hub.security.appKeys], [8081, true, [{ clientId: "demo", clientSecret: "demo-secret", roles: ["read", "write", "operate"] }]]],
    ["sampleSetup() is parseSetup(SAMPLE_SETUP_YAML)", () => parseSetup(SAMPLE_SETUP_YAML), setup],
    ["the result is frozen", () => Object.isFrozen(setup) && Object.isFrozen(entity("web-01")?.samplers), true],
  ];
  for (const [name, pick, expected] of cases) test(name, () => assert.deepEqual(pick(), expected));
});

describe("HTTP body limits", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, number, number][] = [
    ["every API: 10 MiB", DEFAULT_BODY_LIMIT_BYTES, 10_485_760],
    ["POST /v0/messages: 256 MiB", MESSAGES_BODY_LIMIT_BYTES, 268_435_456],
  ];
  for (const [name, actual, expected] of cases) test(name, () => assert.equal(actual, expected));
});
