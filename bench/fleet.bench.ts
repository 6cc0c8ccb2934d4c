/**
 * The hub at fleet scale: 100 000 entities and 1 000 000 series in one hub on the embedded store.
 *
 * A real `vigil hub` (dist/cli/main.js, DuckDB in a temp data dir, security off) runs as a child
 * process, so its peak RSS (VmHWM and the polled VmRSS of /proc/<pid>/status) is the hub's alone.
 * Through `POST /v0/messages` (NDJSON bodies of 10 000 messages, one at a time) the bench backfills:
 * one `probe` message per probe (300 probes), one `managedEntity` message per entity (100 000, four
 * user attributes each, spread evenly over the probes), then table messages: 2 rows × 5 cells (the
 * row-name cell included) per entity, so 1 000 000 series, in 3 snapshots an hour apart (3 000 000
 * samples). A second child process polls `GET /v0/ping` every 50 ms the whole time (its own event
 * loop, so the bench's body building never delays a ping) and reports the slowest answer per phase.
 *
 * At that size it then measures, each the median of TRIES (after the first, reported apart as the
 * cold try): one backfilled `probe` message (a new HostName for one probe, so its 333 entities are
 * refreshed; goal < 50 ms), a body of 200 such messages (each rewrites a probe row, never its entities), the
 * entity filter `GET /v0/entities?filter=svc.name = X` (goal < 100 ms), `GET /v0/entities/{id}/metrics`,
 * `GET /v0/entities/metrics?filter=svc.name = X`, and a metric query of one entity (`POST
 * /v0/metrics/query`, one day of one column, PT1H buckets). Last, the hub is stopped (SIGTERM) and
 * started again on the same data dir: the time until it listens and answers a ping, and its first
 * entity filter.
 *
 * Prints one JSON line (`bench: "fleet"`, with a `table` of the figures against their goals). Never
 * fails on time; fails when the hub refuses a message (the data would be wrong).
 *
 * `VIGIL_FLEET_SCALE` (default 1; 0.05 in a smoke run, i.e. when VIGIL_BENCH_SECONDS is set) scales
 * entities, probes and series. Run it with `npm run build && npm run bench -- fleet`; the full size
 * takes about 25 minutes on a 2-core machine (docs/performance.md has the latest run), most of it
 * the backfill of the entities; a smoke run (`VIGIL_BENCH_SECONDS=3` or `VIGIL_FLEET_SCALE=0.05`)
 * about 1.5 minutes.
 * `VIGIL_BENCH_CPU_PROF=DIR` runs the hub with `node --cpu-prof`.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { VIGIL_BIN } from "../test/helpers/vigil-process.js";
import { assertLoopback, median, percentiles, send } from "./load.js";
import { PeakMemory, serviceEnv, serviceEnvNote } from "./process-memory.js";
import { SMOKE } from "./settings.js";

function scaleOf(): number {
  const text = process.env.VIGIL_FLEET_SCALE;
  if (text === undefined || text === "") return SMOKE ? 0.05 : 1;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`VIGIL_FLEET_SCALE must be positive, not '${text}'`);
  return value;
}

const SCALE = scaleOf();
const ENTITIES = Math.max(10, Math.round(100_000 * SCALE));
const PROBES = Math.max(2, Math.round(300 * SCALE));
const ROWS_PER_ENTITY = 2;
const COLUMNS = ["c0", "c1", "c2", "c3"]; // with the row-name cell: 5 series a row, 10 an entity
const SERIES = ENTITIES * ROWS_PER_ENTITY * (COLUMNS.length + 1);
const SNAPSHOTS = 3; // table snapshots, an hour apart
const MESSAGES_PER_POST = 10_000;
const PROBE_BODY_MESSAGES = 200; // the body of probe messages measured as one POST
const TRIES = 7; // per query figure, after a cold try
const PING_EVERY_MS = 50;
const RSS_POLL_MS = 250;
const START_TIMEOUT_MS = 600_000;
const KILL_AFTER_MS = 60_000;
const GOALS = { rssMiB: 1024, probeMs: 50, filterMs: 100 } as const;
const T0 = Date.UTC(2026, 0, 5); // the backfill's first sample time
const HOUR_MS = 3_600_000;

/** `VIGIL_BENCH_CPU_PROF=DIR`: the hub runs with `node --cpu-prof` (bench/profile-summary.ts reads it). */
const PROFILE =
  process.env.VIGIL_BENCH_CPU_PROF === undefined
    ? []
    : ["--cpu-prof", "--cpu-prof-dir", process.env.VIGIL_BENCH_CPU_PROF];

