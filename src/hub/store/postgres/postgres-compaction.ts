/**
 * Compaction of the PostgreSQL store's samples (migration 6): the rows of one series in one closed
 * hour (by sample time) become one `sample_chunks` row — times as ms after the hour or one step,
 * values as doubles or as integers over a power of ten, texts left NULL where a text is its value's
 * rendering (`sampleTextSql`) — so a sample takes 4 to 12 bytes instead of a row of about a hundred. Fresh samples stay rows of `samples`: COPY
 * remains the write path, and readers see both forms (postgres-queries.ts, postgres-metrics-sql.ts,
 * the `stored_samples` view).
 *
 * A step moves one hour of a block of {@link COMPACT_SERIES_BLOCK} series ids in one transaction:
 * it deletes the hour's rows, deletes the chunks of those series and that hour (a late sample for
 * an hour already compacted), and inserts each series's chunk of both; so no sample is lost or
 * doubled, and a reader's statement sees the hour before or after, never half. Steps take
 * {@link COMPACT_LOCK_KEY}, a transaction-scoped advisory lock: several hubs on one database
 * compact in turn, and a step that finds its rows gone (another hub moved them) writes nothing.
 * Retention takes the same lock before it changes chunks.
 *
 * An hour is closed {@link COMPACT_AFTER_MS} after its end by the clock. The store runs compaction
 * {@link COMPACT_DELAY_MS} after a commit that wrote samples into a closed hour (a backfill), and
 * every {@link COMPACT_INTERVAL_MS} (hours that closed since, other hubs' writes, a database that
 * migrated). A week whose hours are all closed and whose row partition is left empty is truncated,
 * so that the deleted rows' space and index pages go back to the file system.
 */
import type { Sql, TransactionSql } from "postgres";
import { closedSafe } from "./postgres-closed.js";
import {
  chunkPartitionName,
  createPartitions,
  listPartitions,
  partitionName,
  WEEK_MS,
  weekOf,
  weekStart,
} from "./postgres-partitions.js";
import {
  COMPACT_LOCK_KEY,
  chunkTimeSql,
  chunkUnnestSql,
  chunkValueSql,
  sampleTextSql,
} from "./postgres-schema.js";

/** A chunk's span: one hour, aligned to UTC hours (so to the weekly partitions). */
export const CHUNK_MS = 3_600_000; // ms
/** How long after its end an hour is compacted: samples of it arriving later are merged then. */
export const COMPACT_AFTER_MS = 5 * 60_000; // ms
/** Series ids per step: bounds a step's rows to this many series' hour. */
export const COMPACT_SERIES_BLOCK = 2048; // series ids
/** Work items (hour, block of series) one search for work returns. */
const COMPACT_ITEMS_PER_SEARCH = 1000;
/** From a commit that wrote into a closed hour to the compaction that follows (more commits join it). */
export const COMPACT_DELAY_MS = 5_000; // ms
/** Compaction runs at least this often. */
export const COMPACT_INTERVAL_MS = 60_000; // ms
/** How long truncating an emptied week's row partition waits for its lock before leaving it. */
const TRUNCATE_LOCK_TIMEOUT = "1s";

/** The start of the hour of `ms` (epoch ms). */
export const chunkStart = (ms: number): number => ms - (((ms % CHUNK_MS) + CHUNK_MS) % CHUNK_MS);

/** Samples before this time (epoch ms) at `now` are in closed hours. */
export const closedBefore = (now: number): number => chunkStart(now - COMPACT_AFTER_MS);

/** What compaction did. */
export interface CompactionCounts {
  /** Chunks written (a merged chunk counts again). */
  readonly chunks: number;
  /** Rows moved into chunks. */
  readonly rows: number;
}

/** Powers of ten a chunk tries, smallest first, for keeping its numbers as integers. */
const SCALE_DIGITS = [0, 1, 2, 3, 4, 5, 6];
/** The largest integer an `integer` holds. */
const MAX_INT4 = 2_147_483_647;

