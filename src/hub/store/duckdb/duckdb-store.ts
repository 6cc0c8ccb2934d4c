/**
 * The embedded DuckDB store, vigil's default (DESIGN 5.5): one file in the data dir (or `:memory:`).
 *
 * Three connections: a writer that runs `migrate` and transactions one at a time (a DuckDB
 * connection holds at most one transaction), a reader for lists and metric queries, which sees
 * committed data only (DuckDB is MVCC) so a long query never waits for an ingest, and one for
 * `ping`, so a health check waits neither for a write nor for a long query. Each connection has its
 * own promise queue because the node binding must not run two statements on one connection at once.
 *
 * Writes (duckdb-transaction.ts) resolve entity ids from a cache of every entity, loaded at
 * `migrate()`, and series ids from a bounded recency cache backed by one lookup statement per batch, so
 * neither a restart nor a flood of series loads the series table into memory. New series, samples
 * and events go in through the DataChunk appender (about 10× faster than INSERT statements).
 */
import { existsSync } from "node:fs";
import { chmod, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { type DuckDBConnection, DuckDBInstance, INTEGER, type JS, TIMESTAMPTZ } from "@duckdb/node-api";
import { VigilError } from "../../../errors/catalog.js";
import { asEntityId, asEpochMs, type EntityId, type EpochMs } from "../../../ids.js";
import { seriesLimits } from "../data-checks.js";
import { type DigestForm, digestForm, NEW_STORE_DIGEST_FORM } from "../message-digest.js";
import type { RecencyCache } from "../recency-cache.js";
import { applyRowSeries, type RowSeries, rowSeriesCache } from "../row-series.js";
import { SerialQueue } from "../serial-queue.js";
import type {
  EntityRecord,
  EntitySeverity,
  EventQuery,
  EventRecord,
  IngestBatch,
  MetricName,
  MetricQueryPlan,
  MetricQueryRow,
  RowNameQuery,
  SamplePage,
  SampleQuery,
  SeriesInfo,
  Store,
  StoreTransaction,
} from "../store.js";
import { timestampTz, toNumber } from "./duckdb-append.js";
import { DigestConflict } from "./duckdb-claims.js";
import { eventRecord, listEventsSql } from "./duckdb-events.js";
import {
  buildMetricQuery,
  buildZoneOffsetsQuery,
  fixedZoneOffsets,
  parseZone,
  readMetricRows,
  readZoneOffsets,
  scanWindow,
  type ZoneOffsets,
} from "./duckdb-metrics-sql.js";
import {
  countSamplesSql,
  entitySeverity,
  LATEST_SEVERITIES_SQL,
  metricName,
  metricNamesSql,
  pageSamplesSql,
  rowNamesSql,
} from "./duckdb-queries.js";
import {
  DUCKDB_SCHEMA,
  HAS_MESSAGE_HASHES,
  MIGRATE_MESSAGE_HASHES,
  READ_DIGEST_FORM,
  RECORD_DIGEST_FORM,
} from "./duckdb-schema.js";
import { DUCKDB_STORAGE_VERSION, duckDbMachineSettings, olderFormat } from "./duckdb-settings.js";
import {
  DuckDbTransaction,
  type EntityState,
  entityKeyString,
  type PendingChanges,
  type SampleSpan,
} from "./duckdb-transaction.js";

/** Zone-offset answers kept for metric queries (a few hundred bytes each). */
const ZONE_OFFSETS_CACHE_ENTRIES = 256; // entries

export interface DuckDbStoreOptions {
  /** A database file (created with its folder when missing) or `:memory:`. */
  readonly path: string;
  /** DuckDB `memory_limit`, e.g. "512MB"; default sized from the machine (duckdb-settings.ts). */
  readonly memoryLimit?: string;
  /** Most series one entity may have; default `DEFAULT_MAX_SERIES_PER_ENTITY` (100 000). */
  readonly maxSeriesPerEntity?: number;
  /** Entries of the series-id cache; default `SERIES_CACHE_ENTRIES` (200 000); 0 turns it off. */
  readonly seriesCacheEntries?: number;
}

/**
 * Opens (or creates) a DuckDB store at `options.path` with `memory_limit` set to
 * `options.memoryLimit` (default, and `threads`, sized from the machine: duckdb-settings.ts), at
 * most `options.maxSeriesPerEntity` series per entity (default 100 000) and a series-id cache of `options.seriesCacheEntries` entries (default
 * 200 000). The tables are not touched until `migrate()` runs, which creates them when missing and
 * loads the entity cache; call it once before anything else.
 */
export async function createDuckDbStore(options: DuckDbStoreOptions): Promise<Store> {
  const { maxSeriesPerEntity, seriesCacheEntries } = seriesLimits(options);
  const onDisk = options.path !== ":memory:";
  // The store holds every message's contents: its folder is 0700 and a file it creates 0600 (issue
  // 10; docs/security.md); an existing file keeps its mode, and the hub's start check warns if loose.
  if (onDisk) await mkdir(dirname(options.path), { recursive: true, mode: 0o700 });
  const created = onDisk && !existsSync(options.path);
  const machine = duckDbMachineSettings();
  const instance = await DuckDBInstance.create(options.path, {
    memory_limit: options.memoryLimit ?? machine.memoryLimit,
    threads: String(machine.threads),
    storage_compatibility_version: DUCKDB_STORAGE_VERSION,
  });
  if (created) await chmod(options.path, 0o600).catch(() => undefined); // not created: nothing to narrow
  const writer = await instance.connect();
  const reader = await instance.connect();
  const pinger = await instance.connect();
  const maintainer = await instance.connect();
  for (const c of [writer, reader, maintainer]) await c.run("SET TimeZone = 'UTC'");
  return new DuckDbStore(
    instance,
    { writer, reader, pinger, maintainer },
    maxSeriesPerEntity,
    seriesCacheEntries,
  );
}

class DuckDbStore implements Store {
  readonly kind = "duckdb";
  private readonly writes = new SerialQueue();
  private readonly reads = new SerialQueue();
  private readonly pings = new SerialQueue();
  private readonly maintenance = new SerialQueue();
  private readonly writer: DuckDBConnection;
  private readonly reader: DuckDBConnection;
  private readonly pinger: DuckDBConnection;
  /** Retention deletes: a connection of its own, so reads and the writer go on meanwhile. */
  private readonly maintainer: DuckDBConnection;
  /** Every entity (entities are few; see StoreCaches). */
  private entities = new Map<string, EntityState>();
  private readonly series: RecencyCache<string, RowSeries>;
  private readonly seriesCounts = new Map<EntityId, number>();
  private sampleSpan: SampleSpan | null = null;
  private cachesLoaded = false;
  /** How the file keeps message digests (message-digest.ts), read with the caches. */
  private digestForm: DigestForm = NEW_STORE_DIGEST_FORM;
  /** Whether the next transaction claims hash keys optimistically (see `transaction`). */
  private optimisticClaims = true;
  /** Offsets of named zones around recent query ranges (buildZoneOffsetsQuery's key). */
  private readonly zoneOffsets = new Map<string, ZoneOffsets>();
  /** Zone names ICU inside DuckDB knows; read once, on the first query with a named zone. */
  private zoneNames: Set<string> | undefined;
  private closed = false;

  constructor(
    private readonly instance: DuckDBInstance,
    connections: {
      writer: DuckDBConnection;
      reader: DuckDBConnection;
      pinger: DuckDBConnection;
      maintainer: DuckDBConnection;
    },
    private readonly maxSeriesPerEntity: number,
    seriesCacheEntries: number,
  ) {
    this.writer = connections.writer;
    this.reader = connections.reader;
    this.pinger = connections.pinger;
    this.maintainer = connections.maintainer;
    // By row of series, weighing the row's columns: the bound stays one of series.
    this.series = rowSeriesCache(seriesCacheEntries);
  }

  migrate(): Promise<readonly string[]> {
    return this.write(async () => {
      for (const statement of DUCKDB_SCHEMA) await this.writer.run(statement);
      await this.migrateMessageHashes();
      await this.writer.run(RECORD_DIGEST_FORM);
      await this.loadCaches();
      return this.formatNotices();
    });
  }

  /**
   * A file created in an older storage format than DUCKDB_STORAGE_VERSION keeps it, and there each
   * checkpoint rewrites every index (duckdb-settings.ts): worth a warning at start.
   */
  private async formatNotices(): Promise<string[]> {
    const read = await this.writer.runAndReadAll(
      "SELECT path, tags FROM duckdb_databases() WHERE database_name = current_database()",
    );
    const [path, tags] = read.getRowsJS()[0] ?? [];
    const version = ((tags ?? []) as { key: string; value: string }[]).find(
      (tag) => tag.key === "storage_version",
    )?.value;
    if (path === null || version === undefined || !olderFormat(version, DUCKDB_STORAGE_VERSION)) return [];
    return [
      `the DuckDB file ${String(path)} is in storage format ${version}, older than ${DUCKDB_STORAGE_VERSION}: ` +
        "each checkpoint there rewrites every index, so ingest slows as messages accumulate; " +
        "docs/operations.md (DuckDB file format) says how to convert it",
    ];
  }

  /** Schema version 3 (duckdb-schema.ts): a version-2 file's hashes move to `message_digests`. */
  private async migrateMessageHashes(): Promise<void> {
    const found = await this.writer.runAndReadAll(HAS_MESSAGE_HASHES);
    if (Number(found.getRowObjectsJS()[0]?.n ?? 0) === 0) return;
    await this.writer.run("BEGIN TRANSACTION");
    try {
      for (const statement of MIGRATE_MESSAGE_HASHES) await this.writer.run(statement);
      await this.writer.run("COMMIT");
    } catch (error) {
      await this.writer.run("ROLLBACK").catch(() => undefined);
      throw error;
    }
  }

  ingest(batch: IngestBatch): Promise<void> {
    return this.transaction((tx) => tx.write(batch));
  }

  /**
   * Runs `work` in one transaction. Hash keys are first claimed optimistically (a plain insert of
   * their digests); when one was stored already the transaction is rolled back and `work` runs again
   * with the careful claim, which stays on until a transaction's hash keys are all new again (a
   * replay of stored messages costs one attempt, not one per batch).
   */
  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.write(async () => {
      if (this.optimisticClaims) {
        try {
          return await this.attempt(work, true);
        } catch (error) {
          if (!(error instanceof DigestConflict)) throw error;
          this.optimisticClaims = false;
        }
      }
      return this.attempt(work, false);
    });
  }

  private async attempt<T>(work: (tx: StoreTransaction) => Promise<T>, optimistic: boolean): Promise<T> {
    if (!this.cachesLoaded) await this.loadCaches();
    const tx = new DuckDbTransaction(
      this.writer,
      {
        entities: this.entities,
        series: this.series,
        seriesCounts: this.seriesCounts,
        digestForm: this.digestForm,
      },
      this.maxSeriesPerEntity,
      optimistic,
    );
    await this.writer.run("BEGIN TRANSACTION");
    let result: T;
    try {
      result = await work(tx);
      await tx.finish();
      if (tx.failure !== undefined) throw tx.failure.error;
      await this.writer.run("COMMIT");
    } catch (error) {
      await tx.finish();
      await this.writer.run("ROLLBACK").catch(() => undefined);
      // A conflict of the optimistic claim is the cause even when `work` went on past it.
      throw tx.failure?.error instanceof DigestConflict ? tx.failure.error : error;
    }
    // Cache changes become visible only after COMMIT, so a rolled-back batch leaves no stale ids.
    this.apply(tx.pending);
    if (!optimistic && !tx.duplicateDigests) this.optimisticClaims = true;
    return result;
  }

  ping(): Promise<void> {
    if (this.closed) return Promise.reject(new Error("DuckDB store is closed"));
    return this.pings.run(async () => {
      await this.pinger.run("SELECT 1");
    });
  }

  deleteBefore(cutoff: EpochMs): Promise<{ samples: number; events: number }> {
    if (this.closed) return Promise.reject(new Error("DuckDB store is closed"));
    return this.maintenance.run(async () => {
      const values = { cutoff: timestampTz(cutoff) };
      const types = { cutoff: TIMESTAMPTZ };
      const samples = await this.maintainer.run("DELETE FROM samples WHERE ts < $cutoff", values, types);
      const events = await this.maintainer.run("DELETE FROM events WHERE ts < $cutoff", values, types);
      return { samples: samples.rowsChanged, events: events.rowsChanged };
    });
  }

  listEvents(query: EventQuery): Promise<EventRecord[]> {
    if (!Number.isSafeInteger(query.limit) || query.limit < 0) {
      return Promise.reject(
        new RangeError(`listEvents limit must be a non-negative integer, got ${query.limit}`),
      );
    }
    if (query.skip !== undefined && (!Number.isSafeInteger(query.skip) || query.skip < 0)) {
      return Promise.reject(
        new RangeError(`listEvents skip must be a non-negative integer, got ${query.skip}`),
      );
    }
    const { sql, values, types } = listEventsSql(query);
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(sql, values, types);
      return r.getRowsJS().map(eventRecord);
    });
  }

  listEntities(options: { includeDeleted: boolean }): Promise<EntityRecord[]> {
    const where = options.includeDeleted ? "" : "WHERE NOT is_deleted";
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(
        `SELECT id, CAST(attributes AS VARCHAR), is_deleted FROM entities ${where} ORDER BY id`,
      );
      return r.getRowsJS().map(entityRecord);
    });
  }

  getEntity(id: EntityId): Promise<EntityRecord | undefined> {
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(
        "SELECT id, CAST(attributes AS VARCHAR), is_deleted FROM entities WHERE id = $id",
        { id },
        { id: INTEGER },
      );
      const row = r.getRowsJS()[0];
      return row === undefined ? undefined : entityRecord(row);
    });
  }

  listSeries(entity: EntityId): Promise<SeriesInfo[]> {
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(
        `SELECT sampler, sampler_type, dataview, row_name, column_name FROM series WHERE entity_id = $id
         ORDER BY sampler, sampler_type, dataview, row_name, column_name`,
        { id: entity },
        { id: INTEGER },
      );
      return r.getRowsJS().map(([sampler, samplerType, dataview, row, column]) => ({
        series: {
          sampler: String(sampler),
          samplerType: String(samplerType),
          dataview: String(dataview),
          row: String(row),
          column: String(column),
        },
      }));
    });
  }

  queryMetrics(plan: MetricQueryPlan): Promise<MetricQueryRow[]> {
    if (plan.entities.length === 0 || plan.metrics.every((m) => m.include.length === 0)) {
      return this.read(async () => []);
    }
    const zone = parseZone(plan.zone);
    const window = scanWindow(plan, this.sampleSpan ?? undefined);
    return this.read(async () => {
      await this.checkZone(plan.zone);
      if (window === undefined) return [];
      let offsets: ZoneOffsets;
      if (zone.kind === "fixed") offsets = fixedZoneOffsets(zone.offsetSeconds);
      else {
        const q = buildZoneOffsetsQuery(zone.name, window);
        const known = this.zoneOffsets.get(q.key);
        if (known !== undefined) offsets = known;
        else {
          offsets = readZoneOffsets((await this.reader.runAndReadAll(q.sql, q.values, q.types)).getRows());
          // Keys come from requests: the cache must not grow without limit.
          if (this.zoneOffsets.size >= ZONE_OFFSETS_CACHE_ENTRIES) this.zoneOffsets.clear();
          this.zoneOffsets.set(q.key, offsets);
        }
      }
      const query = buildMetricQuery(plan, offsets, window);
      return readMetricRows(await this.reader.run(query.sql, query.values, query.types), query);
    });
  }

  latestSeverities(): Promise<EntitySeverity[]> {
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(LATEST_SEVERITIES_SQL);
      return r.getRowsJS().map(entitySeverity);
    });
  }

  listSamples(query: SampleQuery): Promise<SamplePage> {
    for (const [name, n] of [
      ["skip", query.skip],
      ["limit", query.limit],
    ] as const) {
      if (!Number.isSafeInteger(n) || n < 0) {
        return Promise.reject(new RangeError(`listSamples ${name} must be a non-negative integer, got ${n}`));
      }
    }
    const count = countSamplesSql(query);
    const page = pageSamplesSql(query);
    return this.read(async () => {
      const total = await this.reader.runAndReadAll(count.sql, count.values, count.types);
      const rows = await this.reader.runAndReadAll(page.sql, page.values, page.types);
      return {
        totalCount: toNumber(total.getRowsJS()[0]?.[0] ?? null) ?? 0,
        samples: rows.getRowsJS().map(([at, text]) => ({
          at: asEpochMs(toNumber(at ?? null) ?? 0),
          text: String(text),
        })),
      };
    });
  }

  listMetricNames(query: {
    entities: readonly EntityId[];
    includeNonNumeric: boolean;
  }): Promise<MetricName[]> {
    if (query.entities.length === 0) return this.read(async () => []);
    const statement = metricNamesSql(query.entities, query.includeNonNumeric);
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(statement.sql, statement.values, statement.types);
      return r.getRowsJS().map(metricName);
    });
  }

  listRowNames(query: RowNameQuery): Promise<string[]> {
    if (query.entities.length === 0) return this.read(async () => []);
    const statement = rowNamesSql(query);
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(statement.sql, statement.values, statement.types);
      return r.getRowsJS().map(([name]) => String(name));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Wait for queued work; the queues never reject.
    await Promise.all([this.writes.idle(), this.reads.idle(), this.pings.idle(), this.maintenance.idle()]);
    this.writer.closeSync();
    this.reader.closeSync();
    this.pinger.closeSync();
    this.maintainer.closeSync();
    this.instance.closeSync();
  }

  /**
   * Node and DuckDB carry their own ICU time zone data; a name Node accepts but DuckDB does not know
   * is the client's error (400 for `zoneId`), not a failure of the store.
   */
  private async checkZone(zone: string): Promise<void> {
    const spec = parseZone(zone);
    if (spec.kind !== "named") return;
    if (this.zoneNames === undefined) {
      const result = await this.reader.runAndReadAll("SELECT name FROM pg_timezone_names()");
      this.zoneNames = new Set(result.getRowsJS().map((row) => String(row[0])));
    }
    if (!this.zoneNames.has(spec.name)) {
      throw new VigilError("INVALID_QUERY", {
        field: "zoneId",
        detail: `time zone '${zone}' is not known to the store; use a canonical IANA name or a fixed offset such as +05:30`,
      });
    }
  }

  private write<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error("DuckDB store is closed"));
    return this.writes.run(task);
  }

  private read<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error("DuckDB store is closed"));
    return this.reads.run(task);
  }

  /**
   * Loads every entity (entities are few: one per managed entity) and the sample time span. Series
   * are not loaded: the series cache fills as batches name them (a file may hold millions).
   */
  private async loadCaches(): Promise<void> {
    const entities = new Map<string, EntityState>();
    const e = await this.writer.runAndReadAll(
      "SELECT id, gateway, probe, managed_entity, epoch_ms(updated_at) FROM entities",
    );
    for (const [id, gateway, probe, managedEntity, updatedAt] of e.getRowsJS()) {
      const key = { gateway: String(gateway), probe: String(probe), managedEntity: String(managedEntity) };
      entities.set(entityKeyString(key), {
        id: asEntityId(toNumber(id ?? null) ?? 0),
        updatedAt: Number(updatedAt),
      });
    }
    const span = await this.writer.runAndReadAll("SELECT epoch_ms(min(ts)), epoch_ms(max(ts)) FROM samples");
    const [firstMs, lastMs] = span.getRowsJS()[0] ?? [];
    this.sampleSpan =
      firstMs === null || lastMs === null || firstMs === undefined || lastMs === undefined
        ? null
        : { firstMs: Number(firstMs), lastMs: Number(lastMs) };
    const form = (await this.writer.runAndReadAll(READ_DIGEST_FORM)).getRowsJS()[0]?.[0];
    if (typeof form !== "string") throw new Error("the DuckDB store was used before migrate()");
    this.digestForm = digestForm(form);
    this.entities = entities;
    this.series.clear();
    this.seriesCounts.clear();
    this.cachesLoaded = true;
  }

  /** Copies what a committed transaction learnt into the caches. */
  private apply(pending: PendingChanges): void {
    for (const [k, v] of pending.entities) this.entities.set(k, v);
    applyRowSeries(this.series, pending.series);
    for (const [k, v] of pending.seriesCounts) this.seriesCounts.set(k, v);
    const span = pending.span;
    if (span === null) return;
    if (this.sampleSpan === null) this.sampleSpan = { ...span };
    else {
      this.sampleSpan.firstMs = Math.min(this.sampleSpan.firstMs, span.firstMs);
      this.sampleSpan.lastMs = Math.max(this.sampleSpan.lastMs, span.lastMs);
    }
  }
}

function entityRecord(row: JS[]): EntityRecord {
  const [id, attributes, isDeleted] = row;
  return {
    id: asEntityId(Number(id)),
    attributes: JSON.parse(String(attributes)) as Record<string, string>,
    isDeleted: isDeleted === true,
  };
}
