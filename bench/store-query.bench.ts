/**
 * The DESIGN 5.3 metric query on each store: one day × 200 series × 10 s spacing
 * (1 728 000 samples), 5-minute Europe/London buckets, the ten aggregations with
 * `svc.percentile(0.95)`. For each store, in the same run:
 * - backfill: `Store.ingest()` of the day in batches of 5 000 samples, as samples per second;
 * - the query through `Store.queryMetrics()`;
 * - a baseline: the same samples loaded straight into a bare table of that database and the same
 *   answer asked in hand-written SQL (the database's own bucketing and `quantile_disc` /
 *   `percentile_disc`; correct here because the range has no DST change), which is what the database
 *   itself can do without vigil's schema, exact percentile and DST rule.
 * The store's query and the hand-written one run in turn (A B A B, VIGIL_BENCH_ROUNDS rounds after
 * one warm-up of each, default 5); the medians are compared. The same on DuckDB at 10 M samples
 * (200 series × 10 s × 5.8 days, in files: the second query size).
 * The full-aggregation case: one entity's dataview of 20 rows × 10 numeric columns over the same
 * day (1 728 000 samples), asked as an application asks it — PT5M Europe/London buckets, 10 metrics
 * (one per column) × the ten aggregations, grouped by row name — on DuckDB against the same
 * aggregation in hand-written SQL over a bare table (goal ≤ 1.5×), and on PostgreSQL against the
 * embedded store (goal ≤ 3×).
 * Beside the backfill rates: PostgreSQL's bare COPY into a bare table, in one stream and in one
 * transaction per 5 000 rows (the floor of per-transaction commit cost on this machine).
 * On PostgreSQL the queries are timed once the store has compacted the day's hours into chunks
 * (postgres-compaction.ts), as it does by itself a few seconds after such a backfill.
 * Goals: PostgreSQL store ≤ 3× the embedded store on the query; PostgreSQL backfill ≥ 200 000
 * samples/s. PostgreSQL runs in a throwaway database on 127.0.0.1:5432 (user postgres), dropped
 * after; that part is skipped, with a line saying so, when PostgreSQL is not reachable.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  DOUBLE,
  type DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  DuckDBTimestampTZValue,
  INTEGER,
  TIMESTAMPTZ,
} from "@duckdb/node-api";
import { pino } from "pino";
import postgres from "postgres";
import { parseSetup } from "../src/config/load-setup.js";
import { buildHub } from "../src/hub/app.js";
import { duckDbMachineSettings } from "../src/hub/store/duckdb/duckdb-settings.js";
import { createDuckDbStore } from "../src/hub/store/duckdb/duckdb-store.js";
import { compactSamples } from "../src/hub/store/postgres/postgres-compaction.js";
import { noDelaySocket, type PgSocketTarget } from "../src/hub/store/postgres/postgres-socket.js";
import { createPostgresStore } from "../src/hub/store/postgres/postgres-store.js";
import type {
  Aggregation,
  MetricQueryPlan,
  MetricQueryRow,
  SampleInput,
  Store,
} from "../src/hub/store/store.js";
import { asEpochMs } from "../src/ids.js";
import { median, queryClientInChild } from "./load.js";
import { PG_UNREACHABLE, withBenchDatabase } from "./pg-database.js";
import { benchRounds, SMOKE } from "./settings.js";

/** The hub the full-aggregation case asks through HTTP: security off, as the other benches' hubs. */
const HUB_SETUP = parseSetup("gateway: { name: GW }\nhub: { port: 0, security: { enabled: false } }\n");
const SERIES = 200;
const ENTITIES = 10; // 20 rows each
const SPACING_MS = 10_000; // 10 s
const DAY_MS = 86_400_000;
const T0 = Date.UTC(2026, 0, 14); // a Wednesday in January: no DST change that day in London
const STEPS = SMOKE ? DAY_MS / SPACING_MS / 8 : DAY_MS / SPACING_MS; // a smoke run loads 3 hours
const SAMPLES = STEPS * SERIES;
const BATCH = 5_000; // samples per ingest call (as bench/store-ingest.bench.ts)
/** A second backfill rate with one transaction per 50 000 samples: a large POST /v0/messages. */
const LARGE_BATCH = 50_000;
const QUERY_RUNS = benchRounds(SMOKE ? 2 : 5);
/** The 10 M-sample case: 200 series × 50 112 instants (5.8 days) = 10 022 400 samples. */
const STEPS_10M = SMOKE ? 50_112 / 8 : 50_112;

