/**
 * Builds the SQL that answers a metric query inside PostgreSQL (DESIGN 5.3, 5.5).
 *
 * Every value from a request (names, zone, times, p) is a bound parameter; the SQL text depends
 * only on the plan's shape (bucket kind, grouping, aggregations, number of time windows, number of
 * UTC-offset segments of the zone in the range, percentile strategy).
 *
 * Buckets follow DESIGN 5.3 exactly, DST included, with the rule of the DuckDB store
 * (duckdb-metrics-sql.ts): a bucket starts at the latest instant ≤ the sample whose local
 * wall-clock time is on the bucket grid. Within one UTC offset that instant is "local floor minus
 * the offset"; when an offset transition P lies between that candidate and the sample, the
 * boundary is P itself (the grid point fell into the skipped gap) or the last grid point before P
 * in the offset before P (in a repeated hour both instances of a grid time are boundaries).
 *
 * Two statements do it, so that no sample pays for a time-zone conversion (bench/store-query.bench.ts):
 * {@link buildZoneOffsetsQuery} asks PostgreSQL's time zone library for the zone's offset
 * transitions around each stretch of stored weeks (hourly, refined to the minute and the second);
 * {@link buildPgMetricQuery} cuts those stretches at the transitions into segments of constant
 * offset and scans each with integer arithmetic on `ts_ms`: local time is `ts_ms + offset`, the
 * local floor a modulo (calendar months go through `date` arithmetic, exact and independent of the
 * session's zone). Assumption, as in the DuckDB store: at most one offset change per bucket and per
 * hour, at a whole second (true of every zone in use since 1970).
 *
 * Aggregations follow DESIGN 5.3 exactly: population variance and deviation; first/last by
 * timestamp with ties broken by the smaller (larger) value; percentile by nearest rank with
 * k = max(1, ⌈num·n/den⌉) in `numeric` (exact), never PostgreSQL's float `percentile_disc`. The
 * aggregation is one hash aggregate over (bucket, group number) — a group number stands for the
 * group's key columns and identifier, found for each sample by indexing an array with its series id
 * (a hash join when that array would be large or a series is in two groups), and each answer row
 * takes its group's keys from arrays indexed by the number (the planner estimates one matched
 * series, so a join there is planned as a nested loop over every group for each row) — which keeps each
 * group's values and times as arrays (`array_agg`, no sort): each group then picks its k-th value
 * with a bounded top-N sort from the nearer end (k or n − k + 1 values kept), and its first/last
 * among the values at its earliest/latest time (`array_positions`). A query whose samples would
 * make those arrays large ({@link KEPT_SAMPLE_MAX_BYTES}) compares (time, value) pairs sample by
 * sample for first/last, and above {@link PERCENTILE_HASH_MAX_SAMPLES} sorts the samples for its
 * percentiles (ordered `array_agg`), holding one group's values at a time ({@link PgAggregateStrategy}).
 * The store-query benchmark, one statement, one core: 1 030 ms with a join, local times and per-sample
 * first/last; 720 ms with the lookup, the grid arithmetic of `segmentScan` and kept arrays.
 *
 * `count` buckets (DESIGN 5.3 `bucketing.count`) are not on the zone's clock: a sample `d` ms after
 * `from` is in bucket ⌊d·N/W⌋ of the N buckets of the W ms range, which starts at from + ⌈i·W/N⌉
 * (see `BucketSpec`), integer arithmetic on `ts_ms`; the zone then matters only for time windows.
 */
import { bucketGrid, gridTruncations, scanGroups } from "../core/bucket-grid.js";
import {
  type GroupColumn,
  groupAttributeValues,
  groupColumns,
  type PlainAggregationName,
  plainAggregations,
  planSelectors,
} from "../core/metric-plan.js";
import { decimalFraction } from "../core/percentile-rank.js";
import {
  DAY_MS,
  HOUR_MS,
  MINUTE_MS,
  type OffsetTransition,
  type ScanWindow,
  SECOND_MS,
  type Segment,
  segments,
  TRANSITION_LOOKBACK_MS,
  type ZoneOffsets,
} from "../core/zone-offsets.js";
import type { AggregationName, MetricQueryPlan, TimeWindow } from "../store.js";
import { CHUNK_MS } from "./postgres-compaction.js";
import { chunkTimeSql, chunkUnnestSql, chunkValueSql } from "./postgres-schema.js";

/** A statement with positional parameters, for `sql.unsafe(text, params)`. */
export interface PgStatement {
  readonly text: string;
  readonly params: unknown[];
}