const iso = (ms: number): string => new Date(ms).toISOString();
const probeName = (p: number): string => `probe-${String(p).padStart(3, "0")}`;
const entityName = (e: number): string => `host-${String(e).padStart(6, "0")}`;
const probeOf = (e: number): number => e % PROBES;
const round1 = (v: number): number => Math.round(v * 10) / 10;
const round2 = (v: number): number => Math.round(v * 100) / 100;

// ---------------------------------------------------------------------------------------------
// Messages

function probeMessage(p: number, at: number, hostName: string): string {
  return JSON.stringify({
    type: "probe",
    operation: "update",
    data: {
      timestamp: iso(at),
      target: { gateway: "GW", probe: probeName(p) },
      parameters: { osType: "Linux", HostName: hostName },
    },
  });
}

function entityMessage(e: number): string {
  return JSON.stringify({
    type: "managedEntity",
    operation: "create",
    data: {
      timestamp: iso(T0),
      target: { gateway: "GW", probe: probeName(probeOf(e)), managedEntity: entityName(e) },
      attributes: {
        Environment: e % 10 === 0 ? "staging" : "production",
        Region: ["emea", "amer", "apac"][e % 3],
        Team: `team-${e % 40}`,
        Rack: `rack-${Math.floor(e / 40)}`,
      },
    },
  });
}

function tableMessage(e: number, r: number, snapshot: number): string {
  const row: Record<string, string> = { name: `core-${r}` };
  COLUMNS.forEach((c, i) => {
    row[c] = String(((e * 7 + r * 13 + i * 29 + snapshot * 31) % 1000) / 10);
  });
  return JSON.stringify({
    type: "table",
    operation: "update",
    data: {
      sampleTime: iso(T0 + snapshot * HOUR_MS + (e % 3_600) * 1000),
      target: {
        gateway: "GW",
        probe: probeName(probeOf(e)),
        managedEntity: entityName(e),
        type: "",
        sampler: "cpu",
        dataview: "cores",
        row: `core-${r}`,
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row,
    },
  });
}

/** The bodies of the backfill, built one at a time (as they are posted). */
function* backfillBodies(): Generator<{
  kind: "probe" | "entity" | "table";
  body: string;
  messages: number;
}> {
  const chunk = function* (kind: "probe" | "entity" | "table", lines: Iterable<string>) {
    let batch: string[] = [];
    for (const line of lines) {
      batch.push(line);
      if (batch.length === MESSAGES_PER_POST) {
        yield { kind, body: `${batch.join("\n")}\n`, messages: batch.length };
        batch = [];
      }
    }
    if (batch.length > 0) yield { kind, body: `${batch.join("\n")}\n`, messages: batch.length };
  };
  yield* chunk(
    "probe",
    (function* () {
      for (let p = 0; p < PROBES; p += 1) yield probeMessage(p, T0, `node-${p}`);
    })(),
  );
  yield* chunk(
    "entity",
    (function* () {
      for (let e = 0; e < ENTITIES; e += 1) yield entityMessage(e);
    })(),
  );
  yield* chunk(
    "table",
    (function* () {
      for (let s = 0; s < SNAPSHOTS; s += 1)
        for (let e = 0; e < ENTITIES; e += 1)
          for (let r = 0; r < ROWS_PER_ENTITY; r += 1) yield tableMessage(e, r, s);
    })(),
  );
}

// ---------------------------------------------------------------------------------------------
// The hub process

class HubProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  url: string | undefined;
  private readonly memory = new PeakMemory(() => this.child.pid);
  private stderrTail = "";
  private readonly recent: string[] = [];
  private readonly timer: NodeJS.Timeout;
  private onListening: (() => void) | undefined;

  constructor(config: string, dataDir: string) {
    this.child = spawn(
      process.execPath,
      [
        ...PROFILE,
        VIGIL_BIN,
        "hub",
        "--config",
        config,
        "--data-dir",
        dataDir,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
      ],
      { env: serviceEnv(), stdio: ["ignore", "pipe", "pipe"] },
    );
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      this.recent.push(line);
      if (this.recent.length > 30) this.recent.shift();
      try {
        const parsed = JSON.parse(line) as { msg?: unknown; service?: unknown; url?: unknown };
        if (parsed.msg === "listening" && parsed.service === "hub" && typeof parsed.url === "string") {
          this.url = parsed.url;
          this.onListening?.();
        }
      } catch {
        // Not a log line.
      }
    });
    this.child.stderr!.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000);
    });
    this.timer = setInterval(() => this.sample(), RSS_POLL_MS);
  }

  sample(): void {
    this.memory.sample();
  }

  peakMiB(): number {
    return this.memory.peakMiB();
  }

  async listening(): Promise<string> {
    if (this.url !== undefined) return this.url;
    await Promise.race([
      new Promise<void>((resolve) => {
        this.onListening = resolve;
      }),
      this.exited.then((code) => {
        throw new Error(`the hub exited (${code}) before listening:\n${this.report()}`);
      }),
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new Error(`the hub did not listen in time:\n${this.report()}`)),
          START_TIMEOUT_MS,
        ).unref(),
      ),
    ]);
    return this.url as unknown as string;
  }

  report(): string {
    return `${this.recent.join("\n")}\n--- stderr\n${this.stderrTail}`;
  }

  async stop(): Promise<number> {
    const started = performance.now();
    this.sample();
    this.child.kill("SIGTERM");
    const kill = setTimeout(() => this.child.kill("SIGKILL"), KILL_AFTER_MS);
    await this.exited;
    clearTimeout(kill);
    clearInterval(this.timer);
    return performance.now() - started;
  }
}

