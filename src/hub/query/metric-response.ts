/**
 * The metric query response (DESIGN 5.3, the seed's "Metric query response" table): a schema that
 * tells downstream applications the type and unit of every identifier × aggregation, and one data
 * element per bucket and group holding every identifier.
 */

import type { ColumnSchema } from "../../config/setup.js";
import type {
  Aggregation,
  CellSelector,
  GroupKey,
  MetricQueryRow,
  MetricRowBatches,
} from "../store/store.js";
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
    // Code-point order, as everywhere in the hub (DESIGN 5.2) and as the stores sort.
    return compareCodePoints(String(x), String(y));
  }
  return 0;
}

/**
 * Code-point order of two strings (the order of their UTF-8 bytes, in which the stores sort), where
 * `<` compares UTF-16 code units: a surrogate (half of a code point above U+FFFF) sorts after every
 * other code unit, U+E000–U+FFFF included.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    return xs === ys ? x - y : xs ? 1 : -1;
  }
  return a.length - b.length;
}

function finite(value: number | null | undefined): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * About how many bytes of JSON one piece of the response holds ({@link pieceElements}). A piece's
 * text is made by one `JSON.stringify` and encoded once: pieces of about 64 KiB stay in V8's young
 * generation and are encoded from flat strings. The full-aggregation query of the store-query bench
 * (13 MB of JSON) took 80–95 ms to make and encode in such pieces against 160–215 ms in pieces of
 * 512 elements (1.1 MB each), whose strings went to V8's large-object space.
 */
export const PIECE_BYTES = 64 * 1024; // bytes
/** The estimated JSON of one element: its bucket and group, each identifier's key, each value. */
const ELEMENT_BYTES = 96; // bytes
const IDENTIFIER_BYTES = 24; // bytes
const VALUE_BYTES = 24; // bytes

/**
 * How many answer elements make one piece of the response (about {@link PIECE_BYTES}) for a query
 * of `metrics` identifiers and `aggregations` labels.
 */
export function pieceElements(metrics: number, aggregations: number): number {
  const estimate = ELEMENT_BYTES + metrics * (IDENTIFIER_BYTES + VALUE_BYTES * aggregations);
  return Math.max(1, Math.floor(PIECE_BYTES / estimate));
}

type DataElement = MetricResponse["data"][number];

/**
 * The schema of a metric query's response. `schema.bucketing` (the duration asked, or the count
 * asked with each bucket's width) and `schema.grouping` echo the request; `schema.metrics[identifier][label]`
 * gives type and unit: `svc.count` int64 with unit `none`, `svc.avg`/`svc.var`/`svc.stddev` float64,
 * the others the column's declared type (float64 when undeclared or a string column); the unit is
 * the column's (`svc.var` included: units are free text with no squared form), `none` when
 * undeclared. An identifier whose includes name different columns takes the schema of its first
 * include, looked up with `columnSchema`.
 */
export function metricResponseSchema(
  query: ParsedMetricQuery,
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
): MetricResponse["schema"] {
  const metrics: Record<string, Record<string, MetricValueSchema>> = {};
  for (const metric of query.metrics) {
    const first = metric.include[0];
    const column = first === undefined ? undefined : columnSchema(first);
    const entry: Record<string, MetricValueSchema> = {};
    for (const aggregation of query.aggregations) entry[aggregation.label] = valueSchema(aggregation, column);
    metrics[metric.identifier] = entry;
  }
  return { bucketing: query.bucketing, grouping: query.grouping.map(groupingText), metrics };
}

/**
 * The data elements of a metric query's response from the store's rows (store.ts
 * `MetricRowBatches`: in the answer's order), at most {@link pieceElements} an array, each array
 * made as its batch is read. Rows with the same bucket and group merge into one element, which holds
 * every identifier of the query and every aggregation label: an identifier without a row there has
 * `svc.count` 0 and null elsewhere, and non-finite numbers become null; a later row of the same
 * identifier wins. Elements follow the rows: by bucket, then by group values in grouping order (ids
 * numerically, strings by code point). `bucket` is the bucket start in the query's zone with its
 * offset (`formatInZone`; count buckets, which may start inside a second, with milliseconds when
 * they are not zero). Throws, when it reads it, on a row out of that order (a store's bug): an
 * answer is never written with a bucket and group in two places.
 */
export function* metricElements(
  query: ParsedMetricQuery,
  batches: Iterable<readonly MetricQueryRow[]>,
): Generator<DataElement[]> {
  const merge = elementMerger(query);
  for (const rows of batches) yield* merge.add(rows);
  const last = merge.end();
  if (last.length > 0) yield last;
}

/**
 * The merge of {@link metricElements}, a batch of rows at a time: `add` answers the arrays of
 * {@link pieceElements} elements the batch completed, `end` the elements left after the last.
 */
