/**
 * The embedded DuckDB store, vigil's default (DESIGN 5.5): one file in the data dir (or `:memory:`).
 *
 * Three connections: a writer that runs `migrate` and transactions one at a time (a DuckDB
 * connection holds at most one transaction), a reader for lists and metric queries, which sees
 * committed data only (DuckDB is MVCC) so a long query never waits for an ingest, and one for
 * `ping`, so a health check waits neither for a write nor for a long query. Each connection has its
 * own promise queue because the node binding must not run two statements on one connection at once.
 *
 * A fatal DuckDB error (a failed checkpoint, an internal error) invalidates the whole instance:
 * every later statement on any of its connections fails with "database has been invalidated". The
 * store then answers every call with a {@link StoreFaultError} (a 503 through store-outage.ts) and
 * reopens the file by itself: it waits for the calls in progress, closes the connections and the
 * instance, opens the file again (DuckDB replays its WAL, so every committed write is there), runs
 * the schema statements and reloads its caches; it tries again with back-off until that works. (A
 * `:memory:` store has no file: it comes back empty.)
 *
 * Entity attributes are read with one scan when they fit in DuckDB's memory; when that scan runs out
 * of memory (DuckDB reads a whole vector of a column's long strings at once, whatever the filter),
 * the store reads them entity by entity through the primary key instead, which needs the memory of
 * one entity (see `listEntities`).
 *
 * Writes (duckdb-transaction.ts) resolve entity ids from a cache of every entity, loaded at
 * `migrate()`, and series ids from a bounded recency cache backed by one lookup statement per batch, so
 * neither a restart nor a flood of series loads the series table into memory. New series, samples
 * and events go in through the DataChunk appender (about 10× faster than INSERT statements).
 */
import { existsSync } from "node:fs";
import { chmod, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import {
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  INTEGER,
  type JS,
  listValue,
  TIMESTAMPTZ,
  VARCHAR,
} from "@duckdb/node-api";
import { STORE_REOPEN_BACKOFF_MAX_MS, STORE_REOPEN_BACKOFF_MIN_MS } from "../../../config/defaults.js";
import { Backoff } from "../../../flow/backoff.js";
import { asEntityId, asEpochMs, type EntityId, type EpochMs } from "../../../ids.js";
import { entityKeyString } from "../core/store-keys.js";
import { KnownZones } from "../core/zone-offsets.js";
import { seriesLimits } from "../data-checks.js";
import { applyDataviews, type DataviewState, stripProbeDetails, withProbe } from "../dataviews.js";
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
  MetricRowBatches,
  ProbeRecord,
  RowNameQuery,
  SamplePage,
  SampleQuery,
  SeriesInfo,
  Store,
  StoreHealth,
  StoreTransaction,
} from "../store.js";
import { allRows } from "../store.js";
import { KeptAppender, timestampTz, toNumber } from "./duckdb-append.js";
import { BlockCache } from "./duckdb-block-cache.js";
import { DigestConflict } from "./duckdb-claims.js";
import { eventRecord, listEventsSql } from "./duckdb-events.js";
import { ID_LIST, TEXT_LIST } from "./duckdb-lists.js";
import { DuckDbMetrics } from "./duckdb-metrics.js";
import { scanWindow } from "./duckdb-metrics-sql.js";
import type { NativeResultMemory } from "./duckdb-native-memory.js";
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
  FALLBACK_PROBE_MS,
  HAS_INDEXED_DIGESTS,
  HAS_MESSAGE_HASHES,
  HAS_STORE_META,
  MIGRATE_MESSAGE_HASHES,
  MIGRATE_TO_OPTIONAL_TEXT,
  MIGRATE_TO_STORED_NAMES,
  RAISE_SCHEMA_VERSION,
  READ_DIGEST_FORM,
  READ_SCHEMA_VERSION,
  RECORD_DIGEST_FORM,
  UNINDEX_MESSAGE_DIGESTS,
} from "./duckdb-schema.js";
import { DUCKDB_STORAGE_VERSION, duckDbMachineSettings, olderFormat } from "./duckdb-settings.js";
import {
  DuckDbTransaction,
  type EntityState,
  type PendingChanges,
  type SampleSpan,
} from "./duckdb-transaction.js";

