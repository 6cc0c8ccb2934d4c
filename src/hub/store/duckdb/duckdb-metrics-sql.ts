/**
 * Builds the one SQL statement that answers a metric query inside DuckDB (DESIGN 5.3, 5.5).
 *
 * Every value that comes from a request (names, zone, times, p) is a bound parameter; the SQL text
 * depends only on the plan's shape (bucket kind, grouping keys, aggregation kinds, number of time
 * windows), so nothing a client sends is ever spliced into SQL.
 *
 * Buckets follow DESIGN 5.3 exactly, including DST: a bucket starts at the latest instant ≤ the
 * sample whose local wall-clock time is on the bucket grid (multiples of the size from local
 * midnight; local midnight; Monday; the 1st). Within one UTC offset that instant is "local floor
 * minus the sample's offset". When an offset transition P lies between that candidate and the
 * sample, the boundary is either P itself (the grid point fell into the skipped gap, which moves it
 * to the end of the gap) or the last grid point before P, resolved with the offset in force before
 * P (in a repeated hour both instances of a grid time are boundaries). The transitions come from
 * scanning the zone's offset hourly over the query range and refining each change to the minute,
 * all inside the same statement. Assumption: at most one offset change per bucket and per hour,
 * at a whole minute — true of every zone in use since 1970 (Lord Howe's 30-minute shift included).
 */
import {
  BIGINT,
  DuckDBTimestampTZValue,
  type DuckDBType,
  type DuckDBValue,
  HUGEINT,
  INTEGER,
  LIST,
  listValue,
  VARCHAR,
} from "@duckdb/node-api";
import {
  type AggregationName,
  type BucketSpec,
  type GroupKey,
  MAX_PERCENTILE_DECIMALS,
  type MetricQueryPlan,
  type TimeWindow,
} from "../store.js";

/** A statement with named parameters, ready for `connection.runAndReadAll(sql, values, types)`. */
export interface MetricSql {
  readonly sql: string;
  readonly values: Record<string, DuckDBValue>;
  readonly types: Record<string, DuckDBType>;
  /** Output column names of the group keys, in grouping order, keyed as in `MetricQueryRow.group`. */
  readonly groupColumns: readonly { readonly key: string; readonly numeric: boolean }[];
  /** Aggregation labels in output column order (after bucket, group columns and identifier). */
  readonly labels: readonly string[];
}

/** A zone the database can use: an ICU zone name, or a fixed offset applied by arithmetic. */
export type ZoneSpec =
  | { readonly kind: "named"; readonly name: string }
  | { readonly kind: "fixed"; readonly offsetSeconds: number };

const FIXED_OFFSET = /^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/i;
const US_PER_MS = 1000n;
const MINUTE_US = 60_000_000n;
const HOUR_US = 3_600_000_000n;
/** How far before `from` to look for offset transitions: longer than the longest bucket (a month). */
const TRANSITION_LOOKBACK_MS = 33 * 86_400_000; // 33 days
/** Denominators above this could overflow HUGEINT in `num · n` for very large groups. */
const MAX_PERCENTILE_DENOMINATOR = 10n ** BigInt(MAX_PERCENTILE_DECIMALS);

/**
 * Classifies a zone id for DuckDB. ICU (DuckDB's time zone library) rejects offset ids such as
 * `+05:30` and reads `UTC+05:30` wrongly, and `Etc/GMT…` cannot express half-hour offsets, so fixed
 * offsets (`+05:30`, `-0800`, `+05`, `UTC+01:00`, `GMT-3`, `Z`) become `{kind: "fixed"}` and are
 * applied as a plain shift; every other id (IANA names and aliases like `Asia/Calcutta`) is passed
 * to ICU unchanged as `{kind: "named"}`.
 */
export function parseZone(zone: string): ZoneSpec {
  if (zone === "Z" || zone === "z") return { kind: "fixed", offsetSeconds: 0 };
  const m = FIXED_OFFSET.exec(zone);
  if (m === null) return { kind: "named", name: zone };
  const [, sign, hours, minutes, seconds] = m;
  const h = Number(hours);
  const min = Number(minutes ?? "0");
  const s = Number(seconds ?? "0");
  if (h > 18 || min > 59 || s > 59) throw new RangeError(`time zone offset out of range: ${zone}`);
  const magnitude = h * 3600 + min * 60 + s;
  return { kind: "fixed", offsetSeconds: sign === "-" ? -magnitude : magnitude };
}