const sampleValue = (step: number, series: number): number =>
  ((step * 7919 + series * 104_729) % 10_007) / 10;

/** The samples in batches, time-major: every series of one instant, then the next instant. */
function* samples(size = BATCH, steps = STEPS): Generator<SampleInput[]> {
  const entities = Array.from({ length: ENTITIES }, (_, e) => ({
    gateway: "GW",
    probe: "p1",
    managedEntity: `me${e}`,
  }));
  const rows = SERIES / ENTITIES;
  const seriesKeys = Array.from({ length: rows }, (_, r) => ({
    sampler: "cpu",
    samplerType: "linux",
    dataview: "cpu",
    row: `core${r}`,
    column: "util",
  }));
  let batch: SampleInput[] = [];
  for (let step = 0; step < steps; step++) {
    const at = asEpochMs(T0 + step * SPACING_MS);
    for (let s = 0; s < SERIES; s++) {
      const value = sampleValue(step, s);
      batch.push({
        // Entity by entity, as a row message delivers its cells.
        entity: entities[Math.floor(s / rows)] as (typeof entities)[number],
        series: seriesKeys[s % rows] as (typeof seriesKeys)[number],
        at,
        text: String(value),
        value,
      });
      if (batch.length === size) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length > 0) yield batch;
}

const AGGREGATIONS: Aggregation[] = [
  ...(
    [
      "svc.count",
      "svc.sum",
      "svc.min",
      "svc.max",
      "svc.avg",
      "svc.var",
      "svc.stddev",
      "svc.first",
      "svc.last",
    ] as const
  ).map((name) => ({ label: name, name })),
  { label: "svc.percentile(0.95)", name: "svc.percentile", p: "0.95" },
];

/** The full-aggregation case's dataview: 20 rows × 10 numeric columns of one entity. */
const GRID = { rows: 20, columns: 10 };

/** The full-aggregation case's samples in batches, time-major, row by row as table messages carry them. */
function* gridSamples(size = BATCH): Generator<SampleInput[]> {
  const entity = { gateway: "GW", probe: "p1", managedEntity: "grid" };
  const keys = Array.from({ length: GRID.rows * GRID.columns }, (_, s) => ({
    sampler: "app",
    samplerType: "",
    dataview: "orders",
    row: `r${Math.floor(s / GRID.columns)}`,
    column: `c${s % GRID.columns}`,
  }));
  let batch: SampleInput[] = [];
  for (let step = 0; step < STEPS; step++) {
    const at = asEpochMs(T0 + step * SPACING_MS);
    for (const [s, series] of keys.entries()) {
      const value = sampleValue(step, s);
      batch.push({ entity, series, at, text: String(value), value });
      if (batch.length === size) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length > 0) yield batch;
}

/** 10 metrics (one per column) × the ten aggregations, PT5M London buckets, grouped by row name. */
async function gridPlan(store: Store): Promise<MetricQueryPlan> {
  return {
    entities: await store.listEntities({ includeDeleted: false }),
    from: asEpochMs(T0),
    to: asEpochMs(T0 + DAY_MS),
    zone: "Europe/London",
    bucket: { kind: "minutes", minutes: 5 },
    metrics: Array.from({ length: GRID.columns }, (_, k) => ({
      identifier: `c${k}`,
      include: [{ sampler: "app", samplerType: null, dataview: "orders", row: null, column: `c${k}` }],
    })),
    aggregations: AGGREGATIONS,
    grouping: ["rowname"],
    timeWindows: [],
  };
}

/**
 * The full-aggregation case on a store: loads the grid, runs `settle` (PostgreSQL: compaction of the
 * day's closed hours), then the query's median ms (and its answer).
 */
async function gridQuery(
  store: Store,
  settle: () => Promise<unknown> = async () => undefined,
): Promise<{ ms: number; rows: number; counted: number }> {
  await store.migrate();
  for (const batch of gridSamples(LARGE_BATCH)) await store.ingest({ entities: [], samples: batch });
  await settle();
  const p = await gridPlan(store);
  let rows: readonly MetricQueryRow[] = await store.queryMetrics(p);
  const times: number[] = [];
  for (let i = 0; i < QUERY_RUNS; i++) {
    const started = performance.now();
    rows = await store.queryMetrics(p);
    times.push(performance.now() - started);
  }
  return {
    ms: median(times),
    rows: rows.length,
    counted: rows.reduce((n, r) => n + (r.values["svc.count"] ?? 0), 0),
  };
}

async function plan(store: Store, to = T0 + DAY_MS): Promise<MetricQueryPlan> {
  return {
    entities: await store.listEntities({ includeDeleted: false }),
    from: asEpochMs(T0),
    to: asEpochMs(to),
    zone: "Europe/London",
    bucket: { kind: "minutes", minutes: 5 },
    metrics: [
      {
        identifier: "cpu",
        include: [{ sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" }],
      },
    ],
    aggregations: AGGREGATIONS,
    grouping: [],
    timeWindows: [],
  };
}

/**
 * Runs the store's query and the hand-written one once each to warm up, then in turn QUERY_RUNS
 * times (A B A B): the medians in ms and the store's last answer.
 */
async function abQueries<T>(
  store: () => Promise<T>,
  hand: () => Promise<unknown>,
): Promise<{ storeMs: number; handMs: number; result: T }> {
  let result = await store();
  await hand();
  const times = { store: [] as number[], hand: [] as number[] };
  for (let i = 0; i < QUERY_RUNS; i++) {
    let started = performance.now();
    result = await store();
    times.store.push(performance.now() - started);
    started = performance.now();
    await hand();
    times.hand.push(performance.now() - started);
  }
  return { storeMs: median(times.store), handMs: median(times.hand), result };
}

async function backfill(store: Store, size = BATCH, steps = STEPS): Promise<number> {
  await store.migrate();
  const started = performance.now();
  for (const batch of samples(size, steps)) await store.ingest({ entities: [], samples: batch });
  return (steps * SERIES) / ((performance.now() - started) / 1000);
}

/** A bare DuckDB table of the same samples (the appender, as the store uses), with the store's settings. */
async function rawDuckDb(
  path: string,
  steps: number,
  source: () => Generator<SampleInput[]> = () => samples(LARGE_BATCH, steps),
  series = SERIES,
): Promise<{ c: DuckDBConnection; close: () => void }> {
  const machine = duckDbMachineSettings();
  const instance = await DuckDBInstance.create(path, {
    memory_limit: machine.memoryLimit,
    threads: String(machine.threads),
  });
  const c = await instance.connect();
  await c.run("SET TimeZone = 'UTC'");
  await c.run("CREATE TABLE raw (series_id INTEGER, ts TIMESTAMPTZ, value DOUBLE)");
  const appender = await c.createAppender("raw");
  let k = 0;
  for (const batch of source()) {
    for (let s = 0; s < batch.length; s += 2048) {
      const slice = batch.slice(s, s + 2048);
      const chunk = DuckDBDataChunk.create([INTEGER, TIMESTAMPTZ, DOUBLE], slice.length);
      chunk.setColumnValues(
        0,
        slice.map((_, i) => (k + s + i) % series),
      );
      chunk.setColumnValues(
        1,
        slice.map((x) => new DuckDBTimestampTZValue(BigInt(x.at) * 1000n)),
      );
      chunk.setColumnValues(
        2,
        slice.map((x) => x.value),
      );
      appender.appendDataChunk(chunk);
    }
    k += batch.length;
  }
  appender.closeSync();
  await c.run("CHECKPOINT");
  return {
    c,
    close: () => {
      c.closeSync();
      instance.closeSync();
    },
  };
}

/** DuckDB's own time_bucket, arg_min/arg_max and quantile_disc over [T0, to): the baseline's answer. */
async function handDuckDb(c: DuckDBConnection, to: number): Promise<number> {
  return (
    await c.runAndReadAll(`
        SELECT time_bucket(INTERVAL 5 MINUTES, ts, 'Europe/London') AS b, count(value), sum(value), min(value),
               max(value), avg(value), var_pop(value), stddev_pop(value), arg_min(value, ts), arg_max(value, ts),
               quantile_disc(value, 0.95)
        FROM raw WHERE ts >= to_timestamp(${T0 / 1000}) AND ts < to_timestamp(${to / 1000})
        GROUP BY b ORDER BY b`)
  ).getRowsJS().length;
}

/**
 * The full-aggregation case by hand: every aggregation of every series (row × column) per bucket,
 * which is the store's answer (rows × 10 metrics × 10 aggregations per bucket) in another shape.
 */
async function handGridDuckDb(c: DuckDBConnection): Promise<number> {
  return (
    await c.runAndReadAll(`
        SELECT time_bucket(INTERVAL 5 MINUTES, ts, 'Europe/London') AS b, series_id, count(value), sum(value),
               min(value), max(value), avg(value), var_pop(value), stddev_pop(value), arg_min(value, ts),
               arg_max(value, ts), quantile_disc(value, 0.95)
        FROM raw WHERE ts >= to_timestamp(${T0 / 1000}) AND ts < to_timestamp(${(T0 + DAY_MS) / 1000})
        GROUP BY b, series_id ORDER BY b, series_id`)
  ).getRowsJS().length;
}

/** The full-aggregation case as a client sends it to `POST /v0/metrics/query`. */
const GRID_QUERY_BODY = JSON.stringify({
  zoneId: "Europe/London",
  filter: {
    entities: "",
    range: { from: new Date(T0).toISOString(), to: new Date(T0 + DAY_MS).toISOString() },
  },
  metrics: Array.from({ length: GRID.columns }, (_, k) => ({
    identifier: `c${k}`,
    include: [`app/orders/{rowname}/c${k}`],
  })),
  aggregations: AGGREGATIONS.map((a) => a.label),
  bucketing: { duration: "PT5M" },
  grouping: ["rowname"],
});

/**
 * One full-aggregation query through the hub at `url`, sent and its answer read whole by `client`
 * (a child process, so the client's reading is not on the hub's thread); the answer's length.
 */
async function httpGridQuery(client: ReturnType<typeof queryClientInChild>, url: string): Promise<number> {
  const answer = await client.send({
    url: `${url}/v0/metrics/query`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: GRID_QUERY_BODY,
  });
  if (answer.status !== 200) throw new Error(`the grid query answered ${answer.status}: ${answer.head}`);
  return answer.length;
}

/**
 * The full-aggregation case on DuckDB: the store's query against hand-written SQL (A B A B), then
 * the same query through a hub's `POST /v0/metrics/query` (security off), asked by a client in a
 * child process, against hand-written SQL, which adds the request's parsing and the JSON answer.
 */
async function duckdbGrid(): Promise<Record<string, unknown>> {
  const store = await createDuckDbStore({ path: ":memory:" });
  await store.migrate();
  for (const batch of gridSamples(LARGE_BATCH)) await store.ingest({ entities: [], samples: batch });
  const p = await gridPlan(store);
  const raw = await rawDuckDb(":memory:", STEPS, () => gridSamples(LARGE_BATCH), GRID.rows * GRID.columns);
  const q = await abQueries(
    () => store.queryMetrics(p),
    () => handGridDuckDb(raw.c),
  );
  const dataDir = mkdtempSync(join(tmpdir(), "vigil-bench-grid-"));
  const hub = await buildHub({ setup: HUB_SETUP, store, logger: pino({ level: "silent" }), dataDir });
  const client = queryClientInChild();
  let http: { storeMs: number; handMs: number; result: number };
  try {
    const url = await hub.start(0, "127.0.0.1");
    http = await abQueries(
      () => httpGridQuery(client, url),
      () => handGridDuckDb(raw.c),
    );
  } finally {
    client.close();
    await hub.stop(); // closes the store too
    raw.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return {
    duckdb_grid_http_query_ms: Math.round(http.storeMs),
    duckdb_grid_http_answer_bytes: http.result,
    // The hand-written SQL timed beside the HTTP queries (their own A B A B), which the ratio uses.
    duckdb_grid_http_handwritten_query_ms: Math.round(http.handMs),
    duckdb_grid_http_over_handwritten: Number((http.storeMs / Math.max(1, http.handMs)).toFixed(2)),
    duckdb_grid_store_query_ms: Math.round(q.storeMs),
    duckdb_grid_handwritten_query_ms: Math.round(q.handMs),
    duckdb_grid_store_over_handwritten: Number((q.storeMs / Math.max(1, q.handMs)).toFixed(2)),
    duckdb_grid_answer: {
      rows: q.result.length,
      counted: q.result.reduce((n, r) => n + (r.values["svc.count"] ?? 0), 0),
    },
  };
}

/** The full-aggregation case on PostgreSQL, in a throwaway database of its own. */
async function pgGrid(): Promise<Record<string, unknown>> {
  const result = await withBenchDatabase(async (url) => {
    const store = await createPostgresStore({ url });
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const q = await gridQuery(store, () => compactSamples(sql, Date.now()));
      return {
        postgres_grid_store_query_ms: Math.round(q.ms),
        postgres_grid_answer: { rows: q.rows, counted: q.counted },
      };
    } finally {
      await sql.end();
      await store.close();
    }
  });
  return result ?? { postgres_grid: `skipped: ${PG_UNREACHABLE}` };
}

/** A check that the store's answer is the expected shape: 288 buckets, every sample counted. */
function summary(rows: readonly MetricQueryRow[]): {
  buckets: number;
  counted: number;
  p95First: number | null;
} {
  return {
    buckets: rows.length,
    counted: rows.reduce((n, r) => n + (r.values["svc.count"] ?? 0), 0),
    p95First: rows[0]?.values["svc.percentile(0.95)"] ?? null,
  };
}

async function duckdb(): Promise<Record<string, unknown>> {
  const store = await createDuckDbStore({ path: ":memory:" });
  const rate = await backfill(store);
  const p = await plan(store);
  const raw = await rawDuckDb(":memory:", STEPS);
  const q = await abQueries(
    () => store.queryMetrics(p),
    () => handDuckDb(raw.c, T0 + DAY_MS),
  );
  raw.close();
  await store.close();
  const large = await createDuckDbStore({ path: ":memory:" });
  const largeRate = await backfill(large, LARGE_BATCH);
  await large.close();
  return {
    duckdb_backfill_samples_per_s: Math.round(rate),
    duckdb_backfill_50k_batches_samples_per_s: Math.round(largeRate),
    duckdb_store_query_ms: Math.round(q.storeMs),
    duckdb_handwritten_query_ms: Math.round(q.handMs),
    duckdb_store_over_handwritten: Number((q.storeMs / Math.max(1, q.handMs)).toFixed(2)),
    duckdb_answer: summary(q.result),
  };
}

/** The same query over 10 M samples (STEPS_10M instants), store and bare table each in a file. */
async function duckdb10m(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-10m-"));
  try {
    const store = await createDuckDbStore({ path: join(dir, "store.duckdb") });
    await backfill(store, LARGE_BATCH, STEPS_10M);
    const to = T0 + STEPS_10M * SPACING_MS;
    const p = await plan(store, to);
    const raw = await rawDuckDb(join(dir, "raw.duckdb"), STEPS_10M);
    const q = await abQueries(
      () => store.queryMetrics(p),
      () => handDuckDb(raw.c, to),
    );
    raw.close();
    await store.close();
    return {
      samples_10m: STEPS_10M * SERIES,
      duckdb_10m_store_query_ms: Math.round(q.storeMs),
      duckdb_10m_handwritten_query_ms: Math.round(q.handMs),
      duckdb_10m_store_over_handwritten: Number((q.storeMs / Math.max(1, q.handMs)).toFixed(2)),
      duckdb_10m_answer: summary(q.result),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function pg(): Promise<Record<string, unknown>> {
  return (await withBenchDatabase(pgOn)) ?? { postgres: `skipped: ${PG_UNREACHABLE}` };
}

/** The PostgreSQL part on the throwaway database at `url`. */
async function pgOn(url: string): Promise<Record<string, unknown>> {
  const store = await createPostgresStore({ url });
  const rate = await backfill(store);
  // The same TCP_NODELAY sockets as the store, so the baseline pays no delayed-ACK wait either.
  const sql = postgres(url, {
    max: 1,
    onnotice: () => undefined,
    ...({ socket: (target: PgSocketTarget) => noDelaySocket(target) } as object),
  });
  // The store compacts the day's closed hours by itself; the query is timed on what it leaves.
  await compactSamples(sql, Date.now());
  await sql`VACUUM ANALYZE`;
  const p = await plan(store);

  // Baseline: a bare table loaded by COPY, and PostgreSQL's own date_bin and percentile_disc.
  await sql`CREATE TABLE raw (series_id integer, ts timestamptz, value double precision)`;
  const copyStarted = performance.now();
  const stream = await sql`COPY raw (series_id, ts, value) FROM STDIN`.writable();
  let k = 0;
  await pipeline(
    Readable.from(
      (function* () {
        for (const batch of samples()) {
          let text = "";
          for (const [i, x] of batch.entries()) {
            text += `${(k + i) % SERIES}\t${new Date(x.at).toISOString()}\t${x.value}\n`;
          }
          k += batch.length;
          yield text;
        }
      })(),
    ),
    stream,
  );
  const copyRate = SAMPLES / ((performance.now() - copyStarted) / 1000);
  // The same COPY, one transaction per BATCH rows (what a store's ingest commits): the cost of
  // committing (WAL flush) that no store avoids.
  await sql`CREATE TABLE raw_batched (series_id integer, ts timestamptz, value double precision)`;
  const batchedStarted = performance.now();
  let j = 0;
  for (const batch of samples()) {
    let text = "";
    for (const [i, x] of batch.entries())
      text += `${(j + i) % SERIES}\t${new Date(x.at).toISOString()}\t${x.value}\n`;
    j += batch.length;
    await sql.begin(async (tx) => {
      await pipeline(
        Readable.from([text]),
        await tx`COPY raw_batched (series_id, ts, value) FROM STDIN`.writable(),
      );
    });
  }
  const batchedRate = SAMPLES / ((performance.now() - batchedStarted) / 1000);
  await sql`VACUUM ANALYZE raw`;
  // Everything written so far (this load, and an earlier bench's on the same server) is flushed
  // before the timed queries: a spread checkpoint running beside them slowed the store's query by
  // half in a full `npm run bench` (632 ms against 408 ms alone).
  await sql`CHECKPOINT`;
  const q = await abQueries(
    () => store.queryMetrics(p),
    async () =>
      (
        await sql`
        SELECT date_bin('5 minutes', ts AT TIME ZONE 'Europe/London', '2000-01-01') AS b, count(value), sum(value),
               min(value), max(value), avg(value), var_pop(value), stddev_pop(value),
               (min(ARRAY[extract(epoch FROM ts)::float8, value]))[2], (max(ARRAY[extract(epoch FROM ts)::float8, value]))[2],
               percentile_disc(0.95) WITHIN GROUP (ORDER BY value)
        FROM raw WHERE ts >= to_timestamp(${T0 / 1000}) AND ts < to_timestamp(${(T0 + DAY_MS) / 1000})
        GROUP BY b ORDER BY b`
      ).length,
  );
  await store.close();
  // Every table of the store's schema, so the second store migrates a database as empty as the first.
  await sql`DROP TABLE samples, sample_chunks, series, entities, events, message_ranges, message_origins, message_digests,
    dataviews, dataview_deletes, numeric_series, probes, vigil_settings, vigil_migrations CASCADE`;
  const large = await createPostgresStore({ url });
  const largeRate = await backfill(large, LARGE_BATCH);
  await large.close();
  await sql.end();
  return {
    postgres_backfill_samples_per_s: Math.round(rate),
    postgres_backfill_50k_batches_samples_per_s: Math.round(largeRate),
    postgres_bare_copy_rows_per_s: Math.round(copyRate),
    postgres_bare_copy_5k_transactions_rows_per_s: Math.round(batchedRate),
    postgres_store_query_ms: Math.round(q.storeMs),
    postgres_handwritten_query_ms: Math.round(q.handMs),
    postgres_answer: summary(q.result),
  };
}

const duck = await duckdb();
const duck10m = await duckdb10m();
const duckGrid = await duckdbGrid();
const pgResult = await pg();
const pgGridResult = await pgGrid();
const gridRatio =
  typeof pgGridResult.postgres_grid_store_query_ms === "number" &&
  typeof duckGrid.duckdb_grid_store_query_ms === "number"
    ? Number(
        (
          pgGridResult.postgres_grid_store_query_ms / Math.max(1, duckGrid.duckdb_grid_store_query_ms)
        ).toFixed(2),
      )
    : null;
const ratio =
  typeof pgResult.postgres_store_query_ms === "number" && typeof duck.duckdb_store_query_ms === "number"
    ? Number((pgResult.postgres_store_query_ms / Math.max(1, duck.duckdb_store_query_ms)).toFixed(2))
    : null;
console.log(
  JSON.stringify({
    bench: "store-query",
    samples: SAMPLES,
    series: SERIES,
    batch: BATCH,
    query: "Europe/London PT5M, ten aggregations incl. svc.percentile(0.95), one day",
    query_rounds: QUERY_RUNS,
    ...duck,
    ...duck10m,
    ...duckGrid,
    ...pgResult,
    ...pgGridResult,
    postgres_over_duckdb_query: ratio,
    postgres_over_duckdb_grid_query: gridRatio,
    goals: {
      postgres_over_duckdb_query_max: 3,
      postgres_backfill_samples_per_s_min: 200_000,
      duckdb_store_over_handwritten_max: 1.5,
      duckdb_grid_store_over_handwritten_max: 1.5,
      postgres_over_duckdb_grid_query_max: 3,
    },
  }),
);
