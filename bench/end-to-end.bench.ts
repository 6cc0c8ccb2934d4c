/**
 * End to end through the real `vigil` command: 20 managed entities on one probe, each
 * with one rest-api sampler whose data schema declares 10 numeric columns; 20 concurrent clients
 * (one per entity) PUT a 200-row × 10-numeric-column dataview as fast as it is accepted (a 503
 * waits its Retry-After, capped, and the PUT is retried; 503s are counted) for VIGIL_BENCH_SECONDS
 * (default 20). Two configurations, each started from the built CLI (`dist/cli/main.js`) as child
 * processes:
 *  - `up`: `vigil up --config F --data-dir D` (in-process probe link, in-process bus, DuckDB);
 *  - `processes-nats`: `vigil hub --bus nats://127.0.0.1:4222`, `vigil gateway` publishing to a
 *    throwaway JetStream stream, `vigil probe --gateway URL --name p1`, each its own process;
 *  - `up-rows`: `vigil up` again, but the load is row updates, as an application that updates one
 *    row at a time sends them: after one PUT of the 200-row dataview of `me00`, 50 keep-alive
 *    connections from a child process (bench/load-child.ts) PUT one row each (its 10 numeric cells,
 *    new values each time) to `…/dataview/dv/row/rN`, the rows cycling. Figures: accepted PUTs per
 *    second (goal 20 000, i.e. 200 000 cells/s), the share answered 503 (goal < 1 %), PUT latency
 *    (goal p99 < 20 ms), the share of PUTs the probe held for room in its outgoing buffer (its
 *    `vigil_probe_ingest_waited_requests_total`), the distinct 503 bodies (each must name the
 *    limit that tripped), the cells queryable after the load (every accepted one must be), and
 *    the CPU per answered PUT of
 *    `vigil up` and of the client (every thread, user and system): steadier than the rates on a
 *    shared machine, and what says how far two cores can carry the load.
 *
 * Figures, one JSON line per configuration:
 *  - cells per second that become queryable: the hub's `svc.count` over the run of the 10 columns of
 *    every entity (POST /v0/metrics/query, security off), polled after the load until it reaches the
 *    accepted cells or stops growing (bounded), divided by the time from the start of the load to
 *    when that final count was first seen; beside it, the cells accepted per second;
 *  - PUT→queryable delay: column `c0` of every row carries the PUT's send time (epoch ms); every
 *    250 ms the next accepted PUT is taken as a marker, and a poller asks the hub for `svc.max` of
 *    `s/dv/r0/c0` per entity (PT1M buckets) until the marker's send time shows; the delay runs from
 *    the send time to the arrival of the answer that shows it (so it includes one query's latency);
 *    markers of the first WARMUP_MS of the load are reported apart as `cold_delay_max_ms`;
 *  - peak RSS of each process: VmHWM and VmRSS from /proc/<pid>/status, polled every 250 ms.
 *
 * Bounded in time and count, 127.0.0.1 only. Every child is stopped (SIGTERM, SIGKILL after 15 s),
 * and the temp dirs and the NATS stream are removed, also when a configuration fails.
 * VIGIL_BENCH_CPU_PROF=DIR starts the children with `--cpu-prof --cpu-prof-dir DIR`;
 * VIGIL_BENCH_NODE_ARGS="…" adds `node` options to every child (a diagnostic, e.g.
 * `--heap-growing-percent=0` for V8's own heap growth instead of vigil's bound);
 * VIGIL_BENCH_MEMORY_LIMIT_MB=N sets `memoryProtection.limitMb` of every part (a diagnostic: the
 * figures use the defaults); VIGIL_BENCH_E2E=up|nats|rows runs one configuration only; VIGIL_BENCH_TIMELINE=1 adds the per-second
 * status timeline (accepted rows, published, buffered in the gateway's targets, stored by the hub)
 * that `backlog_max` summarises.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { NATS_URL, NatsAdmin, natsReachable } from "../test/helpers/nats.js";
import { parseExposition } from "../test/helpers/prometheus-text.js";
import { VIGIL_BIN } from "../test/helpers/vigil-process.js";
import { type LoadRequest, loadInChild, percentiles, send } from "./load.js";
import { PeakMemory, serviceEnv, serviceEnvNote } from "./process-memory.js";
import { benchSeconds } from "./settings.js";

const SECONDS = benchSeconds(20); // of load
const ENTITIES = 20; // managed entities, one client each
const ROWS = 200; // rows per dataview PUT
const COLUMNS = 10; // numeric columns per row (c0 carries the send time)
const CELLS_PER_PUT = ROWS * COLUMNS;
const MARKER_INTERVAL_MS = 250; // one delay marker per interval
/**
 * Markers of PUTs sent in the first seconds of the load count apart (`cold_delay_max_ms`), not in
 * the delay percentiles: those PUTs create every series of the run at once (40 000 in the hub), and
 * the processes are not yet warm (JIT, first commits), which is a different figure from the
 * steady-state delay the goal is about.
 */
