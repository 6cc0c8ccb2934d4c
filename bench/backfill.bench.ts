/**
 * Backfill throughput (goal: ≥ 500 000 samples/s into the embedded store, ≥ 200 000 into
 * PostgreSQL) through `POST /v0/messages` of a real hub (`openStore` + `buildHub` + `start`, as
 * `vigil hub` composes them, security off) listening on 127.0.0.1. Bodies are NDJSON of 10 000
 * public-v2 `table` messages each (one dataview row per message: its `name` and 10 numeric cells, so
 * 11 samples; 2 000 rows over 50 managed entities, 22 000 series), each body on a connection of its
 * own, sample times spread over one day; each round has its own
 * day, so every round stores new samples (a message without an id is de-duplicated by the digest of
 * its text, so a repeated day would be skipped). Beside each subject, in the same process and the
 * same store: `Store.ingest()` of the very samples those messages hold (one call per body, in
 * columns as the ingester hands them over), which is what the store itself takes. The runs
 * alternate A B A B for VIGIL_BENCH_ROUNDS rounds (default 3), after a warm-up that creates the
 * entities and series. DuckDB is a file in a temp dir;
 * PostgreSQL a throwaway database on 127.0.0.1:5432 (user postgres), dropped after, and skipped with
 * a line saying why when unreachable. Prints one JSON line per store: median samples/s of each,
 * the ratio of the medians, whether the goal is met, and the CPU time of the process (every
 * thread: the hub's and DuckDB's) per sample, which moves less than rates on a busy machine.
 * `VIGIL_BENCH_BACKFILL_STORE=duckdb|postgres` runs one store only (for `node --cpu-prof`);
 * `VIGIL_BENCH_BACKFILL_BASELINE=0` leaves out the `Store.ingest()` runs, so each round measures the
 * POST path alone on a store that grows by its data only (for A/B runs of two commits). Never
 * fails on time; fails when the hub rejects a message or reports a duplicate (the data would be wrong).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { parseSetup } from "../src/config/load-setup.js";
import { buildHub } from "../src/hub/app.js";
import { numericValue } from "../src/hub/ingest/ingester.js";
import { openStore } from "../src/hub/store/open-store.js";
import { SampleRowsBuilder } from "../src/hub/store/sample-rows.js";
import type { EntityKey, SampleRows, Store } from "../src/hub/store/store.js";
import { asEpochMs } from "../src/ids.js";
import { median } from "./load.js";
import { PG_UNREACHABLE, withBenchDatabase } from "./pg-database.js";
import { benchRounds, SMOKE } from "./settings.js";
import { cellValue, tableMessage } from "./table-messages.js";

const ROUNDS = benchRounds(3); // A B pairs
const MESSAGES_PER_POST = 10_000;
const POSTS = SMOKE ? 2 : 10; // per run: 1 000 000 samples, 200 000 in a smoke run (VIGIL_BENCH_SECONDS)
const CELLS = 10; // numeric cells per row message
const ENTITIES = 50;
const ROWS_PER_ENTITY = 40; // 2 000 rows, 20 000 series
const ROWS = ENTITIES * ROWS_PER_ENTITY;
const DAY_MS = 86_400_000;
const T0 = Date.UTC(2025, 0, 1); // day 0 is the warm-up; run k of a round uses day 1 + k
const GOALS = { duckdb: 500_000, postgres: 200_000 } as const;
const COLUMNS = Array.from({ length: CELLS }, (_, c) => `metric_${c}`);
const WITH_BASELINE = process.env.VIGIL_BENCH_BACKFILL_BASELINE !== "0";

const setup = parseSetup("gateway: { name: GW }\nhub: { port: 0, security: { enabled: false } }\n");

/** The cells of message `i` of `day`, as published (numbers as decimal text). */
function cells(day: number, i: number): string[] {
  return COLUMNS.map((_, c) => String(cellValue(day * 1e7 + i * 16 + c)));
}

/** Message `i` of `day`: row `i % ROWS`, snapshots of every row spread evenly over the day. */
function message(day: number, i: number, total: number): string {
  const r = i % ROWS;
  const snapshots = Math.ceil(total / ROWS);
  const at = T0 + day * DAY_MS + Math.floor((Math.floor(i / ROWS) * DAY_MS) / snapshots);
  const row: Record<string, string> = { name: `row-${r % ROWS_PER_ENTITY}` };
  cells(day, i).forEach((v, c) => {
    row[COLUMNS[c] as string] = v;
  });
  return tableMessage(
    at,
    {
      gateway: "GW",
      probe: "p1",
      managedEntity: `host-${String(Math.floor(r / ROWS_PER_ENTITY)).padStart(3, "0")}`,
      sampler: "cpu",
      dataview: "cores",
      row: `row-${r % ROWS_PER_ENTITY}`,
      osType: "Linux",
      pluginName: "cpu",
    },
    row,
  );
}

/** The NDJSON bodies of one run on `day`. */
function bodies(day: number, posts: number): string[] {
  const total = posts * MESSAGES_PER_POST;
  return Array.from({ length: posts }, (_, p) => {
    const lines: string[] = [];
    for (let k = 0; k < MESSAGES_PER_POST; k += 1) lines.push(message(day, p * MESSAGES_PER_POST + k, total));
    return `${lines.join("\n")}\n`;
  });
}

