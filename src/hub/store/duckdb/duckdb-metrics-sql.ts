/**
 * Builds the SQL that answers a metric query inside DuckDB (DESIGN 5.3, 5.5).
 *
 * Every value that comes from a request (names, zone, times, p) is a bound parameter; the SQL text
 * depends only on the plan's shape (bucket kind, grouping keys, aggregation kinds, number of time
 * windows, number of UTC-offset segments of the zone in the range), so nothing a client sends is
 * ever spliced into SQL.
 *
 * Buckets follow DESIGN 5.3 exactly, including DST: a bucket starts at the latest instant ≤ the
 * sample whose local wall-clock time is on the bucket grid (multiples of the size from local
 * midnight; local midnight; Monday; the 1st). Within one UTC offset that instant is "local floor
 * minus the sample's offset". When an offset transition P lies between that candidate and the
 * sample, the boundary is either P itself (the grid point fell into the skipped gap, which moves it
 * to the end of the gap) or the last grid point before P, resolved with the offset in force before
 * P (in a repeated hour both instances of a grid time are boundaries).
 *
 * Two statements do it (no time-zone work per sample). The first
 * ({@link buildZoneOffsetsQuery}) asks ICU inside DuckDB for the zone's offset transitions around
 * the range: it scans the offset hourly and refines each change to the minute, then to the second.
 * The second ({@link buildMetricQuery}) splits the range at those transitions into segments of
 * constant offset and scans each with plain integer arithmetic: local time is `ts + offset`, the
 * local floor is a modulo (or `date_trunc` for months), and the offset, the transition that opens
 * the segment and the offset before it are constants of the segment. A range without a transition
 * is one segment: the constant-offset path. Assumption, as before: at most one offset change per
 * bucket and per hour, at a whole second — true of every zone in use since 1970 (Lord Howe's
 * 30-minute shift included).
 *
 * `count` buckets (DESIGN 5.3 `bucketing.count`) are not on the zone's clock: a sample `d` ms
 * after `from` is in bucket ⌊d·N/W⌋ of the N buckets of the W ms range, which starts at
 * from + ⌈i·W/N⌉ (see `BucketSpec`), integer arithmetic on the sample time; the zone then matters
 * only for time windows.
 */
import {
  BIGINT,
  DECIMAL,
  type DuckDBDataChunk,
  DuckDBDecimalValue,
  DuckDBTimestampTZValue,
  type DuckDBType,
  type DuckDBValue,
  type DuckDBVector,
  LIST,
  listValue,
  VARCHAR,
} from "@duckdb/node-api";
import { asEpochMs } from "../../../ids.js";
import { gridTruncations, scanGroups } from "../core/bucket-grid.js";
import {
  groupAttributeValues,
  groupColumns,
  matchesMayRepeat,
  plainAggregations,
  planSelectors,
} from "../core/metric-plan.js";
import { decimalFraction } from "../core/percentile-rank.js";
import {
  DAY_MS,
  HOUR_MS,
  MINUTE_MS,
  type OffsetTransition,
  SECOND_MS,
  type Segment,
  segments,
  TRANSITION_LOOKBACK_MS,
  type ZoneOffsets,
} from "../core/zone-offsets.js";
import type { AggregationName, MetricQueryPlan, MetricQueryRow, TimeWindow } from "../store.js";
import { ID_LIST, TEXT_LIST } from "./duckdb-lists.js";

/** A statement with named parameters, ready for `connection.runAndReadAll(sql, values, types)`. */
export interface MetricSql {
  readonly sql: string;
  readonly values: Record<string, DuckDBValue>;
  readonly types: Record<string, DuckDBType>;
  /** Output column names of the group keys, in grouping order, keyed as in `MetricQueryRow.group`. */
  readonly groupColumns: readonly { readonly key: string; readonly numeric: boolean }[];
  /** Aggregation labels in output column order (after bucket, group columns and identifier). */
  readonly labels: readonly string[];
  /** The identifiers by the number that stands for each in the answer's identifier column. */
  readonly identifiers: readonly string[];
  /**
   * The output column (after the labels' columns) holding, for each row, the largest rank any of
   * its percentiles is taken at counted from the nearer end ({@link PercentileForm}); null without
   * percentiles.
   */
  readonly needColumn: number | null;
}

