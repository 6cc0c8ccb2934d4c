/**
 * The PostgreSQL store, for the scale-out deployment (DESIGN 5.5): several hubs share one database.
 *
 * One `postgres` connection pool per store. Transactions run one at a time per store (as the
 * Store interface promises) on a connection `sql.begin` reserves; lists, metric queries and pings
 * use the other pool connections, so a long query never waits for an ingest nor blocks one
 * (PostgreSQL is MVCC: readers see committed data only).
 *
 * Correctness across hubs lives in the database (unique keys, row locks, advisory locks: see
 * postgres-transaction.ts and postgres-claims.ts); the in-process caches (every entity's id, a
 * bounded recency cache of series ids, the partitions known to exist) only save lookups, and are
 * filled from what committed. Entity and series ids are identity columns: stable for the life of
 * the database, increasing, but not dense (a rolled-back or raced insert uses up an id).
 */

import postgres, { type Sql } from "postgres";
import { asEntityId, type EntityId, type EpochMs } from "../../../ids.js";
import { entityKeyString } from "../core/store-keys.js";
import { KnownZones } from "../core/zone-offsets.js";
import { seriesLimits } from "../data-checks.js";
import { applyDataviews, type DataviewState, withProbe } from "../dataviews.js";
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
  StoreTransaction,
} from "../store.js";
import { allRows } from "../store.js";
import { closedSafe } from "./postgres-closed.js";
import { COMPACT_DELAY_MS, Compactor } from "./postgres-compaction.js";
import { listEvents, MAX_INT4 } from "./postgres-events.js";
import { metricAnswerBatches, pgMetricAnswers } from "./postgres-metrics.js";
import {
  chunkPartitionName,
  listPartitions,
  PARTITION_LOCK_TIMEOUT,
  partitionName,
  WEEK_MS,
  weekStart,
} from "./postgres-partitions.js";
import { latestSeverities, listMetricNames, listRowNames, listSamples } from "./postgres-queries.js";
import {
  COMPACT_LOCK_KEY,
  chunkTimeSql,
  chunkUnnestSql,
  chunkValueSql,
  MIGRATE_LOCK_KEY,
  MIGRATIONS,
  MIGRATIONS_TABLE,
  PARTITION_LOCK_KEY,
  READ_DIGEST_FORM,
} from "./postgres-schema.js";
import { noDelaySocket, type PgSocketTarget } from "./postgres-socket.js";
import { type PgPending, PgTransaction } from "./postgres-transaction.js";

/** Connections in one store's pool: one for the transaction, the rest for reads and partition DDL. */
export const POSTGRES_POOL_CONNECTIONS = 8; // connections
/** How long opening a connection may take before the store reports PostgreSQL unreachable. */
export const POSTGRES_CONNECT_TIMEOUT_S = 10; // s

export interface PostgresStoreOptions {
  /** A `postgres://` or `postgresql://` URL (user, password, host, port, database, `?sslmode=`). */
  readonly url: string;
  /** Most series one entity may have; default `DEFAULT_MAX_SERIES_PER_ENTITY` (100 000). */
  readonly maxSeriesPerEntity?: number;
  /** Entries of the series-id cache; default `SERIES_CACHE_ENTRIES` (200 000); 0 turns it off. */
  readonly seriesCacheEntries?: number;
  /**
   * From a commit that wrote samples into a closed hour to the compaction that follows, and to the
   * first compaction after `migrate()`; default `COMPACT_DELAY_MS` (postgres-compaction.ts).
   */
  readonly compactDelayMs?: number;
}