/** The metric statement and how to read its rows. */
export interface PgMetricSql extends PgStatement {
  /** Output column names of the group keys, in grouping order, keyed as in `MetricQueryRow.group`. */
  readonly groupColumns: readonly GroupColumn[];
  /** Aggregation labels, in order: the output columns `a0`, `a1`, … */
  readonly labels: readonly string[];
  /**
   * How many arrays the aggregate keeps per group (`vals`, `tss`): the aggregates whose state is
   * `internal`, which PostgreSQL's planner sizes at 8 kB a group (postgres-metrics.ts `metricWorkMem`).
   */
  readonly keptArrays: number;
}

/** Epoch ms of 4713-11-24 BC (PostgreSQL's earliest timestamptz) and of 294276 AD, with margin. */
export const PG_MIN_MS = -210_866_803_200_000 + 40 * 86_400_000;
export const PG_MAX_MS = 9_224_318_016_000_000 - 40 * 86_400_000;

/**
 * Most bytes of kept samples (estimated from the partitions' sizes) a query's hash aggregate may
 * hold: every group's values (8 bytes a sample, for percentiles and first/last) and times (8 more,
 * for first/last) at once, up to twice that while arrays grow — at most about 128 MB, the
 * transaction's `work_mem` times PostgreSQL's default `hash_mem_multiplier`. A query that would keep
 * more takes first/last sample by sample, and above {@link PERCENTILE_HASH_MAX_SAMPLES} sorts its
 * percentile values (spilling to disk if need be), holding one group's values at a time.
 */
export const KEPT_SAMPLE_MAX_BYTES = 64_000_000;
/** Most samples whose values a query with a percentile keeps by hash ({@link KEPT_SAMPLE_MAX_BYTES}). */
export const PERCENTILE_HASH_MAX_SAMPLES = KEPT_SAMPLE_MAX_BYTES / 8;
/**
 * How a statement aggregates (postgres-metrics.ts chooses; every choice gives the same answer):
 * - `percentiles`: `hash` keeps each group's values unsorted (`array_agg`) and picks the k-th by a
 *   bounded top-N sort; `sort` sorts the samples by value (ordered `array_agg`).
 * - `firstLast`: `arrays` keeps each group's times beside its values (needs `percentiles: hash`) and
 *   takes first/last at the earliest/latest time with `array_positions`; `rows` compares every
 *   sample's (time, value) pair as it comes (an array built per sample: about twice the cost).
 * - `lookup`: the matched series' group numbers as an array indexed by series id (ids `minId` to
 *   `maxId`, each series in one group; `complete` when every id between is matched, `wholeTable`
 *   when no stored series has an id outside them, so the scan needs no range check), or `null` for
 *   a hash join of the samples with the matched series.
 */
export interface PgAggregateStrategy {
  readonly percentiles: "hash" | "sort";
  readonly firstLast: "arrays" | "rows";
  readonly lookup: PgSeriesLookup | null;
  /**
   * Sums, means, variances and deviations in the forms that answer null where the result is beyond
   * the largest double (`plainAggregations`), which postgres-metrics.ts asks for only after the
   * plain forms failed on an overflow.
   */
  readonly bounded?: boolean;
}

/** The matched series' ids for an array lookup (see {@link PgAggregateStrategy}). */
export interface PgSeriesLookup {
  readonly minId: number;
  readonly maxId: number;
  readonly complete: boolean;
  readonly wholeTable: boolean;
}

/**
 * The stretches of a query's range that stored weeks cover: `spans` (each [from, to), epoch ms)
 * clipped to `[plan.from, plan.to)` and to PostgreSQL's timestamp range, adjacent ones merged, in
 * time order.
 */
export function scanWindows(
  plan: Pick<MetricQueryPlan, "from" | "to">,
  spans: readonly ScanWindow[],
): ScanWindow[] {
  const clipped = spans
    .map((s) => ({ from: Math.max(plan.from, s.from, PG_MIN_MS), to: Math.min(plan.to, s.to, PG_MAX_MS) }))
    .filter((s) => s.from < s.to)
    .sort((a, b) => a.from - b.from);
  const out: { from: number; to: number }[] = [];
  for (const s of clipped) {
    const last = out[out.length - 1];
    if (last !== undefined && s.from <= last.to) last.to = Math.max(last.to, s.to);
    else out.push({ ...s });
  }
  return out;
}

const floorDiv = (a: number, b: number): number => Math.floor(a / b);
/** `a` modulo `b` in [0, b). */
const mod = (a: number, b: number): number => ((a % b) + b) % b;

