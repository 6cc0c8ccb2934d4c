/**
 * Runs a metric query on PostgreSQL (DESIGN 5.3): reads the zone's offsets around the stored weeks
 * the range touches and estimates the samples it reads, then runs the statement of
 * postgres-metrics-sql.ts — a large query as two statements at once, one on each side of a bucket
 * boundary near the middle of the range ({@link SPLIT_MIN_SAMPLES}) — and reads the rows.
 * The store-query benchmark (one day × 200 series, ten aggregations, 5-minute London buckets): about
 * 2 000 ms before this file (per-sample zone conversion, sort + GroupAggregate, JIT), 950 ms as one
 * statement, 520-580 ms split, on 2 cores; 400-430 ms split after the lookup, grid arithmetic and
 * kept arrays of postgres-metrics-sql.ts and the block-range index on sample times.
 *
 * Each statement runs in its own transaction with `SET LOCAL`s (they end with it, whatever the pool
 * connection runs next): JIT off — compiling the statement's expressions cost about 200 ms, more
 * than it saves on a scan of a few million rows — and `work_mem` large enough that the hash
 * aggregate holds the values of the groups of {@link PERCENTILE_HASH_MAX_SAMPLES} samples without
 * spilling, and that the sorted strategy above it sorts in bigger runs; more for a hash aggregate
 * of many groups that keeps arrays ({@link metricWorkMem}).
 */
import type { Sql } from "postgres";
import { asEpochMs } from "../../../ids.js";
import { splitInstant } from "../core/bucket-grid.js";
import {
  DAY_MS,
  fixedZoneOffsets,
  HOUR_MS,
  MINUTE_MS,
  parseZone,
  type ScanWindow,
  WEEK_MS,
  type ZoneOffsets,
} from "../core/zone-offsets.js";
import type { MetricQueryPlan, MetricQueryRow } from "../store.js";
import { closedSafe } from "./postgres-closed.js";
import { CHUNK_MS } from "./postgres-compaction.js";
import {
  buildPgMatchedSeriesQuery,
  buildPgMetricQuery,
  buildZoneOffsetsQuery,
  KEPT_SAMPLE_MAX_BYTES,
  PERCENTILE_HASH_MAX_SAMPLES,
  type PgAggregateStrategy,
  type PgSeriesLookup,
  readZoneOffsets,
  scanWindows,
} from "./postgres-metrics-sql.js";
import { partitionName, weekStart } from "./postgres-partitions.js";

const MIB = 1024 * 1024;
/** The least and most `work_mem` of a metric query's transaction ({@link metricWorkMem}). */
export const METRIC_QUERY_WORK_MEM_MIN = 64 * MIB; // bytes
export const METRIC_QUERY_WORK_MEM_MAX = 256 * MIB; // bytes
/**
 * `hash_mem_multiplier` of a metric query's transaction: PostgreSQL's default, set so that
 * {@link metricWorkMem}'s arithmetic holds whatever the server's own setting.
 */
export const METRIC_QUERY_HASH_MEM_MULTIPLIER = 2;
/**
 * The planner's size of one group's state of an aggregate whose state is `internal` (the kept
 * arrays' `array_agg`), whatever the group holds: PostgreSQL 15 takes ALLOCSET_DEFAULT_INITSIZE.
 */
const PG_INTERNAL_STATE_BYTES = 8192;
/** A group's entry besides such states (keys, hash entry, the float8 states), rounded up. */
const PG_GROUP_ENTRY_BYTES = 1024;

/**
 * The `work_mem` (bytes) of a statement whose hash aggregate makes about `groups` groups, each
 * keeping `keptArrays` arrays. A hash aggregate spills to disk once it holds more groups than
 * `work_mem × hash_mem_multiplier` divided by the planner's size of a group (8 kB for each kept
 * array), although a group of a 5-minute bucket of 10 s samples with values and times kept takes
 * about 1.5 kB: the store-query bench's full aggregation (two statements of 28 800 groups) spilled
 * 32 MB each at 64 MB and took 1.73 s a statement, against 1.44 s without spilling (psql, three
 * rounds of three). So `work_mem` holds that many groups at the planner's size, between
 * {@link METRIC_QUERY_WORK_MEM_MIN} and {@link METRIC_QUERY_WORK_MEM_MAX}: what the groups really
 * take stays bounded by the kept samples' estimate ({@link KEPT_SAMPLE_MAX_BYTES}) and the groups;
 * at the most, two statements may hold 2 × 512 MB on the server before spilling, when the estimate
 * of their samples was far too low.
 */