/** `v` over 10^`d` as an integer reads back as `v` bit for bit (so −0 and NaN never do); SQL. */
const scaledExactSql = (v: string, d: string): string =>
  `(abs(${v}) < ${MAX_INT4}::float8 / 10::float8 ^ ${d}
    AND float8send(round(${v} * 10::float8 ^ ${d})::int / 10::float8 ^ ${d}) = float8send(${v}))`;

/**
 * The statement of one step over `$1` (the hour's start, bigint) and series ids in [`$2`, `$3`):
 * one row `(chunks, rows)`. Needs `extra_float_digits` ≥ 1 (the step sets it). A chunk keeps its
 * numbers as integers over 10^d, d the largest of the digits each number needs (the smallest of
 * {@link SCALE_DIGITS} with which it reads back bit for bit), when every number reads back with it,
 * else as doubles; its times as a step when they are evenly spaced, else listed. The arrays are
 * aggregated from input sorted by time (their order only helps the step and compression: every
 * reader orders for itself, and the arrays of one chunk line up whatever the order).
 */
const STEP_SQL = `WITH moved AS (
  DELETE FROM samples
  WHERE ts_ms >= $1::bigint AND ts_ms < $1::bigint + ${CHUNK_MS} AND series_id >= $2::int AND series_id < $3::int
  RETURNING series_id, ts_ms, value, text
),
old AS (
  DELETE FROM sample_chunks c
  WHERE c.chunk_start_ms = $1::bigint AND c.series_id >= $2::int AND c.series_id < $3::int
    AND c.series_id IN (SELECT series_id FROM moved)
  RETURNING c.*
),
every AS (
  SELECT series_id, (ts_ms - $1::bigint)::int AS off, value, text FROM moved
  UNION ALL
  SELECT o.series_id, (${chunkTimeSql("o")} - $1::bigint)::int, ${chunkValueSql("o")},
         coalesce(u.text, ${sampleTextSql(chunkValueSql("o"))})
  FROM old o ${chunkUnnestSql("o", true)}
),
kept AS (
  SELECT series_id, off, value,
         CASE WHEN text = ${sampleTextSql("value")} THEN NULL ELSE text END AS text,
         CASE WHEN value IS NULL THEN 0
              ${SCALE_DIGITS.map((d) => `WHEN ${scaledExactSql("value", String(d))} THEN ${d}`).join(" ")}
              ELSE ${SCALE_DIGITS.length} END AS digits
  FROM every ORDER BY series_id, off
),
grouped AS (
  SELECT series_id, count(*)::int AS n, min(off) AS lo, max(off) AS hi, count(value)::int AS v_count,
         array_agg(off) AS offs, array_agg(value) AS vals,
         CASE WHEN count(text) = 0 THEN NULL ELSE array_agg(text) END AS texts,
         max(digits) AS digits
  FROM kept GROUP BY series_id
),
shaped AS MATERIALIZED (
  SELECT g.series_id, g.n, g.lo, g.hi, g.v_count, g.offs, g.vals, g.texts,
         CASE WHEN hi = lo THEN 0
              WHEN (hi - lo) % (n - 1) = 0
               AND offs = ARRAY(SELECT lo + i * ((hi - lo) / (n - 1)) FROM generate_series(0, n - 1) AS i ORDER BY i)
              THEN (hi - lo) / (n - 1) END AS step,
         CASE WHEN g.digits < ${SCALE_DIGITS.length}
               AND NOT EXISTS (SELECT 1 FROM unnest(g.vals) AS v
                               WHERE v IS NOT NULL AND NOT ${scaledExactSql("v", "g.digits")})
              THEN g.digits END AS digits
  FROM grouped g
),
written AS (
  INSERT INTO sample_chunks (series_id, chunk_start_ms, n, first_ms, last_ms, step, offsets, scale, vals, ivals,
                             texts, v_count)
  SELECT series_id, $1::bigint, n, $1::bigint + lo, $1::bigint + hi, step,
         CASE WHEN step IS NULL THEN offs END,
         10::float8 ^ digits,
         CASE WHEN digits IS NULL THEN vals END,
         CASE WHEN digits IS NOT NULL THEN ARRAY(
           SELECT round(v * 10::float8 ^ digits)::int FROM unnest(vals) WITH ORDINALITY AS t(v, i) ORDER BY i) END,
         texts, v_count
  FROM shaped
  RETURNING 1
)
SELECT (SELECT count(*) FROM written)::int AS chunks, (SELECT count(*) FROM moved)::int AS rows`;

