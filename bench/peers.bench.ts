/**
 * vigil beside VictoriaMetrics (single-node, Debian's `victoria-metrics` package: scripts/peers.sh
 * installs it) on the same data: one day at 10 s spacing of R rows × 10 numeric columns
 * (bench/peers-data.ts), R from VIGIL_BENCH_PEERS_ROWS (default `20,100`: 1 728 000 and 8 640 000
 * samples; `2` in a smoke run). Skipped, with a line saying so, when the binary is not on the
 * machine; this bench installs nothing.
 *
 * Each subject is a real server process of its own, started fresh for each round on a temp dir and
 * a loopback port, and is the only one running while it is measured:
 *  - vigil: `vigil hub` (dist/cli/main.js, security on, one application key with the read and write
 *    roles, a bearer token), the embedded store; and, when 127.0.0.1:5432 answers, the same hub on
 *    a throwaway PostgreSQL database (VIGIL_BENCH_PEERS_PG=0 leaves it out);
 *  - VictoriaMetrics: `victoria-metrics -storageDataPath TEMP -httpListenAddr 127.0.0.1:PORT`, its
 *    caches of query results off.
 * A round runs vigil (embedded), VictoriaMetrics, vigil (PostgreSQL) in turn; VIGIL_BENCH_PEERS_ROUNDS
 * rounds (default VIGIL_BENCH_ROUNDS, else 3); the figures are medians over the rounds:
 *  - backfill samples/s: from the first byte sent until a count query answers every sample. vigil
 *    takes NDJSON bodies of 10 000 `table` messages through `POST /v0/messages`, VictoriaMetrics
 *    `/api/v1/import` bodies of 20 series (JSON lines) and then `/internal/force_flush`; each on one
 *    connection, one body after another;
 *  - server CPU seconds to queryable: utime + stime of the server process (/proc/PID/stat), and
 *    with PostgreSQL of the database's backends serving the hub too, over the same span and on
 *    until the hub's store has compacted every sample into chunks (the day is in the past, so all
 *    of its hours are closed: no row partition left holding data); the query and the bytes follow;
 *  - the PT5M query of every series (avg, max, count, p95 per row and column, 288 buckets): vigil's
 *    `POST /v0/metrics/query` grouped per row, VictoriaMetrics' `/api/v1/query_range` with step 5m
 *    of `avg_over_time`, `max_over_time`, `count_over_time` and `quantile_over_time(0.95, …)` over
 *    [5m] in one `union`; ms per full answer, the median of QUERY_RUNS after one warm-up (on
 *    PostgreSQL after a CHECKPOINT, as store-query.bench.ts does);
 *  - bytes on disk per sample: vigil's store files after the hub stopped (DuckDB checkpoints on
 *    close), or the PostgreSQL database's growth after a CHECKPOINT (WAL aside); VictoriaMetrics'
 *    whole storage dir after a force_flush, once its size has held still for 5 s (its parts reach
 *    the disk and merge for a while after a flush) and it stopped; apparent sizes, as `du -b`;
 *  - peak RSS of the server process (VmHWM, and VmRSS polled): up to the moment every sample is
 *    queryable, and over the whole round (the query too).
 * Every round cross-checks the answers of the PT5M query: the same series and buckets, counts
 * equal, averages within 1e-9 relative; the bench fails (exit 1) when they differ. VictoriaMetrics
 * interpolates its quantile where vigil takes the nearest rank, so p95s are reported, not checked.
 * 127.0.0.1 only; bounded in count and time; every process it starts is stopped and every temp dir
 * and database removed, also when a part fails.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import postgres from "postgres";
import { freePort } from "../test/helpers/free-port.js";
import { VIGIL_BIN } from "../test/helpers/vigil-process.js";
import { median } from "./load.js";
import {
  type BucketFigures,
  type CrossCheck,
  crossCheck,
  DAY_STEPS,
  fromVigil,
  fromVm,
  type PeersShape,
  sampleCount,
  type VigilAnswer,
  type VmAnswer,
  vigilBodies,
  vigilCountQuery,
  vigilMetricQuery,
  vmBodies,
  vmCountParams,
  vmRangeParams,
} from "./peers-data.js";
import { PG_UNREACHABLE, withBenchDatabase } from "./pg-database.js";
import { PeakMemory, serviceEnv, serviceEnvNote } from "./process-memory.js";
import { benchRounds, SMOKE } from "./settings.js";

const MESSAGES_PER_POST = 10_000; // as bench/backfill.bench.ts
const SERIES_PER_IMPORT = 20; // ≈ 4 MB a body, about a vigil body's size
const QUERY_RUNS = 3; // timed, after one warm-up
const START_TIMEOUT_MS = 60_000;
const QUERYABLE_TIMEOUT_MS = 300_000; // from the last body to a full count
const POLL_MS = 100;
const KILL_AFTER_MS = 15_000;
const RSS_POLL_MS = 250;
const SETTLE_STABLE_MS = 5_000; // VictoriaMetrics' dir size unchanged this long counts as merged
const SETTLE_MAX_MS = 30_000;
const COMPACTED_TIMEOUT_MS = 600_000; // from a full count to every sample compacted (PostgreSQL)
const RETRY_503_MAX = 20;
const RETRY_AFTER_CAP_MS = 5_000;
const LOG_TAIL_CHARS = 8_192;

const CLIENT_ID = "peers-bench";
const CLIENT_SECRET = "peers-bench-secret-0123456789";

function positiveInts(name: string, fallback: readonly number[]): number[] {
  const text = process.env[name];
  if (text === undefined || text === "") return [...fallback];
  const list = text.split(",").map((t) => Number(t.trim()));
  if (list.some((n) => !Number.isInteger(n) || n <= 0))
    throw new Error(`${name} must be positive whole numbers separated by commas, not '${text}'`);
  return list;
}

const ROW_SIZES = positiveInts("VIGIL_BENCH_PEERS_ROWS", SMOKE ? [2] : [20, 100]);
const ROUNDS = positiveInts("VIGIL_BENCH_PEERS_ROUNDS", [benchRounds(3)])[0] as number;
/** `VIGIL_BENCH_CPU_PROF=DIR`: every vigil hub runs with `node --cpu-prof` (bench/profile-summary.ts reads it). */
const PROFILE =
  process.env.VIGIL_BENCH_CPU_PROF === undefined
    ? []
    : ["--cpu-prof", "--cpu-prof-dir", process.env.VIGIL_BENCH_CPU_PROF];