/**
 * How a statement takes its percentiles (each at its nearest rank r = max(1, ⌈p·n⌉) of the group's
 * n values, counted from the top as n − r + 1 when p ≥ 0.5, else from the bottom as r):
 *  - `sort`: `quantile_disc`, exact for every rank;
 *  - `top`: the `k` largest (`max(value, k)`) and smallest (`min(value, k)`) values of each group,
 *    exact for a rank up to `k` and null beyond it, where the row's `needColumn` tells. DuckDB keeps
 *    k values a group instead of all of them: the peers bench's p95 over 5-minute buckets of 10 s
 *    samples (rank 2 from the top) aggregated in well under half the time.
 */
export type PercentileForm = { readonly kind: "sort" } | { readonly kind: "top"; readonly k: number };

/**
 * The instants `[fromUs, toUs)` (µs since the epoch, DuckDB's unit; whole milliseconds) where
 * samples of a query can be: the core's `ScanWindow` at DuckDB's edge.
 */
export interface DuckDbScanWindow {
  readonly fromUs: bigint;
  readonly toUs: bigint;
}

/** A statement with named parameters and nothing else to know about its answer. */
export interface Statement {
  readonly sql: string;
  readonly values: Record<string, DuckDBValue>;
  readonly types: Record<string, DuckDBType>;
}

const US_PER_MS = 1000n;
/** A time in ms (the plan's unit, core/zone-offsets.ts) as DuckDB's µs. */
const us = (ms: number): bigint => BigInt(ms) * US_PER_MS;
/** A whole number of ms from DuckDB's µs (window bounds are whole ms, offsets whole seconds). */
const ms = (us: bigint): number => Number(us / US_PER_MS);
const SECOND_US = us(SECOND_MS);
const MINUTE_US = us(MINUTE_MS);
const HOUR_US = us(HOUR_MS);
const DAY_US = us(DAY_MS);
/**
 * The percentiles `ps` (decimal strings) as DECIMAL(38, s) values, s the fewest decimal places
 * that hold every one exactly (0.95 and 0.5 → 95 and 50 with scale 2; 1 alone → 1 with scale 0).
 * DuckDB's `quantile_disc` with a DECIMAL quantile picks the value at 1-based position
 * max(1, ⌈p·n⌉), computed in integer arithmetic on the decimal (with a DOUBLE quantile it computes
 * in binary floating point, and 0.55 of 100 would be the 56th): exactly DESIGN 5.3's nearest rank.
 * test/hub/store/metric-query-reference.test.ts holds it to that rule for every n up to 100.
 */
export function percentileDecimals(ps: readonly string[]): {
  readonly scale: number;
  readonly values: readonly DuckDBDecimalValue[];
} {
  const fractions = ps.map(decimalFraction);
  let scale = 0;
  let power = 1n;
  while (fractions.some((f) => power % f.denominator !== 0n)) {
    scale += 1;
    power *= 10n;
  }
  return {
    scale,
    values: fractions.map((f) => new DuckDBDecimalValue((f.numerator * power) / f.denominator, 38, scale)),
  };
}

/** The select-list entries of one aggregation: in the grouped query, and reading that in the outer one. */
type AggregationSql = (
  i: number,
  percentile: number,
) => { readonly inner: string | null; readonly outer: string };

const simple =
  (fn: string): AggregationSql =>
  (i) => ({ inner: `${fn} AS a${i}`, outer: `a${i}` });

/**
 * One entry per aggregation (STYLE 6). first/last: among samples with the same earliest (latest)
 * timestamp, the smallest (largest) value wins, so the answer does not depend on storage order.
 * percentile: element `percentile` (1-based) of `pct`, the list of every percentile of the query at
 * its nearest rank max(1, ⌈p·n⌉) (see {@link percentileDecimals}), never a float quantile: in the
 * `sort` form one `quantile_disc` over the percentiles as DECIMALs, in the `top` form the values at
 * those ranks of the groups' largest and smallest values ({@link PercentileForm}). One
 * `quantile_disc` call, not one per percentile: it sorts once, and DuckDB 1.5 merges
 * `quantile_disc` calls whose DECIMAL parameters have the same type into one, answering the first p
 * for all of them (found by the rank test named above).
 */
