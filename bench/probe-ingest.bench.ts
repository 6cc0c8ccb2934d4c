/**
 * Probe ingest, PUT row (goal: ≥ 0.7× a bare node:http server in the same run, p99 under
 * 20 ms at 50 connections). One JSON row object of
 * about 1 KB is PUT to `/v1/managedEntity/me/sampler/s/dataview/dv/row/<row>` of a dataview
 * pre-filled with 200 rows, the rows cycling, at 50 keep-alive connections, through the real probe
 * (`buildProbe`), the in-process probe link, the real gateway (`buildGateway`: hierarchy, public-v2
 * messages) and the real `Publisher` (schema check, ids, bounded sink channel) with a counting
 * sink. Beside it, a bare `node:http` server reads and parses the same bodies. Both servers live in
 * this process; the client runs in a child process (bench/load-child.ts) so it has its own event
 * loop. The runs alternate A B A B … for VIGIL_BENCH_ROUNDS rounds (default 3), each
 * VIGIL_BENCH_SECONDS long (default 5), after a short warm-up of each. Prints one JSON line:
 * median req/s and latency of each, the ratio of the medians and whether the goal is met, and each
 * server's CPU time per answered request (this process's user + system time during its runs: less
 * sensitive to other load on the machine than the rates). VIGIL_BENCH_CPU_PROF=DIR writes a CPU
 * profile of this process during vigil's rounds only to DIR/probe-ingest-vigil-<time>.cpuprofile
 * (summarise it with bench/profile-summary.ts).
 * Loopback only, bounded in time and count.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { pino } from "pino";
import { parseSetup } from "../src/config/load-setup.js";
import { buildGateway } from "../src/gateway/app.js";
import { Publisher } from "../src/gateway/publish/publisher.js";
import type { Sink } from "../src/gateway/publish/sink.js";
import { probeLimits } from "../src/link/protocol.js";
import { buildProbe } from "../src/probe/app.js";
import { type LoadPlan, type LoadRequest, type LoadResult, load, loadInChild, median } from "./load.js";
import { benchRounds, benchSeconds } from "./settings.js";

const SECONDS = benchSeconds(5); // per run
const ROUNDS = benchRounds(3); // A B pairs
const WARMUP_SECONDS = Math.min(1, SECONDS); // per server, before the rounds
const CONCURRENCY = 50; // keep-alive connections
const MAX_REQUESTS = 5_000_000; // per run
const ROWS = 200; // rows of the pre-filled dataview (the default rowLimit)
const VARIANTS = 4; // bodies per row, so consecutive PUTs of a row change its values
const NUMERIC_COLUMNS = 30;
const TARGET_BODY_BYTES = 1024; // about 1 KB per row object
const GOAL_RATIO = 0.7; // PUT row at ≥ 0.7× bare node:http in the same run
const STOP_DEADLINE_MS = 10_000;
const DATAVIEW_PATH = "/v1/managedEntity/me/sampler/s/dataview/dv";
const CPU_PROF_DIR = process.env.VIGIL_BENCH_CPU_PROF;

/** A deterministic pseudo-random number in [0, 1) (a bench must not depend on Math.random). */
function noise(seed: number): number {
  const x = Math.sin(seed * 12.9898) * 43758.5453;
  return x - Math.floor(x);
}

/** Row `r` of variant `v`: the row name first, numeric columns, a status text padding it to ~1 KB. */
function rowObject(r: number, v: number): Record<string, string | number> {
  const row: Record<string, string | number> = { name: `r${r}` };
  for (let c = 0; c < NUMERIC_COLUMNS; c += 1) {
    row[`metric_${String(c).padStart(2, "0")}`] = Math.round(noise(r * 1000 + c * 10 + v) * 1e8) / 1000;
  }
  row.status = "";
  const pad = TARGET_BODY_BYTES - Buffer.byteLength(JSON.stringify(row));
  row.status = "OK all checks passed ".repeat(Math.ceil(Math.max(0, pad) / 21)).slice(0, Math.max(0, pad));
  return row;
}

const requests: LoadRequest[] = [];
for (let v = 0; v < VARIANTS; v += 1) {
  for (let r = 0; r < ROWS; r += 1) {
    requests.push({ path: `${DATAVIEW_PATH}/row/r${r}`, body: Buffer.from(JSON.stringify(rowObject(r, v))) });
  }
}
const bodyBytes = Math.round(requests.reduce((n, r) => n + r.body.length, 0) / requests.length);

/** The baseline: a bare node:http server that reads the body, parses it and answers like the probe. */
/** The baseline's answer, sent with its Content-Length as Fastify sends vigil's. */
const BASELINE_ANSWER = Buffer.from('{"rows":1}');

async function startBaseline(): Promise<{ base: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-length": BASELINE_ANSWER.length,
      });
      res.end(BASELINE_ANSWER);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** vigil: the real probe, in-process link, gateway and publisher, publishing to a counting sink. */