/** `VIGIL_BENCH_PEERS_KEEP=DIR`: the DuckDB hub's data dir of each size is copied to DIR/rows-R after its stop. */
const KEEP_DIR = process.env.VIGIL_BENCH_PEERS_KEEP;

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round1 = (v: number): number => Math.round(v * 10) / 10;
const round2 = (v: number): number => Math.round(v * 100) / 100;
const ratio = (a: number | undefined, b: number | undefined): number | null =>
  a === undefined || b === undefined || b === 0 ? null : Number((a / b).toFixed(2));

// ---------------------------------------------------------------------------------------------
// The VictoriaMetrics binary

function findVictoriaMetrics(): string | undefined {
  const given = process.env.VIGIL_BENCH_VM_BIN;
  if (given !== undefined && given !== "") return existsSync(given) ? given : undefined;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const path = join(dir, "victoria-metrics");
    if (dir !== "" && existsSync(path)) return path;
  }
  return existsSync("/usr/bin/victoria-metrics") ? "/usr/bin/victoria-metrics" : undefined;
}

/** The installed package's version, for a build that reports none itself (Debian's does not). */
function packageVersion(): string {
  try {
    const v = execFileSync("dpkg-query", ["-W", `-f=\${Version}`, "victoria-metrics"], { encoding: "utf8" });
    return v === "" ? "unknown" : `${v} (Debian package)`;
  } catch {
    return "unknown";
  }
}

// ---------------------------------------------------------------------------------------------
// Server processes

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of process `pid` in seconds (every thread), undefined once it is gone. */
function cpuSecondsOf(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

const live = new Set<ChildProcess>();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of live) child.kill("SIGKILL");
    process.exit(130);
  });
}
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** A server child: its log tail, its CPU time and its memory peaks. */
class Server {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private logTail = "";
  private readonly memory = new PeakMemory(() => this.pid);
  private readonly timer: NodeJS.Timeout;
  private readonly lineWaiters = new Set<(line: string) => void>();