const WARMUP_MS = 2_000;
const MAX_MARKERS = 20_000; // markers kept (a 20 s run makes 80)
const POLL_GAP_MS = 50; // between two delay queries
const POLL_IDLE_MS = 20; // poller wait while no marker is pending
const RETRY_AFTER_CAP_MS = 5_000; // longest wait a 503's Retry-After may ask for
const RETRY_FALLBACK_MS = 100; // wait after a 503 without a numeric Retry-After
const ERROR_BACKOFF_MS = 100; // wait after any other failed PUT
const MAX_LATENCIES = 1_000_000; // PUT and query latencies kept
const DRAIN_TIMEOUT_MS = 1_000 * Number(process.env.VIGIL_BENCH_DRAIN_SECONDS ?? 120); // after the load
const DRAIN_STABLE_MS = 15_000; // a count unchanged this long is final (3 × the longest retry back-off)
const DRAIN_POLL_MS = 250;
const START_TIMEOUT_MS = 60_000; // for a process to log `listening`
const KILL_AFTER_MS = 15_000; // SIGTERM, then SIGKILL
const RSS_POLL_MS = 250;
const TIMELINE_MS = 1_000; // between two looks at the status pages
const MAX_TIMELINE = 2_000; // timeline points kept
const RECENT_LOG_LINES = 50; // log lines kept per process, for error reports
const MAX_DISTINCT = 20; // distinct warning/error messages counted per process
const STDERR_TAIL_CHARS = 8_192;
const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ of /proc/<pid>/stat on Linux
const GOALS = { cellsPerSecond: 100_000, delayP99Ms: 1_000, rssMiB: 1_024 };
/** The row-update configuration: its connections, bodies per row, and goals. */
const ROW_PUT = {
  connections: 50,
  variants: 10,
  maxRequests: 5_000_000,
  goals: { perSecond: 20_000, rejectedShare: 0.01, p99Ms: 20 },
};