/**
 * Turns a percentile `p` written as a decimal string (`"0.07"`, `"1"`, `".5"`, `"5e-2"`) into an
 * exact fraction numerator/denominator with a power-of-ten denominator, reduced, so that ⌈p·n⌉ can
 * be computed in integer arithmetic (DESIGN 5.3: 0.07 of 100 values is the 7th). Throws a
 * RangeError when `p` is not a decimal in [0, 1] or needs more than 24 decimal places.
 */
export function decimalFraction(p: string): { readonly numerator: bigint; readonly denominator: bigint } {
  const m = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(p.trim());
  const whole = m?.[1] ?? "";
  const fraction = m?.[2] ?? "";
  if (m === null || whole.length + fraction.length === 0) {
    throw new RangeError(`percentile must be a decimal number in [0, 1], got "${p}"`);
  }
  const exponent = Number(m[3] ?? "0") - fraction.length;
  if (!Number.isSafeInteger(exponent) || exponent > 24 || exponent < -1000) {
    throw new RangeError(`percentile must be a decimal number in [0, 1], got "${p}"`);
  }
  let numerator = BigInt(whole + fraction);
  let denominator = 1n;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator = 10n ** BigInt(-exponent);
  if (numerator > denominator) throw new RangeError(`percentile must be in [0, 1], got "${p}"`);
  const divisor = gcd(numerator, denominator);
  numerator /= divisor;
  denominator /= divisor;
  if (denominator > MAX_PERCENTILE_DENOMINATOR) {
    throw new RangeError(`percentile "${p}" has more than ${MAX_PERCENTILE_DECIMALS} decimal places`);
  }
  return { numerator, denominator };
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a;
  let y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x === 0n ? 1n : x;
}

type AggregationSql = (i: number) => { readonly inner: string | null; readonly outer: string };

const simple =
  (fn: string): AggregationSql =>
  (i) => ({ inner: `${fn} AS a${i}`, outer: `a${i}` });

/**
 * One entry per aggregation (STYLE 6). first/last: among samples with the same earliest (latest)
 * timestamp, the smallest (largest) value wins, so the answer does not depend on storage order.
 * percentile: nearest rank k = max(1, ⌈num·n/den⌉) in HUGEINT, never a float quantile.
 */
const AGGREGATIONS: Record<AggregationName, AggregationSql> = {
  "svc.count": simple("count(value)"),
  "svc.sum": simple("sum(value)"),
  "svc.min": simple("min(value)"),
  "svc.max": simple("max(value)"),
  "svc.avg": simple("avg(value)"),
  "svc.var": simple("var_pop(value)"),
  "svc.stddev": simple("stddev_pop(value)"),
  "svc.first": simple("arg_min(value, (ts_us, value))"),
  "svc.last": simple("arg_max(value, (ts_us, value))"),
  "svc.percentile": (i) => ({
    inner: null,
    outer: `sorted[CAST(greatest(1, ($p${i}_num * len(sorted) + $p${i}_den - 1) // $p${i}_den) AS BIGINT)]`,
  }),
};

const GROUP_COLUMNS = { rowname: "row_name", entity: "entity_id", attribute: "attr" } as const;

function groupName(key: GroupKey): keyof typeof GROUP_COLUMNS {
  return typeof key === "string" ? key : "attribute";
}

/** The local-floor expression of a naive local TIMESTAMP for each bucket kind. */
const TRUNCATE: Record<BucketSpec["kind"], (local: string) => string> = {
  minutes: (local) => `time_bucket(to_minutes($bucket_minutes), ${local})`,
  day: (local) => `date_trunc('day', ${local})`,
  week: (local) => `date_trunc('week', ${local})`,
  month: (local) => `date_trunc('month', ${local})`,
};

const timestampTz = (ms: number): DuckDBTimestampTZValue =>
  new DuckDBTimestampTZValue(BigInt(ms) * US_PER_MS);

/**
 * Builds the statement for `plan` (see the file comment for the bucket rule). `stored`, the first
 * and last sample times in the store when known, narrows the scan for offset transitions to where
 * samples can be (a query over a century of mostly empty time stays fast); without it the scan
 * covers the whole range. Throws a RangeError for an invalid percentile or an out-of-range fixed
 * offset; an unknown zone name is reported by DuckDB when the statement runs.
 */