  constructor(
    readonly label: string,
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    live.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.on("exit", (code) => {
        live.delete(this.child);
        clearInterval(this.timer);
        resolve(code);
      }),
    );
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      this.tail(`${line}\n`);
      for (const wake of this.lineWaiters) wake(line);
    });
    this.child.stderr!.on("data", (chunk: Buffer) => this.tail(chunk.toString()));
    this.timer = setInterval(() => this.sampleMemory(), RSS_POLL_MS);
  }

  get pid(): number {
    return this.child.pid as number;
  }

  private tail(text: string): void {
    this.logTail = (this.logTail + text).slice(-LOG_TAIL_CHARS);
  }

  /** Resolves with the first stdout line `match` accepts from now on; rejects on exit or timeout. */
  waitForLine<T>(match: (line: string) => T | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.lineWaiters.delete(wake);
        reject(new Error(`${this.label} did not start in time:\n${this.logTail}`));
      }, START_TIMEOUT_MS);
      const wake = (line: string): void => {
        const found = match(line);
        if (found === undefined) return;
        clearTimeout(timer);
        this.lineWaiters.delete(wake);
        resolve(found);
      };
      this.lineWaiters.add(wake);
      void this.exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${this.label} exited (${code}) before it was ready:\n${this.logTail}`));
      });
    });
  }

  cpuSeconds(): number {
    const s = cpuSecondsOf(this.pid);
    if (s === undefined) throw new Error(`${this.label} is gone:\n${this.logTail}`);
    return s;
  }

  sampleMemory(): void {
    this.memory.sample();
  }

  peakRssMiB(): number {
    this.sampleMemory();
    return this.memory.peakMiB();
  }

  report(): string {
    return `--- last output of ${this.label}\n${this.logTail}`;
  }

  /** SIGTERM (a graceful stop: the hub closes its store), SIGKILL after KILL_AFTER_MS. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), KILL_AFTER_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Bytes of a directory's files (apparent sizes, as `du -b`), or of the files `keep` accepts.
 * Apparent rather than allocated: a file just written may have no blocks allocated yet, and a
 * block per small file would weigh a store of many small files by the file system's block size.
 */
function diskBytes(path: string, keep: (name: string) => boolean = () => true): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) total += diskBytes(full);
    else if (entry.isFile() && keep(entry.name)) total += lstatSync(full).size;
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// HTTP (a connection per request: a server's keep-alive timeout never meets a reused socket)

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

function http(
  url: string,
  method: "GET" | "POST",
  headers: Readonly<Record<string, string>> = {},
  body?: string | Buffer,
): Promise<Answer> {
  const target = new URL(url);
  if (target.hostname !== "127.0.0.1") throw new Error(`benches target 127.0.0.1 only, not ${url}`);
  return new Promise((resolve, reject) => {
    const req = request(target, { method, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString(),
          headers: res.headers,
        }),
      );
      res.on("error", reject);
    });
    req.setTimeout(QUERYABLE_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on("error", reject);
    req.end(body);
  });
}

function expectOk(what: string, answer: Answer, status = 200): void {
  if (answer.status !== status)
    throw new Error(`${what} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
}

/** Polls `count` until it answers `expected`, within QUERYABLE_TIMEOUT_MS. */
async function untilCount(what: string, expected: number, count: () => Promise<number>): Promise<void> {
  const deadline = Date.now() + QUERYABLE_TIMEOUT_MS;
  let last = -1;
  for (;;) {
    last = await count();
    if (last === expected) return;
    if (last > expected) throw new Error(`${what} counts ${last} samples, more than the ${expected} sent`);
    if (Date.now() > deadline)
      throw new Error(
        `${what} counted ${last} of ${expected} samples ${QUERYABLE_TIMEOUT_MS} ms after the load`,
      );
    await delay(POLL_MS);
  }
}

// ---------------------------------------------------------------------------------------------
// One subject's round

/** The figures of one subject in one round. */
interface Figures {
  readonly samplesPerS: number;
  /** Of the backfill's wall time: sending the bodies, then waiting for the full count. */
  readonly sendSeconds: number;
  readonly waitSeconds: number;
  readonly cpuSeconds: number;
  readonly queryMs: number;
  readonly bytesPerSample: number;
  /** Up to the moment every sample was queryable, then over the whole round (the query too). */
  readonly loadPeakRssMiB: number;
  readonly peakRssMiB: number;
}