export function metricWorkMem(groups: number, keptArrays: number): number {
  const entry = keptArrays * PG_INTERNAL_STATE_BYTES + PG_GROUP_ENTRY_BYTES;
  const bytes = Math.ceil((Math.max(0, groups) * entry) / METRIC_QUERY_HASH_MEM_MULTIPLIER);
  return Math.min(METRIC_QUERY_WORK_MEM_MAX, Math.max(METRIC_QUERY_WORK_MEM_MIN, bytes));
}

/**
 * The shortest a bucket of `plan` can be, in ms: a day, week or month one hour shorter than its
 * clock length (a day that skips an hour), a count bucket its range's share (at least 1 ms).
 */
function shortestBucketMs(plan: MetricQueryPlan): number {
  const bucket = plan.bucket;
  switch (bucket.kind) {
    case "minutes":
      return bucket.minutes * MINUTE_MS;
    case "day":
      return DAY_MS - HOUR_MS;
    case "week":
      return WEEK_MS - HOUR_MS;
    case "month":
      return 28 * DAY_MS - HOUR_MS;
    case "count":
      return Math.max(1, Math.floor((plan.to - plan.from) / bucket.count));
  }
}

/**
 * At most how many groups a statement over `windows` makes: each window's buckets (two more for
 * its ends and an offset change) times the matched (series, identifier) pairs, and never more
 * than its `samples` (estimated).
 */
export function estimatedGroups(
  plan: MetricQueryPlan,
  windows: readonly ScanWindow[],
  pairs: number,
  samples: number,
): number {
  const width = shortestBucketMs(plan);
  const buckets = windows.reduce((n, w) => n + Math.ceil((w.to - w.from) / width) + 2, 0);
  return Math.min(Math.ceil(samples), buckets * pairs);
}

/**
 * Fewest estimated samples for which a query runs as two statements at once, on two pool
 * connections, each over one side of a bucket boundary near the middle of the range: PostgreSQL
 * 15 runs no aggregate with `array_agg` in parallel workers, so the store splits the range itself
 * (each part answers whole buckets, so the parts' answers are the answer).
 */
export const SPLIT_MIN_SAMPLES = 500_000;
/** The fewest bytes a stored sample takes in a partition (tuple header, columns, line pointer). */
const MIN_SAMPLE_BYTES = 48;

/**
 * The widest span of series ids (largest − smallest + 1) a query looks its series up in by array
 * index whatever its number of series, and the span per matched series above that: the array is
 * built inside the statement, 4 bytes per id of the span.
 */
export const LOOKUP_MIN_SPAN = 65_536;
export const LOOKUP_SPAN_PER_SERIES = 8;

/**
 * How {@link queryPgMetrics} runs a query (`PgAggregateStrategy` in postgres-metrics-sql.ts says
 * what each choice does); `auto`, the store's choice, is the fastest that keeps at most
 * {@link KEPT_SAMPLE_MAX_BYTES} of samples in memory by the estimate (per statement of a split
 * query: each runs on its own connection, with its own `work_mem`). Every choice gives the same
 * exact answer.
 * - `percentiles`: `hash` unless the values of more than {@link PERCENTILE_HASH_MAX_SAMPLES}
 *   samples would be kept;
 * - `firstLast`: `arrays` when the values and times of every sample can be kept (and `hash`
 *   percentiles); `rows` otherwise;
 * - `lookup`: `array` when each series is in one group and the ids' span is within
 *   {@link LOOKUP_MIN_SPAN} or {@link LOOKUP_SPAN_PER_SERIES} per series (`array` asks for it
 *   whatever the span); `join` otherwise;
 * - `splitMinSamples`: default {@link SPLIT_MIN_SAMPLES}; 0 splits every query that has a boundary
 *   to split at.
 */
export interface PgMetricQueryOptions {
  readonly percentiles?: "auto" | "hash" | "sort";
  readonly firstLast?: "auto" | "arrays" | "rows";
  readonly lookup?: "auto" | "array" | "join";
  readonly splitMinSamples?: number;
}

/**
 * Answers `plan` from the samples in the partitions of `weeks` (week numbers, as
 * `listPartitions()` reads them). Rows come in the order of DESIGN 5.3's answer: bucket, group
 * keys (code-point order), identifier. Concurrent writes: each part of a split query reads its own
 * snapshot, so a bucket reflects one moment but two buckets on either side of the split may
 * reflect moments a few milliseconds apart (as two queries would).
 */
