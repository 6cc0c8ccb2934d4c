/**
 * What both stores read off a metric query plan (DESIGN 5.3) before they spell any SQL: the group
 * columns, each entity's value of the grouping attribute, the cell selectors one per line, and the
 * aggregations every database computes with the same function.
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

/** The aggregations every database computes with one SQL aggregate function of `value`. */
export type PlainAggregationName = Exclude<AggregationName, "svc.first" | "svc.last" | "svc.percentile">;

/**
 * The plain aggregations, each as its SQL aggregate spelled by `spell`: population variance and
 * deviation (DESIGN 5.3), the same function names in DuckDB and PostgreSQL.
 */
export function plainAggregations<T>(spell: (fn: string) => T): Record<PlainAggregationName, T> {
  return {
    "svc.count": spell("count(value)"),
    "svc.sum": spell("sum(value)"),
    "svc.min": spell("min(value)"),
    "svc.max": spell("max(value)"),
    "svc.avg": spell("avg(value)"),
    "svc.var": spell("var_pop(value)"),
    "svc.stddev": spell("stddev_pop(value)"),
  };
}