const EDGES_AND_PERCENTILE = {
  // A STRUCT key orders by time, then value. Measured: as fast as a HUGEINT key made of
  // the time and the value's bits, and unlike a BIGINT time key alone it breaks ties the same way
  // on every run.
  "svc.first": simple("arg_min(value, (ts_us, value))"),
  "svc.last": simple("arg_max(value, (ts_us, value))"),
  "svc.percentile": (_i: number, percentile: number) => ({ inner: null, outer: `pct[${percentile}]` }),
};
/** By `bounded` (see `plainAggregations`): the plain forms, and those that answer null on an overflow. */
const AGGREGATIONS: Record<"plain" | "bounded", Record<AggregationName, AggregationSql>> = {
  plain: { ...plainAggregations(simple, false), ...EDGES_AND_PERCENTILE },
  bounded: { ...plainAggregations(simple, true), ...EDGES_AND_PERCENTILE },
};

/** `x` modulo `m` rounded toward minus infinity (DuckDB's `%` keeps the sign of `x`). */
const floorMod = (x: string, m: string): string => `((${x} % ${m}) + ${m}) % ${m}`;

/**
 * The local floor of a local time given as µs since the local epoch (`l`, a column name or a
 * parenthesised expression), as µs since the local epoch (core/bucket-grid.ts); `date_trunc` for
 * calendar months. A minutes bucket's size is the parameter `$bucket_us`.
 */
const TRUNCATE = gridTruncations({
  floorMod,
  duration: (ms) => `${us(ms)}`,
  monthStart: (l) => `epoch_us(date_trunc('month', make_timestamp(${l})))`,
});

const timestampTz = (us: bigint): DuckDBTimestampTZValue => new DuckDBTimestampTZValue(us);

/** The largest BIGINT: count-bucket products above it are computed in HUGEINT. */
const MAX_BIGINT = 2n ** 63n - 1n;

/**
 * How a scan finds a sample's bucket start `bucket_us`: the zone-aligned grid of a duration
 * (`truncate` of the local time, see {@link TRUNCATE}), or the equal parts of a `count` bucketing,
 * an expression of the sample time `ts_us` alone.
 */
type BucketRule =
  | { readonly kind: "grid"; readonly truncate: (l: string) => string }
  | { readonly kind: "count"; readonly sql: string };

/**
 * The bucket start of a sample (`ts_us`, in `[from, to)`) among `count` equal buckets of the plan's
 * range: bucket i = ⌊d·N/W⌋ for d = ts − from, starting at from + ⌈i·W/N⌉ (ms, see `BucketSpec`).
 * Products stay in BIGINT when W·N + N does (every range of up to about 2 900 years at the
 * largest count), else HUGEINT. Binds `$cnt_from_us`, `$cnt_n` and `$cnt_w_ms`.
 */
function countBucketSql(
  plan: Pick<MetricQueryPlan, "from" | "to">,
  count: number,
  bind: (name: string, value: DuckDBValue, type: DuckDBType) => void,
): string {
  const width = BigInt(plan.to - plan.from);
  const n = BigInt(count);
  const wide = width * n + n > MAX_BIGINT;
  bind("cnt_from_us", BigInt(plan.from) * US_PER_MS, BIGINT);
  bind("cnt_n", n, BIGINT);
  bind("cnt_w_ms", width, BIGINT);
  const d = "((ts_us - $cnt_from_us) // 1000)";
  const i = wide ? `(CAST(${d} AS HUGEINT) * $cnt_n // $cnt_w_ms)` : `(${d} * $cnt_n // $cnt_w_ms)`;
  const start = `((${i} * $cnt_w_ms + $cnt_n - 1) // $cnt_n)`;
  return `$cnt_from_us + CAST(${start} AS BIGINT) * 1000`;
}

/** `a / b` rounded toward minus infinity (BigInt division truncates). */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return q * b > a ? q - 1n : q;
}

/**
 * The statement that lists a named zone's UTC offsets around a query (see the file comment): one
 * row `(NULL, NULL, initial offset)` and one row `(instant, offset before, offset after)` per
 * transition, in time order; read it with {@link readZoneOffsets}. It scans from at least
 * {@link TRANSITION_LOOKBACK_MS} before `window.fromUs` (so that a month bucket starting before the
 * range still sees its transition) to at least an hour after `window.toUs`, widened to whole UTC
 * days so that queries over nearby ranges ask the same question: `key` names it, for a cache (a
 * zone's rules do not change while the process runs).
 */
