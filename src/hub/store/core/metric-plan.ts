/**
 * What both stores read off a metric query plan (DESIGN 5.3) before they spell any SQL: the group
 * columns, each entity's value of the grouping attribute, the cell selectors one per line, whether
 * a series can be matched twice, and the aggregations every database computes with the same
 * function.
 */
import type { AggregationName, CellSelector, GroupKey, MetricQueryPlan } from "../store.js";

/** The column of the matched series that holds each kind of group key. */
const GROUP_COLUMNS = { rowname: "row_name", entity: "entity_id", attribute: "attr" } as const;

/** One group key of the answer: its key in `MetricQueryRow.group`, its column, and whether it is a number. */
export interface GroupColumn {
  readonly key: keyof typeof GROUP_COLUMNS;
  readonly column: (typeof GROUP_COLUMNS)[keyof typeof GROUP_COLUMNS];
  readonly numeric: boolean;
}

/** The plan's group keys in grouping order; entity ids are the numeric ones. */
export function groupColumns(grouping: readonly GroupKey[]): GroupColumn[] {
  return grouping.map((g) => {
    const key = typeof g === "string" ? g : "attribute";
    return { key, column: GROUP_COLUMNS[key], numeric: key === "entity" };
  });
}

/**
 * Each entity's value of the plan's grouping attribute, in the order of `plan.entities`; "" when
 * the entity has none or the plan groups by no attribute.
 */
export function groupAttributeValues(plan: Pick<MetricQueryPlan, "entities" | "grouping">): string[] {
  const attribute = plan.grouping.find((g): g is { readonly attribute: string } => typeof g !== "string");
  // Object.hasOwn: an attribute named `constructor` or `__proto__` is data, not a prototype member.
  return plan.entities.map((e) =>
    attribute === undefined || !Object.hasOwn(e.attributes, attribute.attribute)
      ? ""
      : (e.attributes[attribute.attribute] ?? ""),
  );
}

/** Every cell selector of the plan with the identifier of its metric, one per line of the `sel` table. */
export function planSelectors(
  plan: Pick<MetricQueryPlan, "metrics">,
): (CellSelector & { readonly identifier: string })[] {
  return plan.metrics.flatMap((m) => m.include.map((s) => ({ identifier: m.identifier, ...s })));
}

/**
 * Whether the plan's series matches (a series, its entity's attribute, an identifier) can repeat,
 * so that a store has to make them distinct: when two selectors of one identifier can both match
 * one series (same sampler, dataview and column; sampler types that meet, a null one meeting any;
 * rows that meet, a null row meeting every row but the headline's ""), or when an entity is not
 * listed once in increasing id order (as the stores list them), which is not looked into further.
 */
export function matchesMayRepeat(plan: Pick<MetricQueryPlan, "metrics" | "entities">): boolean {
  for (let i = 1; i < plan.entities.length; i++) {
    if ((plan.entities[i - 1]?.id ?? 0) >= (plan.entities[i]?.id ?? 0)) return true;
  }
  const meet = (a: string | null, b: string | null, any: (v: string) => boolean) =>
    a === null ? b === null || any(b) : b === null ? any(a) : a === b;
  // Selectors of one identifier (two metrics may share one) and one cell, side by side.
  const seen = new Map<string, CellSelector[]>();
  for (const s of planSelectors(plan)) {
    const key = JSON.stringify([s.identifier, s.sampler, s.dataview, s.column]);
    const same = seen.get(key) ?? [];
    for (const t of same) {
      const types = meet(s.samplerType, t.samplerType, () => true);
      if (types && meet(s.row, t.row, (row) => row !== "")) return true;
    }
    same.push(s);
    seen.set(key, same);
  }
  return false;
}

/** The aggregations every database computes with one SQL aggregate function of `value`. */
export type PlainAggregationName = Exclude<AggregationName, "svc.first" | "svc.last" | "svc.percentile">;

/** A double in SQL that DuckDB and PostgreSQL both read as one (a bare literal is numeric in PostgreSQL). */
const double = (literal: string): string => `CAST(${literal} AS DOUBLE PRECISION)`;
/** 2^480: below it a group's sum and squared deviations cannot overflow, whatever its number of samples. */
const SAFE_ABS = double("3.1217485503159922e+144");
/** 2^-600 and 2^600: scaling by a power of two changes no rounding (see {@link boundedSql}). */
const DOWN = double("2.409919865102884e-181");
const UP = double("4.149515568880993e+180");
/**
 * 2^-400: a sample below it counts as 0 in a scaled aggregate, where scaling would underflow (which
 * PostgreSQL raises as an error); next to a sample beyond 2^480 it is far below the rounding.
 */
const TINY_ABS = double("3.8725919148493183e-121");
/** Above these a scaled sum (2^424) or variance (2^-176) is beyond the largest double (2^1024) once scaled back. */
const SCALED_SUM_MAX = double("4.332296397063773e+127");
const SCALED_VAR_MAX = double("1.044048714879764e-53");

/**
 * A sum, mean, population variance or deviation that is null, not an error, where the result is
 * beyond the largest double, whose overflow PostgreSQL raises as an error for all four and DuckDB
 * for the variance and deviation (a group of samples of about 1e154 and beyond). A group whose
 * samples are all within 2^480 takes the aggregate of them as it is (the samples beyond, masked out,
 * are in other groups); another takes it of its samples scaled by 2^-600 (those below 2^-400 as 0)
 * and scales the result back: exact, since a power of two rounds nothing unless it overflows or
 * underflows, and a sample too small to scale is far below the group's rounding. Null where
 * scaling back would be beyond the largest double.
 */
function boundedSql(fn: "sum" | "avg" | "var_pop" | "stddev_pop"): string {
  const small = `${fn}(CASE WHEN abs(value) <= ${SAFE_ABS} THEN value END)`;
  const scaled = `${fn}(CASE WHEN abs(value) >= ${TINY_ABS} THEN value * ${DOWN} ELSE 0 END)`;
  const back =
    fn === "var_pop"
      ? `CASE WHEN ${scaled} <= ${SCALED_VAR_MAX} THEN ${scaled} * ${UP} * ${UP} END`
      : fn === "sum"
        ? `CASE WHEN abs(${scaled}) <= ${SCALED_SUM_MAX} THEN ${scaled} * ${UP} END`
        : `${scaled} * ${UP}`;
  return `CASE WHEN max(abs(value)) <= ${SAFE_ABS} THEN ${small} ELSE ${back} END`;
}

/**
 * The plain aggregations, each as its SQL aggregate spelled by `spell`: population variance and
 * deviation (DESIGN 5.3), the same SQL in DuckDB and PostgreSQL. With `bounded`, sums, means,
 * variances and deviations take the form of {@link bounded}: what a store runs again when the plain
 * form failed on an overflow (it costs a query about a tenth more time, so it is not the first try).
 */
export function plainAggregations<T>(
  spell: (fn: string) => T,
  bounded: boolean,
): Record<PlainAggregationName, T> {
  const spread = (fn: "sum" | "avg" | "var_pop" | "stddev_pop"): T =>
    spell(bounded ? boundedSql(fn) : `${fn}(value)`);
  return {
    "svc.count": spell("count(value)"),
    "svc.sum": spread("sum"),
    "svc.min": spell("min(value)"),
    "svc.max": spell("max(value)"),
    "svc.avg": spread("avg"),
    "svc.var": spread("var_pop"),
    "svc.stddev": spread("stddev_pop"),
  };
}
