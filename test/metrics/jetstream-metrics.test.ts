/**
 * Self-metrics over NATS JetStream, with the real server on 127.0.0.1:4222: the
 * gateway's `nats` publish target reports its publish latency and acknowledged messages, and the
 * hub's durable consumer its delivered messages and its lag, after a PUT travelled probe → gateway
 * → JetStream → hub.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { type GatewayService, startGatewayService } from "../../src/compose/gateway-service.js";
import { startHubService } from "../../src/compose/hub-service.js";
import { startProbeService } from "../../src/compose/probe-service.js";
import type { RunningService } from "../../src/compose/service.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { type Exposition, parseExposition } from "../helpers/prometheus-text.js";
import { eventually, tempDir } from "../helpers/vigil-process.js";

const reachable = await natsReachable();

async function scrape(base: string): Promise<Exposition> {
  const response = await fetch(`${base}/metrics`);
  assert.equal(response.status, 200);
  return parseExposition(await response.text());
}

describe("self-metrics over NATS JetStream", { skip: needs(reachable ? false : NATS_SKIP) }, () => {
  const dir = tempDir("metrics-nats");
  const names = uniqueNames("metrics");
  const logger = pino({ level: "silent" });
  const setup = parseSetup(`
gateway:
  name: GW-NATS-MET
  port: 0
  publish:
    - nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} }
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities: [{ name: web-01, samplers: [{ name: orders, plugin: rest-api }] }]
hub:
  port: 0
  security: { enabled: false }
`);
  let admin: NatsAdmin | undefined;
  const services: RunningService[] = [];
  let gateway: GatewayService;
  let hub = "";
  let probe = "";

  before(async () => {
    admin = await NatsAdmin.open();
    admin.track(names.stream);
    const hubService = await startHubService({
      setup,
      storeUrl: `duckdb:${join(dir.path, "hub", "vigil.duckdb")}`,
      busUrl: NATS_URL,
      dataDir: join(dir.path, "hub"),
      host: "127.0.0.1",
      logger,
    });
    services.unshift(hubService);
    hub = hubService.urls.hub as string;
    gateway = await startGatewayService({
      setup,
      dataDir: join(dir.path, "gateway"),
      host: "127.0.0.1",
      hubUrl: hub,
      logger,
    });
    services.unshift(gateway);
    const probeService = await startProbeService({
      name: "p1",
      link: gateway.gateway.connectInProcess(),
      setup,
      logger,
    });
    services.unshift(probeService);
    probe = probeService.urls["probe:p1"] as string;
  });
  after(async () => {
    for (const service of services) await service.stop(5_000);
    await admin?.cleanup();
    dir.remove();
  });

  test("a PUT reaches the hub through JetStream; publish latency, acknowledgements and consumer counters move", async () => {
    const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue`, {
      method: "PUT",
      body: JSON.stringify([{ name: "EURUSD", queued: 3 }]),
    });
    assert.equal(put.status, 200);
    const gatewayUrl = gateway.urls.gateway as string;
    const sink = `nats:${NATS_URL}/${names.stream}`;
    const published = await eventually(async () => {
      const metrics = await scrape(gatewayUrl);
      return metrics.value("vigil_gateway_sink_messages_published_total", { sink }) > 0 ? metrics : undefined;
    });
    assert.equal(published.types.get("vigil_gateway_jetstream_publish_duration_seconds"), "histogram");
    assert.ok(published.value("vigil_gateway_jetstream_publish_duration_seconds_count", { sink }) > 0);
    assert.ok(published.value("vigil_gateway_jetstream_publish_duration_seconds_sum", { sink }) > 0);
    assert.equal(published.value("vigil_gateway_jetstream_dropped_too_large_total", { sink }), 0);
    assert.equal(published.types.get("vigil_gateway_jetstream_duplicates_total"), "counter");
    assert.equal(published.value("vigil_gateway_sink_failing", { sink }), 0);

    const consumed = await eventually(async () => {
      const metrics = await scrape(hub);
      const delivered = metrics.value("vigil_hub_consumer_delivered_messages_total");
      const caughtUp = metrics.value("vigil_hub_jetstream_consumer_lag_messages") === 0;
      return delivered >= published.value("vigil_gateway_sink_messages_published_total", { sink }) && caughtUp
        ? metrics
        : undefined;
    });
    assert.equal(consumed.types.get("vigil_hub_jetstream_consumer_lag_messages"), "gauge");
    assert.ok(consumed.value("vigil_hub_messages_ingested_total", { result: "stored" }) > 0);
    assert.ok(consumed.value("vigil_hub_store_commit_duration_seconds_count") > 0);
    assert.equal(consumed.value("vigil_hub_consumer_retrying"), 0);

    // The metrics served only with a nats target are documented and on the dashboard too.
    const docs = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
    const dashboard = readFileSync(new URL("../../docs/grafana-dashboard.json", import.meta.url), "utf8");
    for (const name of [...published.types.keys(), ...consumed.types.keys()]) {
      if (!name.startsWith("vigil_")) continue;
      assert.ok(docs.includes(`\`${name}`), `${name} is in docs/operations.md`);
      assert.ok(dashboard.includes(name), `${name} is on the dashboard`);
    }
  });
});