/**
 * The samples the bodies of `day` hold, in columns as the ingester hands them to the store, one
 * batch per body (the same rows, times and texts; one key object per entity).
 */
function sampleBatches(day: number, posts: number): SampleRows[] {
  return bodies(day, posts).map((body) => {
    const out = new SampleRowsBuilder();
    const entities = new Map<string, EntityKey>();
    for (const line of body.split("\n")) {
      if (line === "") continue;
      const m = JSON.parse(line) as {
        data: { sampleTime: string; target: Record<string, string>; row: Record<string, string> };
      };
      const t = m.data.target;
      const name = t.managedEntity as string;
      let entity = entities.get(name);
      if (entity === undefined) {
        entity = { gateway: "GW", probe: "p1", managedEntity: name };
        entities.set(name, entity);
      }
      for (const [column, text] of Object.entries(m.data.row)) out.cell(column, text, numericValue(text));
      out.endRow(
        entity,
        { sampler: "cpu", samplerType: "", dataview: "cores", row: t.row as string },
        asEpochMs(Date.parse(m.data.sampleTime)),
      );
    }
    return out;
  });
}

/** Samples/s of a run, and the CPU time of the whole process (every thread) per sample, in µs. */
interface Run {
  readonly rate: number;
  readonly cpuUs: number;
}

/**
 * POSTs `body` on a connection of its own (the baseline runs between posts can outlast the hub's
 * keep-alive timeout, and a reused socket the hub has just closed would fail the request).
 */
function postOnce(url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v0/messages`,
      { method: "POST", agent: false, headers: { "content-type": "application/x-ndjson" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Posts `bodies` one after another (each message holds CELLS + 1 cells, `name` included). */
async function post(url: string, list: readonly string[]): Promise<Run> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  let stored = 0;
  for (const body of list) {
    const response = await postOnce(url, body);
    const result = JSON.parse(response.text) as {
      accepted?: number;
      duplicates?: number;
      rejected?: unknown[];
    };
    if (response.status !== 200 || (result.rejected?.length ?? 0) > 0 || (result.duplicates ?? 0) > 0)
      throw new Error(`backfill answered ${response.status}: ${response.text.slice(0, 300)}`);
    stored += (result.accepted ?? 0) * (CELLS + 1);
  }
  return run(stored, started, cpu);
}

function run(samples: number, started: number, cpu: NodeJS.CpuUsage): Run {
  const used = process.cpuUsage(cpu);
  return {
    rate: samples / ((performance.now() - started) / 1000),
    cpuUs: (used.user + used.system) / samples,
  };
}

async function direct(store: Store, batches: readonly SampleRows[]): Promise<Run> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  let n = 0;
  for (const rows of batches) {
    await store.ingest({ entities: [], samples: [], rows });
    n += rows.cells.length;
  }
  return run(n, started, cpu);
}

/** Runs the rounds against a hub on `storeUrl`; returns the result fields. */
async function measure(kind: "duckdb" | "postgres", storeUrl: string): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), "vigil-bench-backfill-"));
  try {
    const store = await openStore(storeUrl, dataDir);
    const hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
    const url = await hub.start(0, "127.0.0.1");
    try {
      // Warm-up on day 0: every entity and series exists before the rounds.
      await post(url, bodies(0, 1));
      const subject: Run[] = [];
      const baseline: Run[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        const day = 1 + round * 2;
        subject.push(await post(url, bodies(day, POSTS)));
        if (WITH_BASELINE) baseline.push(await direct(store, sampleBatches(day + 1, POSTS)));
      }
      const a = median(subject.map((r) => r.rate));
      const b = median(baseline.map((r) => r.rate));
      return {
        bench: "backfill",
        store: kind,
        rounds: ROUNDS,
        messages_per_post: MESSAGES_PER_POST,
        samples_per_round: POSTS * MESSAGES_PER_POST * (CELLS + 1),
        backfill_samples_per_s: Math.round(a),
        backfill_runs: subject.map((r) => Math.round(r.rate)),
        // CPU of every thread (the hub's and the store's) per sample: steadier than rates on a busy machine.
        backfill_cpu_us_per_sample: Number(median(subject.map((r) => r.cpuUs)).toFixed(3)),
        ...(WITH_BASELINE
          ? {
              baseline_store_ingest_samples_per_s: Math.round(b),
              ratio_vs_baseline: Number((a / b).toFixed(3)),
              baseline_runs: baseline.map((r) => Math.round(r.rate)),
              baseline_cpu_us_per_sample: Number(median(baseline.map((r) => r.cpuUs)).toFixed(3)),
            }
          : {}),
        goal_samples_per_s: GOALS[kind],
        goal_met: a >= GOALS[kind],
      };
    } finally {
      await hub.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function pg(): Promise<Record<string, unknown>> {
  const result = await withBenchDatabase((url) => measure("postgres", url));
  return result ?? { bench: "backfill", store: "postgres", skipped: PG_UNREACHABLE };
}

const only = process.env.VIGIL_BENCH_BACKFILL_STORE; // "duckdb" or "postgres" to run one (profiling)
if (only !== "postgres") console.log(JSON.stringify(await measure("duckdb", "duckdb:vigil.duckdb")));
if (only !== "duckdb") console.log(JSON.stringify(await pg()));