export async function queryPgMetrics(
  sql: Sql,
  plan: MetricQueryPlan,
  weeks: readonly number[],
  options: PgMetricQueryOptions = {},
): Promise<MetricQueryRow[]> {
  return [...metricAnswerBatches(await pgMetricAnswers(sql, plan, weeks, options))].flat();
}

/** The answers of {@link queryPgMetrics}'s statements, in order, column by column. */
export async function pgMetricAnswers(
  sql: Sql,
  plan: MetricQueryPlan,
  weeks: readonly number[],
  options: PgMetricQueryOptions = {},
): Promise<MetricAnswer[]> {
  const touched = weeks.filter((w) => weekStart(w) < plan.to && weekStart(w + 1) > plan.from);
  const windows = scanWindows(
    plan,
    touched.map((w) => ({ from: weekStart(w), to: weekStart(w + 1) })),
  );
  if (windows.length === 0) return [];
  // Count buckets ignore the zone's clock: without time windows no offset is read.
  const zone = plan.bucket.kind === "count" && plan.timeWindows.length === 0 ? "+00:00" : plan.zone;
  const [offsets, samples, matched] = await Promise.all([
    zoneOffsets(sql, zone, windows),
    estimatedSamples(sql, plan, touched),
    matchedSeries(sql, plan),
  ]);
  if (matched.pairs === 0) return [];
  const parts =
    samples >= (options.splitMinSamples ?? SPLIT_MIN_SAMPLES)
      ? split(plan, windows, offsets)
      : [{ windows, offsets }];
  // Each part is a statement of its own, on its own connection, with its own `work_mem`.
  const strategy = chooseStrategy(plan, samples / parts.length, matched, options);
  const run = (s: PgAggregateStrategy) =>
    Promise.all(
      parts.map((part) =>
        runPart(sql, plan, part.windows, part.offsets, s, (keptArrays) =>
          // A sorted percentile runs no hash aggregate: its sort takes what `work_mem` allows.
          s.percentiles === "sort"
            ? METRIC_QUERY_WORK_MEM_MIN
            : metricWorkMem(
                estimatedGroups(plan, part.windows, matched.pairs, samples / parts.length),
                keptArrays,
              ),
        ),
      ),
    );
  try {
    return await run(strategy);
  } catch (error) {
    // A sum, mean, variance or deviation beyond the largest double ("value out of range:
    // overflow"): the forms that answer null there, a tenth slower, only for such a query.
    if ((error as { code?: unknown } | null)?.code !== NUMERIC_VALUE_OUT_OF_RANGE) throw error;
    return run({ ...strategy, bounded: true });
  }
}

/** PostgreSQL's SQLSTATE for a float8 overflow or underflow. */
const NUMERIC_VALUE_OUT_OF_RANGE = "22003";

/** The matched series, sized up: see {@link buildPgMatchedSeriesQuery}. */
interface MatchedSeries {
  readonly pairs: number;
  readonly series: number;
  readonly minId: number;
  readonly maxId: number;
  /** Smallest and largest id of every stored series. */
  readonly firstId: number;
  readonly lastId: number;
}

async function matchedSeries(sql: Sql, plan: MetricQueryPlan): Promise<MatchedSeries> {
  const statement = buildPgMatchedSeriesQuery(plan);
  const [row] = await sql.unsafe(statement.text, statement.params as never[]);
  return {
    pairs: Number(row?.pairs ?? 0),
    series: Number(row?.series ?? 0),
    minId: Number(row?.min_id ?? 0),
    maxId: Number(row?.max_id ?? 0),
    firstId: Number(row?.first_id ?? 0),
    lastId: Number(row?.last_id ?? 0),
  };
}

/** The strategy `options` ask for, `auto` resolved for `samples` (estimated) and `matched`. */
function chooseStrategy(
  plan: MetricQueryPlan,
  samples: number,
  matched: MatchedSeries,
  options: PgMetricQueryOptions,
): PgAggregateStrategy {
  const asked = (name: string): boolean => plan.aggregations.some((a) => a.name === name);
  const percentiles =
    options.percentiles === "hash" || options.percentiles === "sort"
      ? options.percentiles
      : asked("svc.percentile") && samples > PERCENTILE_HASH_MAX_SAMPLES
        ? "sort"
        : "hash";
  const firstLast =
    percentiles === "sort" || options.firstLast === "rows"
      ? "rows"
      : options.firstLast === "arrays" ||
          !(asked("svc.first") || asked("svc.last")) ||
          samples * 16 <= KEPT_SAMPLE_MAX_BYTES
        ? "arrays"
        : "rows";
  const span = matched.maxId - matched.minId + 1;
  const lookup: PgSeriesLookup | null =
    options.lookup !== "join" &&
    matched.pairs === matched.series &&
    (options.lookup === "array" || span <= Math.max(LOOKUP_MIN_SPAN, LOOKUP_SPAN_PER_SERIES * matched.series))
      ? {
          minId: matched.minId,
          maxId: matched.maxId,
          complete: span === matched.series,
          wholeTable: matched.minId <= matched.firstId && matched.maxId >= matched.lastId,
        }
      : null;
  return { percentiles, firstLast, lookup };
}