/**
 * Opens a PostgreSQL store on `options.url` with at most `options.maxSeriesPerEntity` series per
 * entity (default 100 000) and a series-id cache of `options.seriesCacheEntries` entries (default
 * 200 000). Connects lazily: nothing is sent until `migrate()`, which applies the migrations the
 * database lacks (postgres-schema.ts) and loads the entity cache; call it once before anything else.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const { maxSeriesPerEntity, seriesCacheEntries } = seriesLimits(options);
  const sql = postgres(options.url, {
    max: POSTGRES_POOL_CONNECTIONS,
    connect_timeout: POSTGRES_CONNECT_TIMEOUT_S,
    onnotice: () => undefined,
    connection: { application_name: "vigil-hub" },
    // TCP_NODELAY: without it every COPY waits out a delayed acknowledgement (postgres-socket.ts).
    // `socket` is a documented option (the client's README, "Custom socket") its types lack.
    ...({ socket: (target: PgSocketTarget) => noDelaySocket(target) } as object),
  });
  return new PostgresStore(sql, maxSeriesPerEntity, seriesCacheEntries, options.compactDelayMs);
}

interface EntityRow {
  id: number;
  attributes: string;
  is_deleted: boolean;
  has_probe: boolean;
  os_type: string | null;
  hostname: string | null;
}

class PostgresStore implements Store {
  readonly kind = "postgres";
  private readonly writes = new SerialQueue();
  private entities = new Map<string, EntityId>();
  private readonly series: RecencyCache<string, RowSeries>;
  private partitions = new Set<number>();
  private readonly dataviews = new Map<string, DataviewState>();
  private cachesLoaded = false;
  /** How the database keeps message digests (message-digest.ts), read with the caches. */
  private digestForm: DigestForm = NEW_STORE_DIGEST_FORM;
  /** Zone names PostgreSQL knows. */
  private readonly zoneNames = new KnownZones(async () =>
    (await this.sql<{ name: string }[]>`SELECT name FROM pg_timezone_names`).map((r) => r.name),
  );
  private closed = false;
  /** Moves closed hours of sample rows into chunks (postgres-compaction.ts), from `migrate()` on. */
  private readonly compactor: Compactor;

  constructor(
    private readonly sql: Sql,
    private readonly maxSeriesPerEntity: number,
    seriesCacheEntries: number,
    compactDelayMs: number = COMPACT_DELAY_MS,
  ) {
    // By row of series, weighing the row's columns: the bound stays one of series.
    this.series = rowSeriesCache(seriesCacheEntries);
    this.compactor = new Compactor(sql, compactDelayMs);
  }

  migrate(): Promise<readonly string[]> {
    return this.write(async () => {
      // The advisory lock makes hubs that start together apply each migration once, in turn.
      await this.sql.begin(
        closedSafe(async (tx) => {
          await tx`SELECT pg_advisory_xact_lock(${MIGRATE_LOCK_KEY}::bigint)`;
          await tx.unsafe(MIGRATIONS_TABLE);
          const applied = new Set(
            (await tx<{ version: number }[]>`SELECT version FROM vigil_migrations`).map((r) => r.version),
          );
          for (const migration of MIGRATIONS) {
            if (applied.has(migration.version)) continue;
            for (const statement of migration.statements) await tx.unsafe(statement);
            await tx`INSERT INTO vigil_migrations (version, name) VALUES (${migration.version}, ${migration.name})`;
          }
        }),
      );
      await this.loadCaches();
      this.compactor.start();
      return [];
    });
  }

  ingest(batch: IngestBatch): Promise<void> {
    return this.transaction((tx) => tx.write(batch));
  }

  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.write(async () => {
      if (!this.cachesLoaded) await this.loadCaches();
      let tx: PgTransaction | undefined;
      try {
        // closedSafe: a connection closing under the body must not reach the client's ROLLBACK.
        const result = await this.sql.begin(
          closedSafe(async (c) => {
            tx = new PgTransaction(
              c,
              this.sql,
              {
                entities: this.entities,
                series: this.series,
                partitions: this.partitions,
                digestForm: this.digestForm,
                dataviews: this.dataviews,
              },
              this.maxSeriesPerEntity,
            );
            try {
              const value = await work(tx);
              await tx.finish();
              if (tx.failure !== undefined) throw tx.failure.error;
              return value;
            } catch (error) {
              await tx.finish();
              throw error;
            }
          }),
        );
        // Cache changes become visible only after COMMIT, so a rolled-back batch leaves no stale ids.
        if (tx !== undefined) {
          this.apply(tx.pending);
          this.compactor.wrote(tx.earliestSampleMs);
        }
        return result as T;
      } catch (error) {
        // "no partition of relation … found for row", or the week's partition that a COPY names
        // does not exist: a partition was dropped (retention) behind the cache; read the catalog
        // again before the retry.
        const code = (error as { code?: unknown }).code;
        if (code === "23514" || code === "42P01") this.cachesLoaded = false;
        throw error;
      }
    });
  }

  ping(): Promise<void> {
    if (this.closed) return Promise.reject(new Error("PostgreSQL store is closed"));
    return this.sql`SELECT 1`.then(() => undefined);
  }

  /**
   * Drops the weekly partitions (rows and chunks) wholly older than `cutoff` (a short lock on the
   * parents each, under the partition lock, waiting at most the partition lock timeout), then, under
   * the compaction lock, deletes the older rows of the week that holds the cutoff and its chunks
   * with older samples (moving a chunk's samples from the cutoff on back to rows, compacted again
   * later), and the older events.
   */
  async deleteBefore(cutoff: EpochMs): Promise<{ samples: number; events: number }> {
    if (this.closed) throw new Error("PostgreSQL store is closed");
    let samples = 0;
    const weeks = [...(await listPartitions(this.sql))].sort((a, b) => a - b);
    for (const week of weeks) {
      if (weekStart(week) + WEEK_MS > cutoff) break;
      // Computed from an integer: no client text in the DDL.
      const [rows, chunks] = [partitionName(week), chunkPartitionName(week)];
      await this.sql.begin(
        closedSafe(async (tx) => {
          await tx.unsafe(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
          await tx`SELECT pg_advisory_xact_lock(${PARTITION_LOCK_KEY}::bigint)`;
          const [row] = await tx.unsafe<{ n: string }[]>(
            `SELECT ((SELECT count(*) FROM ${rows}) + coalesce((SELECT sum(n) FROM ${chunks}), 0))::text AS n`,
          );
          await tx.unsafe(`DROP TABLE IF EXISTS ${rows}`);
          await tx.unsafe(`DROP TABLE IF EXISTS ${chunks}`);
          samples += Number(row?.n ?? 0);
        }),
      );
      this.partitions.delete(week);
    }
    samples += (await this.sql.begin(
      closedSafe(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${COMPACT_LOCK_KEY}::bigint)`;
        const rows = await tx`DELETE FROM samples WHERE ts_ms < ${cutoff}`;
        const [moved] = await tx<{ cut: string; kept: string }[]>`
          WITH cut AS (
            DELETE FROM sample_chunks WHERE chunk_start_ms < ${cutoff} AND first_ms < ${cutoff}
            RETURNING *
          ),
          kept AS (
            INSERT INTO samples (series_id, ts_ms, value, text)
            SELECT * FROM (
              SELECT c.series_id, ${this.sql.unsafe(chunkTimeSql("c"))} AS ts_ms, ${this.sql.unsafe(chunkValueSql("c"))} AS value,
                     coalesce(u.text, vigil_sample_text(${this.sql.unsafe(chunkValueSql("c"))})) AS text
              FROM cut c ${this.sql.unsafe(chunkUnnestSql("c", true))}
            ) AS s
            WHERE s.ts_ms >= ${cutoff}
            RETURNING 1
          )
          SELECT coalesce((SELECT sum(n) FROM cut), 0)::text AS cut, (SELECT count(*) FROM kept)::text AS kept`;
        return rows.count + Number(moved?.cut ?? 0) - Number(moved?.kept ?? 0);
      }),
    )) as number;
    const events = await this.sql`DELETE FROM events WHERE at_ms < ${cutoff}`;
    return { samples, events: events.count };
  }

  async listEvents(query: EventQuery): Promise<EventRecord[]> {
    if (!Number.isSafeInteger(query.limit) || query.limit < 0) {
      throw new RangeError(`listEvents limit must be a non-negative integer, got ${query.limit}`);
    }
    this.open();
    return listEvents(this.sql, query);
  }

  async listEntities(options: { includeDeleted: boolean }): Promise<EntityRecord[]> {
    this.open();
    const rows = await this.sql<EntityRow[]>`
      SELECT e.id, e.attributes::text AS attributes, e.is_deleted, p.gateway IS NOT NULL AS has_probe,
             p.os_type, p.hostname
      FROM entities e LEFT JOIN probes p ON p.gateway = e.gateway AND p.probe = e.probe
      WHERE ${options.includeDeleted} OR NOT e.is_deleted ORDER BY e.id`;
    return rows.map(entityRecord);
  }

  /**
   * The entity version: the count of entity and probe rows and the sum of their `xmin`, the
   * transaction that wrote each row version. A committed insert or update (by any hub) gives its rows a newer
   * transaction id, so the sum moves; a freeze by VACUUM moves it too (one needless read). One pass
   * over the table's heap, without reading the attributes' JSON.
   */
  async entityVersion(): Promise<string> {
    this.open();
    // The probes' rows too: entities show their probe's host name and OS type (joined on read).
    const [row] = await this.sql<{ n: string; x: string; pn: string; px: string }[]>`
      SELECT (SELECT count(*) FROM entities)::text AS n,
             (SELECT coalesce(sum(xmin::text::bigint), 0) FROM entities)::text AS x,
             (SELECT count(*) FROM probes)::text AS pn,
             (SELECT coalesce(sum(xmin::text::bigint), 0) FROM probes)::text AS px`;
    return `${row?.n ?? 0}:${row?.x ?? 0}:${row?.pn ?? 0}:${row?.px ?? 0}`;
  }

  async getEntity(id: EntityId): Promise<EntityRecord | undefined> {
    this.open();
    if (!Number.isSafeInteger(id) || id < 1 || id > MAX_INT4) return undefined;
    const [row] = await this.sql<EntityRow[]>`
      SELECT e.id, e.attributes::text AS attributes, e.is_deleted, p.gateway IS NOT NULL AS has_probe,
             p.os_type, p.hostname
      FROM entities e LEFT JOIN probes p ON p.gateway = e.gateway AND p.probe = e.probe
      WHERE e.id = ${id}`;
    return row === undefined ? undefined : entityRecord(row);
  }

  async listProbes(): Promise<ProbeRecord[]> {
    this.open();
    const rows = await this.sql<
      { gateway: string; probe: string; os_type: string | null; hostname: string | null }[]
    >`
      SELECT gateway, probe, os_type, hostname FROM probes ORDER BY gateway, probe`;
    return rows.map((r) => ({ gateway: r.gateway, probe: r.probe, osType: r.os_type, hostname: r.hostname }));
  }

  async listSeries(entity: EntityId): Promise<SeriesInfo[]> {
    this.open();
    if (!Number.isSafeInteger(entity) || entity < 1 || entity > MAX_INT4) return [];
    const rows = await this.sql<
      { sampler: string; sampler_type: string; dataview: string; row_name: string; column_name: string }[]
    >`SELECT sampler, sampler_type, dataview, row_name, column_name FROM series WHERE entity_id = ${entity}
      ORDER BY sampler, sampler_type, dataview, row_name, column_name`;
    return rows.map((r) => ({
      series: {
        sampler: r.sampler,
        samplerType: r.sampler_type,
        dataview: r.dataview,
        row: r.row_name,
        column: r.column_name,
      },
    }));
  }

  async queryMetrics(plan: MetricQueryPlan): Promise<MetricQueryRow[]> {
    return allRows(await this.queryMetricBatches(plan));
  }

  async queryMetricBatches(plan: MetricQueryPlan): Promise<MetricRowBatches> {
    this.open();
    if (plan.entities.length === 0 || plan.metrics.every((m) => m.include.length === 0)) return [];
    await this.zoneNames.check(plan.zone);
    // Read the catalog on every query: another hub may have added a week since.
    return metricAnswerBatches(await pgMetricAnswers(this.sql, plan, [...(await listPartitions(this.sql))]));
  }

  async latestSeverities(): Promise<EntitySeverity[]> {
    this.open();
    return latestSeverities(this.sql);
  }

  async listSamples(query: SampleQuery): Promise<SamplePage> {
    for (const [name, n] of [
      ["skip", query.skip],
      ["limit", query.limit],
    ] as const) {
      if (!Number.isSafeInteger(n) || n < 0) {
        throw new RangeError(`listSamples ${name} must be a non-negative integer, got ${n}`);
      }
    }
    this.open();
    return listSamples(this.sql, query);
  }

  async listMetricNames(query: {
    entities: readonly EntityId[];
    includeNonNumeric: boolean;
  }): Promise<MetricName[]> {
    this.open();
    return listMetricNames(this.sql, query);
  }

  async listRowNames(query: RowNameQuery): Promise<string[]> {
    this.open();
    return listRowNames(this.sql, query);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.compactor.close();
    await this.writes.idle();
    await this.sql.end({ timeout: 5 });
  }

  private open(): void {
    if (this.closed) throw new Error("PostgreSQL store is closed");
  }

  private write<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error("PostgreSQL store is closed"));
    return this.writes.run(task);
  }

  /** Loads every entity's id (entities are few) and the partitions that exist; series load on demand. */
  private async loadCaches(): Promise<void> {
    const rows = await this.sql<{ id: number; gateway: string; probe: string; managed_entity: string }[]>`
      SELECT id, gateway, probe, managed_entity FROM entities`;
    const entities = new Map<string, EntityId>();
    for (const r of rows) {
      entities.set(
        entityKeyString({ gateway: r.gateway, probe: r.probe, managedEntity: r.managed_entity }),
        asEntityId(r.id),
      );
    }
    const [setting] = await this.sql.unsafe<{ value: string }[]>(READ_DIGEST_FORM);
    if (setting === undefined) throw new Error("the PostgreSQL store was used before migrate()");
    this.digestForm = digestForm(setting.value);
    this.entities = entities;
    this.partitions = await listPartitions(this.sql);
    this.series.clear();
    this.dataviews.clear();
    this.cachesLoaded = true;
  }

  /** Copies what a committed transaction learnt into the caches. */
  private apply(pending: PgPending): void {
    for (const [k, v] of pending.entities) this.entities.set(k, v);
    applyRowSeries(this.series, pending.series);
    applyDataviews(this.dataviews, pending.dataviews);
    for (const w of pending.partitions) this.partitions.add(w);
  }
}

function entityRecord(row: EntityRow): EntityRecord {
  return {
    id: asEntityId(row.id),
    attributes: withProbe(
      JSON.parse(row.attributes) as Record<string, string>,
      row.has_probe ? { osType: row.os_type, hostname: row.hostname } : undefined,
    ),
    isDeleted: row.is_deleted,
  };
}
