/**
 * The metric query response (DESIGN 5.3, the seed's "Metric query response" table): a schema that
 * tells downstream applications the type and unit of every identifier × aggregation, and one data
 * element per bucket and group holding every identifier.
 */

import type { ColumnSchema } from "../../config/setup.js";
import type { Aggregation, CellSelector, GroupKey, MetricQueryRow } from "../store/store.js";
import type { ParsedMetricQuery } from "./metric-query.js";
import { formatInZone, formatInZoneMillis } from "./zone.js";

export interface MetricValueSchema {
  readonly type: "float64" | "int64";
  readonly unit: string;
}

export interface MetricResponse {
  readonly schema: {
    /** `{duration}` as asked, or `{count, duration}`: the count asked and each bucket's width. */
    readonly bucketing: ParsedMetricQuery["bucketing"];
    readonly grouping: readonly string[];
    readonly metrics: Readonly<Record<string, Readonly<Record<string, MetricValueSchema>>>>;
  };
  readonly data: readonly {
    readonly bucket: string;
    readonly group: Readonly<Record<string, string | number>>;
    readonly metrics: Readonly<Record<string, Readonly<Record<string, number | null>>>>;
  }[];
}

const NO_UNIT = "none";

/** Type and unit of one aggregation over a column (DESIGN 5.3). */
function valueSchema(aggregation: Aggregation, column: ColumnSchema | undefined): MetricValueSchema {
  const unit = column?.unit !== undefined && column.unit !== "" ? column.unit : NO_UNIT;
  switch (aggregation.name) {
    case "svc.count":
      return { type: "int64", unit: NO_UNIT };
    case "svc.avg":
    case "svc.stddev":
      return { type: "float64", unit };
    case "svc.var":
      // The unit is the column's, not its square: units are free text and have no squared form.
      return { type: "float64", unit };
    default:
      return { type: column?.type === "int64" ? "int64" : "float64", unit };
  }
}

/** The grouping as the request wrote it. */
function groupingText(key: GroupKey): string {
  return typeof key === "string" ? key : `entity:${key.attribute}`;
}

/** The group field a grouping key fills in `data[].group` (DESIGN 5.3). */
function groupField(key: GroupKey): string {
  return typeof key === "string" ? key : "attribute";
}

function compareGroups(
  a: Readonly<Record<string, string | number>>,
  b: Readonly<Record<string, string | number>>,
  grouping: readonly GroupKey[],
): number {
  for (const key of grouping) {
    const field = groupField(key);
    const x = a[field];
    const y = b[field];
    if (x === y) continue;
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (typeof x === "number" && typeof y === "number") return x - y;
    // Code-point order, as everywhere in the hub (DESIGN 5.2).
    return String(x) < String(y) ? -1 : 1;
  }
  return 0;
}

function finite(value: number | null | undefined): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * Builds the response of a metric query from the store's rows. `schema.bucketing` (the duration
 * asked, or the count asked with each bucket's width) and `schema.grouping` echo the request; `schema.metrics[identifier][label]` gives type and unit:
 * `svc.count` int64 with unit `none`, `svc.avg`/`svc.var`/`svc.stddev` float64, the others the
 * column's declared type (float64 when undeclared or a string column); the unit is the column's
 * (`svc.var` included: units are free text with no squared form), `none` when undeclared. An
 * identifier whose includes name different columns takes the schema of its first include, looked up
 * with `columnSchema`. Rows with the same bucket and group merge into one data element, which holds
 * every identifier of the query and every aggregation label: an identifier without a row there has
 * `svc.count` 0 and null elsewhere, and non-finite numbers become null. Elements are ordered by
 * bucket, then by group values in grouping order (ids numerically, strings by code point);
 * `bucket` is the bucket start in the query's zone with its offset (`formatInZone`; count buckets,
 * which may start inside a second, with milliseconds when they are not zero).
 */