export function buildZoneOffsetsQuery(
  zone: string,
  window: DuckDbScanWindow,
): Statement & { readonly key: string } {
  const scanFrom = floorDiv(window.fromUs - us(TRANSITION_LOOKBACK_MS), DAY_US) * DAY_US;
  const scanTo = (floorDiv(window.toUs + HOUR_US - 1n, DAY_US) + 1n) * DAY_US;
  const offsetAt = (us: string): string =>
    `epoch_us(timezone($zone, to_timestamp(0) + to_microseconds(${us}))) - ${us}`;
  // The first whole minute with the new offset bounds the transition; the first whole second with
  // it inside that minute is the transition instant.
  const sql = `WITH scan AS (
      SELECT r.t_us, ${offsetAt("r.t_us")} AS off_us FROM range($scan_from_us, $scan_to_us, ${HOUR_US}) r(t_us)
    ),
    steps AS (
      SELECT lag(t_us) OVER (ORDER BY t_us) AS prev_t, t_us, lag(off_us) OVER (ORDER BY t_us) AS prev_off, off_us
      FROM scan
    ),
    changes AS (SELECT * FROM steps WHERE prev_off <> off_us),
    minutes AS (
      SELECT min(m.m_us) AS m_us, c.prev_off, c.off_us
      FROM changes c, range(c.prev_t + ${MINUTE_US}, c.t_us + 1, ${MINUTE_US}) m(m_us)
      WHERE ${offsetAt("m.m_us")} = c.off_us
      GROUP BY c.prev_t, c.prev_off, c.off_us
    ),
    seconds AS (
      SELECT min(s.s_us) AS at_us, c.prev_off, c.off_us
      FROM minutes c, range(c.m_us - ${MINUTE_US} + ${SECOND_US}, c.m_us + 1, ${SECOND_US}) s(s_us)
      WHERE ${offsetAt("s.s_us")} = c.off_us
      GROUP BY c.m_us, c.prev_off, c.off_us
    )
    SELECT NULL::BIGINT AS at_us, NULL::BIGINT AS before_us, off_us AS after_us
    FROM (SELECT off_us FROM scan ORDER BY t_us LIMIT 1)
    UNION ALL
    SELECT at_us, prev_off, off_us FROM seconds
    ORDER BY at_us NULLS FIRST`;
  return {
    sql,
    values: { zone, scan_from_us: scanFrom, scan_to_us: scanTo },
    types: { zone: VARCHAR, scan_from_us: BIGINT, scan_to_us: BIGINT },
    key: `${zone} ${scanFrom} ${scanTo}`,
  };
}

/**
 * The answer of {@link buildZoneOffsetsQuery}, rows of `[at, before, after]` in µs as bigint or
 * null, as the core's offsets in ms.
 */
export function readZoneOffsets(rows: readonly (readonly unknown[])[]): ZoneOffsets {
  let initialMs: number | undefined;
  const transitions: OffsetTransition[] = [];
  for (const [at, before, after] of rows) {
    if (typeof after !== "bigint") throw new TypeError("zone offsets: no offset in a row");
    if (at === null) initialMs = ms(after);
    else if (typeof at === "bigint" && typeof before === "bigint") {
      transitions.push({ atMs: ms(at), beforeMs: ms(before), afterMs: ms(after) });
    }
  }
  if (initialMs === undefined) throw new TypeError("zone offsets: no initial offset");
  return { initialMs, transitions };
}

/**
 * Where samples of `plan` can be: its range narrowed to `stored`, the first and last sample times
 * in the store, when known (a query over a century of mostly empty time scans only where samples
 * are). Undefined when no sample can match.
 */
export function scanWindow(
  plan: Pick<MetricQueryPlan, "from" | "to">,
  stored?: { readonly firstMs: number; readonly lastMs: number },
): DuckDbScanWindow | undefined {
  const first = Math.max(plan.from, stored?.firstMs ?? plan.from);
  const end = Math.min(plan.to, (stored?.lastMs ?? plan.to) + 1);
  if (!(first < end)) return undefined;
  return { fromUs: us(first), toUs: us(end) };
}

/**
 * The common table expressions `ents`, `sel` and `matched` (the series `plan` selects, once per
 * identifier that matches them, with the row name, entity and grouping attribute), their
 * parameters bound with `bind`, and the plan's identifiers in the order of their numbers.
 */