async function startVigil(): Promise<{
  base: string;
  messages: () => number;
  invalid: () => number;
  close: () => Promise<void>;
}> {
  const setup = parseSetup(`
gateway: { name: GW-BENCH }
probes:
  - name: p1
    hostname: 127.0.0.1
    restApiHttpPort: 0
    managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api, rowLimit: ${ROWS} }] }]
hub: { port: 0 }
`);
  const logger = pino({ level: "warn" });
  let messages = 0;
  const counting: Sink = {
    name: "count",
    publish: async (batch) => {
      messages += batch.length;
    },
    close: async () => {},
  };
  const publisher = new Publisher({ gateway: setup.gateway.name, sinks: [counting], logger });
  const gateway = buildGateway({ setup, publisher, logger });
  const probe = buildProbe({
    name: "p1",
    link: gateway.connectInProcess(),
    setup: setup.probes[0]!,
    limits: probeLimits(setup.gateway),
    logger,
  });
  const { http } = await probe.start();
  // Pre-fill the dataview with its 200 rows (variant 0), so every PUT row replaces an existing row.
  const fill = Array.from({ length: ROWS }, (_, r) => rowObject(r, 0));
  const response = await fetch(`${http}${DATAVIEW_PATH}`, { method: "PUT", body: JSON.stringify(fill) });
  const answer = await response.text();
  if (response.status !== 200)
    throw new Error(`pre-filling the dataview failed: ${response.status} ${answer}`);
  return {
    base: http,
    messages: () => messages,
    invalid: () => publisher.status().invalid,
    close: async () => {
      await probe.stop(STOP_DEADLINE_MS);
      await gateway.stop(STOP_DEADLINE_MS);
      await publisher.close(STOP_DEADLINE_MS);
    },
  };
}

const plan = (base: string): LoadPlan => ({ base, method: "PUT", requests });
const options = { seconds: SECONDS, concurrency: CONCURRENCY, maxRequests: MAX_REQUESTS };

/** The inspector session profiling vigil's rounds (VIGIL_BENCH_CPU_PROF), started on first use. */
let profiler: Session | undefined;

/**
 * One run in the load child, adding this process's CPU time per answered request to `into`;
 * `profile` runs it under the CPU profiler when VIGIL_BENCH_CPU_PROF is set.
 */
async function timed(loadPlan: LoadPlan, into: number[], profile = false): Promise<LoadResult> {
  if (profile && CPU_PROF_DIR !== undefined) {
    if (profiler === undefined) {
      profiler = new Session();
      profiler.connect();
      await profiler.post("Profiler.enable");
    }
    await profiler.post("Profiler.start");
  }
  const before = process.cpuUsage();
  const result = await loadInChild(loadPlan, options);
  const used = process.cpuUsage(before);
  into.push((used.user + used.system) / Math.max(1, result.ok));
  if (profile && profiler !== undefined && CPU_PROF_DIR !== undefined) {
    const { profile: cpuProfile } = await profiler.post("Profiler.stop");
    mkdirSync(resolve(CPU_PROF_DIR), { recursive: true });
    const file = join(resolve(CPU_PROF_DIR), `probe-ingest-vigil-${Date.now()}.cpuprofile`);
    writeFileSync(file, JSON.stringify(cpuProfile));
    console.error(`cpu profile of vigil's round: ${file}`);
  }
  return result;
}

const baseline = await startBaseline();
const vigil = await startVigil();
const cpu: { baseline: number[]; vigil: number[] } = { baseline: [], vigil: [] };
const runs: { baseline: LoadResult[]; vigil: LoadResult[] } = { baseline: [], vigil: [] };
let vigilStatuses: Record<string, number> = {};
try {
  // Warm-up of both (JIT, connection pools), in this process; not counted.
  const warm = { ...options, seconds: WARMUP_SECONDS };
  await load(plan(baseline.base), warm);
  await load(plan(vigil.base), warm);
  for (let round = 0; round < ROUNDS; round += 1) {
    runs.baseline.push(await timed(plan(baseline.base), cpu.baseline));
    runs.vigil.push(await timed(plan(vigil.base), cpu.vigil, true));
  }
  for (const run of runs.vigil) {
    for (const [status, count] of Object.entries(run.statuses)) {
      vigilStatuses[status] = (vigilStatuses[status] ?? 0) + count;
    }
  }
} finally {
  profiler?.disconnect();
  await vigil.close();
  await baseline.close();
}
vigilStatuses = Object.fromEntries(Object.entries(vigilStatuses).sort());

const rate = (rs: LoadResult[]): number => Math.round(median(rs.map((r) => r.perSecond)));
const p = (rs: LoadResult[], key: "p50" | "p99"): number => median(rs.map((r) => r.latencyMs[key]));
const baselineRate = rate(runs.baseline);
const vigilRate = rate(runs.vigil);
const baselineFailures = runs.baseline.reduce((n, r) => n + r.failures, 0);
// A baseline that failed has no rate to compare with: the goal is then not met.
const ratio = baselineRate > 0 ? Number((vigilRate / baselineRate).toFixed(3)) : 0;
console.log(
  JSON.stringify({
    bench: "probe-ingest",
    request: "PUT row",
    body_bytes: bodyBytes,
    rows: ROWS,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    seconds_per_run: SECONDS,
    baseline_node_http_req_per_s: baselineRate,
    baseline_latency_p50_ms: p(runs.baseline, "p50"),
    baseline_latency_p99_ms: p(runs.baseline, "p99"),
    vigil_probe_gateway_req_per_s: vigilRate,
    vigil_latency_p50_ms: p(runs.vigil, "p50"),
    vigil_latency_p99_ms: p(runs.vigil, "p99"),
    baseline_cpu_us_per_req: Number(median(cpu.baseline).toFixed(1)),
    vigil_cpu_us_per_req: Number(median(cpu.vigil).toFixed(1)),
    ratio_vs_baseline: ratio,
    rounds_req_per_s: {
      baseline: runs.baseline.map((r) => Math.round(r.perSecond)),
      vigil: runs.vigil.map((r) => Math.round(r.perSecond)),
    },
    vigil_statuses: vigilStatuses,
    baseline_failures: baselineFailures,
    published_messages: vigil.messages(),
    invalid_messages: vigil.invalid(),
    goal: { ratio_at_least: GOAL_RATIO, met: baselineFailures === 0 && ratio >= GOAL_RATIO },
  }),
);