/** What one round measured, in the units it was measured in. */
interface Measured {
  /** `performance.now()` when the first body was sent, and when the last one was answered. */
  readonly started: number;
  readonly sent: number;
  /** From the first body sent until the count query answered every sample. */
  readonly seconds: number;
  readonly cpu: number;
  readonly queryMs: number;
  readonly bytes: number;
  readonly loadPeakRssMiB: number;
  readonly peakRssMiB: number;
}

/** A round's figures from what it measured. */
function figuresOf(data: Data, m: Measured): Figures {
  return {
    samplesPerS: data.samples / m.seconds,
    sendSeconds: (m.sent - m.started) / 1000,
    waitSeconds: m.seconds - (m.sent - m.started) / 1000,
    cpuSeconds: m.cpu,
    queryMs: m.queryMs,
    bytesPerSample: m.bytes / data.samples,
    loadPeakRssMiB: m.loadPeakRssMiB,
    peakRssMiB: m.peakRssMiB,
  };
}

interface Data {
  readonly shape: PeersShape;
  readonly samples: number;
  readonly vigil: readonly Buffer[];
  readonly vm: readonly Buffer[];
}

/** Times `ask` once to warm up, then QUERY_RUNS times: the median ms and the last answer. */
async function timedQuery<T>(ask: () => Promise<T>): Promise<{ ms: number; answer: T }> {
  let answer = await ask();
  const times: number[] = [];
  for (let i = 0; i < QUERY_RUNS; i += 1) {
    const started = performance.now();
    answer = await ask();
    times.push(performance.now() - started);
  }
  return { ms: median(times), answer };
}

function hubSetup(): string {
  return `gateway: { name: GW }
hub:
  port: 0
  security:
    enabled: true
    tokenLifetime: 86400
    appKeys:
      - { clientId: ${CLIENT_ID}, clientSecret: "${CLIENT_SECRET}", roles: [read, write] }
`;
}

/** The PostgreSQL side of a hub on it: its database's size, and the CPU of its backends. */
interface PgSide {
  readonly url: string;
  readonly emptyBytes: number;
}

async function pgBackendsCpu(sql: postgres.Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    const s = cpuSecondsOf(pid);
    if (s !== undefined) out.set(pid, s);
  }
  return out;
}

/**
 * Until the hub's PostgreSQL store has compacted every sample (postgres-compaction.ts): the row
 * partitions hold no data and have given their space back (a compacted closed week is truncated).
 */
async function untilCompacted(sql: postgres.Sql): Promise<void> {
  const deadline = Date.now() + COMPACTED_TIMEOUT_MS;
  for (;;) {
    const [row] = await sql<{ bytes: string }[]>`
      SELECT coalesce(sum(pg_relation_size(i.inhrelid)), 0)::text AS bytes
      FROM pg_inherits i WHERE i.inhparent = 'samples'::regclass`;
    if (Number(row?.bytes ?? 0) === 0) return;
    if (Date.now() > deadline)
      throw new Error(`vigil did not compact its samples in ${COMPACTED_TIMEOUT_MS} ms`);
    await delay(POLL_MS);
  }
}