function matchedSql(
  plan: MetricQueryPlan,
  bind: (name: string, value: DuckDBValue, type: DuckDBType) => void,
): { identifiers: string[]; ctes: string[] } {
  bind("entity_ids", listValue(plan.entities.map((e) => e.id)), ID_LIST);
  bind("entity_attrs", listValue(groupAttributeValues(plan)), TEXT_LIST);

  // Identifiers travel as numbers numbered in code-point order (UTF-8 byte order, DuckDB's VARCHAR
  // order), so grouping hashes an integer and ordering by the number orders by the identifier.
  const identifiers = [...new Set(plan.metrics.map((m) => m.identifier))].sort((a, b) =>
    Buffer.compare(Buffer.from(a), Buffer.from(b)),
  );
  const identifierNumber = new Map(identifiers.map((id, i) => [id, i]));
  const selectors = planSelectors(plan);
  bind("sel_identifier", listValue(selectors.map((s) => identifierNumber.get(s.identifier) ?? 0)), ID_LIST);
  bind("sel_sampler", listValue(selectors.map((s) => s.sampler)), TEXT_LIST);
  bind("sel_sampler_type", listValue(selectors.map((s) => s.samplerType)), TEXT_LIST);
  bind("sel_dataview", listValue(selectors.map((s) => s.dataview)), TEXT_LIST);
  bind("sel_row", listValue(selectors.map((s) => s.row)), TEXT_LIST);
  bind("sel_column", listValue(selectors.map((s) => s.column)), TEXT_LIST);
  const ctes = [
    `ents AS (SELECT unnest($entity_ids) AS entity_id, unnest($entity_attrs) AS attr)`,
    `sel AS (
       SELECT unnest($sel_identifier) AS identifier, unnest($sel_sampler) AS sampler,
              unnest($sel_sampler_type) AS sampler_type, unnest($sel_dataview) AS dataview,
              unnest($sel_row) AS row_name, unnest($sel_column) AS column_name
     )`,
    // A series matched by several selectors of one metric counts once for that metric: DISTINCT
    // when that can happen, without it otherwise. Its hash aggregate costs every statement about
    // 1 ms: `Store.queryMetrics()` of 200 series' 5-minute bucket 9.9 ms without against 10.9 with,
    // their day (two parts) 153 against 157 (60 queries each, alternating).
    `matched AS (
       SELECT ${matchesMayRepeat(plan) ? "DISTINCT " : ""}s.id AS series_id, s.row_name, s.entity_id, ents.attr, sel.identifier
       FROM series s
       JOIN ents ON ents.entity_id = s.entity_id
       JOIN sel ON s.sampler = sel.sampler AND s.dataview = sel.dataview AND s.column_name = sel.column_name
         AND (sel.sampler_type IS NULL OR s.sampler_type = sel.sampler_type)
         AND (CASE WHEN sel.row_name IS NULL THEN s.row_name <> '' ELSE s.row_name = sel.row_name END)
     )`,
  ];
  return { identifiers, ctes };
}

/**
 * The statement that counts every stored sample in `window`, of any series: one BIGINT, from the
 * times' zone maps and runs rather than a scan of the samples.
 */
export function buildWindowSamplesQuery(window: DuckDbScanWindow): Statement {
  return {
    sql: "SELECT count(*) FROM samples WHERE ts >= $from AND ts < $to",
    values: { from: timestampTz(window.fromUs), to: timestampTz(window.toUs) },
    types: {},
  };
}

/**
 * The statement that measures the share of the stored series `plan` reads: one row `(pairs,
 * series)` — matches of a series and an identifier, and every stored series (BIGINT). A query
 * reads about that share of the samples of its window ({@link buildWindowSamplesQuery}); counting
 * them exactly would cost a scan.
 */
export function buildMatchedShareQuery(plan: MetricQueryPlan): Statement {
  const values: Record<string, DuckDBValue> = {};
  const types: Record<string, DuckDBType> = {};
  const { ctes } = matchedSql(plan, (name, value, type) => {
    values[name] = value;
    types[name] = type;
  });
  const sql = `WITH ${ctes.join(",\n")}
SELECT (SELECT count(*) FROM matched) AS pairs, (SELECT count(*) FROM series) AS series`;
  return { sql, values, types };
}

/**
 * Builds the statement for `plan` (see the file comment for the bucket rule) over the samples in
 * `window` (from {@link scanWindow}), with the zone's `offsets` (from {@link readZoneOffsets} for a
 * named zone, {@link fixedZoneOffsets} for a fixed one); with `bounded`, the forms of sums, means,
 * variances and deviations that answer null on an overflow (`plainAggregations`). Throws a
 * RangeError for an invalid percentile.
 */