/**
 * Entity ids the store remembers of its latest entity-changing commits, so the hub's entity cache
 * reads only what changed (`changedEntities`); a cache further behind reads every entity.
 */
const ENTITY_CHANGE_LOG_IDS = 20_000; // ids

export interface DuckDbStoreOptions {
  /** A database file (created with its folder when missing) or `:memory:`. */
  readonly path: string;
  /** DuckDB `memory_limit`, e.g. "512MB"; default sized from the machine (duckdb-settings.ts). */
  readonly memoryLimit?: string;
  /** Most series one entity may have; default `DEFAULT_MAX_SERIES_PER_ENTITY` (100 000). */
  readonly maxSeriesPerEntity?: number;
  /** Entries of the series-id cache; default `SERIES_CACHE_ENTRIES` (200 000); 0 turns it off. */
  readonly seriesCacheEntries?: number;
  /**
   * Most samples (estimated) one statement of a metric query aggregates; default
   * `QUERY_PART_SAMPLES` (duckdb-metrics.ts); 0 cuts every query into as many parts as it has
   * bucket boundaries, up to `QUERY_PARTS_MAX` (tests).
   */
  readonly queryPartSamples?: number;
  /**
   * Counts the native memory of the metric queries' results and runs the full collections that
   * give it back (duckdb-native-memory.ts); default one of its own with V8's full collection.
   */
  readonly nativeResultMemory?: NativeResultMemory;
  /**
   * Keeps DuckDB's cache of table blocks small (duckdb-block-cache.ts); default one with the store's
   * `memory_limit` and the bounds of config/defaults.ts. A `:memory:` store has none: its blocks
   * are its data.
   */
  readonly blockCache?: BlockCache;
  /**
   * Opens the DuckDB instance (default `DuckDBInstance.create`); called again each time the store
   * reopens its file after a fatal error. Tests pass one that keeps a connection of their own.
   */
  readonly openInstance?: (path: string, config: Record<string, string>) => Promise<DuckDBInstance>;
}

/** The instance and the store's four connections to it; replaced as a whole when the store reopens. */
interface Connections {
  readonly instance: DuckDBInstance;
  readonly writer: DuckDBConnection;
  /** The writer's appender to `samples`, kept from one transaction to the next. */
  readonly samples: KeptAppender;
  readonly reader: DuckDBConnection;
  readonly pinger: DuckDBConnection;
  readonly maintainer: DuckDBConnection;
}

/**
 * The store cannot answer until it has reopened its file after a fatal DuckDB error; store-outage.ts
 * answers it as 503 with `Retry-After` (its `code` is one of the outage codes).
 */
export class StoreFaultError extends Error {
  override readonly name = "StoreFaultError";
  readonly code = "STORE_REOPENING";
}

/**
 * Whether `error` is one of DuckDB's fatal errors, after which the instance is invalidated: a FATAL
 * or INTERNAL error, or the "database has been invalidated" every later statement reports.
 */
export function isFatalDuckDbError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /^(?:FATAL|INTERNAL) Error|database has been invalidated/.test(message);
}

/** The first line of an error's message. */
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0] ?? message;
}

/** DuckDB's error when a statement needs more than its `memory_limit` (not fatal). */
function isOutOfMemory(error: unknown): boolean {
  return error instanceof Error && /^Out of Memory Error/.test(error.message);
}

async function openConnections(
  path: string,
  config: Record<string, string>,
  open: (path: string, config: Record<string, string>) => Promise<DuckDBInstance>,
): Promise<Connections> {
  const instance = await open(path, config);
  const writer = await instance.connect();
  const reader = await instance.connect();
  const pinger = await instance.connect();
  const maintainer = await instance.connect();
  for (const c of [writer, reader, maintainer]) await c.run("SET TimeZone = 'UTC'");
  return { instance, writer, samples: new KeptAppender(writer, "samples"), reader, pinger, maintainer };
}