const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

// ---------------------------------------------------------------------------------------------
// The ping poller (a child process: this file with FLEET_PING_CHILD set)

interface PingReport {
  readonly count: number;
  readonly failures: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Polls `url`/v0/ping every PING_EVERY_MS (one at a time) until told to stop; answers its figures. */
async function pingChild(url: string): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let failures = 0;
  let stopping = false;
  process.once("message", () => {
    stopping = true;
  });
  while (!stopping) {
    const result = await send(agent, new URL("/v0/ping", url), "GET", undefined);
    latencies.push(result.ms);
    if (result.status !== 200) failures += 1;
    await new Promise((resolve) => setTimeout(resolve, PING_EVERY_MS));
  }
  const p = percentiles(latencies);
  const report: PingReport = { count: latencies.length, failures, p50: p.p50, p99: p.p99, max: p.max };
  process.send?.(report, () => process.disconnect());
  agent.destroy();
}

/**
 * The hub's longest event-loop delay since the last scrape, in ms (prom-client's
 * `nodejs_eventloop_lag_max_seconds`, reset by each scrape of `/metrics`).
 */
async function loopDelayMaxMs(url: string): Promise<number> {
  const r = await send(agent, new URL("/metrics", url), "GET", undefined, { keepBody: true });
  const found = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(r.body ?? "");
  return found === null ? Number.NaN : round1(Number(found[1]) * 1000);
}

/**
 * Runs `work` while a child process pings the hub; resolves with `work`'s result, the pings, and
 * the hub's longest event-loop delay meanwhile (what a ping cannot be faster than).
 */