export function buildMetricQuery(
  plan: MetricQueryPlan,
  offsets: ZoneOffsets,
  window: DuckDbScanWindow,
  bounded = false,
  percentiles: PercentileForm = { kind: "sort" },
): MetricSql {
  const values: Record<string, DuckDBValue> = {};
  const types: Record<string, DuckDBType> = {};
  const bind = (name: string, value: DuckDBValue, type: DuckDBType): void => {
    values[name] = value;
    types[name] = type;
  };

  const { identifiers, ctes } = matchedSql(plan, bind);
  const bucket = plan.bucket;
  if (bucket.kind === "minutes") bind("bucket_us", BigInt(bucket.minutes) * MINUTE_US, BIGINT);
  const rule: BucketRule =
    bucket.kind === "count"
      ? { kind: "count", sql: countBucketSql(plan, bucket.count, bind) }
      : { kind: "grid", truncate: (l) => TRUNCATE[bucket.kind](l, "$bucket_us") };
  const windowSql = plan.timeWindows.map((w, i) => timeWindowSql(w, i, bind));

  // Segment i binds $g<i>_off (its offset), $g<i>_from (its start, when a CASE needs it), and when
  // a transition opened it $g<i>_p (the instant) and $g<i>_q (the offset before); scan k binds
  // $s<k>_from and $s<k>_to (TIMESTAMPTZ values carry their own type).
  const scans: string[] = [];
  const numbered = segments(offsets, { from: ms(window.fromUs), to: ms(window.toUs) }).map((g, i) => ({
    ...g,
    i,
  }));
  for (const group of scanGroups(numbered)) {
    const k = scans.length;
    group.forEach((g, j) => {
      bind(`g${g.i}_off`, us(g.offsetMs), BIGINT);
      if (j > 0) bind(`g${g.i}_from`, us(g.from), BIGINT);
      // Count buckets need no transition: only the offset, for time windows.
      if (g.opened !== null && rule.kind === "grid") {
        bind(`g${g.i}_p`, us(g.opened.atMs), BIGINT);
        bind(`g${g.i}_q`, us(g.opened.beforeMs), BIGINT);
      }
    });
    values[`s${k}_from`] = timestampTz(us((group[0] as Segment).from));
    values[`s${k}_to`] = timestampTz(us((group[group.length - 1] as Segment).to));
    scans.push(segmentScan(k, group, rule, windowSql));
  }
  ctes.push(`bucketed AS (${scans.join("\n     UNION ALL\n     ")})`);

  const groups = groupColumns(plan.grouping);
  // With one identifier (the common case) it is constant: one grouping key less to hash.
  const identifierKey = identifiers.length === 1 ? [] : ["identifier"];
  const keyColumns = ["bucket_us", ...groups.map((g) => g.column), ...identifierKey].join(", ");
  const ps = plan.aggregations.filter((a) => a.name === "svc.percentile").map((a) => a.p ?? "");
  const inner: string[] = [];
  const outer: string[] = [];
  let percentile = 0;
  plan.aggregations.forEach((a, i) => {
    if (a.name === "svc.percentile") percentile += 1;
    const sql = AGGREGATIONS[bounded ? "bounded" : "plain"][a.name](i, percentile);
    if (sql.inner !== null) inner.push(sql.inner);
    // Every number as a DOUBLE (a count's BIGINT too, exact to 2^53): read straight from its
    // Float64Array, with no bigint made per row.
    outer.push(`CAST(${sql.outer} AS DOUBLE) AS a${i}`);
  });
  // With percentiles: `ranked` adds each one's rank from the nearer end (exact: DECIMAL times
  // BIGINT, as quantile_disc computes it); the `top` form takes the values there from the lists.
  const later: string[] = [];
  let from = "agg";
  if (ps.length > 0) {
    const { scale, values: decimals } = percentileDecimals(ps);
    bind("ps", listValue([...decimals]), LIST(DECIMAL(38, scale)));
    inner.push("count(value) AS pct_n");
    const ranks = ps.map((p, j) => {
      const r = `greatest(1, ceil($ps[${j + 1}] * pct_n))::BIGINT`;
      return `${upperHalf(p) ? `pct_n - ${r} + 1` : r} AS pct_r${j + 1}`;
    });
    later.push(`ranked AS (SELECT *, ${ranks.join(", ")} FROM agg)`);
    from = "ranked";
    if (percentiles.kind === "sort") inner.push("quantile_disc(value, $ps) AS pct");
    else {
      bind("pct_k", BigInt(percentiles.k), BIGINT);
      if (ps.some(upperHalf)) inner.push("max(value, $pct_k) AS pct_top");
      if (!ps.every(upperHalf)) inner.push("min(value, $pct_k) AS pct_bottom");
      const taken = ps.map((p, j) => `${upperHalf(p) ? "pct_top" : "pct_bottom"}[pct_r${j + 1}]`);
      later.push(`taken AS (SELECT *, list_value(${taken.join(", ")}) AS pct FROM ranked)`);
      from = "taken";
    }
    outer.push(`CAST(greatest(${ps.map((_, j) => `pct_r${j + 1}`).join(", ")}) AS DOUBLE) AS pct_need`);
  }
  ctes.push(`agg AS (SELECT ${[keyColumns, ...inner].join(", ")} FROM bucketed GROUP BY ${keyColumns})`);
  ctes.push(...later);

  const sql = `WITH ${ctes.join(",\n")}
SELECT ${["CAST(bucket_us // 1000 AS DOUBLE) AS bucket_ms", ...groups.map((g) => g.column), identifierKey.length === 0 ? "0 AS identifier" : "identifier", ...outer].join(", ")}
FROM ${from} ORDER BY ${keyColumns}`;

  return {
    sql,
    values,
    types,
    groupColumns: groups.map(({ key, numeric }) => ({ key, numeric })),
    labels: plan.aggregations.map((a) => a.label),
    identifiers,
    needColumn: ps.length === 0 ? null : 2 + groups.length + plan.aggregations.length,
  };
}

