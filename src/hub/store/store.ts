/**
 * The hub's storage interface (DESIGN 5.5). Two implementations pass one contract suite
 * (test/hub/store/store-contract.ts): embedded DuckDB (`duckdb/`, the default) and PostgreSQL
 * (`postgres/`, the scale-out store). Aggregation runs inside the database, never in JavaScript.
 */
import type { EntityId, EpochMs } from "../../ids.js";
import type { EventTarget, Operation } from "../../messages/types.js";

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

/** One severity, snooze or userassignment message, stored as history (DESIGN 5.1 recordsQuery). */
export interface EventInput {
  readonly type: "severity" | "snooze" | "userassignment";
  readonly operation: Operation;
  /** The message's `timestamp`. */
  readonly at: EpochMs;
  /** The managed entity the target names, when it names one (the event counts for that entity). */
  readonly entity: EntityKey | null;
  readonly target: EventTarget;
  /** The message's payload (`data.data`), as published. */
  readonly payload: Readonly<Record<string, unknown>>;
}

/** The kinds of event history a store keeps. */
export type EventType = EventInput["type"];

/** One stored event, as {@link Store.listEvents} returns it. */
export interface EventRecord {
  readonly type: EventType;
  readonly operation: Operation;
  readonly at: EpochMs;
  /** The entity the event counts for; null when its target names no managed entity. */
  readonly entityId: EntityId | null;
  readonly target: EventTarget;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** Which events {@link Store.listEvents} returns. */
export interface EventQuery {
  /** Inclusive lower bound of `at`; none when absent. */
  readonly from?: EpochMs;
  /** Exclusive upper bound of `at`; none when absent. */
  readonly to?: EpochMs;
  /** Only events that count for this entity. */
  readonly entity?: EntityId;
  /** Only these types; every type when absent. */
  readonly types?: readonly EventType[];
  /** Only events that count for one of these entities (none when empty). */
  readonly entities?: readonly EntityId[];
  /**
   * Only events whose target is one of these cells or headlines: same sampler, dataview and column,
   * same sampler type (`target.type`) unless the selector's is null, and row as the selector says
   * (null: any row, not a headline; "": a headline, whose target has no row). Every level when absent.
   */
  readonly cells?: readonly CellSelector[];
  /** Events skipped before the first returned (paging); 0 when absent. */
  readonly skip?: number;
  /** Most events returned (the caller bounds it), the earliest first. */
  readonly limit: number;
}

/** The latest severity of one entity, as {@link Store.latestSeverities} returns it. */
export interface EntitySeverity {
  readonly entityId: EntityId;
  /** `data.severity` of the event as published (UNDEFINED, OK, WARNING, CRITICAL, UNKNOWN). */
  readonly severity: string;
  readonly at: EpochMs;
}

/** Which raw samples {@link Store.listSamples} returns: one cell of one entity. */
export interface SampleQuery {
  readonly entity: EntityId;
  /** A concrete cell or headline: `row` is never null here; a null sampler type matches any. */
  readonly cell: CellSelector;
  /** Inclusive lower bound of the sample time; none when absent. */
  readonly from?: EpochMs;
  /** Exclusive upper bound; none when absent. */
  readonly to?: EpochMs;
  readonly skip: number;
  /** Most samples returned (the caller bounds it). */
  readonly limit: number;
}

export interface SamplePage {
  /** Samples matching the query before skip and limit. */
  readonly totalCount: number;
  /** Ordered by time, then sampler type, then text (no insertion order). */
  readonly samples: readonly { readonly at: EpochMs; readonly text: string }[];
}

/** One cell or headline name stored for an entity, all of its rows as one (see listMetricNames). */
export interface MetricName {
  readonly entityId: EntityId;
  readonly sampler: string;
  readonly samplerType: string;
  readonly dataview: string;
  /** True for a headline (row ""), false for a table column. */
  readonly headline: boolean;
  readonly column: string;
  /**
   * `target.filter.pluginName` the dataview's messages carried last (DESIGN 5.1); null when not
   * known (data stored before the store kept it, until the next message carries it).
   */
  readonly plugin: string | null;
  /** `target.filter.osType` the dataview's messages carried last; null when not known. */
  readonly osType: string | null;
  /** Whether any of the cells folded into this name has ever held a number. */
  readonly numeric: boolean;
  /** The store's own id of the dataview (entity, sampler, sampler type, dataview), stable for the life of the store. */
  readonly dataviewId: number;
  /**
   * The entity is deleted, or every row and the headlines of the dataview were deleted (table and
   * headline `delete` messages) since they were last updated.
   */
  readonly dataviewDeleted: boolean;
}

/**
 * What a batch tells of one dataview: the plug-in and OS type its messages carried
 * (`target.filter`), and the rows its messages updated and deleted. One per dataview and batch.
 */
export interface DataviewInput {
  readonly entity: EntityKey;
  readonly sampler: string;
  /** Sampler type, "" when none. */
  readonly samplerType: string;
  readonly dataview: string;
  /** `target.filter.pluginName` of the batch's last message of the dataview. */
  readonly plugin: string;
  /** `target.filter.osType` of the batch's last message of the dataview. */
  readonly osType: string;
  /** Rows ("" for the headlines) whose last message in the batch is an update. */
  readonly updated: readonly string[];
  /** Rows ("" for the headlines) whose last message in the batch is a delete. */
  readonly deleted: readonly string[];
}

/**
 * A probe's details (DESIGN 5.1 `svc.os-type`, `svc.hostname` of every entity of the probe), from
 * a `probe` message, or the `target.filter.osType` of metrics when `fallback` (stored only when
 * the store holds no row of the probe yet).
 */
export interface ProbeUpsert {
  readonly gateway: string;
  readonly probe: string;
  readonly osType: string;
  /** `parameters.HostName`; null when the message has none. */
  readonly hostname: string | null;
  readonly at: EpochMs;
  readonly fallback: boolean;
}

/** One stored probe (see {@link Store.listProbes}). */
export interface ProbeRecord {
  readonly gateway: string;
  readonly probe: string;
  readonly osType: string | null;
  readonly hostname: string | null;
}

/** Which row names {@link Store.listRowNames} returns. */
export interface RowNameQuery {
  readonly entities: readonly EntityId[];
  readonly sampler: string;
  /** null: any sampler type. */
  readonly samplerType: string | null;
  readonly dataview: string;
  /** null: rows of any column. */
  readonly column: string | null;
  /** Only rows with a sample at or after this time; every row when absent. */
  readonly updatedSince?: EpochMs;
}

/** The names a row of samples shares: a series key but the column. */
export interface RowNames {
  readonly sampler: string;
  /** Sampler type, "" when none. */
  readonly samplerType: string;
  readonly dataview: string;
  /** Row name; "" for headlines. */
  readonly row: string;
}

/** One table row or the headlines of one message: the cells `[start, end)` of {@link SampleRows}. */
export interface SampleRow extends RowNames {
  readonly entity: EntityKey;
  readonly at: EpochMs;
  readonly start: number;
  readonly end: number;
}

/**
 * Samples in columns, the form the ingest path writes (no object per sample). A row names
 * the entity, the series but its column, and the time once for all its cells; each cell is one
 * entry of the cell columns. Only the cells some row names are samples (the ingester's rows skip
 * the cells of messages stored before). Rows of one entity should share one {@link EntityKey} object, which
 * lets a store resolve the entity once for a run of them. Build with `SampleRowsBuilder`
 * (sample-rows.ts).
 */
export interface SampleRows {
  readonly rows: readonly SampleRow[];
  /** The cells the rows name, by index. */
  readonly cells: CellColumns;
}

/** Cells in columns, read by index (`SampleCells`, sample-rows.ts). */
export interface CellColumns {
  /** Cells held. */
  readonly length: number;
  /** Cell `c`'s column name (the headline name for a headline). */
  column(c: number): string;
  /** Cell `c`'s value as published. */
  text(c: number): string;
  /**
   * Cell `c`'s text when the cells hold it; undefined when it was left out as the canonical text of
   * the cell's number (core/canonical-number.ts), which `text` writes back.
   */
  ownText(c: number): string | undefined;
  /** Cell `c`'s value as a finite number, NaN when it is none (it counts in no aggregation). */
  value(c: number): number;
}

/** Everything one ingest step commits atomically. */
/**
 * A store's own account of its state: `ok`, or `reopening` after a fatal error of an embedded
 * database (with the reason) until its file is open again; `reopens` counts the recoveries.
 */
export type StoreHealth = (
  | { readonly state: "ok" }
  | { readonly state: "reopening"; readonly reason: string }
) & {
  readonly reopens: number;
  /**
   * How the DuckDB store reads entity attributes: `one scan`, or `entity by entity` once a scan
   * has run out of DuckDB's memory (duckdb-store.ts `listEntities`).
   */
  readonly entityReads?: "one scan" | "entity by entity";
};

export interface IngestBatch {
  readonly entities: readonly EntityUpsert[];
  /** Samples one object each: the simple form, for callers that write few. */
  readonly samples: readonly SampleInput[];
  /** Samples in columns (the ingester's form); written after `samples`. */
  readonly rows?: SampleRows;
  readonly events?: readonly EventInput[];
  /** Per dataview the batch names: plug-in, OS type, rows updated and deleted (after the rows). */
  readonly dataviews?: readonly DataviewInput[];
  /** Probe details, applied before the entities. */
  readonly probes?: readonly ProbeUpsert[];
}

/**
 * What identifies a published message for de-duplication (DESIGN 1: "the hub stores a message id
 * once"). A gateway's messages carry `<origin>.<seq>` ids: `origin` names one run of one gateway
 * and `seq` counts up from 1 within it, so the store keeps them as ranges of seqs per origin.
 * Messages without an id (a backfilled file) are known by the SHA-256 of their JSON text, and
 * carry the message's own time (`at`, epoch milliseconds): a store whose digests lead with the
 * minute (message-digest.ts, "minute" form) inserts a time-ordered backfill's digests in order. A
 * hash of anything else (an id of another form) has no `at`.
 */
export type MessageKey =
  | { readonly kind: "seq"; readonly origin: string; readonly seq: number }
  | { readonly kind: "hash"; readonly hash: string; readonly at?: number };

/**
 * A store rejected data as invalid (not a store outage): the message is dead-lettered, not retried.
 * Thrown by {@link StoreTransaction.write} before it writes anything, so the transaction stays usable;
 * any other error from a store is an outage (I/O, closed store) that the caller retries.
 */
export class StoreDataError extends Error {
  override readonly name = "StoreDataError";
}

/** The writes of one store transaction (see {@link Store.transaction}). */
export interface StoreTransaction {
  /**
   * Records message keys as stored and tells, for each, whether it is new (`true`) or was stored
   * before (`false`: the caller skips it). A key repeated within `keys` is new only the first time.
   * Enforced in the store, so it holds across hubs sharing one database and across replays; a
   * rolled-back transaction leaves no claim. Throws {@link StoreDataError} for a malformed key (a seq
   * that is not a positive safe integer, text that is not well-formed Unicode).
   */
  claim(keys: readonly MessageKey[]): Promise<boolean[]>;
  /**
   * Writes entities, samples and events. Throws {@link StoreDataError} when the data breaks a
   * store limit (a new series beyond `maxSeriesPerEntity`) or cannot be stored (text with a lone
   * UTF-16 surrogate, a timestamp that is not whole milliseconds in the Date range); it then has
   * written nothing of `batch`. Samples and events for an entity never upserted create it with
   * the built-in attributes its key gives (DESIGN 5.1).
   */
  write(batch: IngestBatch): Promise<void>;
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

/**
 * Bucket width: a fixed number of minutes dividing a day, or a calendar unit, all aligned to the
 * zone's clock; or `count` equal buckets of the plan's range `[from, to)`, not zone-aligned
 * (DESIGN 5.3 `bucketing.count`). With `count` N and W = to − from (ms, W ≥ N), bucket i
 * (0 ≤ i < N) holds the samples at from + d with i·W/N ≤ d < (i+1)·W/N (exact rational bounds), so
 * a sample's bucket is ⌊d·N/W⌋, and it is labelled with its first whole millisecond,
 * from + ⌈i·W/N⌉: buckets span ⌊W/N⌋ or ⌈W/N⌉ ms when W/N is not a whole millisecond.
 */
export type BucketSpec =
  | { readonly kind: "minutes"; readonly minutes: number }
  | { readonly kind: "day" }
  | { readonly kind: "week" }
  | { readonly kind: "month" }
  | { readonly kind: "count"; readonly count: number };

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

/**
 * A metric query's rows in batches, in the answer's order (DESIGN 5.3): by bucket, then by the
 * group's keys in grouping order (entity ids numerically, names by code point), the rows of one
 * bucket and group next to each other. Read once. Asynchronous where the database is still working
 * on later batches while the first are read; reading one may then reject with the database's error.
 */
export type MetricRowBatches = Iterable<readonly MetricQueryRow[]> | AsyncIterable<readonly MetricQueryRow[]>;

/** Every row of `batches`, in their order. */
export async function allRows(batches: MetricRowBatches): Promise<MetricQueryRow[]> {
  const rows: MetricQueryRow[] = [];
  for await (const batch of batches) for (const row of batch) rows.push(row);
  return rows;
}

export interface SeriesInfo {
  readonly series: SeriesKey;
}

export interface Store {
  /** Which implementation, for logs: "duckdb" or "postgres". */
  readonly kind: string;
  /**
   * Creates tables when missing, and upgrades them. Idempotent. Resolves with what an operator
   * should know of the store it found (the hub logs each as a warning at start), usually nothing.
   */
  migrate(): Promise<readonly string[]>;
  /**
   * Commits entities, samples and events in one transaction (a {@link Store.transaction} with one
   * `write`); resolves once they are durable.
   */
  ingest(batch: IngestBatch): Promise<void>;
  /**
   * Runs `work` inside one transaction: commits when it resolves (and only then resolves), rolls
   * back when it rejects. Transactions of one store run one at a time (so `work` must not call
   * `ingest` or `transaction` of the same store: it would wait for itself). Caches inside the store
   * change only after the commit. When a `tx` call fails with anything but a
   * {@link StoreDataError}, the transaction is rolled back even if `work` swallows the error.
   * `work` may run more than once (a store may roll back an attempt and run it again, as the DuckDB
   * store does after an optimistic claim meets a stored key): it must act only through `tx`.
   */
  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /** Resolves when the store answers a trivial statement; rejects when it is unreachable. */
  ping(): Promise<void>;
  /**
   * What the store knows of its own state without asking the database (`/v0/ping`, `/v1/status`);
   * a store that cannot fault on its own (PostgreSQL: the server's connections come back by
   * themselves) may leave it out.
   */
  health?(): StoreHealth;
  /**
   * Retention (`hub.retentionDays`): removes the samples and events older than `cutoff` (epoch ms),
   * on a connection of its own in short statements, so queries and ingest go on meanwhile. Entities
   * and series stay. Resolves with how many of each were removed.
   */
  deleteBefore(cutoff: EpochMs): Promise<{ readonly samples: number; readonly events: number }>;
  /**
   * Entities with their attributes; `svc.os-type` and `svc.hostname` come from the entity's probe
   * as stored (a `probe` message, or the fallback of metrics), so every hub answers the same.
   */
  listEntities(options: { includeDeleted: boolean }): Promise<EntityRecord[]>;
  /** Every probe stored. */
  listProbes(): Promise<ProbeRecord[]>;
  getEntity(id: EntityId): Promise<EntityRecord | undefined>;
  /**
   * A text that changes whenever a committed transaction changed an entity (this hub's or, on a
   * shared database, another's), cheap enough to ask before every entity request: the hub's entity
   * cache (entity-cache.ts) reads the entities again when it moves. A store without it is read on
   * every entity request.
   */
  entityVersion?(): Promise<string>;
  /**
   * The entities changed by the commits after entity version `since` (one `entityVersion` gave),
   * read after the version it returns with them, so they are at least that new; undefined when the
   * store cannot tell (it no longer remembers that version, or other hubs write the database too):
   * the caller then reads every entity.
   */
  changedEntities?(
    since: string,
  ): Promise<{ readonly version: string; readonly records: EntityRecord[] } | undefined>;
  /** The series stored for one entity. */
  listSeries(entity: EntityId): Promise<SeriesInfo[]>;
  /**
   * Severity, snooze and userassignment history (DESIGN 5.1 recordsQuery), ordered by `at` and then
   * by arrival, at most `query.limit` events.
   */
  listEvents(query: EventQuery): Promise<EventRecord[]>;
  /** Aggregates inside the database. Rows for empty buckets are omitted. */
  queryMetrics(plan: MetricQueryPlan): Promise<MetricQueryRow[]>;
  /**
   * The rows of {@link queryMetrics}, a batch at a time: the database has answered (at least the
   * first batches) when the promise settles, and each batch's row objects are made as it is read, so
   * that an answer is written out without all its rows held at once (hub/query/metric-response.ts).
   */
  queryMetricBatches(plan: MetricQueryPlan): Promise<MetricRowBatches>;
  /**
   * For each entity with one, the severity of its latest `severity` event whose target is the
   * managed entity itself (no sampler): latest by `at`, then by arrival. Any order.
   */
  latestSeverities(): Promise<EntitySeverity[]>;
  /** Raw samples of one cell or headline of one entity (DESIGN 5.1 `…/metrics/data`), with their count. */
  listSamples(query: SampleQuery): Promise<SamplePage>;
  /**
   * The distinct cells and headlines of the given entities, rows folded together (one entry per
   * entity, sampler, sampler type, dataview, headline-or-table and column). Without
   * `includeNonNumeric`, only those that have ever held a number (a flag kept per series, no scan
   * of samples). Any order.
   */
  listMetricNames(query: {
    readonly entities: readonly EntityId[];
    readonly includeNonNumeric: boolean;
  }): Promise<MetricName[]>;
  /** The distinct row names (never "", the headline row) the query selects. Any order. */
  listRowNames(query: RowNameQuery): Promise<string[]>;
  close(): Promise<void>;
}
