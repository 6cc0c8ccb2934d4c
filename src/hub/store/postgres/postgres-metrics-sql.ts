/**
 * Builds the one SQL statement that answers a metric query inside PostgreSQL (DESIGN 5.3, 5.5).
 *
 * Every value from a request (names, zone, times, p) is a bound parameter; the SQL text depends
 * only on the plan's shape (bucket kind, grouping, aggregations, number of time windows).
 *
 * Buckets (DESIGN 5.3, DST included) are computed as a sorted array of boundary instants, then each
 * sample takes the last boundary at or before it (`width_bucket`, a binary search). Boundaries come
 * from the local grid of the zone — every multiple of the bucket size from local midnight, every
 * local midnight, Monday or 1st — over the range where samples can be: a grid time L is a boundary
 * at every instant whose local time is L (two in a repeated hour, each labelled with its own
 * offset), and when L falls into a skipped gap, at the end of the gap (the transition instant, found
 * to the minute). The instants of L are found from the offsets in force a day before and after L,
 * which assumes at most one offset change within two days (true of every zone since 1970).
 *
 * Zones: IANA names and aliases go to PostgreSQL's `timezone(text, …)`; fixed offsets (`+05:30`,
 * `UTC-3`) are parsed by `parseZone` and passed as an `interval`, which `timezone(interval, …)`
 * applies with the ISO sign. (Passed as a name, `+05:30` would be read as a POSIX zone spec,
 * whose sign is the opposite.)
 *
 * Aggregations follow DESIGN 5.3 exactly: population variance and deviation; first/last by
 * timestamp with ties broken by the smaller (larger) value; percentile by nearest rank with
 * k = max(1, ⌈num·n/den⌉) in `numeric` (exact), never PostgreSQL's float `percentile_disc`.
 */
import { decimalFraction, parseZone } from "../duckdb/duckdb-metrics-sql.js";
import type { AggregationName, BucketSpec, GroupKey, MetricQueryPlan, TimeWindow } from "../store.js";

/** A statement with positional parameters, for `sql.unsafe(text, params)`. */
export interface PgMetricSql {
  readonly text: string;
  readonly params: unknown[];
  /** Output column names of the group keys, in grouping order, keyed as in `MetricQueryRow.group`. */
  readonly groupColumns: readonly {
    readonly key: string;
    readonly column: string;
    readonly numeric: boolean;
  }[];
  /** Aggregation labels, in order: the output columns `a0`, `a1`, … */
  readonly labels: readonly string[];
}

/** Epoch ms of 4713-11-24 BC (PostgreSQL's earliest timestamptz) and of 294276 AD, with margin. */
const PG_MIN_MS = -210_866_803_200_000 + 40 * 86_400_000;
const PG_MAX_MS = 9_224_318_016_000_000 - 40 * 86_400_000;

type AggregationSql = (
  p: (value: unknown) => string,
  percentile: { num: string; den: string } | null,
) => string;

/** One entry per aggregation (STYLE 6); `value` and `ts_ms` are columns of `picked`. */
const AGGREGATIONS: Record<AggregationName, AggregationSql> = {
  "svc.count": () => "count(value)",
  "svc.sum": () => "sum(value)",
  "svc.min": () => "min(value)",
  "svc.max": () => "max(value)",
  "svc.avg": () => "avg(value)",
  "svc.var": () => "var_pop(value)",
  "svc.stddev": () => "stddev_pop(value)",
  // Arrays compare element by element: the earliest time, then the smallest value (ms < 2^53, exact).
  "svc.first": () => "(min(ARRAY[ts_ms::float8, value]))[2]",
  "svc.last": () => "(max(ARRAY[ts_ms::float8, value]))[2]",
  // PostgreSQL computes one array_agg per group however many percentiles share it.
  "svc.percentile": (_p, q) =>
    `(array_agg(value ORDER BY value))[greatest(1, div(${q?.num} * count(value) + ${q?.den} - 1, ${q?.den}))::int]`,
};

const GROUP_COLUMNS = { rowname: "row_name", entity: "entity_id", attribute: "attr" } as const;
const groupName = (key: GroupKey): keyof typeof GROUP_COLUMNS =>
  typeof key === "string" ? key : "attribute";

/** The first grid point (local timestamp) at or before `local`, and the grid step, per bucket kind. */
const GRID: Record<
  BucketSpec["kind"],
  { start: (local: string) => string; step: (minutes: string) => string }
> = {
  minutes: {
    start: (local) => `date_trunc('day', ${local}) - interval '1 day'`,
    step: (minutes) => `make_interval(mins => ${minutes})`,
  },
  day: { start: (local) => `date_trunc('day', ${local}) - interval '1 day'`, step: () => "interval '1 day'" },
  week: {
    start: (local) => `date_trunc('week', ${local}) - interval '1 week'`,
    step: () => "interval '1 week'",
  },
  month: {
    start: (local) => `date_trunc('month', ${local}) - interval '1 month'`,
    step: () => "interval '1 month'",
  },
};

/**
 * Builds the statement for `plan`. `spans` are where samples can be (the stored partitions' weeks,
 * each [from, to)): the bucket grid is generated over their parts inside [plan.from, plan.to) only,
 * so a query over a century of sparse data builds boundaries for the weeks that hold data. Throws a
 * RangeError for an invalid percentile or an out-of-range fixed offset.
 */