export function buildMetricQuery(
  plan: MetricQueryPlan,
  stored?: { readonly firstMs: number; readonly lastMs: number },
): MetricSql {
  const values: Record<string, DuckDBValue> = {};
  const types: Record<string, DuckDBType> = {};
  const bind = (name: string, value: DuckDBValue, type: DuckDBType): void => {
    values[name] = value;
    types[name] = type;
  };

  const attribute = plan.grouping.find((g): g is { readonly attribute: string } => typeof g !== "string");
  bind("entity_ids", listValue(plan.entities.map((e) => e.id)), LIST(INTEGER));
  bind(
    "entity_attrs",
    listValue(
      // Object.hasOwn: an attribute named `constructor` or `__proto__` is data, not a prototype member.
      plan.entities.map((e) =>
        attribute === undefined || !Object.hasOwn(e.attributes, attribute.attribute)
          ? ""
          : (e.attributes[attribute.attribute] ?? ""),
      ),
    ),
    LIST(VARCHAR),
  );

  const selectors = plan.metrics.flatMap((m) => m.include.map((s) => ({ identifier: m.identifier, ...s })));
  bind("sel_identifier", listValue(selectors.map((s) => s.identifier)), LIST(VARCHAR));
  bind("sel_sampler", listValue(selectors.map((s) => s.sampler)), LIST(VARCHAR));
  bind("sel_sampler_type", listValue(selectors.map((s) => s.samplerType)), LIST(VARCHAR));
  bind("sel_dataview", listValue(selectors.map((s) => s.dataview)), LIST(VARCHAR));
  bind("sel_row", listValue(selectors.map((s) => s.row)), LIST(VARCHAR));
  bind("sel_column", listValue(selectors.map((s) => s.column)), LIST(VARCHAR));
  // TIMESTAMPTZ values carry their own type.
  values.from = timestampTz(plan.from);
  values.to = timestampTz(plan.to);

  const zone = parseZone(plan.zone);
  let local: (tstz: string) => string;
  if (zone.kind === "named") {
    bind("zone", zone.name, VARCHAR);
    local = (tstz) => `timezone($zone, ${tstz})`;
  } else {
    bind("shift_us", BigInt(zone.offsetSeconds) * 1_000_000n, BIGINT);
    local = (tstz) => `make_timestamp(epoch_us(${tstz}) + $shift_us)`;
  }
  if (plan.bucket.kind === "minutes") bind("bucket_minutes", BigInt(plan.bucket.minutes), BIGINT);
  const truncate = TRUNCATE[plan.bucket.kind];

  const windowSql = plan.timeWindows.map((w, i) => timeWindowSql(w, i, bind));

  const ctes: string[] = [
    `ents AS (SELECT unnest($entity_ids) AS entity_id, unnest($entity_attrs) AS attr)`,
    `sel AS (
       SELECT unnest($sel_identifier) AS identifier, unnest($sel_sampler) AS sampler,
              unnest($sel_sampler_type) AS sampler_type, unnest($sel_dataview) AS dataview,
              unnest($sel_row) AS row_name, unnest($sel_column) AS column_name
     )`,
    // A series matched by several selectors of one metric counts once for that metric.
    `matched AS (
       SELECT DISTINCT s.id AS series_id, s.row_name, s.entity_id, ents.attr, sel.identifier
       FROM series s
       JOIN ents ON ents.entity_id = s.entity_id
       JOIN sel ON s.sampler = sel.sampler AND s.dataview = sel.dataview AND s.column_name = sel.column_name
         AND (sel.sampler_type IS NULL OR s.sampler_type = sel.sampler_type)
         AND (CASE WHEN sel.row_name IS NULL THEN s.row_name <> '' ELSE s.row_name = sel.row_name END)
     )`,
    `picked AS (
       SELECT m.identifier, m.row_name, m.entity_id, m.attr, x.value, epoch_us(x.ts) AS ts_us,
              ${local("x.ts")} AS loc
       FROM samples x JOIN matched m ON m.series_id = x.series_id
       WHERE x.value IS NOT NULL AND x.ts >= $from AND x.ts < $to
     )`,
    `located AS (
       SELECT *, epoch_us(loc) - ts_us AS off_us, epoch_us(${truncate("loc")}) AS f_us,
              epoch_us(loc) - epoch_us(date_trunc('day', loc)) AS sod_us
       FROM picked
     )`,
  ];
  const source = windowSql.length === 0 ? "located" : "windowed";
  if (windowSql.length > 0) ctes.push(`windowed AS (SELECT * FROM located WHERE ${windowSql.join(" OR ")})`);

  let bucketExpr: string;
  let bucketFrom: string;
  if (zone.kind === "named") {
    const first = Math.max(plan.from, stored?.firstMs ?? plan.from);
    const end = Math.min(plan.to, (stored?.lastMs ?? plan.to) + 1);
    const scanFrom = (BigInt(first - TRANSITION_LOOKBACK_MS) * US_PER_MS) / HOUR_US;
    bind("scan_from_us", scanFrom * HOUR_US, BIGINT);
    bind("scan_to_us", BigInt(end) * US_PER_MS + HOUR_US, BIGINT);
    const offsetAt = (us: string): string =>
      `epoch_us(timezone($zone, to_timestamp(0) + to_microseconds(${us}))) - ${us}`;
    ctes.push(
      `scan AS (SELECT r.t_us, ${offsetAt("r.t_us")} AS off_us FROM range($scan_from_us, $scan_to_us, ${HOUR_US}) r(t_us))`,
      `steps AS (
         SELECT lag(t_us) OVER (ORDER BY t_us) AS prev_t, t_us, lag(off_us) OVER (ORDER BY t_us) AS prev_off, off_us
         FROM scan
       )`,
      `changes AS (SELECT * FROM steps WHERE prev_off <> off_us)`,
      // The first whole minute with the new offset is the transition instant P.
      `trans AS (
         SELECT min(m.m_us) AS p_us, c.prev_off
         FROM changes c, range(c.prev_t + ${MINUTE_US}, c.t_us + 1, ${MINUTE_US}) m(m_us)
         WHERE ${offsetAt("m.m_us")} = c.off_us
         GROUP BY c.prev_t, c.prev_off
       )`,
    );
    bucketExpr = `CASE
        WHEN t.p_us IS NULL OR l.f_us - l.off_us >= t.p_us THEN l.f_us - l.off_us
        WHEN l.f_us >= t.p_us + t.prev_off THEN t.p_us
        ELSE epoch_us(${truncate("make_timestamp(t.p_us + t.prev_off - 1)")}) - t.prev_off
      END`;
    bucketFrom = `${source} l ASOF LEFT JOIN trans t ON l.ts_us >= t.p_us`;
  } else {
    bucketExpr = "l.f_us - l.off_us";
    bucketFrom = `${source} l`;
  }
  ctes.push(
    `bucketed AS (
       SELECT l.identifier, l.row_name, l.entity_id, l.attr, l.value, l.ts_us, ${bucketExpr} AS bucket_us
       FROM ${bucketFrom}
     )`,
  );

  const groupColumns = plan.grouping.map((g) => ({
    key: groupName(g),
    column: GROUP_COLUMNS[groupName(g)],
    numeric: groupName(g) === "entity",
  }));
  const keyColumns = ["bucket_us", ...groupColumns.map((g) => g.column), "identifier"].join(", ");
  const inner: string[] = [];
  const outer: string[] = [];
  plan.aggregations.forEach((a, i) => {
    const sql = AGGREGATIONS[a.name](i);
    if (sql.inner !== null) inner.push(sql.inner);
    outer.push(`${sql.outer} AS a${i}`);
    if (a.name === "svc.percentile") {
      const { numerator, denominator } = decimalFraction(a.p ?? "");
      bind(`p${i}_num`, numerator, HUGEINT);
      bind(`p${i}_den`, denominator, HUGEINT);
    }
  });
  if (plan.aggregations.some((a) => a.name === "svc.percentile"))
    inner.push("list(value ORDER BY value) AS sorted");
  ctes.push(`agg AS (SELECT ${[keyColumns, ...inner].join(", ")} FROM bucketed GROUP BY ${keyColumns})`);

  const sql = `WITH ${ctes.join(",\n")}
SELECT ${["bucket_us // 1000 AS bucket_ms", ...groupColumns.map((g) => g.column), "identifier", ...outer].join(", ")}
FROM agg ORDER BY ${keyColumns}`;

  return {
    sql,
    values,
    types,
    groupColumns: groupColumns.map(({ key, numeric }) => ({ key, numeric })),
    labels: plan.aggregations.map((a) => a.label),
  };
}

/**
 * One time window as a predicate on `sod_us` (µs after local midnight) and the local ISO weekday.
 * Overnight when to < from; from = to covers the whole day (a zero-length window is never meant).
 */
function timeWindowSql(
  w: TimeWindow,
  i: number,
  bind: (name: string, value: DuckDBValue, type: DuckDBType) => void,
): string {
  bind(`w${i}_from`, BigInt(w.fromSecond) * 1_000_000n, BIGINT);
  bind(`w${i}_to`, BigInt(w.toSecond) * 1_000_000n, BIGINT);
  const time =
    w.fromSecond < w.toSecond
      ? `sod_us >= $w${i}_from AND sod_us < $w${i}_to`
      : `(sod_us >= $w${i}_from OR sod_us < $w${i}_to)`;
  if (w.days === undefined) return `(${time})`;
  bind(`w${i}_days`, listValue([...w.days]), LIST(INTEGER));
  return `(${time} AND list_contains($w${i}_days, CAST(isodow(loc) AS INTEGER)))`;
}