/** One step: the rows of the hour `hour` and series ids in [`lo`, `lo` + block) into chunks. */
async function compactStep(sql: Sql, hour: number, lo: number): Promise<CompactionCounts> {
  const run = (): Promise<CompactionCounts> =>
    sql.begin(
      closedSafe(async (tx: TransactionSql) => {
        await tx`SELECT pg_advisory_xact_lock(${COMPACT_LOCK_KEY}::bigint)`;
        await tx`SELECT set_config('extra_float_digits', '1', true), set_config('jit', 'off', true),
                        set_config('work_mem', '64MB', true)`;
        const [row] = await tx.unsafe<{ chunks: number; rows: number }[]>(STEP_SQL, [
          String(hour),
          lo,
          lo + COMPACT_SERIES_BLOCK,
        ]);
        return { chunks: Number(row?.chunks ?? 0), rows: Number(row?.rows ?? 0) };
      }),
    ) as Promise<CompactionCounts>;
  try {
    return await run();
  } catch (error) {
    // The week's chunk partition is missing (dropped by retention while late rows came): make it.
    if ((error as { code?: unknown }).code !== "23514") throw error;
    await createPartitions(sql, [weekOf(hour)]);
    return run();
  }
}

/**
 * Compacts every closed hour (at `now`) that has rows, in steps, until none is left or `stop()`
 * says to; then truncates every closed week's emptied row partition and analyzes the chunk
 * partitions it wrote into.
 */
export async function compactSamples(
  sql: Sql,
  now: number,
  stop: () => boolean = () => false,
): Promise<CompactionCounts> {
  const before = closedBefore(now);
  let chunks = 0;
  let rows = 0;
  const weeks = new Set<number>();
  // Each (hour, block) once per run, in order: a step the data fails (PostgreSQL refusing a
  // value) leaves its rows to be read as rows and does not hold up the hours after it.
  let after = { hour: Number.MIN_SAFE_INTEGER, lo: -1 };
  for (;;) {
    const items = await sql<{ hour: string; lo: number }[]>`
      SELECT * FROM (
        SELECT (ts_ms - (((ts_ms % ${CHUNK_MS}) + ${CHUNK_MS}) % ${CHUNK_MS})) AS hour,
               (series_id / ${COMPACT_SERIES_BLOCK}) * ${COMPACT_SERIES_BLOCK} AS lo
        FROM samples WHERE ts_ms < ${before}::bigint
      ) AS w
      WHERE (hour, lo) > (${after.hour}::bigint, ${after.lo}::int)
      GROUP BY 1, 2 ORDER BY 1, 2 LIMIT ${COMPACT_ITEMS_PER_SEARCH}`;
    if (items.length === 0) break;
    for (const item of items) {
      if (stop()) return { chunks, rows };
      after = { hour: Number(item.hour), lo: item.lo };
      try {
        const counts = await compactStep(sql, after.hour, item.lo);
        chunks += counts.chunks;
        rows += counts.rows;
      } catch (error) {
        if (!String((error as { code?: unknown }).code).startsWith("22")) throw error;
      }
      weeks.add(weekOf(after.hour));
    }
  }
  // Every closed week's row partition, not only the weeks this run moved rows of: a truncation left
  // for later (a reader held the partition past the lock timeout, another hub moved the rows, the
  // hub stopped in between) is made by a later run, which finds no rows left to move.
  for (const week of [...(await listPartitions(sql))].sort((a, b) => a - b)) {
    if (stop()) return { chunks, rows };
    if (weekStart(week) + WEEK_MS <= before) await truncateEmptyWeek(sql, week);
  }
  // Fresh statistics of the chunks written (the planner sizes a metric query's aggregate by them).
  for (const week of [...weeks].sort((a, b) => a - b)) {
    if (stop() || chunks === 0) break;
    await analyzeWeek(sql, week);
  }
  return { chunks, rows };
}

