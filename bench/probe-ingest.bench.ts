/**
 * Probe ingest throughput: `PUT dataview` of a ~1 KB JSON body through the real probe and gateway
 * (dataview model, diff, public-v2 validation, publication to a counting sink), against a baseline
 * bare `node:http` server that reads and parses the same body, run beside it with the same client.
 * Prints requests per second and the ratio. Loopback only, bounded in time and count.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { parseSetup } from "../src/config/load-setup.js";
import { buildGateway } from "../src/gateway/app.js";
import type { Sink } from "../src/gateway/publish/sink.js";
import { buildProbe } from "../src/probe/app.js";
import { load } from "./load.js";

const SECONDS = 5; // per run
const CONCURRENCY = 32; // requests in flight
const MAX_REQUESTS = 500_000;

const rows = Array.from({ length: 10 }, (_, i) => ({
  name: `row-${i}`,
  latency: (Math.random() * 100).toFixed(3),
  queued: String(i * 7),
  status: "OK",
}));
const body = Buffer.from(JSON.stringify(rows));

async function baseline(): Promise<number> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"rows":10,"duplicates":0,"dropped":0}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const result = await load(`http://127.0.0.1:${port}/v1/x`, body, {
    seconds: SECONDS,
    concurrency: CONCURRENCY,
    maxRequests: MAX_REQUESTS,
  });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return result.perSecond;
}

async function vigil(): Promise<{ perSecond: number; messages: number; failures: number }> {
  const setup = parseSetup(`
gateway: { name: GW }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
`);
  const logger = pino({ level: "warn" });
  let messages = 0;
  const counting: Sink = {
    name: "count",
    write: (m) => {
      messages += m.length;
    },
    close: async () => {},
  };
  const gateway = buildGateway({ setup, sinks: [counting], logger });
  const probe = buildProbe({
    setup: setup.probes[0]!,
    customDataviewMaxRows: 0,
    link: gateway.connectProbe("p1"),
    logger,
  });
  const { http } = await probe.start();
  const result = await load(`${http}/v1/managedEntity/me/sampler/s/dataview/dv`, body, {
    seconds: SECONDS,
    concurrency: CONCURRENCY,
    maxRequests: MAX_REQUESTS,
  });
  await probe.stop();
  await gateway.stop();
  return { perSecond: result.perSecond, messages, failures: result.failures };
}

const base = await baseline();
const ours = await vigil();
console.log(
  JSON.stringify({
    bench: "probe-ingest",
    body_bytes: body.length,
    concurrency: CONCURRENCY,
    baseline_node_http_req_per_s: Math.round(base),
    vigil_probe_gateway_req_per_s: Math.round(ours.perSecond),
    ratio_vs_baseline: Number((ours.perSecond / base).toFixed(3)),
    published_messages: ours.messages,
    failures: ours.failures,
  }),
);