/**
 * The statement that lists a named zone's UTC offsets around each of `windows`: rows `(w, at,
 * before, after)` — for window `w` (0-based) one row `(w, NULL, NULL, initial offset)` and one row
 * `(w, instant, offset before, offset after)` per transition, in time order; read it with
 * {@link readZoneOffsets}. Each window is scanned hourly from at least
 * {@link TRANSITION_LOOKBACK_MS} before it (so that a month bucket starting before it still sees
 * its transition) to at least an hour after it, on whole UTC days, inside PostgreSQL's range.
 */
export function buildZoneOffsetsQuery(zone: string, windows: readonly ScanWindow[]): PgStatement {
  const params: unknown[] = [];
  const p = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const z = `${p(zone)}::text`;
  const lo = windows.map((w) =>
    String(Math.max(PG_MIN_MS, floorDiv(w.from - TRANSITION_LOOKBACK_MS, DAY_MS) * DAY_MS)),
  );
  const hi = windows.map((w) =>
    String(Math.min(PG_MAX_MS, (floorDiv(w.to + HOUR_MS - 1, DAY_MS) + 1) * DAY_MS)),
  );
  const tstz = (ms: string): string => `(timestamptz 'epoch' + ${ms} * interval '1 millisecond')`;
  const offsetAt = (ms: string): string =>
    `(extract(epoch FROM timezone(${z}, ${tstz(ms)}) - timezone('UTC', ${tstz(ms)})) * 1000)::bigint`;
  const text = `WITH scan AS (
  SELECT w.w, t.t_ms, ${offsetAt("t.t_ms")} AS off_ms
  FROM unnest(${p(lo)}::bigint[], ${p(hi)}::bigint[]) WITH ORDINALITY AS w(lo, hi, w),
  LATERAL generate_series(w.lo, w.hi, ${HOUR_MS}::bigint) AS t(t_ms)
),
steps AS (
  SELECT w, lag(t_ms) OVER win AS prev_t, t_ms, lag(off_ms) OVER win AS prev_off, off_ms
  FROM scan WINDOW win AS (PARTITION BY w ORDER BY t_ms)
),
changes AS (SELECT * FROM steps WHERE prev_off <> off_ms),
minutes AS (
  SELECT c.w, min(m.m_ms) AS m_ms, c.prev_off, c.off_ms
  FROM changes c, LATERAL generate_series(c.prev_t + ${MINUTE_MS}, c.t_ms, ${MINUTE_MS}::bigint) AS m(m_ms)
  WHERE ${offsetAt("m.m_ms")} = c.off_ms
  GROUP BY c.w, c.prev_t, c.prev_off, c.off_ms
),
seconds AS (
  SELECT c.w, min(s.s_ms) AS at_ms, c.prev_off, c.off_ms
  FROM minutes c, LATERAL generate_series(c.m_ms - ${MINUTE_MS} + ${SECOND_MS}, c.m_ms, ${SECOND_MS}::bigint) AS s(s_ms)
  WHERE ${offsetAt("s.s_ms")} = c.off_ms
  GROUP BY c.w, c.m_ms, c.prev_off, c.off_ms
)
SELECT w - 1 AS w, NULL::bigint AS at_ms, NULL::bigint AS before_ms, off_ms AS after_ms
FROM (SELECT DISTINCT ON (w) w, off_ms FROM scan ORDER BY w, t_ms) AS first
UNION ALL
SELECT w - 1, at_ms, prev_off, off_ms FROM seconds
ORDER BY 1, 2 NULLS FIRST`;
  return { text, params };
}

/** The answer of {@link buildZoneOffsetsQuery} for `count` windows (int8 columns arrive as strings). */
export function readZoneOffsets(rows: readonly Record<string, unknown>[], count: number): ZoneOffsets[] {
  const initial: (number | undefined)[] = Array.from({ length: count }, () => undefined);
  const transitions: OffsetTransition[][] = Array.from({ length: count }, () => []);
  for (const row of rows) {
    const w = Number(row.w);
    const after = Number(row.after_ms);
    if (row.at_ms === null) initial[w] = after;
    else transitions[w]?.push({ atMs: Number(row.at_ms), beforeMs: Number(row.before_ms), afterMs: after });
  }
  return initial.map((initialMs, w) => {
    if (initialMs === undefined) throw new TypeError(`zone offsets: no initial offset for window ${w}`);
    return { initialMs, transitions: transitions[w] ?? [] };
  });
}