/** Whether percentile `p` (a decimal string) is at least 0.5: its rank is counted from the top. */
function upperHalf(p: string): boolean {
  const { numerator, denominator } = decimalFraction(p);
  return 2n * numerator >= denominator;
}

/**
 * One scan of `samples` over the segments `group` (consecutive, one offset each): the matched
 * samples with their bucket start `bucket_us` by `rule`. With one segment the offset and transition
 * are constants; with several a CASE on the sample time picks them. Count buckets need the offset
 * only for time windows.
 */
function segmentScan(
  k: number,
  group: readonly (Segment & { readonly i: number })[],
  rule: BucketRule,
  windowSql: readonly string[],
): string {
  const pick = (value: (g: Segment & { readonly i: number }) => string): string => {
    const [head, ...rest] = group;
    if (head === undefined) throw new RangeError("a scan needs a segment");
    if (rest.length === 0) return value(head);
    // Each segment but the last runs until the next one (numbered one higher) starts.
    const whens = group.slice(0, -1).map((g) => `WHEN ts_us < $g${g.i + 1}_from THEN ${value(g)}`);
    return `CASE ${whens.join(" ")} ELSE ${value(rest[rest.length - 1] ?? head)} END`;
  };
  const opened = rule.kind === "grid" && group.some((g) => g.opened !== null);
  const segmentColumns = [`${pick((g) => `$g${g.i}_off`)} AS off_us`];
  if (opened) {
    segmentColumns.push(
      `${pick((g) => (g.opened === null ? "NULL::BIGINT" : `$g${g.i}_p`))} AS p_us`,
      `${pick((g) => (g.opened === null ? "NULL::BIGINT" : `$g${g.i}_q`))} AS q_us`,
    );
  }
  // A sample after a transition whose grid point lies before it: the boundary is the transition
  // (the grid point fell into a skipped gap) or the last grid point before it, in the old offset.
  const bucket =
    rule.kind === "count"
      ? rule.sql
      : opened
        ? `CASE WHEN p_us IS NULL OR f_us - off_us >= p_us THEN f_us - off_us
              WHEN f_us >= p_us + q_us THEN p_us
              ELSE ${rule.truncate("(p_us + q_us - 1)")} - q_us END`
        : "f_us - off_us";
  const local = rule.kind === "grid" ? [`${rule.truncate("l_us")} AS f_us`] : [];
  if (windowSql.length > 0) local.push(`${floorMod("l_us", `${DAY_US}`)} AS sod_us`);
  const where = windowSql.length === 0 ? "" : `WHERE ${windowSql.join(" OR ")}`;
  return `SELECT identifier, row_name, entity_id, attr, value, ts_us, ${bucket} AS bucket_us
       FROM (SELECT ${["*", ...local].join(", ")}
         FROM (SELECT *, ts_us + off_us AS l_us
           FROM (SELECT *, ${segmentColumns.join(", ")}
             FROM (SELECT m.identifier, m.row_name, m.entity_id, m.attr, x.value, epoch_us(x.ts) AS ts_us
               FROM samples x JOIN matched m ON m.series_id = x.series_id
               WHERE x.value IS NOT NULL AND x.ts >= $s${k}_from AND x.ts < $s${k}_to))))
       ${where}`;
}