function elementMerger(query: ParsedMetricQuery): {
  add(rows: readonly MetricQueryRow[]): DataElement[][];
  end(): DataElement[];
} {
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
  // Many groups share a bucket: its label is formatted once.
  let labelMs = Number.NaN;
  let label = "";
  const format = query.bucket.kind === "count" ? formatInZoneMillis : formatInZone;
  const perPiece = pieceElements(query.metrics.length, query.aggregations.length);
  let piece: DataElement[] = [];
  const close = (element: Element): void => {
    for (const metric of query.metrics) element.metrics[metric.identifier] ??= emptyValues();
    if (element.bucketMs !== labelMs) {
      labelMs = element.bucketMs;
      label = format(labelMs, query.zone);
    }
    // Every identifier holds its values by now (filled in above).
    const metrics = element.metrics as Record<string, Record<string, number | null>>;
    piece.push({ bucket: label, group: element.group, metrics });
  };
  let open: Element | undefined;
  const add = (rows: readonly MetricQueryRow[]): DataElement[][] => {
    const full: DataElement[][] = [];
    for (const row of rows) {
      if (open === undefined || open.bucketMs !== row.bucket || !sameGroup(open.group, row.group)) {
        if (open !== undefined) {
          if ((row.bucket - open.bucketMs || compareGroups(row.group, open.group, query.grouping)) <= 0) {
            throw new Error(
              `internal: the store's metric rows are out of order (bucket ${row.bucket} after ${open.bucketMs})`,
            );
          }
          close(open);
          if (piece.length >= perPiece) {
            full.push(piece);
            piece = [];
          }
        }
        const metrics: Record<string, Record<string, number | null> | null> = {};
        for (const metric of query.metrics) metrics[metric.identifier] = null;
        // Rows of one group share one read-only group object (store.ts): the answer can hold it.
        open = { bucketMs: row.bucket, group: row.group, metrics };
      }
      // A row for an identifier the query did not ask for is a store bug; it is not answered.
      if (!asked.has(row.identifier)) continue;
      open.metrics[row.identifier] = answerValues(row.values);
    }
    return full;
  };
  const end = (): DataElement[] => {
    if (open !== undefined) close(open);
    open = undefined;
    return piece;
  };
  return { add, end };
}

/**
 * The response of a metric query as UTF-8 JSON, piece by piece (one per {@link metricElements}
 * array), for writing out as it is made: `{"schema":…,"data":[…]}`, the bytes of the text
 * `JSON.stringify` makes of the whole response, without the whole held at once. Each array's text
 * is encoded as it is, its `[` made the `,` between pieces and its `]` left out, so no piece's text
 * is copied to cut it.
 */
export async function* metricResponseBytes(
  query: ParsedMetricQuery,
  batches: MetricRowBatches,
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
): AsyncGenerator<Buffer> {
  yield Buffer.from(`{"schema":${JSON.stringify(metricResponseSchema(query, columnSchema))},"data":[`);
  let first = true;
  // A piece whose text is ASCII (numbers and bucket labels always; identifiers, labels and group
  // values when they are) is encoded by copying its characters (`latin1`, the same bytes) instead of
  // UTF-8's walk over them: 2-4 ms of the 85-95 the full aggregation's 13 MB answer takes to make.
  const asciiQuery =
    query.metrics.every((m) => ASCII.test(m.identifier)) &&
    query.aggregations.every((a) => ASCII.test(a.label));
  const asciiGroup = ({ group }: DataElement): boolean => {
    for (const field in group) {
      const value = group[field];
      if (!ASCII.test(field) || (typeof value === "string" && !ASCII.test(value))) return false;
    }
    return true;
  };
  const bytes = (elements: DataElement[]): Buffer => {
    const text = JSON.stringify(elements);
    const json =
      asciiQuery && elements.every(asciiGroup) ? Buffer.from(text, "latin1") : Buffer.from(text, "utf8");
    if (first) {
      first = false;
      return json.subarray(1, -1);
    }
    json[0] = COMMA;
    return json.subarray(0, -1);
  };
  const merge = elementMerger(query);
  for await (const rows of batches) for (const elements of merge.add(rows)) yield bytes(elements);
  const last = merge.end();
  if (last.length > 0) yield bytes(last);
  yield Buffer.from("]}");
}

const COMMA = 0x2c;
/** Text of characters below U+0080 only, whose latin1 and UTF-8 bytes are the same. */
const ASCII = /^\p{ASCII}*$/u;

/** The whole response of a metric query as one object ({@link metricResponseBytes} is its text). */
export function buildMetricResponse(
  query: ParsedMetricQuery,
  rows: readonly MetricQueryRow[],
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
): MetricResponse {
  return {
    schema: metricResponseSchema(query, columnSchema),
    data: [...metricElements(query, [rows])].flat(),
  };
}