/**
 * An aggregation's SQL: `inner` in the aggregate over the bucketed samples (`value`, `ts_ms`), or
 * null when `outer` (in the query over the aggregate's rows) needs only the kept columns `keeps`
 * names: `n` (the count), `vals` (the values), `tss` (their times, in the same order), `t0`/`t1`
 * (the earliest/latest time).
 */
interface AggregationSql {
  readonly inner: string | null;
  readonly outer: string;
  readonly keeps: readonly KeptColumn[];
}
type KeptColumn = "n" | "vals" | "tss" | "t0" | "t1";
type AggregationContext = {
  readonly percentile: { readonly num: string; readonly den: string } | null;
  readonly strategy: PgAggregateStrategy;
};

/** The plain aggregations' SQL, by `PgAggregateStrategy.bounded`. */
const PLAIN_SQL = {
  plain: plainAggregations((fn) => fn, false),
  bounded: plainAggregations((fn) => fn, true),
};
const PLAIN = Object.fromEntries(
  (Object.keys(PLAIN_SQL.plain) as PlainAggregationName[]).map((name) => [
    name,
    (c: AggregationContext): AggregationSql => ({
      inner: PLAIN_SQL[c.strategy.bounded ? "bounded" : "plain"][name],
      outer: "",
      keeps: [],
    }),
  ]),
) as Record<PlainAggregationName, (c: AggregationContext) => AggregationSql>;

/**
 * First (`pick` min, `at` t0) or last (max, t1): with `rows`, arrays compare element by element —
 * the earliest (latest) time, then the smallest (largest) value (ms < 2^53, exact as float8); with
 * `arrays`, the smallest (largest) of the kept values at the earliest (latest) kept time.
 */
const edge =
  (pick: "min" | "max", at: "t0" | "t1") =>
  (c: AggregationContext): AggregationSql =>
    c.strategy.firstLast === "rows"
      ? { inner: `(${pick}(ARRAY[ts_ms::float8, value]))[2]`, outer: "", keeps: [] }
      : {
          inner: null,
          outer: `(SELECT ${pick}(vals[i]) FROM unnest(array_positions(tss, ${at})) AS i)`,
          keeps: ["vals", "tss", at],
        };

/** One entry per aggregation (STYLE 6). */
const AGGREGATIONS: Record<AggregationName, (c: AggregationContext) => AggregationSql> = {
  ...PLAIN,
  "svc.first": edge("min", "t0"),
  "svc.last": edge("max", "t1"),
  // The rank k = max(1, ⌈num·n/den⌉) in numeric, the value picked from the kept values.
  "svc.percentile": (c) => ({
    inner: null,
    outer: percentileSql(
      `greatest(1, div(${c.percentile?.num} * n + ${c.percentile?.den} - 1, ${c.percentile?.den}))::bigint`,
      c.strategy.percentiles === "sort",
    ),
    keeps: ["n", "vals"],
  }),
};

/** The kept columns that are arrays (`array_agg`, whose state is `internal`). */
const KEPT_ARRAYS: readonly KeptColumn[] = ["vals", "tss"];

/** The aggregate's expression of each kept column: values in the order percentiles need. */
const KEPT: Record<KeptColumn, (strategy: PgAggregateStrategy) => string> = {
  n: () => "count(value)",
  vals: (s) => (s.percentiles === "sort" ? "array_agg(value ORDER BY value)" : "array_agg(value)"),
  tss: () => "array_agg(ts_ms)",
  t0: () => "min(ts_ms)",
  t1: () => "max(ts_ms)",
};

/** `x` modulo `m` rounded toward minus infinity (PostgreSQL's `%` keeps the sign of `x`). */
const floorMod = (x: string, m: string): string => `(((${x}) % ${m}) + ${m}) % ${m}`;
/** Whole days since the epoch of a local time `l` (ms), as an int4 for `date` arithmetic. */
const localDay = (l: string): string => `((${l} - ${floorMod(l, `${DAY_MS}::bigint`)}) / ${DAY_MS})::int`;

/**
 * The local floor of a local time `l` (ms since the local epoch, an expression) per bucket kind
 * (core/bucket-grid.ts); for months the first of the month by `date` arithmetic (exact, and
 * independent of the session's time zone, unlike `date_trunc` on a date).
 */
const TRUNCATE = gridTruncations({
  floorMod,
  duration: (ms) => `${ms}::bigint`,
  monthStart: (l) => {
    const d = `(date '1970-01-01' + ${localDay(l)})`;
    return `((${d} - extract(day FROM ${d})::int + 1 - date '1970-01-01')::bigint * ${DAY_MS})`;
  },
});

