/**
 * Self-metrics through real sockets, in the `vigil up` composition (probe, gateway and
 * hub in one process): each server answers `/metrics` in the Prometheus text format, with its own
 * role's metrics only (one registry per server) plus the process metrics; the counters move after
 * real traffic; random URLs do not grow the label set; memory-protection refusals are counted.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { queryKind } from "../../src/hub/hub-metrics.js";
import { type Exposition, parseExposition } from "../helpers/prometheus-text.js";
import { eventually, tempDir } from "../helpers/vigil-process.js";

const setup = parseSetup(`
gateway:
  name: GW-MET
  port: 0
  publish: [memory]
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities:
      - name: web-01
        samplers:
          - { name: orders, plugin: rest-api, bufferSize: 2 }
          - name: errors
            plugin: fkm
            sampleInterval: 3600
            source: { sampler: orders, stream: app-log }
            keywords: [{ pattern: ERROR, severity: CRITICAL }]
  - name: p-tight
    restApiHttpPort: 0
    restApiHttpsPort: 0
    memoryProtection: { limitMb: 1, ratio: 0.5 }
    managedEntities:
      - { name: web-02, samplers: [{ name: orders, plugin: rest-api }] }
hub:
  port: 0
  security: { enabled: false }
`);

const DATAVIEW_ROUTE = "/v1/managedEntity/:me/sampler/:sampler/dataview/:dataview";

async function scrape(base: string, init?: RequestInit): Promise<Exposition> {
  const response = await fetch(`${base}/metrics`, init);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return parseExposition(await response.text());
}

describe("self-metrics of vigil up", () => {
  const dir = tempDir("metrics");
  let system: RunningService;
  let probe = "";
  let tight = "";
  let gateway = "";
  let hub = "";

  before(async () => {
    system = await startSystem({
      setup,
      dataDir: dir.path,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
    probe = system.urls["probe:p1"] as string;
    tight = system.urls["probe:p-tight"] as string;
    gateway = system.urls.gateway as string;
    hub = system.urls.hub as string;
  });
  after(async () => {
    await system?.stop(5_000);
    dir.remove();
  });

  test("each server answers its own role's metrics and the process metrics, with TYPE lines", async () => {
    const own = { probe: "vigil_probe_", gateway: "vigil_gateway_", hub: "vigil_hub_" };
    for (const [role, base] of [
      ["probe", probe],
      ["gateway", gateway],
      ["hub", hub],
    ] as const) {
      const metrics = await scrape(base);
      const names = [...metrics.types.keys()];
      assert.ok(
        names.some((n) => n.startsWith(own[role])),
        `${role} has its own metrics`,
      );
      for (const [other, prefix] of Object.entries(own)) {
        if (other !== role)
          assert.ok(!names.some((n) => n.startsWith(prefix)), `${role} shows no ${other} metrics`);
      }
      assert.equal(metrics.types.get("vigil_http_request_duration_seconds"), "histogram");
      assert.equal(metrics.types.get("vigil_memory_protection_rejections_total"), "counter");
      assert.equal(metrics.types.get("process_resident_memory_bytes"), "gauge");
      assert.ok(metrics.value("process_resident_memory_bytes") > 0);
    }
  });

  test("a PUT to the probe moves its accepted rows and cells and its request histogram", async () => {
    const before = await scrape(probe);
    const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue`, {
      method: "PUT",
      body: JSON.stringify([
        { name: "EURUSD", latency: 10, queued: 3 },
        { name: "GBPUSD", latency: 20 },
      ]),
    });
    assert.equal(put.status, 200);
    const row = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue/row/EURUSD`, {
      method: "PUT",
      body: JSON.stringify({ latency: 30 }),
    });
    assert.equal(row.status, 200);
    const after = await scrape(probe);
    const delta = (name: string, labels?: Record<string, string>) =>
      after.value(name, labels) - before.value(name, labels);
    assert.equal(after.types.get("vigil_probe_rows_accepted_total"), "counter");
    assert.equal(delta("vigil_probe_rows_accepted_total"), 3);
    assert.equal(delta("vigil_probe_cells_accepted_total"), 3 + 2 + 1);
    const labels = { route: DATAVIEW_ROUTE, method: "PUT", status: "200" };
    assert.equal(delta("vigil_http_request_duration_seconds_count", labels), 1);
    assert.equal(delta("vigil_http_request_duration_seconds_bucket", { ...labels, le: "+Inf" }), 1);
    assert.ok(delta("vigil_http_request_duration_seconds_sum", labels) > 0);
    assert.equal(
      delta("vigil_http_request_duration_seconds_count", {
        route: `${DATAVIEW_ROUTE}/row/:row`,
        method: "PUT",
      }),
      1,
    );
  });

  test("stream messages beyond the buffer are counted received and lost, and the buffer's fill", async () => {
    const stream = `${probe}/v1/managedEntity/web-01/sampler/orders/stream/app-log`;
    const before = await scrape(probe);
    for (const line of ["one", "two", "three"]) {
      assert.equal((await fetch(stream, { method: "PUT", body: line })).status, 200);
    }
    const after = await scrape(probe);
    const delta = (name: string) => after.value(name) - before.value(name);
    // The fkm sampler samples hourly: the buffer of 2 keeps the last two, the first is lost (DESIGN 3.4).
    assert.equal(delta("vigil_probe_stream_messages_received_total"), 3);
    assert.equal(delta("vigil_probe_stream_messages_lost_total"), 1);
    assert.equal(after.value("vigil_probe_streams"), 1);
    assert.equal(after.value("vigil_probe_stream_buffer_capacity_messages"), 2);
    assert.equal(after.value("vigil_probe_stream_buffered_messages"), 2);
    assert.equal(after.value("vigil_probe_stream_buffer_fill_ratio"), 1);
    assert.equal(after.value("vigil_probe_link_up"), 1);
    assert.equal(after.value("vigil_probe_ingest_waiting_requests"), 0);
  });

  test("a published message moves the gateway's counters; the hub counts ingest, commits and queries", async () => {
    const beforeGateway = await scrape(gateway);
    const beforeHub = await scrape(hub);
    const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/prices`, {
      method: "PUT",
      body: JSON.stringify([{ name: "a", bid: 1.5 }]),
    });
    assert.equal(put.status, 200);
    const afterGateway = await eventually(async () => {
      const metrics = await scrape(gateway);
      const acked = metrics.value("vigil_gateway_sink_messages_published_total", { sink: "memory" });
      const before = beforeGateway.value("vigil_gateway_sink_messages_published_total", { sink: "memory" });
      return acked > before ? metrics : undefined;
    });
    assert.ok(
      afterGateway.value("vigil_gateway_messages_published_total") >
        beforeGateway.value("vigil_gateway_messages_published_total"),
    );
    assert.equal(afterGateway.types.get("vigil_gateway_sink_buffered_messages"), "gauge");
    assert.ok(afterGateway.value("vigil_gateway_sink_buffer_capacity_messages", { sink: "memory" }) > 0);
    assert.equal(afterGateway.value("vigil_gateway_sink_failing", { sink: "memory" }), 0);
    assert.equal(afterGateway.value("vigil_gateway_probe_links", { state: "up" }), 2);

    const afterHub = await eventually(async () => {
      const metrics = await scrape(hub);
      const stored = (m: Exposition) => m.value("vigil_hub_messages_ingested_total", { result: "stored" });
      return stored(metrics) > stored(beforeHub) ? metrics : undefined;
    });
    assert.ok(
      afterHub.value("vigil_hub_ingest_batches_total") > beforeHub.value("vigil_hub_ingest_batches_total"),
    );
    assert.ok(
      afterHub.value("vigil_hub_store_commit_duration_seconds_count") >
        beforeHub.value("vigil_hub_store_commit_duration_seconds_count"),
    );
    assert.equal(afterHub.value("vigil_hub_dead_lettered_messages_total"), 0);
    assert.equal(afterHub.value("vigil_hub_consumer_retrying"), 0);
    assert.ok(afterHub.value("vigil_hub_consumer_delivered_messages_total") > 0);

    // Query latency by kind; the metric query (route pattern → kind) is covered by queryKind's table.
    const now = Date.now();
    const events = await fetch(`${hub}/v0/events/recordsQuery`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        filter: {
          entities: "svc.name = web-01",
          range: { from: new Date(now - 3_600_000).toISOString(), to: new Date(now + 60_000).toISOString() },
        },
        events: ["severity"],
      }),
    });
    assert.equal(events.status, 200);
    const entities = await fetch(`${hub}/v0/entities`);
    assert.equal(entities.status, 200);
    const bad = await fetch(`${hub}/v0/entities?filter=${encodeURIComponent("svc.name ==")}`);
    assert.equal(bad.status, 400);
    const afterQuery = await scrape(hub);
    const queries = (m: Exposition, query: string) =>
      m.value("vigil_hub_query_duration_seconds_count", { query });
    assert.equal(queries(afterQuery, "events") - queries(afterHub, "events"), 1);
    assert.equal(
      queries(afterQuery, "entities") - queries(afterHub, "entities"),
      1,
      "the 400 is not a query",
    );
    const requests = (m: Exposition, status: string) =>
      m.value("vigil_http_request_duration_seconds_count", { route: "/v0/entities", method: "GET", status });
    assert.equal(requests(afterQuery, "200") - requests(afterHub, "200"), 1);
    assert.equal(requests(afterQuery, "400") - requests(afterHub, "400"), 1);
  });

  test("200 random URLs that match no route add no label values: they are one `unmatched` series", async () => {
    for (const base of [probe, gateway, hub]) {
      await scrape(base); // the /metrics series itself exists from here on
      const before = await scrape(base);
      const paths: string[] = [];
      for (let i = 0; i < 200; i += 1) {
        const path = `/${randomBytes(6).toString("hex")}/${randomBytes(4).toString("hex")}?q=${i}`;
        paths.push(path);
        const response = await fetch(`${base}${path}`);
        assert.equal(response.status, 404);
        await response.arrayBuffer();
      }
      const after = await scrape(base);
      const keys = (m: Exposition) =>
        new Set(
          m
            .find("vigil_http_request_duration_seconds_count")
            .map((s) => JSON.stringify([s.labels.route, s.labels.method, s.labels.status])),
        );
      const added = [...keys(after)].filter((k) => !keys(before).has(k));
      assert.ok(added.length <= 1, `at most the unmatched series is new on ${base}: ${added.join(" ")}`);
      assert.equal(
        after.value("vigil_http_request_duration_seconds_count", {
          route: "unmatched",
          method: "GET",
          status: "404",
        }) -
          before.value("vigil_http_request_duration_seconds_count", {
            route: "unmatched",
            method: "GET",
            status: "404",
          }),
        200,
      );
      const routes = new Set(
        after.find("vigil_http_request_duration_seconds_bucket").map((s) => s.labels.route),
      );
      for (const path of paths.slice(0, 10)) assert.ok(!routes.has(path.split("?")[0]));
    }
  });

  test("a probe over its memory threshold answers 503 and counts the refusal", async () => {
    const put = () =>
      fetch(`${tight}/v1/managedEntity/web-02/sampler/orders/dataview/queue`, {
        method: "PUT",
        body: JSON.stringify([{ name: "a", v: 1 }]),
      });
    const before = await scrape(tight);
    const refused = await put();
    assert.equal(refused.status, 503);
    assert.ok(refused.headers.get("retry-after"));
    const after = await scrape(tight);
    assert.equal(
      after.value("vigil_memory_protection_rejections_total") -
        before.value("vigil_memory_protection_rejections_total"),
      1,
    );
    assert.equal(after.value("vigil_memory_protection_active"), 1);
    assert.equal(after.value("vigil_memory_protection_threshold_bytes"), 0.5 * 1024 * 1024);
    assert.equal(
      after.value("vigil_http_request_duration_seconds_count", { route: DATAVIEW_ROUTE, status: "503" }) -
        before.value("vigil_http_request_duration_seconds_count", { route: DATAVIEW_ROUTE, status: "503" }),
      1,
    );
    // The other probe in the same process has its own registry: its refusals are not these.
    assert.equal((await scrape(probe)).value("vigil_memory_protection_rejections_total"), 0);
  });

  test("a HEAD request is observed once, under its own method", async () => {
    const labels = { route: "/v1/healthcheck", method: "HEAD", status: "200" };
    const before = await scrape(gateway);
    assert.equal((await fetch(`${gateway}/v1/healthcheck`, { method: "HEAD" })).status, 200);
    const after = await scrape(gateway);
    assert.equal(
      after.value("vigil_http_request_duration_seconds_count", labels) -
        before.value("vigil_http_request_duration_seconds_count", labels),
      1,
    );
  });

  test("every vigil metric is in docs/operations.md, and the Grafana dashboard uses only documented ones", async () => {
    const docs = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
    const documented = new Set(docs.match(/\bvigil_[a-z_]+/g));
    const served = new Set<string>();
    for (const base of [probe, gateway, hub]) {
      for (const name of (await scrape(base)).types.keys()) if (name.startsWith("vigil_")) served.add(name);
    }
    for (const name of served) assert.ok(documented.has(name), `${name} is not in docs/operations.md`);
    const dashboard = JSON.parse(
      readFileSync(new URL("../../docs/grafana-dashboard.json", import.meta.url), "utf8"),
    ) as { panels: { type: string; targets?: { expr: string }[] }[] };
    const used = new Set<string>();
    for (const panel of dashboard.panels) {
      if (panel.type === "row") continue;
      assert.ok((panel.targets ?? []).length > 0, "every panel has a query");
      for (const target of panel.targets ?? []) {
        for (const name of target.expr.match(/\bvigil_[a-z_]+/g) ?? [])
          used.add(name.replace(/_(bucket|count|sum)$/, ""));
      }
    }
    for (const name of used)
      assert.ok(documented.has(name), `the dashboard uses ${name}, which is not documented`);
    // The JetStream metrics are served only with a nats target (test/metrics/jetstream-metrics.test.ts).
    for (const name of served) assert.ok(used.has(name), `${name} has no panel on the dashboard`);
  });

  test("other methods on /metrics are 405 with Allow", async () => {
    const response = await fetch(`${hub}/metrics`, { method: "POST" });
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "GET, HEAD");
  });
});

describe("the hub's query kinds (the `query` label)", () => {
  const cases: [route: string, kind: string | undefined][] = [
    ["/v0/metrics/query", "metrics"],
    ["/v1alpha/metrics/query", "metrics"],
    ["/v0/entities/:id/metrics/data", "metric-data"],
    ["/v0/events/recordsQuery", "events"],
    ["/v0/entities", "entities"],
    ["/v0/entities/summary", "entities"],
    ["/v0/entities/:id/metrics/rows", "entities"],
    ["/v0/messages", undefined],
    ["/token", undefined],
    ["/metrics", undefined],
    ["unmatched", undefined],
  ];
  for (const [route, kind] of cases) {
    test(`${route} → ${kind ?? "no query"}`, () => assert.equal(queryKind(route), kind));
  }
});