export function buildMetricResponse(
  query: ParsedMetricQuery,
  rows: readonly MetricQueryRow[],
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
): MetricResponse {
  const schemaMetrics: Record<string, Record<string, MetricValueSchema>> = {};
  for (const metric of query.metrics) {
    const first = metric.include[0];
    const column = first === undefined ? undefined : columnSchema(first);
    const entry: Record<string, MetricValueSchema> = {};
    for (const aggregation of query.aggregations) entry[aggregation.label] = valueSchema(aggregation, column);
    schemaMetrics[metric.identifier] = entry;
  }

  const emptyValues = (): Record<string, number | null> => {
    const values: Record<string, number | null> = {};
    for (const aggregation of query.aggregations) {
      values[aggregation.label] = aggregation.name === "svc.count" ? 0 : null;
    }
    return values;
  };
  /**
   * A row's values as the answer holds them: the row's own object when it has every label and
   * nothing else, each a finite number or null (a count a number), which is what the stores make;
   * otherwise a copy with non-finite and missing values as null (a count 0).
   */
  const answerValues = (values: Readonly<Record<string, number | null>>): Record<string, number | null> => {
    let labels = 0;
    for (const _ in values) labels += 1;
    let usable = labels === query.aggregations.length;
    for (let k = 0; usable && k < query.aggregations.length; k++) {
      const aggregation = query.aggregations[k] as Aggregation;
      const value = values[aggregation.label];
      usable =
        value === null
          ? aggregation.name !== "svc.count"
          : typeof value === "number" && Number.isFinite(value);
    }
    if (usable) return values as Record<string, number | null>;
    const copy: Record<string, number | null> = {};
    for (const aggregation of query.aggregations) {
      const value = finite(values[aggregation.label]);
      copy[aggregation.label] = value === null && aggregation.name === "svc.count" ? 0 : value;
    }
    return copy;
  };

  interface Element {
    readonly bucketMs: number;
    readonly group: Readonly<Record<string, string | number>>;
    /** Every identifier of the query, in its order; null until a row gives its values. */
    readonly metrics: Record<string, Record<string, number | null> | null>;
  }
  const fields = query.grouping.map(groupField);
  const sameGroup = (
    a: Readonly<Record<string, string | number>>,
    b: Readonly<Record<string, string | number>>,
  ) => fields.every((field) => a[field] === b[field]);
  const asked = new Set(query.metrics.map((m) => m.identifier));
  const elements = new Map<string, Element>();
  // The stores answer in bucket, group, identifier order, so a row usually belongs to the element
  // of the row before it; the map (keyed by bucket and group) takes any other order.
  let previous: Element | undefined;
  for (const row of rows) {
    let element =
      previous !== undefined && previous.bucketMs === row.bucket && sameGroup(previous.group, row.group)
        ? previous
        : undefined;
    if (element === undefined) {
      const key = JSON.stringify([row.bucket, fields.map((field) => row.group[field] ?? null)]);
      element = elements.get(key);
      if (element === undefined) {
        const metrics: Record<string, Record<string, number | null> | null> = {};
        for (const metric of query.metrics) metrics[metric.identifier] = null;
        element = { bucketMs: row.bucket, group: { ...row.group }, metrics };
        elements.set(key, element);
      }
    }
    previous = element;
    // A row for an identifier the query did not ask for is a store bug; it is not answered.
    if (!asked.has(row.identifier)) continue;
    element.metrics[row.identifier] = answerValues(row.values);
  }
  for (const element of elements.values()) {
    for (const metric of query.metrics) element.metrics[metric.identifier] ??= emptyValues();
  }

  const order = (a: Element, b: Element) =>
    a.bucketMs - b.bucketMs || compareGroups(a.group, b.group, query.grouping);
  const sorted = [...elements.values()];
  if (sorted.some((element, i) => i > 0 && order(sorted[i - 1] as Element, element) > 0)) sorted.sort(order);
  // Many groups share a bucket: its label is formatted once.
  let labelMs = Number.NaN;
  let label = "";
  const format = query.bucket.kind === "count" ? formatInZoneMillis : formatInZone;
  const data = sorted.map((element) => {
    if (element.bucketMs !== labelMs) {
      labelMs = element.bucketMs;
      label = format(labelMs, query.zone);
    }
    // Every identifier holds its values by now (filled in above).
    const metrics = element.metrics as Record<string, Record<string, number | null>>;
    return { bucket: label, group: element.group, metrics };
  });

  return {
    schema: {
      bucketing: query.bucketing,
      grouping: query.grouping.map(groupingText),
      metrics: schemaMetrics,
    },
    data,
  };
}