/** vigil: a hub on a fresh data dir (and `pg`'s database when given). */
async function vigilRound(data: Data, pg?: PgSide): Promise<{ figures: Figures; answer: VigilAnswer }> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-peers-"));
  const sql = pg === undefined ? undefined : postgres(pg.url, { max: 1, onnotice: () => undefined });
  let hub: Server | undefined;
  try {
    const dataDir = join(dir, "hub");
    mkdirSync(dataDir, { mode: 0o700 });
    const config = join(dir, "setup.yaml");
    writeFileSync(config, hubSetup());
    const args = [VIGIL_BIN, "hub", "--config", config, "--data-dir", dataDir, "--host", "127.0.0.1"];
    args.unshift(...PROFILE);
    args.push("--port", "0", ...(pg === undefined ? [] : ["--store", pg.url]));
    hub = new Server(
      pg === undefined ? "vigil hub" : "vigil hub (PostgreSQL)",
      process.execPath,
      args,
      serviceEnv(),
    );
    const server = hub;
    const base = await hub.waitForLine((line) => {
      try {
        const l = JSON.parse(line) as { msg?: unknown; service?: unknown; url?: unknown };
        return l.msg === "listening" && l.service === "hub" && typeof l.url === "string" ? l.url : undefined;
      } catch {
        return undefined;
      }
    });
    const basic = Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64");
    const tokenAnswer = await http(`${base}/token`, "GET", { authorization: `Basic ${basic}` });
    expectOk("GET /token", tokenAnswer);
    const auth = {
      authorization: `Bearer ${(JSON.parse(tokenAnswer.text) as { access_token: string }).access_token}`,
    };
    const query = async (body: unknown): Promise<VigilAnswer> => {
      const a = await http(
        `${base}/v0/metrics/query`,
        "POST",
        { ...auth, "content-type": "application/json" },
        JSON.stringify(body),
      );
      expectOk("POST /v0/metrics/query", a);
      return JSON.parse(a.text) as VigilAnswer;
    };
    const count = async (): Promise<number> =>
      (await query(vigilCountQuery(data.shape))).data.reduce(
        (n, d) => n + (d.metrics.all?.["svc.count"] ?? 0),
        0,
      );

    const backendsBefore = sql === undefined ? new Map<number, number>() : await pgBackendsCpu(sql);
    const cpuBefore = hub.cpuSeconds();
    const started = performance.now();
    let stored = 0;
    for (const body of data.vigil) {
      for (let attempt = 0; ; attempt += 1) {
        const a = await http(
          `${base}/v0/messages`,
          "POST",
          { ...auth, "content-type": "application/x-ndjson" },
          body,
        );
        if (a.status === 503 && attempt < RETRY_503_MAX) {
          // Busy (memory or a backfill beside it): the hub asks for the body again later.
          await delay(Math.min(RETRY_AFTER_CAP_MS, 1000 * Number(a.headers["retry-after"] ?? 1)));
          continue;
        }
        expectOk("POST /v0/messages", a);
        const r = JSON.parse(a.text) as { accepted?: number; duplicates?: number; rejected?: unknown[] };
        if ((r.rejected?.length ?? 0) > 0)
          throw new Error(`POST /v0/messages rejected: ${a.text.slice(0, 500)}`);
        // Duplicates only after a 503: the parts stored before it.
        stored += (r.accepted ?? 0) + (attempt > 0 ? (r.duplicates ?? 0) : 0);
        break;
      }
    }
    const messages = data.shape.rows * data.shape.steps;
    if (stored !== messages) throw new Error(`vigil stored ${stored} of ${messages} messages`);
    const sent = performance.now();
    await untilCount("vigil", data.samples, count);
    const seconds = (performance.now() - started) / 1000;
    const loadPeakRssMiB = hub.peakRssMiB();
    if (sql !== undefined) {
      const compacting = performance.now();
      await untilCompacted(sql);
      console.log(
        `# vigil (PostgreSQL): compacted ${round1((performance.now() - compacting) / 1000)} s after a full count`,
      );
    }
    let cpu = hub.cpuSeconds() - cpuBefore;
    if (sql !== undefined) {
      for (const [pid, s] of await pgBackendsCpu(sql)) cpu += s - (backendsBefore.get(pid) ?? 0);
    }

    // As in store-query: a checkpoint first, so no spread checkpoint of the backfill's writes runs
    // under the timed query.
    if (sql !== undefined) await sql`CHECKPOINT`;
    const q = await timedQuery(() => query(vigilMetricQuery(data.shape)));
    const peakRssMiB = hub.peakRssMiB();
    let bytes: number;
    if (pg !== undefined && sql !== undefined) {
      await sql`CHECKPOINT`;
      const [row] = await sql<{ size: string }[]>`SELECT pg_database_size(current_database())::text AS size`;
      bytes = Number(row?.size ?? 0) - pg.emptyBytes;
      await server.stop();
    } else {
      await server.stop(); // the store checkpoints as it closes
      bytes = diskBytes(dataDir, (name) => name.startsWith("vigil.duckdb"));
      if (KEEP_DIR !== undefined)
        cpSync(dataDir, join(KEEP_DIR, `rows-${data.shape.rows}`), { recursive: true });
    }
    return {
      figures: figuresOf(data, {
        started,
        sent,
        seconds,
        cpu,
        queryMs: q.ms,
        bytes,
        loadPeakRssMiB,
        peakRssMiB,
      }),
      answer: q.answer,
    };
  } catch (error) {
    if (hub !== undefined) console.error(hub.report());
    throw error;
  } finally {
    await hub?.stop();
    await sql?.end({ timeout: 5 });
    rmSync(dir, { recursive: true, force: true });
  }
}