async function whilePinging<T>(
  url: string,
  work: () => Promise<T>,
): Promise<{ result: T; ping: PingReport & { loopDelayMaxMs: number } }> {
  await loopDelayMaxMs(url);
  const child = fork(new URL(import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, FLEET_PING_CHILD: url },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  live.add(child);
  const report = new Promise<PingReport>((resolve, reject) => {
    child.once("message", (m) => resolve(m as PingReport));
    child.once("exit", (code) => reject(new Error(`the ping child exited (${code}) without a report`)));
  });
  try {
    const result = await work();
    child.send("stop");
    const ping = await report;
    return { result, ping: { ...ping, loopDelayMaxMs: await loopDelayMaxMs(url) } };
  } finally {
    live.delete(child);
  }
}

// ---------------------------------------------------------------------------------------------
// Requests

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

async function request(
  base: string,
  method: "GET" | "POST",
  path: string,
  body?: string,
  contentType = "application/json",
): Promise<{ status: number; ms: number; body: string }> {
  for (;;) {
    const r = await send(agent, new URL(path, base), method, body, {
      keepBody: true,
      ...(body === undefined ? {} : { headers: { "content-type": contentType } }),
    });
    // A hub past its memory threshold asks backfill to come back later: wait and retry.
    if (r.status === 503 && r.retryAfterSeconds !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, r.retryAfterSeconds! * 1000));
      continue;
    }
    return { status: r.status, ms: r.ms, body: r.body ?? "" };
  }
}

/**
 * POSTs `body` to `/v0/messages` on a connection of its own and without a time limit (a body of
 * 10 000 entities may take minutes: the bench reports the time, it never gives up on it).
 */