/** Closes what `openConnections` opened; an invalidated instance may refuse, which is ignored. */
function closeConnections(db: Connections): void {
  db.samples.close();
  for (const c of [db.writer, db.reader, db.pinger, db.maintainer, db.instance]) {
    try {
      c.closeSync();
    } catch {
      // Already unusable: nothing more to release.
    }
  }
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
  // The store holds every message's contents: its folder is 0700 and a file it creates 0600
  // (docs/security.md); an existing file keeps its mode, and the hub's start check warns if loose.
  if (onDisk) await mkdir(dirname(options.path), { recursive: true, mode: 0o700 });
  const created = onDisk && !existsSync(options.path);
  const machine = duckDbMachineSettings();
  const config = {
    memory_limit: options.memoryLimit ?? machine.memoryLimit,
    threads: String(machine.threads),
    storage_compatibility_version: DUCKDB_STORAGE_VERSION,
  };
  const open = options.openInstance ?? ((path, c) => DuckDBInstance.create(path, c));
  const db = await openConnections(options.path, config, open);
  if (created) await chmod(options.path, 0o600).catch(() => undefined); // not created: nothing to narrow
  return new DuckDbStore(
    db,
    () => openConnections(options.path, config, open),
    maxSeriesPerEntity,
    seriesCacheEntries,
    new DuckDbMetrics(options.queryPartSamples, options.nativeResultMemory),
    onDisk ? (options.blockCache ?? new BlockCache(config.memory_limit)) : undefined,
  );
}

class DuckDbStore implements Store {
  readonly kind = "duckdb";
  private readonly writes = new SerialQueue();
  private readonly reads = new SerialQueue();
  private readonly pings = new SerialQueue();
  private readonly maintenance = new SerialQueue();
  /** The current instance and connections (see the file comment: replaced after a fatal error). */
  private db: Connections;
  /** Why the store cannot answer, from a fatal error until the file is open again. */
  private fault: { readonly reason: string } | undefined;
  /** The delays between failed reopens of one fault, from the first after a fault. */
  private readonly reopenBackoff = new Backoff({
    initialMs: STORE_REOPEN_BACKOFF_MIN_MS,
    maxMs: STORE_REOPEN_BACKOFF_MAX_MS,
  });
  private reopenTimer: NodeJS.Timeout | undefined;
  /** Times the file was reopened after a fatal error. */
  private reopens = 0;
  /** Whether entity attributes are read entity by entity (a whole scan ran out of memory). */
  private entityByEntity = false;
  /** Every entity (entities are few; see StoreCaches). */
  private entities = new Map<string, EntityState>();
  private readonly series: RecencyCache<string, RowSeries>;
  private readonly seriesCounts = new Map<EntityId, number>();
  private readonly dataviews = new Map<string, DataviewState>();
  private sampleSpan: SampleSpan | null = null;
  private cachesLoaded = false;
  /**
   * Counts the committed transactions that wrote an entity, and each load of the caches: the entity
   * version (`entityVersion`). The file is this process's alone (DuckDB locks it), so every change
   * passes through `apply`.
   */
  private entityChanges = 0;
  /**
   * The ids each of the latest entity-changing commits wrote, by its `entityChanges` count, at most
   * ENTITY_CHANGE_LOG_IDS ids in all (`changedEntities`); emptied when the caches load.
   */
  private entityLog: {
    readonly n: number;
    readonly ids: readonly EntityId[];
    /** Probes whose row the commit wrote: every entity of each changed with it. */
    readonly probes: readonly (readonly [string, string])[];
  }[] = [];
  private entityLogIds = 0;
  /** How the file keeps message digests (message-digest.ts), read with the caches. */
  private digestForm: DigestForm = NEW_STORE_DIGEST_FORM;
  /** Whether the next transaction claims hash keys optimistically (see `transaction`). */
  private optimisticClaims = true;
  /** Zone names ICU inside DuckDB knows. */
  private readonly zoneNames = new KnownZones(async () =>
    (await this.reader.runAndReadAll("SELECT name FROM pg_timezone_names()"))
      .getRowsJS()
      .map((row) => String(row[0])),
  );
  private closed = false;