/** Adds a value to a statement's parameters and returns its placeholder. */
type Param = (value: unknown) => string;

function parameters(): { params: unknown[]; p: Param } {
  const params: unknown[] = [];
  return {
    params,
    p: (value) => {
      params.push(value);
      return `$${params.length}`;
    },
  };
}

/**
 * The common table expressions `ents`, `sel` and `matched` (the series `plan` selects, once per
 * identifier they match, with the entity's grouping attribute) for a statement's parameters `p`.
 */
function matchedSql(plan: MetricQueryPlan, p: Param): string {
  const entityIds = p(plan.entities.map((e) => e.id));
  const entityAttrs = p(groupAttributeValues(plan));
  const selectors = planSelectors(plan);
  const sel = {
    identifier: p(selectors.map((s) => s.identifier)),
    sampler: p(selectors.map((s) => s.sampler)),
    samplerType: p(selectors.map((s) => s.samplerType ?? "")),
    anyType: p(selectors.map((s) => (s.samplerType === null ? 1 : 0))),
    dataview: p(selectors.map((s) => s.dataview)),
    row: p(selectors.map((s) => s.row ?? "")),
    anyRow: p(selectors.map((s) => (s.row === null ? 1 : 0))),
    column: p(selectors.map((s) => s.column)),
  };
  return `ents AS (
  SELECT * FROM unnest(${entityIds}::int[], ${entityAttrs}::text[]) AS e(entity_id, attr)
),
sel AS (
  SELECT * FROM unnest(${sel.identifier}::text[], ${sel.sampler}::text[], ${sel.samplerType}::text[],
                       ${sel.anyType}::int[], ${sel.dataview}::text[], ${sel.row}::text[], ${sel.anyRow}::int[],
                       ${sel.column}::text[])
    AS s(identifier, sampler, sampler_type, any_type, dataview, row_name, any_row, column_name)
),
matched AS MATERIALIZED (
  SELECT DISTINCT s.id AS series_id, s.row_name, s.entity_id, ents.attr, sel.identifier
  FROM series s
  JOIN ents ON ents.entity_id = s.entity_id
  JOIN sel ON s.sampler = sel.sampler AND s.dataview = sel.dataview AND s.column_name = sel.column_name
    AND (sel.any_type = 1 OR s.sampler_type = sel.sampler_type)
    AND (CASE WHEN sel.any_row = 1 THEN s.row_name <> '' ELSE s.row_name = sel.row_name END)
)`;
}

/**
 * The statement that sizes up the series `plan` matches, for choosing a {@link PgSeriesLookup}:
 * one row `(pairs, series, min_id, max_id, first_id, last_id)` — matches of a series and an
 * identifier, distinct series, their smallest and largest id, and the smallest and largest id of
 * every stored series (int8 and int4 columns; null ids when none).
 */
export function buildPgMatchedSeriesQuery(plan: MetricQueryPlan): PgStatement {
  const { params, p } = parameters();
  const text = `WITH ${matchedSql(plan, p)}
SELECT count(*) AS pairs, count(DISTINCT series_id) AS series, min(series_id) AS min_id, max(series_id) AS max_id,
  (SELECT min(id) FROM series) AS first_id, (SELECT max(id) FROM series) AS last_id
FROM matched`;
  return { text, params };
}

/**
 * Builds the statement for `plan` over `windows` (from {@link scanWindows}, non-empty) with the
 * zone's offsets per window (`offsets[i]` for `windows[i]`), aggregating as `strategy` says.
 * Throws a RangeError for an invalid percentile or a strategy that cannot be (first/last from kept
 * arrays with sorted percentile values).
 */