function postOnce(base: string, body: string): Promise<{ status: number; ms: number; body: string }> {
  const url = new URL("/v0/messages", base);
  assertLoopback(url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: "POST", agent: false, headers: { "content-type": "application/x-ndjson" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: performance.now() - started,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** POSTs one NDJSON body (again after a 503's Retry-After); throws unless every message was stored. */
async function postMessages(base: string, body: string, messages: number): Promise<number> {
  let r = await postOnce(base, body);
  while (r.status === 503) {
    // A hub past its memory threshold asks backfill to come back later (Retry-After: 1 s).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    r = await postOnce(base, body);
  }
  const parsed = JSON.parse(r.body || "{}") as { accepted?: number; rejected?: unknown[] };
  if (r.status !== 200 || parsed.accepted !== messages || (parsed.rejected?.length ?? 0) > 0)
    throw new Error(`backfill answered ${r.status}: ${r.body.slice(0, 400)}`);
  return r.ms;
}

/** The cold try and the median of TRIES more of `path`, checking each answer with `check`. */
async function timed(
  base: string,
  method: "GET" | "POST",
  path: (i: number) => string,
  body: (i: number) => string | undefined,
  check: (status: number, text: string) => void,
): Promise<{ coldMs: number; medianMs: number; runs: number[] }> {
  const runs: number[] = [];
  for (let i = 0; i <= TRIES; i += 1) {
    const r = await request(base, method, path(i), body(i));
    check(r.status, r.body);
    runs.push(r.ms);
  }
  return { coldMs: round2(runs[0] ?? 0), medianMs: round2(median(runs.slice(1))), runs: runs.map(round2) };
}

const ok = (status: number, text: string): void => {
  if (status !== 200) throw new Error(`answered ${status}: ${text.slice(0, 300)}`);
};

// ---------------------------------------------------------------------------------------------
// The run

async function run(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-fleet-"));
  const dataDir = join(dir, "hub");
  mkdirSync(dataDir, { mode: 0o700 });
  const config = join(dir, "setup.yaml");
  writeFileSync(
    config,
    `gateway: { name: GW }\nhub:\n  port: 0\n  maxEntities: ${Math.max(100_000, ENTITIES + PROBES)}\n  security: { enabled: false }\n`,
  );
  let hub = new HubProcess(config, dataDir);
  live.add(hub.child);
  try {
    const base = await hub.listening();
    console.error(`fleet: ${ENTITIES} entities, ${PROBES} probes, ${SERIES} series (scale ${SCALE})`);

    // The backfill, with the pings beside it.
    let messages = 0;
    const phaseMs = { probe: 0, entity: 0, table: 0 };
    const backfill = await whilePinging(base, async () => {
      const started = performance.now();
      for (const { kind, body, messages: n } of backfillBodies()) {
        const t = performance.now();
        await postMessages(base, body, n);
        phaseMs[kind] += performance.now() - t;
        messages += n;
      }
      return (performance.now() - started) / 1000;
    });
    const seconds = backfill.result;
    const samples = ENTITIES * ROWS_PER_ENTITY * (COLUMNS.length + 1) * SNAPSHOTS;
    console.error(`fleet: backfilled ${messages} messages in ${round1(seconds)} s`);
    const rssAfterBackfill = hub.peakMiB();

    // One probe message at that size, then a body of PROBE_BODY_MESSAGES of them.
    let at = T0 + 10 * HOUR_MS;
    const probe = await whilePinging(base, async () => {
      const one: number[] = [];
      for (let i = 0; i <= TRIES; i += 1) {
        at += 1000;
        one.push(await postMessages(base, `${probeMessage(i % PROBES, at, `moved-${i}`)}\n`, 1));
      }
      const n = Math.min(PROBE_BODY_MESSAGES, PROBES);
      at += 1000;
      const lines = Array.from({ length: n }, (_, p) => probeMessage(p, at, `again-${p}`));
      const bodyMs = await postMessages(base, `${lines.join("\n")}\n`, n);
      return { coldMs: round2(one[0] ?? 0), medianMs: round2(median(one.slice(1))), runs: one, bodyMs, n };
    });

    // The queries (a different entity each try).
    const pick = (i: number): number => (i * 7919 + 17) % ENTITIES;
    const filterOf = (i: number): string => encodeURIComponent(`svc.name = ${entityName(pick(i))}`);
    const ids: number[] = [];
    const filter = await timed(
      base,
      "GET",
      (i) => `/v0/entities?filter=${filterOf(i)}`,
      () => undefined,
      (status, text) => {
        ok(status, text);
        const list = JSON.parse(text) as { id: number; attributes: Record<string, string> }[];
        if (list.length !== 1 || list[0]?.attributes["svc.hostname"] === undefined)
          throw new Error(`the entity filter found ${list.length} entities: ${text.slice(0, 300)}`);
        ids.push(list[0].id);
      },
    );
    const entityMetrics = await timed(
      base,
      "GET",
      (i) => `/v0/entities/${ids[i % ids.length]}/metrics`,
      () => undefined,
      (status, text) => {
        ok(status, text);
        const n = (JSON.parse(text) as unknown[]).length;
        if (n !== COLUMNS.length)
          throw new Error(`an entity has ${n} numeric metrics, not ${COLUMNS.length}`);
      },
    );
    const filteredMetrics = await timed(
      base,
      "GET",
      (i) => `/v0/entities/metrics?filter=${filterOf(i)}`,
      () => undefined,
      ok,
    );
    const query = await timed(
      base,
      "POST",
      () => "/v0/metrics/query",
      (i) =>
        JSON.stringify({
          zoneId: "UTC",
          filter: {
            entities: `svc.name = ${entityName(pick(i))}`,
            range: { from: iso(T0), to: iso(T0 + 24 * HOUR_MS) },
          },
          metrics: [{ identifier: "c0", include: ["cpu/cores/{rowname}/c0"] }],
          aggregations: ["svc.avg", "svc.count"],
          bucketing: { duration: "PT1H" },
        }),
      (status, text) => {
        ok(status, text);
        const data = (JSON.parse(text) as { data: unknown[] }).data;
        if (data.length === 0) throw new Error(`the metric query found nothing: ${text.slice(0, 300)}`);
      },
    );
    const status = await request(base, "GET", "/v1/status");
    const entityCache = (JSON.parse(status.body) as { entityCache?: unknown }).entityCache;
    const peakBeforeRestart = hub.peakMiB();

    // A restart on the same data dir.
    const stopMs = await hub.stop();
    live.delete(hub.child);
    const restarted = performance.now();
    hub = new HubProcess(config, dataDir);
    live.add(hub.child);
    const again = await hub.listening();
    let pingOk = false;
    while (!pingOk) pingOk = (await request(again, "GET", "/v0/ping")).status === 200;
    const startMs = performance.now() - restarted;
    const firstFilter = await request(again, "GET", `/v0/entities?filter=${filterOf(1)}`);
    ok(firstFilter.status, firstFilter.body);
    const restartPeak = hub.peakMiB();

    const rss = Math.max(peakBeforeRestart, restartPeak);
    const table = [
      [
        `fleet: hub peak RSS MiB (${ENTITIES} entities, ${SERIES} series)`,
        rss,
        "",
        round2(rss / GOALS.rssMiB),
        `< ${GOALS.rssMiB}`,
        rss < GOALS.rssMiB,
      ],
      [
        "fleet: backfill messages/s (samples/s)",
        `${Math.round(messages / seconds)} (${Math.round(samples / seconds)})`,
        "",
        "",
        "",
        "",
      ],
      [
        "fleet: /v0/ping max ms during the backfill",
        backfill.ping.max,
        `p50 ${backfill.ping.p50}, event loop max ${backfill.ping.loopDelayMaxMs}`,
        "",
        "",
        "",
      ],
      [
        "fleet: one backfilled probe message ms",
        probe.result.medianMs,
        `cold ${probe.result.coldMs}`,
        round2(probe.result.medianMs / GOALS.probeMs),
        `< ${GOALS.probeMs}`,
        probe.result.medianMs < GOALS.probeMs,
      ],
      [
        `fleet: ${probe.result.n} probe messages in one POST ms (ping max)`,
        `${round1(probe.result.bodyMs)} (${probe.ping.max})`,
        "",
        "",
        "",
        "",
      ],
      [
        "fleet: /v0/entities?filter=svc.name = X ms",
        filter.medianMs,
        `cold ${filter.coldMs}`,
        round2(filter.medianMs / GOALS.filterMs),
        `< ${GOALS.filterMs}`,
        filter.medianMs < GOALS.filterMs,
      ],
      [
        "fleet: /v0/entities/{id}/metrics ms",
        entityMetrics.medianMs,
        `cold ${entityMetrics.coldMs}`,
        "",
        "",
        "",
      ],
      [
        "fleet: /v0/entities/metrics?filter=svc.name = X ms",
        filteredMetrics.medianMs,
        `cold ${filteredMetrics.coldMs}`,
        "",
        "",
        "",
      ],
      ["fleet: metric query, one entity, one day ms", query.medianMs, `cold ${query.coldMs}`, "", "", ""],
      [
        "fleet: restart until ping answers ms (first filter ms)",
        `${Math.round(startMs)} (${round1(firstFilter.ms)})`,
        "",
        "",
        "",
        "",
      ],
    ];
    return {
      bench: "fleet",
      scale: SCALE,
      entities: ENTITIES,
      probes: PROBES,
      series: SERIES,
      samples,
      messages,
      backfill_seconds: round1(seconds),
      backfill_messages_per_s: Math.round(messages / seconds),
      backfill_samples_per_s: Math.round(samples / seconds),
      backfill_phase_seconds: Object.fromEntries(
        Object.entries(phaseMs).map(([k, v]) => [k, round1(v / 1000)]),
      ),
      ping_during_backfill_ms: backfill.ping,
      ping_during_probes_ms: probe.ping,
      probe_message_ms: probe.result,
      probe_body_ms: round1(probe.result.bodyMs),
      entity_filter_ms: filter,
      entity_metrics_ms: entityMetrics,
      filtered_metrics_ms: filteredMetrics,
      metric_query_ms: query,
      entity_cache: entityCache,
      peak_rss_mib: rss,
      peak_rss_after_backfill_mib: rssAfterBackfill,
      restart_peak_rss_mib: restartPeak,
      stop_ms: Math.round(stopMs),
      restart_until_ping_ms: Math.round(startMs),
      restart_first_filter_ms: round1(firstFilter.ms),
      goals: {
        rss: rss < GOALS.rssMiB,
        probe: probe.result.medianMs < GOALS.probeMs,
        filter: filter.medianMs < GOALS.filterMs,
      },
      table,
    };
  } catch (error) {
    console.error(hub.report());
    throw error;
  } finally {
    if (hub.child.exitCode === null) await hub.stop();
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pingTarget = process.env.FLEET_PING_CHILD;
if (pingTarget !== undefined) await pingChild(pingTarget);
else {
  const note = serviceEnvNote();
  if (note !== undefined) console.error(note);
  console.log(JSON.stringify(await run()));
}