  constructor(
    db: Connections,
    private readonly reopen: () => Promise<Connections>,
    private readonly maxSeriesPerEntity: number,
    seriesCacheEntries: number,
    /** The metric queries, with the zone offsets they have read. */
    private readonly metrics: DuckDbMetrics,
    /** Trims DuckDB's cache of table blocks; undefined for `:memory:`. */
    private readonly blockCache: BlockCache | undefined,
  ) {
    this.db = db;
    // By row of series, weighing the row's columns: the bound stays one of series.
    this.series = rowSeriesCache(seriesCacheEntries);
  }

  private get writer(): DuckDBConnection {
    return this.db.writer;
  }
  private get reader(): DuckDBConnection {
    return this.db.reader;
  }
  private get pinger(): DuckDBConnection {
    return this.db.pinger;
  }
  /** Retention deletes: a connection of its own, so reads and the writer go on meanwhile. */
  private get maintainer(): DuckDBConnection {
    return this.db.maintainer;
  }

  /** The store's state for `/v0/ping` and `/v1/status`. */
  health(): StoreHealth {
    const common = {
      reopens: this.reopens,
      entityReads: this.entityByEntity ? "entity by entity" : "one scan",
    } as const;
    return this.fault === undefined
      ? { state: "ok", ...common }
      : { state: "reopening", reason: this.fault.reason, ...common };
  }

  migrate(): Promise<readonly string[]> {
    return this.write(async () => {
      await this.setUp();
      return this.formatNotices();
    });
  }

  /** The schema statements and the caches: what `migrate()` and each reopen run. */
  private async setUp(): Promise<void> {
    const before = await this.storedVersion();
    // A file before version 5 is raised only once its data has moved (migrateToStoredNames).
    const older = before !== undefined && before < 5;
    // Before version 6 every sample held its text; the column takes NULL before a write stores one
    // (idempotent, so a start that stopped before raising the version runs it again).
    if (before !== undefined && before < 6) await this.writer.run(MIGRATE_TO_OPTIONAL_TEXT);
    for (const statement of DUCKDB_SCHEMA) {
      if (!(older && statement === RAISE_SCHEMA_VERSION)) await this.writer.run(statement);
    }
    await this.migrateMessageHashes();
    await this.unindexMessageDigests();
    if (older) await this.migrateToStoredNames();
    await this.writer.run(RECORD_DIGEST_FORM);
    await this.loadCaches();
  }

  /**
   * Called with every error a statement raised: a fatal one marks the store as faulted and starts
   * reopening it (the caller's error still reaches the caller).
   */
  private noteError(error: unknown): void {
    if (!isFatalDuckDbError(error)) return;
    this.faultWith(firstLine(error));
  }

  /** Marks the store as faulted for `reason` and starts reopening it. */
  private faultWith(reason: string): void {
    if (this.closed || this.fault !== undefined) return;
    this.fault = { reason };
    this.reopenBackoff.reset();
    this.scheduleReopen(0);
  }

