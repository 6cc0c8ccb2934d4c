/**
 * The hub's storage interface (DESIGN 5.5). Two implementations pass one contract suite
 * (test/hub/store/store-contract.ts): embedded DuckDB (`duckdb/`, the default) and PostgreSQL
 * (`postgres/`, the scale-out store). Aggregation runs inside the database, never in JavaScript.
 */
import type { EntityId, EpochMs } from "../../ids.js";

/** What names a managed entity across the deployment. */
export interface EntityKey {
  readonly gateway: string;
  readonly probe: string;
  readonly managedEntity: string;
}

export interface EntityRecord {
  readonly id: EntityId;
  /** Attribute keys are case-sensitive; empty values are never stored (they count as absent). */
  readonly attributes: Readonly<Record<string, string>>;
  readonly isDeleted: boolean;
}

/** Create or update an entity; `deleted` marks it deleted (it keeps its id). */
export interface EntityUpsert {
  readonly key: EntityKey;
  readonly attributes: Readonly<Record<string, string>>;
  readonly deleted: boolean;
  readonly at: EpochMs;
}

/** One cell or headline of one dataview on one entity: a time series. */
export interface SeriesKey {
  readonly sampler: string;
  /** Sampler type, "" when none. */
  readonly samplerType: string;
  readonly dataview: string;
  /** Row name; "" for a headline. */
  readonly row: string;
  /** Column name, or the headline name. */
  readonly column: string;
}

export interface SampleInput {
  readonly entity: EntityKey;
  readonly series: SeriesKey;
  readonly at: EpochMs;
  /** The value as published (a string). */
  readonly text: string;
  /** The value as a number when it parses as one, else null (counts in no aggregation). */
  readonly value: number | null;
}

/** Everything one ingest step commits atomically. */
export interface IngestBatch {
  readonly entities: readonly EntityUpsert[];
  readonly samples: readonly SampleInput[];
}

/** A cell reference of a metric query, resolved (DESIGN 5.3). `row: null` is the `{rowname}` wildcard. */
export interface CellSelector {
  readonly sampler: string;
  /** null: any sampler type (the reference named no type). */
  readonly samplerType: string | null;
  readonly dataview: string;
  readonly row: string | null;
  readonly column: string;
}

export type AggregationName =
  | "svc.count"
  | "svc.sum"
  | "svc.min"
  | "svc.max"
  | "svc.avg"
  | "svc.var"
  | "svc.stddev"
  | "svc.first"
  | "svc.last"
  | "svc.percentile";

/**
 * Most decimal places a percentile's p may have (trailing zeros aside): stores compute ⌈p·n⌉ in
 * exact integer arithmetic with a denominator up to 10^24, which stays inside 128-bit integers.
 */
export const MAX_PERCENTILE_DECIMALS = 24;

export interface Aggregation {
  /** The name as requested, e.g. `svc.percentile(0.95)`: the key in the response. */
  readonly label: string;
  readonly name: AggregationName;
  /** For svc.percentile: p as written in the request, a decimal string in [0, 1]. */
  readonly p?: string;
}

/** Bucket width: a fixed number of minutes dividing a day, or a calendar unit. */
export type BucketSpec =
  | { readonly kind: "minutes"; readonly minutes: number }
  | { readonly kind: "day" }
  | { readonly kind: "week" }
  | { readonly kind: "month" };

export type GroupKey = "rowname" | "entity" | { readonly attribute: string };

export interface TimeWindow {
  /** Seconds after local midnight, [from, to); overnight when to < from. */
  readonly fromSecond: number;
  readonly toSecond: number;
  /** ISO weekdays 1 (Monday) … 7; every day when absent. */
  readonly days?: readonly number[];
}

export interface MetricQueryPlan {
  readonly entities: readonly EntityRecord[];
  readonly from: EpochMs;
  /** Exclusive. */
  readonly to: EpochMs;
  /** IANA zone name or fixed offset, already checked to be valid. */
  readonly zone: string;
  readonly bucket: BucketSpec;
  readonly metrics: readonly { readonly identifier: string; readonly include: readonly CellSelector[] }[];
  readonly aggregations: readonly Aggregation[];
  readonly grouping: readonly GroupKey[];
  readonly timeWindows: readonly TimeWindow[];
}

export interface MetricQueryRow {
  /** Aligned start of the bucket. */
  readonly bucket: EpochMs;
  readonly group: Readonly<Record<string, string | number>>;
  readonly identifier: string;
  /** Keyed by Aggregation.label. */
  readonly values: Readonly<Record<string, number | null>>;
}

export interface SeriesInfo {
  readonly series: SeriesKey;
}

export interface Store {
  /** Which implementation, for logs: "duckdb" or "postgres". */
  readonly kind: string;
  /** Creates tables when missing. Idempotent. */
  migrate(): Promise<void>;
  /** Commits entities and samples in one transaction; resolves once they are durable. */
  ingest(batch: IngestBatch): Promise<void>;
  listEntities(options: { includeDeleted: boolean }): Promise<EntityRecord[]>;
  getEntity(id: EntityId): Promise<EntityRecord | undefined>;
  /** The series stored for one entity. */
  listSeries(entity: EntityId): Promise<SeriesInfo[]>;
  /** Aggregates inside the database. Rows for empty buckets are omitted. */
  queryMetrics(plan: MetricQueryPlan): Promise<MetricQueryRow[]>;
  close(): Promise<void>;
}