export function buildPgMetricQuery(
  plan: MetricQueryPlan,
  windows: readonly ScanWindow[],
  offsets: readonly ZoneOffsets[],
  strategy: PgAggregateStrategy,
): PgMetricSql {
  if (strategy.firstLast === "arrays" && strategy.percentiles === "sort") {
    throw new RangeError("internal: first/last from kept arrays needs unsorted values");
  }
  const { params, p } = parameters();
  const big = (ms: number): string => `${p(String(ms))}::bigint`;
  const matched = matchedSql(plan, p);

  const groups = groupColumns(plan.grouping);
  const sortKey = (c: string): string => (c === "entity_id" ? c : `${c} COLLATE "C"`);
  const keyColumns = [...groups.map((g) => g.column), "identifier"];
  // Group numbers follow the output order (key columns in code-point order), so ordering by the
  // number orders by the keys.
  const gidOrder = [...groups.map((g) => sortKey(g.column)), 'identifier COLLATE "C"'];

  const windowSql = plan.timeWindows.map((w) => timeWindowSql(w, p));
  const lookup = strategy.lookup;
  const series: SeriesSql =
    lookup === null
      ? { join: "JOIN keyed m ON m.series_id = x.series_id", gid: "m.gid", where: "" }
      : {
          join: "",
          gid: `(SELECT a FROM gids)[x.series_id + ${p(1 - lookup.minId)}::int]`,
          // Outside the array a subscript is NULL: the group of a series made since the ids were
          // counted, which the answer leaves out as it does group 0 (a series no group takes).
          where: lookup.wholeTable
            ? ""
            : ` AND x.series_id BETWEEN ${p(lookup.minId)}::int AND ${p(lookup.maxId)}::int`,
          matchedOnly: lookup.complete ? undefined : "gid > 0",
        };
  const all = windows.flatMap((w, i) => {
    const o = offsets[i];
    if (o === undefined) throw new RangeError(`internal: no zone offsets for window ${i}`);
    return segments(o, w);
  });
  const scans = scanGroups(all).map((group) => segmentScan(group, plan, series, windowSql, big));

  const inner: string[] = [];
  const outer: string[] = [];
  const kept = new Set<KeptColumn>();
  plan.aggregations.forEach((a, i) => {
    let percentile: AggregationContext["percentile"] = null;
    if (a.name === "svc.percentile") {
      const { numerator, denominator } = decimalFraction(a.p ?? "");
      percentile = {
        num: `${p(numerator.toString())}::numeric`,
        den: `${p(denominator.toString())}::numeric`,
      };
    }
    const sql = AGGREGATIONS[a.name]({ percentile, strategy });
    if (sql.inner === null) {
      outer.push(`${sql.outer} AS a${i}`);
      for (const k of sql.keeps) kept.add(k);
    } else {
      inner.push(`${sql.inner} AS a${i}`);
      outer.push(`a${i}`);
    }
  });
  for (const k of kept) inner.push(`${KEPT[k](strategy)} AS ${k}`);

  const gids =
    lookup === null
      ? ""
      : `
gids AS (
  SELECT array_agg(coalesce(k.gid, 0) ORDER BY g.id) AS a
  FROM generate_series(${p(lookup.minId)}::int, ${p(lookup.maxId)}::int) AS g(id) LEFT JOIN keyed k ON k.series_id = g.id
),`;
  const text = `WITH ${matched},
keyed AS MATERIALIZED (
  SELECT series_id, ${keyColumns.join(", ")}, dense_rank() OVER (ORDER BY ${gidOrder.join(", ")})::int AS gid
  FROM matched
),${gids}
bucketed AS (
  ${scans.join("\n  UNION ALL\n  ")}
),
agg AS (
  SELECT bucket_ms, gid, ${inner.join(", ")} FROM bucketed GROUP BY bucket_ms, gid
),
keys AS (
  SELECT ${keyColumns.map((c) => `array_agg(${c} ORDER BY gid) AS ${c}`).join(", ")}
  FROM (SELECT DISTINCT ON (gid) gid, ${keyColumns.join(", ")} FROM keyed ORDER BY gid) AS d
)
SELECT agg.bucket_ms, ${keyColumns.map((c) => `(SELECT ${c} FROM keys)[agg.gid] AS ${c}`).join(", ")}, ${outer.join(", ")}
FROM agg
WHERE agg.gid > 0
ORDER BY agg.bucket_ms, agg.gid`;

  return {
    text,
    params,
    groupColumns: groups,
    labels: plan.aggregations.map((a) => a.label),
    keptArrays: KEPT_ARRAYS.filter((k) => kept.has(k)).length,
  };
}

/**
 * The percentile at rank `k` (an expression over the aggregate's `n`) from the group's values
 * `vals`: sorted already (`sorted`), or by a bounded top-N sort from the nearer end, which keeps k
 * (or n − k + 1) values instead of sorting all n.
 */
function percentileSql(k: string, sorted: boolean): string {
  if (sorted) return `vals[(${k})::int]`;
  return `(SELECT CASE WHEN 2 * r.k <= n
    THEN (SELECT v FROM (SELECT unnest(vals) AS v) AS u ORDER BY v OFFSET r.k - 1 LIMIT 1)
    ELSE (SELECT v FROM (SELECT unnest(vals) AS v) AS u ORDER BY v DESC OFFSET n - r.k LIMIT 1) END
    FROM (SELECT ${k} AS k) AS r)`;
}