export function buildPgMetricQuery(
  plan: MetricQueryPlan,
  spans: readonly { readonly from: number; readonly to: number }[],
): PgMetricSql {
  const params: unknown[] = [];
  const p = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };

  const attribute = plan.grouping.find((g): g is { readonly attribute: string } => typeof g !== "string");
  const entityIds = p(plan.entities.map((e) => e.id));
  const entityAttrs = p(
    // Object.hasOwn: an attribute named `constructor` or `__proto__` is data, not a prototype member.
    plan.entities.map((e) =>
      attribute === undefined || !Object.hasOwn(e.attributes, attribute.attribute)
        ? ""
        : (e.attributes[attribute.attribute] ?? ""),
    ),
  );
  const selectors = plan.metrics.flatMap((m) => m.include.map((s) => ({ identifier: m.identifier, ...s })));
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
  const from = p(plan.from);
  const to = p(plan.to);
  const clipped = spans
    .map((s) => ({ from: Math.max(plan.from, s.from, PG_MIN_MS), to: Math.min(plan.to, s.to, PG_MAX_MS) }))
    .filter((s) => s.from < s.to);
  const gridFrom = p(clipped.map((s) => s.from));
  const gridTo = p(clipped.map((s) => s.to));

  const zone = parseZone(plan.zone);
  const z =
    zone.kind === "named" ? `${p(zone.name)}::text` : `${p(`${zone.offsetSeconds} seconds`)}::interval`;
  const local = (tstz: string): string => `timezone(${z}, ${tstz})`;
  const offset = (tstz: string): string => `(${local(tstz)} - timezone('UTC', ${tstz}))`;
  const grid = GRID[plan.bucket.kind];
  const minutes = plan.bucket.kind === "minutes" ? `${p(plan.bucket.minutes)}::int` : "0";

  const windows = plan.timeWindows.map((w) => timeWindowSql(w, p));

  const groupColumns = plan.grouping.map((g) => ({
    key: groupName(g),
    column: GROUP_COLUMNS[groupName(g)],
    numeric: groupName(g) === "entity",
  }));
  const aggregates = plan.aggregations.map((a, i) => {
    let q: { num: string; den: string } | null = null;
    if (a.name === "svc.percentile") {
      const { numerator, denominator } = decimalFraction(a.p ?? "");
      q = { num: `${p(numerator.toString())}::numeric`, den: `${p(denominator.toString())}::numeric` };
    }
    return `${AGGREGATIONS[a.name](p, q)} AS a${i}`;
  });
  const sortKey = (c: string): string => (c === "entity_id" ? c : `${c} COLLATE "C"`);
  const keys = ["bucket_ms", ...groupColumns.map((g) => g.column), "identifier"];
  const order = ["bucket_ms", ...groupColumns.map((g) => sortKey(g.column)), 'identifier COLLATE "C"'];

  const text = `WITH ents AS (
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
),
grid AS (
  SELECT DISTINCT g AS l, g AT TIME ZONE 'UTC' AS u
  FROM unnest(${gridFrom}::bigint[], ${gridTo}::bigint[]) AS w(lo, hi),
  LATERAL generate_series(
    ${grid.start(local("to_timestamp(w.lo / 1000.0)"))},
    ${local("to_timestamp(w.hi / 1000.0)")} + interval '1 day',
    ${grid.step(minutes)}) AS g
),
cands AS (
  SELECT l, u - ${offset("u - interval '1 day'")} AS c_a, u - ${offset("u + interval '1 day'")} AS c_b FROM grid
),
bounds AS (
  SELECT c_a AS b FROM cands WHERE ${local("c_a")} = l
  UNION
  SELECT c_b FROM cands WHERE ${local("c_b")} = l
  UNION
  SELECT (SELECT min(m) FROM generate_series(c_b, c_a, interval '1 minute') AS m
          WHERE ${offset("m")} = ${offset("c_a")})
  FROM cands WHERE ${local("c_a")} <> l AND ${local("c_b")} <> l
),
barr AS (
  SELECT array_agg((extract(epoch FROM b) * 1000)::bigint ORDER BY b) AS arr FROM bounds WHERE b IS NOT NULL
),
picked AS (
  SELECT m.identifier, m.row_name, m.entity_id, m.attr, x.value, x.ts_ms,
         barr.arr[width_bucket(x.ts_ms, barr.arr)] AS bucket_ms
  FROM samples x JOIN matched m ON m.series_id = x.series_id CROSS JOIN barr
  WHERE x.value IS NOT NULL AND x.ts_ms >= ${from}::bigint AND x.ts_ms < ${to}::bigint${
    windows.length === 0
      ? ""
      : `
    AND (${windows.map((w) => w(`timezone(${z}, to_timestamp(x.ts_ms / 1000.0))`)).join(" OR ")})`
  }
)
SELECT ${[...keys, ...aggregates].join(", ")}
FROM picked WHERE bucket_ms IS NOT NULL
GROUP BY ${keys.join(", ")}
ORDER BY ${order.join(", ")}`;

  return {
    text,
    params,
    groupColumns,
    labels: plan.aggregations.map((a) => a.label),
  };
}

/**
 * One time window as a predicate on a sample's local time: seconds after local midnight in
 * [from, to), or overnight when to < from; from = to covers the whole day; `days` are local ISO
 * weekdays.
 */
function timeWindowSql(w: TimeWindow, p: (value: unknown) => string): (local: string) => string {
  const from = p(w.fromSecond);
  const to = p(w.toSecond);
  const days = w.days === undefined ? undefined : p([...w.days]);
  return (local) => {
    const sod = `extract(epoch FROM ${local} - date_trunc('day', ${local}))`;
    const time =
      w.fromSecond < w.toSecond
        ? `${sod} >= ${from}::int AND ${sod} < ${to}::int`
        : `(${sod} >= ${from}::int OR ${sod} < ${to}::int)`;
    return days === undefined
      ? `(${time})`
      : `(${time} AND extract(isodow FROM ${local})::int = ANY(${days}::int[]))`;
  };
}