/** Answer rows fetched at a time from a metric statement's cursor. */
export const METRIC_CURSOR_ROWS = 2_048; // rows

/**
 * A metric statement's answer, column by column: one entry a row, in the statement's order (a
 * row's group keys as `MetricQueryRow.group` holds them, consecutive rows of one group sharing the
 * keys' array). Far smaller than the driver's row objects, and made into `MetricQueryRow`s a batch
 * at a time ({@link metricAnswerBatches}).
 */
export interface MetricAnswer {
  readonly groupKeys: readonly { readonly key: string }[];
  readonly labels: readonly string[];
  readonly bucket: number[];
  readonly group: (readonly (string | number)[])[];
  readonly identifier: string[];
  /** By label: the values of every row, null where the database has NULL. */
  readonly values: (number | null)[][];
}

/**
 * One statement over `windows`, in its own transaction (see the file comment) with the `work_mem`
 * `workMem` gives for the arrays its aggregate keeps, its rows fetched through a cursor
 * {@link METRIC_CURSOR_ROWS} at a time into a {@link MetricAnswer}: the connection is free again
 * once the last row is in, and the driver's row objects are never all held at once.
 */
async function runPart(
  sql: Sql,
  plan: MetricQueryPlan,
  windows: readonly ScanWindow[],
  offsets: readonly ZoneOffsets[],
  strategy: PgAggregateStrategy,
  workMem: (keptArrays: number) => number,
): Promise<MetricAnswer> {
  const query = buildPgMetricQuery(plan, windows, offsets, strategy);
  const workMemKb = `${Math.ceil(workMem(query.keptArrays) / 1024)}kB`;
  const answer: MetricAnswer = {
    groupKeys: query.groupColumns,
    labels: query.labels,
    bucket: [],
    group: [],
    identifier: [],
    values: query.labels.map(() => []),
  };
  let keys: (string | number)[] = [];
  await sql.begin(
    closedSafe(async (tx) => {
      await tx`SELECT set_config('jit', 'off', true), set_config('work_mem', ${workMemKb}, true),
                      set_config('hash_mem_multiplier', ${String(METRIC_QUERY_HASH_MEM_MULTIPLIER)}, true)`;
      await tx.unsafe(query.text, query.params as never[]).cursor(METRIC_CURSOR_ROWS, (rows) => {
        for (const row of rows) {
          const group = query.groupColumns.map((g) => {
            const v = row[g.column] as unknown;
            return g.numeric ? Number(v ?? 0) : String(v ?? "");
          });
          if (group.length !== keys.length || group.some((v, k) => v !== keys[k])) keys = group;
          answer.bucket.push(Number(row.bucket_ms));
          answer.group.push(keys);
          answer.identifier.push(String(row.identifier));
          query.labels.forEach((_, i) => {
            const v = row[`a${i}`] as unknown;
            (answer.values[i] as (number | null)[]).push(v === null || v === undefined ? null : Number(v));
          });
        }
      });
    }),
  );
  return answer;
}

/**
 * The rows of `answers`, one after the other, {@link METRIC_CURSOR_ROWS} a batch, each batch made
 * when it is read; consecutive rows of one group share one group object.
 */
export function* metricAnswerBatches(answers: readonly MetricAnswer[]): Generator<MetricQueryRow[]> {
  for (const answer of answers) {
    let keys: readonly (string | number)[] | undefined;
    let group: Record<string, string | number> = {};
    for (let start = 0; start < answer.bucket.length; start += METRIC_CURSOR_ROWS) {
      const end = Math.min(answer.bucket.length, start + METRIC_CURSOR_ROWS);
      const rows: MetricQueryRow[] = [];
      for (let r = start; r < end; r++) {
        const rowKeys = answer.group[r] as readonly (string | number)[];
        if (rowKeys !== keys) {
          keys = rowKeys;
          group = {};
          answer.groupKeys.forEach((g, k) => {
            group[g.key] = rowKeys[k] as string | number;
          });
        }
        const values: Record<string, number | null> = {};
        answer.labels.forEach((label, i) => {
          values[label] = (answer.values[i] as (number | null)[])[r] ?? null;
        });
        rows.push({
          bucket: asEpochMs(answer.bucket[r] as number),
          group,
          identifier: answer.identifier[r] as string,
          values,
        });
      }
      yield rows;
    }
  }
}