/**
 * How a scan finds a sample's group number: a `join` after the samples (as `x`), the `gid`
 * expression, extra conditions on `x` (`where`, starting with AND) and, if some samples it reads
 * belong to no group, the condition on `gid` that keeps the others.
 */
interface SeriesSql {
  readonly join: string;
  readonly gid: string;
  readonly where: string;
  readonly matchedOnly?: string | undefined;
}

/**
 * One scan of `samples` over the segments `group` (consecutive, one offset each): the matched
 * samples with their group number and bucket start `bucket_ms`. With one segment the offset and
 * transition are constants; with several a CASE on the sample time picks them. A grid's bucket
 * needs no local time: the grid point at or before a sample is `ts − (ts + c) mod size` with
 * `c = (offset − origin) mod size`, and `(ts + c) mod size` is PostgreSQL's `%` when the scan
 * starts at or after the epoch (`ts + c ≥ 0`).
 */
function segmentScan(
  group: readonly Segment[],
  plan: Pick<MetricQueryPlan, "bucket" | "from" | "to">,
  series: SeriesSql,
  windowSql: readonly ((l: string, sod: string) => string)[],
  big: (ms: number) => string,
): string {
  const bucket = plan.bucket;
  const [head] = group;
  const last = group[group.length - 1];
  if (head === undefined || last === undefined) throw new RangeError("internal: a scan needs a segment");
  const pick = (value: (g: Segment) => string): string => {
    if (group.length === 1) return value(head);
    // Each segment but the last runs until the next one starts.
    const whens = group.slice(0, -1).map((g) => `WHEN ts_ms < ${big(g.to)} THEN ${value(g)}`);
    return `CASE ${whens.join(" ")} ELSE ${value(last)} END`;
  };
  const g = bucketGrid(bucket);
  const size = g === undefined ? "0" : big(g.size);
  const truncate = (l: string): string => {
    if (bucket.kind === "count") throw new RangeError("internal: count buckets have no local floor");
    return TRUNCATE[bucket.kind](l, size);
  };
  const columns = [`${pick((s) => big(s.offsetMs))} AS off_ms`];
  if (g !== undefined) {
    columns.push(`${pick((s) => big(mod(s.offsetMs - g.origin, g.size)))} AS c_ms`);
  }
  const opened = bucket.kind !== "count" && group.some((s) => s.opened !== null);
  if (opened) {
    columns.push(
      `${pick((s) => (s.opened === null ? "NULL::bigint" : big(s.opened.atMs)))} AS p_ms`,
      `${pick((s) => (s.opened === null ? "NULL::bigint" : big(s.opened.beforeMs)))} AS q_ms`,
    );
  }
  // The grid point at or before the sample, as an instant (its local floor minus the offset); for
  // count buckets the start of the sample's bucket.
  const floor =
    bucket.kind === "count"
      ? countBucketSql(plan, bucket.count, big)
      : g === undefined
        ? `${truncate("ts_ms + off_ms")} - off_ms`
        : head.from >= 0
          ? `ts_ms - (ts_ms + c_ms) % ${size}`
          : `ts_ms - ${floorMod("ts_ms + c_ms", size)}`;
  // A sample after a transition whose grid point lies before it: the boundary is the transition
  // (the grid point fell into a skipped gap) or the last grid point before it, in the old offset.
  const bucketSql = opened
    ? `CASE WHEN p_ms IS NULL OR b_ms >= p_ms THEN b_ms
              WHEN b_ms + off_ms >= p_ms + q_ms THEN p_ms
              ELSE ${truncate("p_ms + q_ms - 1")} - q_ms END`
    : "b_ms";
  const conditions = [
    ...(series.matchedOnly === undefined ? [] : [series.matchedOnly]),
    ...(windowSql.length === 0
      ? []
      : [
          `(${windowSql.map((w) => w("ts_ms + off_ms", floorMod("ts_ms + off_ms", `${DAY_MS}::bigint`))).join(" OR ")})`,
        ]),
  ];
  const where = conditions.length === 0 ? "" : `\n    WHERE ${conditions.join(" AND ")}`;
  const from = big(head.from);
  const to = big(last.to);
  return `SELECT gid, value, ts_ms, ${bucketSql} AS bucket_ms
    FROM (SELECT *, ${floor} AS b_ms
      FROM (SELECT ${series.gid} AS gid, x.value, x.ts_ms, ${columns.join(", ")}
        FROM ${numberSamplesSql(from, to)} ${series.join}
        WHERE true${series.where}
      ) AS s0) AS s1${where}`;
}