/** VictoriaMetrics: a fresh storage dir and port. */
async function vmRound(
  bin: string,
  data: Data,
): Promise<{ figures: Figures; answer: VmAnswer; version: string }> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-peers-vm-"));
  let vm: Server | undefined;
  try {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    vm = new Server("victoria-metrics", bin, [
      `-storageDataPath=${dir}`,
      `-httpListenAddr=127.0.0.1:${port}`,
      "-retentionPeriod=100y", // the day is in the past: the default month would drop it
      "-search.latencyOffset=0",
      "-search.disableCache", // every timed query computes its answer
      "-loggerLevel=ERROR",
    ]);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const ready = await http(`${base}/health`, "GET").catch(() => undefined);
      if (ready?.status === 200) break;
      if (vm.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`victoria-metrics did not start:\n${vm.report()}`);
      await delay(POLL_MS);
    }
    const metrics = await http(`${base}/metrics`, "GET");
    const version = /vm_app_version\{[^}]*version="([^"]+)"/.exec(metrics.text)?.[1] ?? packageVersion();
    const get = async (path: string, params: Record<string, string>): Promise<Answer> => {
      const a = await http(`${base}${path}?${new URLSearchParams(params).toString()}`, "GET");
      expectOk(`GET ${path}`, a);
      return a;
    };
    const count = async (): Promise<number> => {
      const a = JSON.parse((await get("/api/v1/query", vmCountParams(data.shape))).text) as {
        data: { result: { value: [number, string] }[] };
      };
      return Number(a.data.result[0]?.value[1] ?? 0);
    };

    const cpuBefore = vm.cpuSeconds();
    const started = performance.now();
    for (const body of data.vm)
      expectOk("POST /api/v1/import", await http(`${base}/api/v1/import`, "POST", {}, body), 204);
    const sent = performance.now();
    expectOk("GET /internal/force_flush", await http(`${base}/internal/force_flush`, "GET"));
    await untilCount("VictoriaMetrics", data.samples, count);
    const seconds = (performance.now() - started) / 1000;
    const loadPeakRssMiB = vm.peakRssMiB();
    const cpu = vm.cpuSeconds() - cpuBefore;

    const q = await timedQuery(
      async () => JSON.parse((await get("/api/v1/query_range", vmRangeParams(data.shape))).text) as VmAnswer,
    );
    expectOk("GET /internal/force_flush", await http(`${base}/internal/force_flush`, "GET"));
    // Parts reach the disk, and background merges rewrite them, for a while after a flush: wait
    // until the size holds still, then stop (a graceful stop writes what is left) and measure.
    const settleBy = Date.now() + SETTLE_MAX_MS;
    let settled = diskBytes(dir);
    let since = Date.now();
    while (Date.now() - since < SETTLE_STABLE_MS && Date.now() < settleBy) {
      await delay(500);
      const now = diskBytes(dir);
      if (now !== settled) {
        settled = now;
        since = Date.now();
      }
    }
    const peakRssMiB = vm.peakRssMiB();
    await vm.stop();
    const bytes = diskBytes(dir);
    return {
      figures: figuresOf(data, {
        started,
        sent,
        seconds,
        cpu,
        queryMs: q.ms,
        bytes,
        loadPeakRssMiB,
        peakRssMiB,
      }),
      answer: q.answer,
      version,
    };
  } catch (error) {
    if (vm !== undefined) console.error(vm.report());
    throw error;
  } finally {
    await vm?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The run

type Subject = "vigil_duckdb" | "victoriametrics" | "vigil_postgres";

interface Summary {
  readonly samples_per_s: number;
  readonly cpu_s_to_queryable: number;
  readonly query_ms: number;
  readonly bytes_per_sample: number;
  readonly load_peak_rss_mib: number;
  readonly peak_rss_mib: number;
  readonly runs: readonly Figures[];
}

function summary(runs: readonly Figures[]): Summary {
  const m = (f: (x: Figures) => number): number => median(runs.map(f));
  return {
    samples_per_s: Math.round(m((x) => x.samplesPerS)),
    cpu_s_to_queryable: round2(m((x) => x.cpuSeconds)),
    query_ms: round1(m((x) => x.queryMs)),
    bytes_per_sample: round2(m((x) => x.bytesPerSample)),
    load_peak_rss_mib: round1(m((x) => x.loadPeakRssMiB)),
    peak_rss_mib: round1(m((x) => x.peakRssMiB)),
    runs: runs.map((x) => ({
      samplesPerS: Math.round(x.samplesPerS),
      sendSeconds: round2(x.sendSeconds),
      waitSeconds: round2(x.waitSeconds),
      cpuSeconds: round2(x.cpuSeconds),
      queryMs: round1(x.queryMs),
      bytesPerSample: round2(x.bytesPerSample),
      loadPeakRssMiB: x.loadPeakRssMiB,
      peakRssMiB: x.peakRssMiB,
    })),
  };
}

function checkSummary(checks: readonly CrossCheck[]): Record<string, number> {
  return {
    buckets: checks[0]?.buckets ?? 0,
    samples: checks[0]?.samples ?? 0,
    avg_max_rel_diff: Math.max(...checks.map((c) => c.avgMaxRelDiff)),
    max_equal_share: Math.min(...checks.map((c) => c.maxEqual / Math.max(1, c.buckets))),
    p95_equal_share: round2(Math.min(...checks.map((c) => c.p95Equal / Math.max(1, c.buckets)))),
    p95_max_rel_diff: Number(Math.max(...checks.map((c) => c.p95MaxRelDiff)).toPrecision(3)),
  };
}

async function runSize(bin: string, rows: number): Promise<Record<string, unknown>> {
  const shape: PeersShape = { rows, steps: DAY_STEPS };
  const generated = performance.now();
  const data: Data = {
    shape,
    samples: sampleCount(shape),
    vigil: vigilBodies(shape, MESSAGES_PER_POST).map((b) => Buffer.from(b)),
    vm: vmBodies(shape, SERIES_PER_IMPORT).map((b) => Buffer.from(b)),
  };
  console.error(
    `peers: ${rows} rows × 10 columns × ${DAY_STEPS} instants = ${data.samples} samples ` +
      `(${data.vigil.length} vigil bodies, ${data.vm.length} VictoriaMetrics bodies, ` +
      `generated in ${Math.round(performance.now() - generated)} ms); ${ROUNDS} rounds`,
  );
  const runs: Record<Subject, Figures[]> = { vigil_duckdb: [], victoriametrics: [], vigil_postgres: [] };
  const checks: { duckdb: CrossCheck[]; postgres: CrossCheck[] } = { duckdb: [], postgres: [] };
  let version = "unknown";
  let pgSkipped = process.env.VIGIL_BENCH_PEERS_PG === "0" ? "VIGIL_BENCH_PEERS_PG=0" : undefined;
  for (let round = 0; round < ROUNDS; round += 1) {
    const duck = await vigilRound(data);
    runs.vigil_duckdb.push(duck.figures);
    const vm = await vmRound(bin, data);
    runs.victoriametrics.push(vm.figures);
    version = vm.version;
    const vmBuckets: Map<string, BucketFigures> = fromVm(vm.answer);
    checks.duckdb.push(crossCheck(fromVigil(duck.answer), vmBuckets));
    if (pgSkipped === undefined) {
      const pg = await withBenchDatabase(async (url) => {
        const sql = postgres(url, { max: 1, onnotice: () => undefined });
        const [row] = await sql<
          { size: string }[]
        >`SELECT pg_database_size(current_database())::text AS size`;
        await sql.end({ timeout: 5 });
        return vigilRound(data, { url, emptyBytes: Number(row?.size ?? 0) });
      });
      if (pg === undefined) pgSkipped = PG_UNREACHABLE;
      else {
        runs.vigil_postgres.push(pg.figures);
        checks.postgres.push(crossCheck(fromVigil(pg.answer), vmBuckets));
      }
    }
    console.error(
      `peers: ${rows} rows, round ${round + 1}/${ROUNDS}: ` +
        (["vigil_duckdb", "victoriametrics", "vigil_postgres"] as const)
          .filter((s) => runs[s][round] !== undefined)
          .map((s) => {
            const f = runs[s][round] as Figures;
            return `${s} ${Math.round(f.samplesPerS)} samples/s, ${round2(f.cpuSeconds)} cpu s, ${round1(f.queryMs)} ms query`;
          })
          .join("; "),
    );
  }
  const vigil = summary(runs.vigil_duckdb);
  const vm = summary(runs.victoriametrics);
  const pg = runs.vigil_postgres.length > 0 ? summary(runs.vigil_postgres) : undefined;
  const label = `peers ${rows} rows (${(data.samples / 1e6).toFixed(2)} M samples)`;
  const figureRows: [string, keyof Omit<Summary, "runs">][] = [
    ["backfill samples/s", "samples_per_s"],
    ["server CPU s to queryable", "cpu_s_to_queryable"],
    ["PT5M query ms (avg/max/count/p95 per series)", "query_ms"],
    ["bytes on disk per sample", "bytes_per_sample"],
    ["peak RSS MiB to queryable", "load_peak_rss_mib"],
    ["peak RSS MiB", "peak_rss_mib"],
  ];
  const table = figureRows.flatMap(([name, key]) => [
    [
      `${label}: ${name}, vigil DuckDB`,
      vigil[key],
      `${vm[key]} VictoriaMetrics`,
      ratio(vigil[key], vm[key]),
      "",
      "",
    ],
    ...(pg === undefined
      ? []
      : [
          [
            `${label}: ${name}, vigil PostgreSQL`,
            pg[key],
            `${vm[key]} VictoriaMetrics`,
            ratio(pg[key], vm[key]),
            "",
            "",
          ],
        ]),
  ]);
  if (pgSkipped !== undefined)
    table.push([`${label}: vigil PostgreSQL`, `skipped: ${pgSkipped}`, "", "", "", ""]);
  return {
    bench: "peers",
    rows,
    columns: 10,
    samples: data.samples,
    rounds: ROUNDS,
    query_runs: QUERY_RUNS,
    victoriametrics_version: version,
    vigil_duckdb: vigil,
    victoriametrics: vm,
    vigil_postgres: pg ?? { skipped: pgSkipped },
    ratios_vigil_duckdb_over_vm: Object.fromEntries(figureRows.map(([, k]) => [k, ratio(vigil[k], vm[k])])),
    ...(pg === undefined
      ? {}
      : {
          ratios_vigil_postgres_over_vm: Object.fromEntries(
            figureRows.map(([, k]) => [k, ratio(pg[k], vm[k])]),
          ),
        }),
    cross_check: {
      duckdb: checkSummary(checks.duckdb),
      ...(checks.postgres.length > 0 ? { postgres: checkSummary(checks.postgres) } : {}),
    },
    table,
  };
}

/** The figures of one size, readable: value, VictoriaMetrics' value, the ratio. */
function printReadable(r: Record<string, unknown>): void {
  const table = r.table as unknown[][];
  const cells = table.map((row) =>
    row.slice(0, 4).map((v) => (v === null || v === undefined ? "" : String(v))),
  );
  const head = ["figure", "vigil", "VictoriaMetrics", "vigil ÷ VM"];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)));
  const line = (c: string[]): string => c.map((v, i) => v.padEnd(widths[i] ?? 0)).join(" | ");
  console.error(
    [
      line(head),
      ...cells.map((c) =>
        line([c[0] ?? "", c[1] ?? "", (c[2] ?? "").replace(/ VictoriaMetrics$/, ""), c[3] ?? ""]),
      ),
    ].join("\n"),
  );
  console.error(`cross-check: ${JSON.stringify(r.cross_check)}`);
}

const bin = findVictoriaMetrics();
if (bin === undefined) {
  const why = "victoria-metrics not found (scripts/peers.sh installs it; VIGIL_BENCH_VM_BIN names another)";
  console.error(`peers: skipped: ${why}`);
  console.log(JSON.stringify({ bench: "peers", skipped: why }));
} else if (!existsSync(VIGIL_BIN)) {
  throw new Error(`${VIGIL_BIN} is missing: build first (npm run build)`);
} else {
  const note = serviceEnvNote();
  if (note !== undefined) console.error(note);
  for (const rows of ROW_SIZES) {
    const result = await runSize(bin, rows);
    printReadable(result);
    console.log(JSON.stringify(result));
  }
}