/**
 * One time window as a predicate on `sod_us` (µs after local midnight) and the local ISO weekday
 * of `l_us` (local µs since the local epoch, a Thursday). Overnight when to < from; from = to
 * covers the whole day (a zero-length window is never meant).
 */
function timeWindowSql(
  w: TimeWindow,
  i: number,
  bind: (name: string, value: DuckDBValue, type: DuckDBType) => void,
): string {
  bind(`w${i}_from`, BigInt(w.fromSecond) * SECOND_US, BIGINT);
  bind(`w${i}_to`, BigInt(w.toSecond) * SECOND_US, BIGINT);
  const time =
    w.fromSecond < w.toSecond
      ? `sod_us >= $w${i}_from AND sod_us < $w${i}_to`
      : `(sod_us >= $w${i}_from OR sod_us < $w${i}_to)`;
  if (w.days === undefined) return `(${time})`;
  bind(`w${i}_days`, listValue([...w.days]), ID_LIST);
  // Day 0 of the local epoch (1970-01-01) is a Thursday, ISO weekday 4.
  const isoWeekday = `CAST(${floorMod(`(l_us - sod_us) // ${DAY_US} + 3`, "7")} + 1 AS INTEGER)`;
  return `(${time} AND list_contains($w${i}_days, ${isoWeekday}))`;
}

/** A number from a DuckDB vector item: BIGINT and HUGEINT arrive as bigint. */
function numberOf(item: DuckDBValue): number | null {
  if (item === null) return null;
  if (typeof item === "number") return item;
  if (typeof item === "bigint") return Number(item);
  throw new TypeError(`expected a number from DuckDB, got ${typeof item}`);
}

/**
 * The rows of a metric query's result `chunks`, a DuckDB chunk (up to 2 048 rows) a batch, each batch made
 * when it is read; read column by column from DuckDB's vectors (numbers straight from their typed
 * arrays, no per-cell value conversion): bucket start, group values (`query.groupColumns`; entity
 * ids numeric, names as strings, "" for a missing one), identifier, and the aggregations keyed by
 * `query.labels`, null where DuckDB has NULL or a result beyond the largest double (DuckDB's sum of
 * doubles overflows to infinity without an error). Rows come ordered by bucket and group, a group's
 * identifiers next to each other, so consecutive rows of one group share its (read-only) group
 * object.
 */
export function* metricRowBatches(
  chunks: readonly DuckDBDataChunk[],
  query: MetricSql,
): Generator<MetricQueryRow[]> {
  const groups = query.groupColumns.length;
  const keys = query.groupColumns.map((g) => g.key);
  const labels = query.labels;
  const current: (string | number)[] = new Array(groups);
  let group: Record<string, string | number> | undefined;
  for (const chunk of chunks) {
    const bucket = chunk.getColumnVector(0);
    const groupVectors = query.groupColumns.map((g, i) => ({ ...g, vector: chunk.getColumnVector(1 + i) }));
    const identifier = chunk.getColumnVector(1 + groups);
    const aggregates = labels.map((_, i) => chunk.getColumnVector(2 + groups + i));
    const rows: MetricQueryRow[] = [];
    const count = chunk.rowCount; // a call into DuckDB each time it is read
    for (let r = 0; r < count; r++) {
      let same = group !== undefined;
      for (let k = 0; k < groups; k++) {
        const g = groupVectors[k] as (typeof groupVectors)[number];
        const v = g.vector.getItem(r);
        const value = g.numeric ? (numberOf(v) ?? 0) : String(v ?? "");
        if (value !== current[k]) {
          current[k] = value;
          same = false;
        }
      }
      if (!same || group === undefined) {
        group = {};
        for (let k = 0; k < groups; k++) group[keys[k] as string] = current[k] as string | number;
      }
      const values: Record<string, number | null> = {};
      for (let a = 0; a < labels.length; a++) {
        const value = numberOf((aggregates[a] as DuckDBVector).getItem(r));
        values[labels[a] as string] = value !== null && Number.isFinite(value) ? value : null;
      }
      rows.push({
        bucket: asEpochMs(numberOf(bucket.getItem(r)) ?? 0),
        group,
        identifier: query.identifiers[numberOf(identifier.getItem(r)) ?? -1] ?? "",
        values,
      });
    }
    if (rows.length > 0) yield rows;
  }
}