/**
 * ANALYZE of a week's chunk partition, of its scalar columns: statistics of the arrays' elements
 * would cost more to collect than any plan gains from them. One that retention dropped meanwhile
 * is left.
 */
async function analyzeWeek(sql: Sql, week: number): Promise<void> {
  try {
    // From an integer: no client text in the statement.
    await sql.unsafe(
      `ANALYZE ${chunkPartitionName(week)} (series_id, chunk_start_ms, n, first_ms, last_ms, step, scale, v_count)`,
    );
  } catch (error) {
    if ((error as { code?: unknown }).code !== "42P01") throw error;
  }
}

/**
 * Truncates a closed week's row partition when its table still takes pages and holds no row: looked
 * at first without a lock (a partition already truncated, or holding rows, is left at once, so no
 * reader or writer waits on it), then again under an exclusive lock (so no write comes in between),
 * waiting at most {@link TRUNCATE_LOCK_TIMEOUT}, else left for the next run.
 */
async function truncateEmptyWeek(sql: Sql, week: number): Promise<void> {
  const table = partitionName(week); // computed from an integer: no client text in the DDL
  // The table's own pages (its indexes keep a page each after a TRUNCATE); the scan for a row only
  // when there are pages to give back.
  const emptied = `SELECT CASE WHEN pg_relation_size('${table}') = 0 THEN false
                          ELSE NOT EXISTS (SELECT 1 FROM ${table}) END AS truncate`;
  try {
    const [seen] = await sql.unsafe<{ truncate: boolean }[]>(emptied);
    if (seen?.truncate !== true) return;
    await sql.begin(
      closedSafe(async (tx) => {
        await tx.unsafe(`SET LOCAL lock_timeout = '${TRUNCATE_LOCK_TIMEOUT}'`);
        await tx.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
        const [row] = await tx.unsafe<{ truncate: boolean }[]>(emptied);
        if (row?.truncate === true) await tx.unsafe(`TRUNCATE ${table}`);
      }),
    );
  } catch (error) {
    // A writer holds the partition (lock timeout) or retention dropped it: nothing to give back now.
    const code = (error as { code?: unknown }).code;
    if (code !== "55P03" && code !== "42P01") throw error;
  }
}

/**
 * Runs {@link compactSamples} for a store: after commits that wrote into closed hours
 * ({@link Compactor.wrote}) and every {@link COMPACT_INTERVAL_MS}. One run at a time (a run asked
 * for meanwhile follows it); a failed run (PostgreSQL unreachable, say) is tried again at the next
 * occasion.
 */
export class Compactor {
  private running: Promise<CompactionCounts> | undefined;
  private again = false;
  private soon: NodeJS.Timeout | undefined;
  private interval: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly sql: Sql,
    private readonly delayMs: number = COMPACT_DELAY_MS,
    private readonly intervalMs: number = COMPACT_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts the periodic runs, the first after the delay. */
  start(): void {
    if (this.closed || this.interval !== undefined) return;
    this.interval = setInterval(() => this.kick(), this.intervalMs);
    this.interval.unref();
    this.schedule();
  }

  /** A commit wrote samples, the earliest at `earliestMs`: a run follows if its hour is closed. */
  wrote(earliestMs: number): void {
    if (earliestMs < closedBefore(this.now())) this.schedule();
  }

  /** Stops the timers and waits for the run in progress, which stops after its current step. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.soon);
    clearInterval(this.interval);
    await this.running?.catch(() => undefined);
  }

  private schedule(): void {
    if (this.closed || this.soon !== undefined) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      this.kick();
    }, this.delayMs);
    this.soon.unref();
  }

  private kick(): void {
    if (this.closed) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.run().catch(() => undefined);
  }

  private run(): Promise<CompactionCounts> {
    const run = compactSamples(this.sql, this.now(), () => this.closed).finally(() => {
      if (this.running === run) this.running = undefined;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
    this.running = run;
    return run;
  }
}