  private scheduleReopen(delayMs: number): void {
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      void this.writes.run(() => this.reopenNow());
    }, delayMs);
    this.reopenTimer.unref();
  }

  /**
   * Runs in the write queue, so no write runs meanwhile; waits for the reads, pings and deletes in
   * progress (new ones fail at once while the store is faulted), then replaces the instance.
   */
  private async reopenNow(): Promise<void> {
    const fault = this.fault;
    if (this.closed || fault === undefined) return;
    await Promise.all([this.reads.idle(), this.pings.idle(), this.maintenance.idle()]);
    closeConnections(this.db);
    try {
      this.db = await this.reopen();
      await this.setUp();
      this.metrics.forget();
      this.fault = undefined;
      this.reopens += 1;
    } catch (error) {
      const delayMs = this.reopenBackoff.next();
      this.fault = { reason: `reopening failed: ${firstLine(error)}` };
      if (!this.closed) this.scheduleReopen(delayMs);
    }
  }

  private faultError(reason: string): StoreFaultError {
    return new StoreFaultError(`the DuckDB store is reopening its file after a fatal error (${reason})`);
  }

  /** Rejects while the store is faulted (StoreFaultError) or closed; otherwise runs `task` on `queue`. */
  private guarded<T>(queue: SerialQueue, task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error("DuckDB store is closed"));
    // At once while faulted: a write must not wait in the queue behind the reopen.
    if (this.fault !== undefined) return Promise.reject(this.faultError(this.fault.reason));
    return queue.run(async () => {
      if (this.fault !== undefined) throw this.faultError(this.fault.reason);
      try {
        return await task();
      } catch (error) {
        this.noteError(error);
        throw error;
      }
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

  /** The schema version the file records; undefined for a new file. */
  private async storedVersion(): Promise<number | undefined> {
    const meta = await this.writer.runAndReadAll(HAS_STORE_META);
    if (Number(meta.getRowObjectsJS()[0]?.n ?? 0) === 0) return undefined;
    const v = (await this.writer.runAndReadAll(READ_SCHEMA_VERSION)).getRowsJS()[0]?.[0];
    return v === null || v === undefined ? undefined : Number(v);
  }

  /**
   * Schema version 5 (duckdb-schema.ts), in one transaction with raising the version: dataview
   * rows and numeric flags from the stored series and samples, and the probe details moved out of
   * the entities' attributes into `probes` (the values of the entity updated last, per probe).
   */
  private async migrateToStoredNames(): Promise<void> {
    await this.writer.run("BEGIN TRANSACTION");
    try {
      for (const statement of MIGRATE_TO_STORED_NAMES) await this.writer.run(statement);
      const r = await this.writer.runAndReadAll(
        `SELECT id, gateway, probe, CAST(attributes AS VARCHAR) FROM entities
         WHERE CAST(attributes AS VARCHAR) LIKE '%"svc.os-type"%' OR CAST(attributes AS VARCHAR) LIKE '%"svc.hostname"%'
         ORDER BY updated_at, id`,
      );
      const probes = new Map<string, ProbeRecord>();
      for (const [id, gateway, probe, text] of r.getRowsJS()) {
        const moved = stripProbeDetails(String(text));
        if (moved === undefined) continue;
        probes.set(JSON.stringify([String(gateway), String(probe)]), {
          gateway: String(gateway),
          probe: String(probe),
          osType: moved.osType,
          hostname: moved.hostname,
        });
        await this.writer.run(
          "UPDATE entities SET attributes = $attributes WHERE id = $id",
          { attributes: moved.attributes, id: Number(id) },
          { id: INTEGER },
        );
      }
      for (const p of probes.values()) {
        await this.writer.run(
          `INSERT INTO probes VALUES ($gateway, $probe, $os, $host, ${FALLBACK_PROBE_MS}) ON CONFLICT DO NOTHING`,
          { gateway: p.gateway, probe: p.probe, os: p.osType, host: p.hostname },
          { os: VARCHAR, host: VARCHAR },
        );
      }
      await this.writer.run(RAISE_SCHEMA_VERSION);
      await this.writer.run("COMMIT");
    } catch (error) {
      await this.writer.run("ROLLBACK").catch(() => undefined);
      throw error;
    }
  }

  /** Schema version 3 (duckdb-schema.ts): a version-2 file's hashes move to `message_digests`. */
  private migrateMessageHashes(): Promise<void> {
    return this.migrateWhen(HAS_MESSAGE_HASHES, MIGRATE_MESSAGE_HASHES);
  }

  /** Schema version 7 (duckdb-schema.ts): an indexed `message_digests` is rebuilt without the key. */
  private unindexMessageDigests(): Promise<void> {
    return this.migrateWhen(HAS_INDEXED_DIGESTS, UNINDEX_MESSAGE_DIGESTS);
  }

  /** Runs `statements` in one transaction when `probe` (a count named `n`) finds something. */
  private async migrateWhen(probe: string, statements: readonly string[]): Promise<void> {
    const found = await this.writer.runAndReadAll(probe);
    if (Number(found.getRowObjectsJS()[0]?.n ?? 0) === 0) return;
    await this.writer.run("BEGIN TRANSACTION");
    try {
      for (const statement of statements) await this.writer.run(statement);
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
      try {
        if (this.optimisticClaims) {
          try {
            return await this.attempt(work, true);
          } catch (error) {
            if (!(error instanceof DigestConflict)) throw error;
            this.optimisticClaims = false;
          }
        }
        return await this.attempt(work, false);
      } catch (error) {
        if (isOutOfMemory(error)) await this.releaseMemory();
        throw error;
      } finally {
        await this.trimBlockCache();
      }
    });
  }

  /**
   * Trims DuckDB's cache of table blocks (duckdb-block-cache.ts), from a write task (which holds the
   * writer): when a check is due, the cache is over its bound, and the other queues have no task,
   * which they then hold off until `memory_limit` is back. Never rejects; a `memory_limit` that could
   * not be set back makes the store reopen its file.
   */
  private async trimBlockCache(): Promise<void> {
    const cache = this.blockCache;
    if (cache === undefined || this.closed || this.fault !== undefined) return;
    const connection = this.writer;
    const others = [this.reads, this.maintenance, this.pings];
    if (others.some((q) => q.busy) || !cache.takeCheck()) return;
    let size: { cached: number; used: number };
    try {
      size = await cache.read(connection);
    } catch (error) {
      this.noteError(error);
      return;
    }
    // Looked at again: a task may have come while the sizes were read.
    if (!cache.over(size.cached) || others.some((q) => q.busy)) return;
    const trim = others.reduce<() => Promise<unknown>>(
      (inner, queue) => () => queue.run(inner),
      () => cache.trim(connection, size.cached, size.used),
    );
    try {
      await trim();
    } catch (error) {
      if (isFatalDuckDbError(error)) this.noteError(error);
      else
        this.faultWith(
          `memory_limit could not be set back after trimming the block cache: ${firstLine(error)}`,
        );
    }
  }

  /**
   * After a write ran out of memory: DuckDB keeps the versions of committed updates in memory until
   * a checkpoint writes them to the file, so without one every later update of a large row fails
   * too (the store would refuse writes until a restart). A checkpoint that fails for want of memory
   * is left to the next write; a fatal one makes the store reopen (`guarded`).
   */
  private async releaseMemory(): Promise<void> {
    try {
      await this.writer.run("CHECKPOINT");
    } catch (error) {
      this.noteError(error);
    }
  }

  private async attempt<T>(work: (tx: StoreTransaction) => Promise<T>, optimistic: boolean): Promise<T> {
    if (!this.cachesLoaded) await this.loadCaches();
    const tx = new DuckDbTransaction(
      this.writer,
      this.db.samples,
      {
        entities: this.entities,
        series: this.series,
        seriesCounts: this.seriesCounts,
        digestForm: this.digestForm,
        dataviews: this.dataviews,
      },
      this.maxSeriesPerEntity,
      optimistic,
    );
    let result: T;
    try {
      tx.begin();
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
    return this.guarded(this.pings, async () => {
      await this.pinger.run("SELECT 1");
    });
  }

  deleteBefore(cutoff: EpochMs): Promise<{ samples: number; events: number }> {
    return this.guarded(this.maintenance, async () => {
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

  /**
   * Every entity, by id. One scan when the attributes fit in DuckDB's memory; once a scan has run
   * out of it, entity by entity through the primary key from then on (a few milliseconds for an
   * entity with the largest attributes allowed, bounded by one entity's memory), so the hub still
   * starts and answers on a file whose attributes outgrew `memory_limit`.
   */
  listEntities(options: { includeDeleted: boolean }): Promise<EntityRecord[]> {
    const where = options.includeDeleted ? "" : "WHERE NOT e.is_deleted";
    return this.read(async () => {
      if (!this.entityByEntity) {
        try {
          const r = await this.reader.runAndReadAll(
            `SELECT e.id, CAST(e.attributes AS VARCHAR), e.is_deleted, p.gateway IS NOT NULL, p.os_type, p.hostname
             FROM entities e LEFT JOIN probes p ON p.gateway = e.gateway AND p.probe = e.probe
             ${where} ORDER BY e.id`,
          );
          return r.getRowsJS().map(entityRecord);
        } catch (error) {
          if (!isOutOfMemory(error)) throw error;
          this.entityByEntity = true;
        }
      }
      const ids = await this.reader.runAndReadAll(`SELECT id FROM entities e ${where} ORDER BY id`);
      const one = await this.reader.prepare(ENTITY_BY_ID_SQL);
      try {
        const records: EntityRecord[] = [];
        for (const [id] of ids.getRowsJS()) {
          const record = await readEntity(one, Number(id));
          if (record !== undefined) records.push(record);
        }
        return records;
      } finally {
        one.destroySync();
      }
    });
  }

  /** Answers as every read does: not while the store is closed or reopening its file. */
  entityVersion(): Promise<string> {
    if (this.closed) return Promise.reject(new Error("DuckDB store is closed"));
    if (this.fault !== undefined) return Promise.reject(this.faultError(this.fault.reason));
    return Promise.resolve(this.entityVersionNow());
  }

  private entityVersionNow(): string {
    return `${this.reopens}:${this.entityChanges}`;
  }

  changedEntities(since: string): Promise<{ version: string; records: EntityRecord[] } | undefined> {
    const [reopens, n] = since.split(":").map(Number);
    const first = this.entityLog[0];
    // Another instance of the file, or commits the log no longer holds: unknown.
    if (reopens !== this.reopens || n === undefined || first === undefined || first.n > n + 1)
      return Promise.resolve(undefined);
    const version = this.entityVersionNow();
    const ids = new Set<EntityId>();
    const probes = new Map<string, readonly [string, string]>();
    for (const entry of this.entityLog) {
      if (entry.n <= n) continue;
      for (const id of entry.ids) ids.add(id);
      for (const probe of entry.probes) probes.set(JSON.stringify(probe), probe);
    }
    if (ids.size === 0 && probes.size === 0) return Promise.resolve({ version, records: [] });
    // Attributes past DuckDB's memory: unknown here, so the caller reads every entity through
    // `listEntities`, which reads them entity by entity.
    if (this.entityByEntity) return Promise.resolve(undefined);
    return this.read(async () => {
      try {
        // The entities written, and every entity of a probe whose row was written (its attributes
        // hold the probe's details), with those details joined as `listEntities` does.
        const r = await this.reader.runAndReadAll(
          `SELECT e.id, CAST(e.attributes AS VARCHAR), e.is_deleted, p.gateway IS NOT NULL, p.os_type, p.hostname
           FROM entities e LEFT JOIN probes p ON p.gateway = e.gateway AND p.probe = e.probe
           WHERE e.id IN (SELECT unnest($ids))
              OR EXISTS (SELECT 1 FROM (SELECT unnest($gateways) AS g, unnest($probes) AS q)
                         WHERE g = e.gateway AND q = e.probe)
           ORDER BY e.id`,
          {
            ids: listValue([...ids]),
            gateways: listValue([...probes.values()].map(([g]) => g)),
            probes: listValue([...probes.values()].map(([, q]) => q)),
          },
          { ids: ID_LIST, gateways: TEXT_LIST, probes: TEXT_LIST },
        );
        return { version, records: r.getRowsJS().map(entityRecord) };
      } catch (error) {
        if (!isOutOfMemory(error)) throw error;
        return undefined;
      }
    });
  }

  getEntity(id: EntityId): Promise<EntityRecord | undefined> {
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(ENTITY_BY_ID_SQL, [id], [INTEGER]);
      const row = r.getRowsJS()[0];
      return row === undefined ? undefined : entityRecord(row);
    });
  }

  listProbes(): Promise<ProbeRecord[]> {
    return this.read(async () => {
      const r = await this.reader.runAndReadAll(
        "SELECT gateway, probe, os_type, hostname FROM probes ORDER BY gateway, probe",
      );
      return r.getRowsJS().map(([gateway, probe, osType, hostname]) => ({
        gateway: String(gateway),
        probe: String(probe),
        osType: osType === null || osType === undefined ? null : String(osType),
        hostname: hostname === null || hostname === undefined ? null : String(hostname),
      }));
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

  async queryMetrics(plan: MetricQueryPlan): Promise<MetricQueryRow[]> {
    return allRows(await this.queryMetricBatches(plan));
  }

  queryMetricBatches(plan: MetricQueryPlan): Promise<MetricRowBatches> {
    if (plan.entities.length === 0 || plan.metrics.every((m) => m.include.length === 0)) {
      return this.read(async () => []);
    }
    const window = scanWindow(plan, this.sampleSpan ?? undefined);
    return new Promise((resolve, reject) => {
      // Answered once the first part is; the read holds the reader until the last part is.
      this.read(async () => {
        await this.zoneNames.check(plan.zone);
        if (window === undefined) {
          resolve([]);
          return;
        }
        const { batches, done } = await this.metrics.query(this.reader, plan, window);
        resolve(batches);
        await done;
      }).catch(reject);
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
    if (this.reopenTimer !== undefined) clearTimeout(this.reopenTimer);
    // Wait for queued work; the queues never reject.
    await Promise.all([this.writes.idle(), this.reads.idle(), this.pings.idle(), this.maintenance.idle()]);
    closeConnections(this.db);
  }

  private write<T>(task: () => Promise<T>): Promise<T> {
    return this.guarded(this.writes, task);
  }

  private read<T>(task: () => Promise<T>): Promise<T> {
    return this.guarded(this.reads, task);
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
    this.entityChanges += 1;
    this.entityLog = [];
    this.entityLogIds = 0;
    this.series.clear();
    this.seriesCounts.clear();
    this.dataviews.clear();
    this.cachesLoaded = true;
  }

  /** Copies what a committed transaction learnt into the caches. */
  private apply(pending: PendingChanges): void {
    if (pending.entities.size > 0 || pending.probes.size > 0) {
      this.entityChanges += 1;
      const ids = [...pending.entities.values()].map((e) => e.id);
      const probes = [...pending.probes.values()];
      this.entityLog.push({ n: this.entityChanges, ids, probes });
      this.entityLogIds += ids.length + probes.length;
      while (this.entityLogIds > ENTITY_CHANGE_LOG_IDS && this.entityLog.length > 0) {
        const dropped = this.entityLog.shift();
        this.entityLogIds -= (dropped?.ids.length ?? 0) + (dropped?.probes.length ?? 0);
      }
    }
    for (const [k, v] of pending.entities) this.entities.set(k, v);
    applyRowSeries(this.series, pending.series);
    for (const [k, v] of pending.seriesCounts) this.seriesCounts.set(k, v);
    applyDataviews(this.dataviews, pending.dataviews);
    const span = pending.span;
    if (span === null) return;
    if (this.sampleSpan === null) this.sampleSpan = { ...span };
    else {
      this.sampleSpan.firstMs = Math.min(this.sampleSpan.firstMs, span.firstMs);
      this.sampleSpan.lastMs = Math.max(this.sampleSpan.lastMs, span.lastMs);
    }
  }
}

/** One entity by its primary key: an index lookup that reads that row only. */
const ENTITY_BY_ID_SQL = `SELECT e.id, CAST(e.attributes AS VARCHAR), e.is_deleted, p.gateway IS NOT NULL,
    p.os_type, p.hostname
  FROM entities e LEFT JOIN probes p ON p.gateway = e.gateway AND p.probe = e.probe WHERE e.id = $1`;

async function readEntity(statement: DuckDBPreparedStatement, id: number): Promise<EntityRecord | undefined> {
  statement.bind([id], [INTEGER]);
  const row = (await statement.runAndReadAll()).getRowsJS()[0];
  return row === undefined ? undefined : entityRecord(row);
}

function entityRecord(row: JS[]): EntityRecord {
  const [id, attributes, isDeleted, hasProbe, osType, hostname] = row;
  const stored = JSON.parse(String(attributes)) as Record<string, string>;
  const probe =
    hasProbe === true
      ? {
          osType: osType === null || osType === undefined ? null : String(osType),
          hostname: hostname === null || hostname === undefined ? null : String(hostname),
        }
      : undefined;
  return {
    id: asEntityId(Number(id)),
    attributes: withProbe(stored, probe),
    isDeleted: isDeleted === true,
  };
}