/**
 * The samples with a number in [`from`, `to`) (bigint expressions) as `x (series_id, ts_ms,
 * value)`: the rows, and the values of the chunks whose span meets the range (postgres-compaction.ts;
 * the condition on `chunk_start_ms` prunes the weekly partitions). A chunk wholly inside the range
 * skips the test of each sample's time, and one of numbers only the test of each value.
 */
function numberSamplesSql(from: string, to: string): string {
  const chunks = (unnest: string, ts: string, value: string, form: string): string => `
        SELECT c.series_id, c.ts_ms, c.value FROM (
          SELECT k.series_id, k.n, k.v_count, k.first_ms, k.last_ms, ${ts} AS ts_ms, ${value} AS value
          FROM sample_chunks k ${unnest}
          WHERE k.chunk_start_ms > ${from} - ${CHUNK_MS}::bigint AND k.chunk_start_ms < ${to}
            AND k.v_count > 0 AND k.last_ms >= ${from} AND k.first_ms < ${to} AND ${form}
        ) AS c
        WHERE (c.v_count = c.n OR c.value IS NOT NULL)
          AND ((c.first_ms >= ${from} AND c.last_ms < ${to}) OR (c.ts_ms >= ${from} AND c.ts_ms < ${to}))`;
  return `(SELECT r.series_id, r.ts_ms, r.value FROM samples r
          WHERE r.value IS NOT NULL AND r.ts_ms >= ${from} AND r.ts_ms < ${to}
        UNION ALL${chunks(
          "CROSS JOIN LATERAL unnest(k.ivals) WITH ORDINALITY AS u(ival, ord)",
          "k.first_ms + (u.ord - 1) * k.step",
          "u.ival / k.scale",
          "k.step IS NOT NULL AND k.ivals IS NOT NULL",
        )}
        UNION ALL${chunks(
          chunkUnnestSql("k", false),
          chunkTimeSql("k"),
          chunkValueSql("k"),
          "(k.step IS NULL OR k.ivals IS NULL)",
        )}
        ) AS x`;
}

/** The largest bigint: count-bucket products above it are computed in numeric. */
const MAX_BIGINT = 2n ** 63n - 1n;

/**
 * The bucket start of a sample (`ts_ms`, in `[from, to)`) among `count` equal buckets of the plan's
 * range: bucket i = ⌊d·N/W⌋ for d = ts − from, starting at from + ⌈i·W/N⌉ (see `BucketSpec`).
 * Products stay in bigint when W·N + N does (every range of up to about 2 900 years at the largest
 * count), else numeric with `div`; both operands are never negative, so `/` is the floor.
 */
function countBucketSql(
  plan: Pick<MetricQueryPlan, "from" | "to">,
  count: number,
  big: (ms: number) => string,
): string {
  const width = plan.to - plan.from;
  const from = big(plan.from);
  const n = big(count);
  const w = big(width);
  if (BigInt(width) * BigInt(count) + BigInt(count) <= MAX_BIGINT) {
    return `${from} + ((ts_ms - ${from}) * ${n} / ${w} * ${w} + ${n} - 1) / ${n}`;
  }
  const i = `div((ts_ms - ${from})::numeric * ${n}, ${w})`;
  return `${from} + div(${i} * ${w} + ${n} - 1, ${n})::bigint`;
}

/**
 * One time window as a predicate on a sample's local time `l` (ms since the local epoch) and its
 * ms after local midnight `sod`: in [from, to), or overnight when to < from; from = to covers the
 * whole day; `days` are local ISO weekdays.
 */
function timeWindowSql(w: TimeWindow, p: (value: unknown) => string): (l: string, sod: string) => string {
  const from = `${p(w.fromSecond * SECOND_MS)}::bigint`;
  const to = `${p(w.toSecond * SECOND_MS)}::bigint`;
  const days = w.days === undefined ? undefined : p([...w.days]);
  return (l, sod) => {
    const time =
      w.fromSecond < w.toSecond
        ? `${sod} >= ${from} AND ${sod} < ${to}`
        : `(${sod} >= ${from} OR ${sod} < ${to})`;
    // Day 0 of the local epoch (1970-01-01) is a Thursday, ISO weekday 4.
    const isoWeekday = `(${floorMod(`${localDay(l)} + 3`, "7")} + 1)`;
    return days === undefined ? `(${time})` : `(${time} AND ${isoWeekday} = ANY(${days}::int[]))`;
  };
}