const ONLY = process.env.VIGIL_BENCH_E2E;
const CPU_PROF_DIR = process.env.VIGIL_BENCH_CPU_PROF;
/** Extra `node` options for every child, space-separated (a diagnostic: the figures use none). */
const NODE_ARGS = (process.env.VIGIL_BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
const TIMELINE = process.env.VIGIL_BENCH_TIMELINE === "1";

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const entityName = (e: number): string => `me${String(e).padStart(2, "0")}`;
const round1 = (v: number): number => Math.round(v * 10) / 10;

// ---------------------------------------------------------------------------------------------
// Child processes

interface ListeningLine {
  readonly service: string;
  readonly url: string;
  readonly probe?: string;
}

const live = new Set<Service>();

/** One `vigil` child: its listening lines, a bounded tail of its logs, its memory peaks. */
class Service {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly recent: string[] = [];
  readonly listening: ListeningLine[] = [];
  warnings = 0;
  errors = 0;
  /** Distinct messages of its warning and error lines, with their counts (at most MAX_DISTINCT). */
  readonly problems = new Map<string, number>();
  stderrTail = "";
  private readonly memory = new PeakMemory(() => this.child.pid);
  private exitedFlag = false;
  private readonly changed = new Set<() => void>();
  private readonly rssTimer: NodeJS.Timeout;

  constructor(
    readonly label: string,
    args: string[],
    cwd: string,
  ) {
    const node = [
      ...NODE_ARGS,
      ...(CPU_PROF_DIR === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", resolve(CPU_PROF_DIR)]),
    ];
    this.child = spawn(process.execPath, [...node, VIGIL_BIN, ...args], {
      cwd,
      env: serviceEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    live.add(this);
    if (CPU_PROF_DIR !== undefined)
      console.error(`${label}: pid ${this.child.pid} (cpu profile in ${CPU_PROF_DIR})`);
    this.exited = new Promise((resolveExit) =>
      this.child.on("exit", (code, signal) => {
        this.exitedFlag = true;
        clearInterval(this.rssTimer);
        live.delete(this);
        for (const wake of this.changed) wake();
        resolveExit({ code, signal });
      }),
    );
    createInterface({ input: this.child.stdout! }).on("line", (line) => this.onLine(line));
    this.child.stderr!.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_TAIL_CHARS);
    });
    this.rssTimer = setInterval(() => this.sampleMemory(), RSS_POLL_MS);
  }

  private onLine(line: string): void {
    this.recent.push(line);
    if (this.recent.length > RECENT_LOG_LINES) this.recent.shift();
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const level = typeof parsed.level === "number" ? parsed.level : 30;
    if (level >= 50) this.errors += 1;
    else if (level >= 40) this.warnings += 1;
    if (level >= 40) {
      const err = parsed.err as { message?: unknown } | undefined;
      // The error's text with its numbers blanked, so one cause is one entry.
      const why =
        typeof err?.message === "string" ? ` (${err.message.replace(/\d+/g, "N").slice(0, 200)})` : "";
      const msg = `${String(parsed.msg ?? "")}${why}`;
      if (this.problems.has(msg) || this.problems.size < MAX_DISTINCT) {
        this.problems.set(msg, (this.problems.get(msg) ?? 0) + 1);
      }
    }
    if (parsed.msg === "listening" && typeof parsed.service === "string" && typeof parsed.url === "string") {
      this.listening.push({
        service: parsed.service,
        url: parsed.url,
        ...(typeof parsed.probe === "string" ? { probe: parsed.probe } : {}),
      });
      for (const wake of this.changed) wake();
    }
  }

  /** Reads VmRSS and VmHWM (KiB) from /proc; keeps the peaks. */
  sampleMemory(): void {
    if (this.exitedFlag) return;
    this.memory.sample();
  }

  /** Peak resident memory in MiB: the larger of the kernel's high-water mark and the polled peak. */
  peakMiB(): number {
    return this.memory.peakMiB();
  }

  /**
   * CPU seconds the process has used so far (every thread, user and system), from
   * `/proc/<pid>/stat` in clock ticks (100 per second on Linux); NaN once it is gone.
   */
  cpuSeconds(): number {
    try {
      const stat = readFileSync(`/proc/${this.child.pid}/stat`, "utf8");
      // Fields after the command (which may hold spaces) start after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    } catch {
      return Number.NaN;
    }
  }

  /** The URL the process logged for `service` (and `probe`), within START_TIMEOUT_MS. */
  async url(service: string, probe?: string): Promise<string> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const line = this.listening.find(
        (l) => l.service === service && (probe === undefined || l.probe === probe),
      );
      if (line !== undefined) return line.url;
      if (this.exitedFlag) throw new Error(`${this.label} exited before listening:\n${this.report()}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`${this.label} did not log 'listening' for ${service}:\n${this.report()}`);
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        const done = (): void => {
          clearTimeout(timer);
          this.changed.delete(done);
          wake();
        };
        this.changed.add(done);
      });
    }
  }

  /** Its last log lines and stderr, for error reports. */
  report(): string {
    return `--- last log lines of ${this.label}\n${this.recent.join("\n")}\n--- stderr\n${this.stderrTail}`;
  }

  /** SIGTERM, SIGKILL after KILL_AFTER_MS; resolves with the exit and how long the stop took. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; stopMs: number }> {
    const started = Date.now();
    this.sampleMemory();
    if (!this.exitedFlag) {
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), KILL_AFTER_MS);
      await this.exited;
      clearTimeout(timer);
    }
    return { ...(await this.exited), stopMs: Date.now() - started };
  }
}

// The bench's own stop: children never outlive it.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const service of live) service.child.kill("SIGKILL");
    process.exit(130);
  });
}
process.once("exit", () => {
  for (const service of live) service.child.kill("SIGKILL");
});

// ---------------------------------------------------------------------------------------------
// Setup

/** `memoryProtection` for every part when VIGIL_BENCH_MEMORY_LIMIT_MB is set (a diagnostic; default off). */
const MEMORY_LIMIT_MB = process.env.VIGIL_BENCH_MEMORY_LIMIT_MB;
const memoryProtection = (indent: string): string =>
  MEMORY_LIMIT_MB === undefined ? "" : `\n${indent}memoryProtection: { limitMb: ${Number(MEMORY_LIMIT_MB)} }`;

function setupYaml(publish: string): string {
  const columns = Array.from({ length: COLUMNS }, (_, k) =>
    k === 0 ? "c0: { type: float64, unit: milliseconds }" : `c${k}: { type: float64, unit: none }`,
  ).join(", ");
  const entities = Array.from(
    { length: ENTITIES },
    (_, e) => `      - name: ${entityName(e)}
        samplers:
          - name: s
            plugin: rest-api
            rowLimit: ${ROWS}
            schema: { columns: { ${columns} } }`,
  ).join("\n");
  return `gateway:
  name: GW-BENCH
  port: 0${memoryProtection("  ")}
  publish:
    - ${publish}
probes:
  - name: p1
    hostname: 127.0.0.1
    linkSecret: ${P1_LINK_SECRET}
    restApiHttpPort: 0${memoryProtection("    ")}
    managedEntities:
${entities}
hub:
  port: 0${memoryProtection("  ")}
  security: { enabled: false }
`;
}

/** The dataview body of PUT `seq` of entity `e`: rows r0..r199, c0 = send time, c1..c9 numbers. */
function dataviewBody(e: number, seq: number, sentMs: number): string {
  const rows: string[] = [];
  for (let r = 0; r < ROWS; r += 1) {
    let row = `{"name":"r${r}","c0":${sentMs}`;
    for (let k = 1; k < COLUMNS; k += 1)
      row += `,"c${k}":${((seq * 7919 + r * 104_729 + k * 31 + e) % 100_000) / 100}`;
    rows.push(`${row}}`);
  }
  return `[${rows.join(",")}]`;
}

// ---------------------------------------------------------------------------------------------
// Hub queries

interface QueryAnswer {
  data: { group: Record<string, string | number>; metrics: Record<string, Record<string, number | null>> }[];
}

interface QueryStats {
  latencies: number[];
  failures: number;
  lastFailure?: string;
}

async function hubQuery(
  agent: Agent,
  hub: string,
  body: unknown,
  stats: QueryStats,
): Promise<QueryAnswer | undefined> {
  const r = await send(agent, new URL("/v0/metrics/query", hub), "POST", JSON.stringify(body), {
    headers: { "content-type": "application/json" },
    keepBody: true,
  });
  if (stats.latencies.length < MAX_LATENCIES) stats.latencies.push(r.ms);
  if (r.status !== 200) {
    stats.failures += 1;
    stats.lastFailure = `${r.status} ${(r.body ?? "").slice(0, 300)}`;
    return undefined;
  }
  try {
    return JSON.parse(r.body ?? "") as QueryAnswer;
  } catch (error) {
    stats.failures += 1;
    stats.lastFailure = `200 with a body that is not JSON: ${String(error)}`;
    return undefined;
  }
}

const range = (fromMs: number) => ({
  from: new Date(fromMs).toISOString(),
  to: new Date(Date.now() + 60_000).toISOString(),
});

/** Greatest send time (c0 of row r0) the hub holds per entity name. */
async function sentMaxima(agent: Agent, hub: string, fromMs: number, stats: QueryStats) {
  const answer = await hubQuery(
    agent,
    hub,
    {
      zoneId: "UTC",
      filter: { entities: "", range: range(fromMs) },
      metrics: [{ identifier: "sent", include: ["s/dv/r0/c0"] }],
      aggregations: ["svc.max"],
      bucketing: { duration: "PT1M" },
      grouping: ["entity:svc.name"],
    },
    stats,
  );
  if (answer === undefined) return undefined;
  const maxima = new Map<string, number>();
  for (const d of answer.data) {
    const name = String(d.group.attribute ?? "");
    const value = d.metrics.sent?.["svc.max"];
    if (typeof value === "number") maxima.set(name, Math.max(value, maxima.get(name) ?? 0));
  }
  return maxima;
}

/** Samples of the 10 numeric columns of every row of every entity since `fromMs`. */
async function queryableCells(agent: Agent, hub: string, fromMs: number, stats: QueryStats) {
  const answer = await hubQuery(
    agent,
    hub,
    {
      zoneId: "UTC",
      filter: { entities: "", range: range(fromMs) },
      metrics: [
        { identifier: "cells", include: Array.from({ length: COLUMNS }, (_, k) => `s/dv/{rowname}/c${k}`) },
      ],
      aggregations: ["svc.count"],
      bucketing: { duration: "P1D" },
    },
    stats,
  );
  if (answer === undefined) return undefined;
  return answer.data.reduce((n, d) => n + (d.metrics.cells?.["svc.count"] ?? 0), 0);
}

// ---------------------------------------------------------------------------------------------
// The load and its measurements

interface Measurement {
  loadSeconds: number;
  puts: number;
  rejected503: number;
  errors: number;
  statuses: Record<string, number>;
  putLatencyMs: ReturnType<typeof percentiles>;
  acceptedCells: number;
  queryableCells: number;
  queryableAfterMs: number;
  drained: boolean;
  delays: number[];
  markers: number;
  markersUnresolved: number;
  queries: QueryStats;
  timeline: TimelinePoint[];
  delayPoints: [number, number][];
  coldDelays: number[];
}

/** One second of the run as the gateway and hub status pages show it (where the backlog sits). */
interface TimelinePoint {
  /** Seconds since the load started. */
  readonly s: number;
  /** Table rows in PUTs accepted by the probe so far. */
  readonly acceptedRows: number;
  /** Messages the gateway's publisher has taken (GET /v1/status on the gateway). */
  readonly published: number;
  /** Messages waiting or in flight in the gateway's publish targets. */
  readonly sinkBuffered: number;
  /** Messages the hub has stored (GET /v1/status on the hub). */
  readonly stored: number;
  /** The hub process's RSS as its memory protection last read it, MiB. */
  readonly hubRssMiB: number;
}

async function statusJson(agent: Agent, url: URL): Promise<Record<string, unknown> | undefined> {
  const r = await send(agent, url, "GET", undefined, { keepBody: true });
  if (r.status !== 200) return undefined;
  try {
    return JSON.parse(r.body ?? "{}") as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

async function timelinePoint(
  agent: Agent,
  gateway: string,
  hub: string,
  s: number,
  acceptedRows: number,
): Promise<TimelinePoint> {
  const [gw, hb] = await Promise.all([
    statusJson(agent, new URL("/v1/status", gateway)),
    statusJson(agent, new URL("/v1/status", hub)),
  ]);
  const publisher = gw?.publisher as { published?: number; sinks?: { buffered?: number }[] } | undefined;
  const ingest = hb?.ingest as { stored?: number } | undefined;
  const memory = hb?.memory as { rssBytes?: number } | undefined;
  return {
    s: round1(s),
    acceptedRows,
    published: publisher?.published ?? -1,
    sinkBuffered: (publisher?.sinks ?? []).reduce((n, x) => n + (x.buffered ?? 0), 0),
    stored: ingest?.stored ?? -1,
    hubRssMiB: round1((memory?.rssBytes ?? 0) / 1024 / 1024),
  };
}

/**
 * The count of queryable cells since `fromMs`, polled until it reaches `acceptedCells` or stops
 * growing for DRAIN_STABLE_MS (bounded by DRAIN_TIMEOUT_MS after `loadEnd`): the final count, when
 * it was first seen, and whether every accepted cell became queryable.
 */
async function drain(
  agent: Agent,
  hub: string,
  fromMs: number,
  acceptedCells: number,
  loadEnd: number,
  queries: QueryStats,
): Promise<{ count: number; countSeenAt: number; drained: boolean }> {
  let count = -1;
  let countSeenAt = loadEnd;
  while (Date.now() - loadEnd < DRAIN_TIMEOUT_MS) {
    const now = await queryableCells(agent, hub, fromMs, queries);
    if (now !== undefined && now !== count) {
      count = now;
      countSeenAt = Date.now();
    }
    if (count >= acceptedCells) return { count, countSeenAt, drained: true };
    if (Date.now() - countSeenAt >= DRAIN_STABLE_MS) break;
    await delay(DRAIN_POLL_MS);
  }
  return { count, countSeenAt, drained: false };
}

async function measure(
  probe: string,
  gateway: string,
  hub: string,
  services: readonly Service[],
): Promise<Measurement> {
  const agent = new Agent({ keepAlive: true, maxSockets: ENTITIES + 2 });
  const queries: QueryStats = { latencies: [], failures: 0 };
  const putLatencies: number[] = [];
  const statuses = new Map<string, number>();
  const delays: number[] = [];
  const coldDelays: number[] = [];
  /** [seconds from the start of the load to the marker's PUT, its delay in ms], for the timeline. */
  const delayPoints: [number, number][] = [];
  const pending: { entity: string; sentMs: number }[] = [];
  let markers = 0;
  let markerDue = false;
  let puts = 0;
  let rejected503 = 0;
  let errors = 0;

  const loadStart = Date.now();
  const fromMs = loadStart - 60_000;
  const deadline = loadStart + SECONDS * 1000;
  const markerTimer = setInterval(() => {
    markerDue = true;
  }, MARKER_INTERVAL_MS);

  const client = async (e: number): Promise<void> => {
    const name = entityName(e);
    const url = new URL(`/v1/managedEntity/${name}/sampler/s/dataview/dv`, probe);
    for (let seq = 0; Date.now() < deadline; seq += 1) {
      const sentMs = Date.now();
      const r = await send(agent, url, "PUT", dataviewBody(e, seq, sentMs));
      if (putLatencies.length < MAX_LATENCIES) putLatencies.push(r.ms);
      const key = r.status === 0 ? "error" : String(r.status);
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (r.status === 200) {
        puts += 1;
        if (markerDue && markers < MAX_MARKERS) {
          markerDue = false;
          markers += 1;
          pending.push({ entity: name, sentMs });
        }
      } else if (r.status === 503) {
        rejected503 += 1;
        const asked = r.retryAfterSeconds === undefined ? RETRY_FALLBACK_MS : r.retryAfterSeconds * 1000;
        await delay(Math.min(asked, RETRY_AFTER_CAP_MS, deadline - Date.now()));
      } else {
        errors += 1;
        await delay(Math.min(ERROR_BACKOFF_MS, deadline - Date.now()));
      }
    }
  };

  let pollerStop = false;
  const poller = async (): Promise<void> => {
    while (!pollerStop) {
      if (pending.length === 0) {
        await delay(POLL_IDLE_MS);
        continue;
      }
      const maxima = await sentMaxima(agent, hub, fromMs, queries);
      const seen = Date.now();
      if (maxima !== undefined) {
        for (let i = pending.length - 1; i >= 0; i -= 1) {
          const marker = pending[i]!;
          if ((maxima.get(marker.entity) ?? Number.NEGATIVE_INFINITY) >= marker.sentMs) {
            (marker.sentMs - loadStart < WARMUP_MS ? coldDelays : delays).push(seen - marker.sentMs);
            if (delayPoints.length < MAX_MARKERS) {
              delayPoints.push([round1((marker.sentMs - loadStart) / 1000), seen - marker.sentMs]);
            }
            pending.splice(i, 1);
          }
        }
      }
      await delay(POLL_GAP_MS);
    }
  };

  const timeline: TimelinePoint[] = [];
  const sampler = async (): Promise<void> => {
    const statusAgent = new Agent({ keepAlive: true, maxSockets: 2 });
    // One look per TIMELINE_MS; a look that took longer is followed by the next one at once.
    for (let next = loadStart; !pollerStop && timeline.length < MAX_TIMELINE; ) {
      await delay(next - Date.now());
      next = Math.max(next + TIMELINE_MS, Date.now());
      if (pollerStop) break;
      timeline.push(
        await timelinePoint(statusAgent, gateway, hub, (Date.now() - loadStart) / 1000, puts * ROWS),
      );
    }
    statusAgent.destroy();
  };

  const polling = Promise.all([poller(), sampler()]);
  await Promise.all(Array.from({ length: ENTITIES }, (_, e) => client(e)));
  clearInterval(markerTimer);
  const loadEnd = Date.now();
  for (const service of services) service.sampleMemory();

  const acceptedCells = puts * CELLS_PER_PUT;
  const { count, countSeenAt, drained } = await drain(agent, hub, fromMs, acceptedCells, loadEnd, queries);
  // Markers still pending get a little longer (the poller runs on), within the same bound.
  while (pending.length > 0 && Date.now() - loadEnd < DRAIN_TIMEOUT_MS && drained) await delay(POLL_GAP_MS);
  pollerStop = true;
  await polling;
  // A marker never seen counts with the time it was waited for (a lower bound of its delay).
  const giveUp = Date.now();
  for (const marker of pending) {
    (marker.sentMs - loadStart < WARMUP_MS ? coldDelays : delays).push(giveUp - marker.sentMs);
  }
  agent.destroy();

  return {
    loadSeconds: (loadEnd - loadStart) / 1000,
    puts,
    rejected503,
    errors,
    statuses: Object.fromEntries([...statuses].sort()),
    putLatencyMs: percentiles(putLatencies),
    acceptedCells,
    queryableCells: Math.max(0, count),
    queryableAfterMs: countSeenAt - loadStart,
    drained,
    delays,
    coldDelays,
    markers,
    markersUnresolved: pending.length,
    queries,
    timeline,
    delayPoints,
  };
}

// ---------------------------------------------------------------------------------------------
// Configurations

interface Started {
  readonly probe: string;
  readonly hub: string;
  readonly gateway: string;
  /** Label → service, in the order they are stopped. */
  readonly services: readonly Service[];
}

async function startUp(dir: string, track: (s: Service) => void): Promise<Started> {
  const config = join(dir, "setup.yaml");
  writeFileSync(config, setupYaml("memory"));
  const up = new Service("up", ["up", "--config", config, "--data-dir", join(dir, "data")], dir);
  track(up);
  return {
    probe: await up.url("probe", "p1"),
    gateway: await up.url("gateway"),
    hub: await up.url("hub"),
    services: [up],
  };
}

/** Probe p1's link secret (DESIGN 5.4b); the probe process reads it from a 0600 file. */
const P1_LINK_SECRET = "bench-p1-link-secret-0123456789";

async function startProcesses(
  dir: string,
  track: (s: Service) => void,
  names: { stream: string; subjectPrefix: string },
): Promise<Started> {
  const config = join(dir, "setup.yaml");
  writeFileSync(
    config,
    setupYaml(`nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} }`),
  );
  // Owner-only, as the hub asks of a data dir (it logs a warning for one that others can read).
  for (const sub of ["hub", "gateway", "probe"]) mkdirSync(join(dir, sub), { mode: 0o700 });
  const hub = new Service(
    "hub",
    [
      "hub",
      "--config",
      config,
      "--bus",
      NATS_URL,
      "--data-dir",
      join(dir, "hub"),
      "--host",
      "127.0.0.1",
      "--port",
      "0",
    ],
    dir,
  );
  track(hub);
  const hubUrl = await hub.url("hub");
  const gateway = new Service(
    "gateway",
    [
      "gateway",
      "--config",
      config,
      "--data-dir",
      join(dir, "gateway"),
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--hub",
      hubUrl,
    ],
    dir,
  );
  track(gateway);
  const gatewayUrl = await gateway.url("gateway");
  const secretFile = join(dir, "probe", "p1.secret");
  writeFileSync(secretFile, P1_LINK_SECRET, { mode: 0o600 });
  const probe = new Service(
    "probe",
    [
      "probe",
      "--gateway",
      gatewayUrl,
      "--name",
      "p1",
      "--host",
      "127.0.0.1",
      "--link-secret-file",
      secretFile,
    ],
    join(dir, "probe"),
  );
  track(probe);
  return {
    probe: await probe.url("probe", "p1"),
    gateway: gatewayUrl,
    hub: hubUrl,
    services: [probe, gateway, hub],
  };
}

/** The gateway's publisher figures (GET /v1/status), for the report. */
async function publisherStatus(gateway: string): Promise<unknown> {
  const agent = new Agent({ keepAlive: false });
  const r = await send(agent, new URL("/v1/status", gateway), "GET", undefined, { keepBody: true });
  agent.destroy();
  if (r.status !== 200) return { status: r.status };
  const status = JSON.parse(r.body ?? "{}") as {
    publisher?: { published?: number; invalid?: number; sinks?: Record<string, unknown>[] };
  };
  return {
    published: status.publisher?.published,
    invalid: status.publisher?.invalid,
    sinks: (status.publisher?.sinks ?? []).map((s) => ({
      name: s.name,
      state: s.state,
      acknowledged: s.acknowledged,
      retries: s.retries,
      abandoned: s.abandoned,
    })),
  };
}

async function runConfiguration(name: "up" | "processes-nats"): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), `vigil-bench-${name}-`));
  const services: Service[] = [];
  const track = (s: Service): void => {
    services.push(s);
  };
  let admin: NatsAdmin | undefined;
  let started: Started | undefined;
  try {
    if (name === "up") started = await startUp(dir, track);
    else {
      const suffix = randomBytes(6).toString("hex");
      const names = { stream: `BENCH_E2E_${suffix}`, subjectPrefix: `bench.e2e.${suffix}` };
      admin = await NatsAdmin.open();
      admin.track(names.stream);
      started = await startProcesses(dir, track, names);
    }
    const m = await measure(started.probe, started.gateway, started.hub, started.services);
    const publisher = await publisherStatus(started.gateway);
    const exits: Record<string, unknown> = {};
    for (const service of started.services) {
      const exit = await service.stop();
      exits[service.label] = { code: exit.code, signal: exit.signal, stopMs: exit.stopMs };
    }
    const rss = Object.fromEntries(services.map((s) => [s.label, s.peakMiB()]));
    const delays = percentiles([...m.delays]);
    const cellsPerSecond = Math.round(m.queryableCells / (m.queryableAfterMs / 1000));
    return {
      bench: "end-to-end",
      configuration: name,
      entities: ENTITIES,
      rows: ROWS,
      numeric_columns: COLUMNS,
      load_seconds: round1(m.loadSeconds),
      puts: m.puts,
      puts_per_second: round1(m.puts / m.loadSeconds),
      rejected503: m.rejected503,
      errors: m.errors,
      statuses: m.statuses,
      put_latency_ms: m.putLatencyMs,
      accepted_cells: m.acceptedCells,
      accepted_cells_per_second: Math.round(m.acceptedCells / m.loadSeconds),
      queryable_cells: m.queryableCells,
      queryable_after_s: round1(m.queryableAfterMs / 1000),
      all_accepted_queryable: m.drained,
      cells_not_queryable: m.acceptedCells - m.queryableCells,
      cellsPerSecond,
      delay_markers: m.markers,
      markers_unresolved: m.markersUnresolved,
      delayP50Ms: delays.p50,
      delayP99Ms: delays.p99,
      delay_max_ms: delays.max,
      warmup_s: WARMUP_MS / 1000,
      cold_delay_max_ms: m.coldDelays.length > 0 ? Math.max(...m.coldDelays) : null,
      query_latency_ms: percentiles(m.queries.latencies),
      query_failures: m.queries.failures,
      ...(m.queries.lastFailure === undefined ? {} : { last_query_failure: m.queries.lastFailure }),
      peakRssMiB: rss,
      publisher,
      exits,
      log_warnings: Object.fromEntries(services.map((s) => [s.label, s.warnings])),
      log_errors: Object.fromEntries(services.map((s) => [s.label, s.errors])),
      log_problems: Object.fromEntries(services.map((s) => [s.label, Object.fromEntries(s.problems)])),
      backlog_max: {
        probe_rows: Math.max(0, ...m.timeline.map((t) => t.acceptedRows - t.published)),
        gateway_sink_messages: Math.max(0, ...m.timeline.map((t) => t.sinkBuffered)),
        published_not_stored_messages: Math.max(0, ...m.timeline.map((t) => t.published - t.stored)),
      },
      ...(TIMELINE ? { timeline: m.timeline, delays: m.delayPoints } : {}),
      goals: {
        // Only when every accepted cell became queryable: a stalled hub is no throughput.
        cellsPerSecond: m.drained && cellsPerSecond >= GOALS.cellsPerSecond,
        delayP99: m.delays.length > 0 && m.markersUnresolved === 0 && delays.p99 < GOALS.delayP99Ms,
        rss: Object.values(rss).every((v) => v < GOALS.rssMiB),
      },
    };
  } catch (error) {
    for (const service of services) console.error(service.report());
    throw error;
  } finally {
    for (const service of services) await service.stop();
    await admin?.cleanup().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Row `r`'s body in variant `v`: its 10 numeric cells, each different from the previous variant's. */
function rowBody(r: number, v: number): string {
  let body = `{"c0":${v * 1000 + r}`;
  for (let k = 1; k < COLUMNS; k += 1)
    body += `,"c${k}":${((v * 7919 + r * 104_729 + k * 31) % 100_000) / 100}`;
  return `${body}}`;
}

/** The probe's `vigil_probe_ingest_waited_requests_total`, or NaN when its metrics cannot be read. */
async function waitedRequests(agent: Agent, probe: string): Promise<number> {
  const r = await send(agent, new URL("/metrics", probe), "GET", undefined, { keepBody: true });
  if (r.status !== 200 || r.body === undefined) return Number.NaN;
  return parseExposition(r.body).value("vigil_probe_ingest_waited_requests_total") ?? Number.NaN;
}

/** The `up-rows` configuration (see the module comment): row updates through `vigil up`. */
async function runRowPuts(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-up-rows-"));
  const services: Service[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  try {
    const started = await startUp(dir, (s) => services.push(s));
    const queries: QueryStats = { latencies: [], failures: 0 };
    const fromMs = Date.now() - 60_000;
    const dataview = new URL(`/v1/managedEntity/${entityName(0)}/sampler/s/dataview/dv`, started.probe);
    const first = await send(agent, dataview, "PUT", dataviewBody(0, 0, Date.now()), { keepBody: true });
    if (first.status !== 200) throw new Error(`the dataview PUT was answered ${first.status}: ${first.body}`);
    const requests: LoadRequest[] = [];
    for (let v = 0; v < ROW_PUT.variants; v += 1) {
      for (let r = 0; r < ROWS; r += 1) {
        requests.push({ path: `${dataview.pathname}/row/r${r}`, body: Buffer.from(rowBody(r, v)) });
      }
    }
    const up = started.services[0] as Service;
    const cpuBefore = up.cpuSeconds();
    const result = await loadInChild(
      { base: new URL(started.probe).origin, method: "PUT", requests },
      { seconds: SECONDS, concurrency: ROW_PUT.connections, maxRequests: ROW_PUT.maxRequests },
    );
    const loadEnd = Date.now();
    // CPU of `vigil up` per answered PUT during the load (the hub may still be storing the last
    // ones; the drain below is not counted): steadier than the rate when other work shares the cores.
    const cpuUsPerPut = Math.round(((up.cpuSeconds() - cpuBefore) * 1e6) / Math.max(1, result.requests));
    for (const service of services) service.sampleMemory();
    const waited = await waitedRequests(agent, started.probe);
    const acceptedCells = CELLS_PER_PUT + result.ok * COLUMNS;
    const { count, drained } = await drain(agent, started.hub, fromMs, acceptedCells, loadEnd, queries);
    const rejected = result.statuses["503"] ?? 0;
    const rejectedShare = result.requests === 0 ? 0 : rejected / result.requests;
    const failureBodies = Object.keys(result.failureBodies);
    const namesLimit = failureBodies.every((body) => /limit/i.test(body));
    for (const service of services) await service.stop();
    const rss = Object.fromEntries(services.map((s) => [s.label, s.peakMiB()]));
    const perSecond = Math.round(result.perSecond);
    const { goals } = ROW_PUT;
    return {
      bench: "end-to-end",
      configuration: "up-rows",
      connections: ROW_PUT.connections,
      rows: ROWS,
      numeric_columns: COLUMNS,
      load_seconds: round1(result.seconds),
      requests: result.requests,
      accepted_per_second: perSecond,
      accepted_cells_per_second: perSecond * COLUMNS,
      rejected503: rejected,
      rejected_share: Math.round(rejectedShare * 10_000) / 10_000,
      // Requests the probe held for room in its outgoing buffer (taken later, or refused after 250 ms).
      waited_share: Math.round((waited / Math.max(1, result.requests)) * 10_000) / 10_000,
      statuses: result.statuses,
      put_latency_ms: result.latencyMs,
      up_cpu_us_per_put: cpuUsPerPut,
      client_cpu_us_per_put: Math.round(
        ((result.clientCpuSeconds ?? 0) * 1e6) / Math.max(1, result.requests),
      ),
      failure_bodies: result.failureBodies,
      accepted_cells: acceptedCells,
      queryable_cells: Math.max(0, count),
      all_accepted_queryable: drained,
      peakRssMiB: rss,
      log_problems: Object.fromEntries(services.map((s) => [s.label, Object.fromEntries(s.problems)])),
      table: [
        [
          "end to end (up-rows): row PUTs/s accepted",
          perSecond,
          "",
          "",
          `≥ ${goals.perSecond}`,
          perSecond >= goals.perSecond,
        ],
        [
          "end to end (up-rows): share answered 503",
          `${round1(rejectedShare * 100)} %`,
          "",
          "",
          `< ${goals.rejectedShare * 100} %`,
          rejectedShare < goals.rejectedShare,
        ],
        [
          "end to end (up-rows): PUT p99 ms",
          result.latencyMs.p99,
          "",
          "",
          `< ${goals.p99Ms}`,
          result.latencyMs.p99 < goals.p99Ms,
        ],
        ["end to end (up-rows): every refusal names its limit", namesLimit, "", "", "true", namesLimit],
        ["end to end (up-rows): every accepted cell queryable", drained, "", "", "true", drained],
      ],
    };
  } catch (error) {
    for (const service of services) console.error(service.report());
    throw error;
  } finally {
    agent.destroy();
    for (const service of services) await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

if (!existsSync(VIGIL_BIN)) {
  console.error(`end-to-end: ${VIGIL_BIN} is missing; build first (npm run build)`);
  process.exit(1);
}
if (CPU_PROF_DIR !== undefined) mkdirSync(CPU_PROF_DIR, { recursive: true });
let failed = false;
const configurations: ("up" | "processes-nats" | "up-rows")[] = [];
if (ONLY === undefined || ONLY === "up") configurations.push("up");
if (ONLY === undefined || ONLY === "nats") configurations.push("processes-nats");
if (ONLY === undefined || ONLY === "rows") configurations.push("up-rows");
const note = serviceEnvNote();
if (note !== undefined) console.error(note);
for (const name of configurations) {
  if (name === "processes-nats" && !(await natsReachable())) {
    console.log(
      JSON.stringify({ bench: "end-to-end", configuration: name, skipped: `${NATS_URL} not reachable` }),
    );
    continue;
  }
  try {
    console.log(JSON.stringify(name === "up-rows" ? await runRowPuts() : await runConfiguration(name)));
  } catch (error) {
    failed = true;
    console.log(JSON.stringify({ bench: "end-to-end", configuration: name, error: String(error) }));
  }
}
process.exit(failed ? 1 : 0);