/**
 * `windows` cut in two at a bucket boundary near the middle of their time ({@link splitInstant}),
 * or left whole when there is none there: the parts, in time order, with their windows' offsets.
 */
function split(
  plan: MetricQueryPlan,
  windows: readonly ScanWindow[],
  offsets: readonly ZoneOffsets[],
): { windows: ScanWindow[]; offsets: ZoneOffsets[] }[] {
  const whole = [{ windows: [...windows], offsets: [...offsets] }];
  let remaining = windows.reduce((sum, w) => sum + (w.to - w.from), 0) / 2;
  for (const [i, w] of windows.entries()) {
    if (w.to - w.from <= remaining) {
      remaining -= w.to - w.from;
      continue;
    }
    const o = offsets[i];
    const at =
      o === undefined ? undefined : splitInstant(plan.bucket, o, w, w.from + Math.floor(remaining), plan);
    if (o === undefined || at === undefined) return whole;
    return [
      { windows: [...windows.slice(0, i), { from: w.from, to: at }], offsets: offsets.slice(0, i + 1) },
      { windows: [{ from: at, to: w.to }, ...windows.slice(i + 1)], offsets: offsets.slice(i) },
    ];
  }
  return whole;
}

/** The zone's offsets around each window: asked of PostgreSQL for a named zone, fixed otherwise. */
async function zoneOffsets(sql: Sql, zone: string, windows: readonly ScanWindow[]): Promise<ZoneOffsets[]> {
  const spec = parseZone(zone);
  if (spec.kind === "fixed") return windows.map(() => fixedZoneOffsets(spec.offsetSeconds));
  const statement = buildZoneOffsetsQuery(spec.name, windows);
  const rows = await sql.unsafe(statement.text, statement.params as never[]);
  return readZoneOffsets(rows, windows.length);
}

/**
 * An estimate of the samples `plan` reads (every series counted: it only chooses how to run an
 * exact query): the samples of the chunks whose hour is in the range (exact: a chunk row holds its
 * count), plus the rows not compacted yet, the larger of two estimates: the planner's row estimate
 * for the range (from the partitions' statistics; too low for data written since they were last
 * analyzed) and each touched row partition's size at the smallest size a sample takes, prorated to
 * the part of its week inside the range (too low when a week's samples crowd into the range).
 */
async function estimatedSamples(sql: Sql, plan: MetricQueryPlan, weeks: readonly number[]): Promise<number> {
  const [sizes, chunked] = await Promise.all([
    sql<{ name: string; bytes: string | null }[]>`
      SELECT n AS name, pg_relation_size(to_regclass(n)) AS bytes FROM unnest(${weeks.map(partitionName)}::text[]) AS n`,
    sql<{ n: string | null }[]>`
      SELECT sum(n)::text AS n FROM sample_chunks
      WHERE chunk_start_ms > ${plan.from - CHUNK_MS}::bigint AND chunk_start_ms < ${plan.to}::bigint`,
  ]);
  const byName = new Map(sizes.map((r) => [r.name, Number(r.bytes ?? 0)]));
  let prorated = 0;
  for (const w of weeks) {
    const inside = Math.min(plan.to, weekStart(w + 1)) - Math.max(plan.from, weekStart(w));
    prorated += ((byName.get(partitionName(w)) ?? 0) / MIN_SAMPLE_BYTES) * (inside / WEEK_MS);
  }
  const [explained] = await sql.unsafe(
    "EXPLAIN (FORMAT JSON) SELECT 1 FROM samples WHERE ts_ms >= $1::bigint AND ts_ms < $2::bigint",
    [String(plan.from), String(plan.to)],
  );
  const json = explained?.["QUERY PLAN"] as unknown;
  const parsed = (typeof json === "string" ? JSON.parse(json) : json) as {
    Plan?: { "Plan Rows"?: number };
  }[];
  return Number(chunked[0]?.n ?? 0) + Math.max(prorated, Number(parsed[0]?.Plan?.["Plan Rows"] ?? 0));
}
