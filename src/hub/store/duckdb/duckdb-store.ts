/**
 * The embedded DuckDB store, vigil's default (DESIGN 5.5): one file in the data dir (or `:memory:`).
 *
 * Two connections: a writer that runs `migrate` and `ingest` one at a time (a DuckDB connection holds
 * at most one transaction), and a reader for lists and metric queries, which sees committed data only
 * (DuckDB is MVCC) so a long query never waits for an ingest. Each connection has its own promise
 * queue because the node binding must not run two statements on one connection at once.
 *
 * Ingest resolves entity and series keys from in-memory caches loaded at `migrate()`, so a batch costs
 * one statement per entity upsert, one bulk insert of new series and one bulk insert of samples, both
 * through the DataChunk appender (about 10× faster than INSERT statements).
 */
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import {
  DOUBLE,
  type DuckDBAppender,
  type DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  DuckDBTimestampTZValue,
  type DuckDBType,
  type DuckDBValue,
  INTEGER,
  type JS,
  TIMESTAMPTZ,
  VARCHAR,
} from "@duckdb/node-api";
import { VigilError } from "../../../errors/catalog.js";
import { asEntityId, asEpochMs, type EntityId } from "../../../ids.js";
import type {
  EntityKey,
  EntityRecord,
  EntityUpsert,
  IngestBatch,
  MetricQueryPlan,
  MetricQueryRow,
  SeriesInfo,
  SeriesKey,
  Store,
} from "../store.js";
import { buildMetricQuery, parseZone } from "./duckdb-metrics-sql.js";
import { DUCKDB_SCHEMA } from "./duckdb-schema.js";

export interface DuckDbStoreOptions {
  /** A database file (created with its folder when missing) or `:memory:`. */
  readonly path: string;
  /** DuckDB `memory_limit`, e.g. "512MB"; default {@link DEFAULT_DUCKDB_MEMORY_LIMIT}. */
  readonly memoryLimit?: string;
}

/** DuckDB's `memory_limit` when none is given: enough for month-long percentile queries. */
export const DEFAULT_DUCKDB_MEMORY_LIMIT = "1GB";
/** DuckDB's vector size: the most rows one DataChunk holds. */
const CHUNK_ROWS = 2048;
const US_PER_MS = 1000n;

/**
 * Opens (or creates) a DuckDB store at `options.path` with `memory_limit` set to
 * `options.memoryLimit` (default "1GB"). The tables are not touched until `migrate()` runs, which
 * creates them when missing and loads the key caches; call it once before anything else.
 */
export async function createDuckDbStore(options: DuckDbStoreOptions): Promise<Store> {
  if (options.path !== ":memory:") await mkdir(dirname(options.path), { recursive: true });
  const instance = await DuckDBInstance.create(options.path, {
    memory_limit: options.memoryLimit ?? DEFAULT_DUCKDB_MEMORY_LIMIT,
  });
  const writer = await instance.connect();
  const reader = await instance.connect();
  for (const c of [writer, reader]) await c.run("SET TimeZone = 'UTC'");
  return new DuckDbStore(instance, writer, reader);
}

/** Runs tasks one after another; a failed task does not stop the ones queued behind it. */
class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

interface EntityState {
  readonly id: EntityId;
  /** The `at` of the upsert last applied; older upserts are ignored. */
  readonly updatedAt: number;
}

const entityKeyString = (k: EntityKey): string => JSON.stringify([k.gateway, k.probe, k.managedEntity]);
const seriesKeyString = (entity: EntityId, s: SeriesKey): string =>
  JSON.stringify([entity, s.sampler, s.samplerType, s.dataview, s.row, s.column]);

/** DESIGN 5.1: an empty attribute value counts as absent, so it is never stored. */
function storedAttributes(attributes: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== ""));
}

const timestampTz = (ms: number): DuckDBTimestampTZValue =>
  new DuckDBTimestampTZValue(BigInt(ms) * US_PER_MS);

function toNumber(v: JS): number | null {
  if (v === null) return null;
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  throw new TypeError(`expected a number from DuckDB, got ${typeof v}`);
}

class DuckDbStore implements Store {
  readonly kind = "duckdb";
  private readonly writes = new SerialQueue();
  private readonly reads = new SerialQueue();
  private entities = new Map<string, EntityState>();
  private series = new Map<string, number>();
  /** First and last sample time stored, to narrow the query's transition scan; null when none. */
  private sampleSpan: { firstMs: number; lastMs: number } | null = null;
  private cachesLoaded = false;
  /** Zone names ICU inside DuckDB knows; read once, on the first query with a named zone. */
  private zoneNames: Set<string> | undefined;
  private closed = false;

  constructor(
    private readonly instance: DuckDBInstance,
    private readonly writer: DuckDBConnection,
    private readonly reader: DuckDBConnection,
  ) {}

  migrate(): Promise<void> {
    return this.write(async () => {
      for (const statement of DUCKDB_SCHEMA) await this.writer.run(statement);
      await this.loadCaches();
    });
  }

  ingest(batch: IngestBatch): Promise<void> {
    return this.write(async () => {
      if (!this.cachesLoaded) await this.loadCaches();
      // Cache changes become visible only after COMMIT, so a rolled-back batch leaves no stale ids.
      const entities = new Map<string, EntityState>();
      const series = new Map<string, number>();
      await this.writer.run("BEGIN TRANSACTION");
      try {
        for (const upsert of batch.entities) await this.upsertEntity(upsert, entities);
        await this.appendSamples(batch, entities, series);
        await this.writer.run("COMMIT");
      } catch (error) {
        await this.writer.run("ROLLBACK").catch(() => undefined);
        throw error;
      }
      for (const [k, v] of entities) this.entities.set(k, v);
      for (const [k, v] of series) this.series.set(k, v);
      for (const sample of batch.samples) {
        const at = sample.at;
        if (this.sampleSpan === null) this.sampleSpan = { firstMs: at, lastMs: at };
        else if (at < this.sampleSpan.firstMs) this.sampleSpan.firstMs = at;
        else if (at > this.sampleSpan.lastMs) this.sampleSpan.lastMs = at;
      }
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
    const query = buildMetricQuery(plan, this.sampleSpan ?? undefined);
    return this.read(async () => {
      await this.checkZone(plan.zone);
      const r = await this.reader.runAndReadAll(query.sql, query.values, query.types);
      return r.getRowsJS().map((row): MetricQueryRow => {
        const group: Record<string, string | number> = {};
        query.groupColumns.forEach((g, i) => {
          const v = row[1 + i] ?? null;
          group[g.key] = g.numeric ? (toNumber(v) ?? 0) : String(v ?? "");
        });
        const first = 1 + query.groupColumns.length;
        const values: Record<string, number | null> = {};
        query.labels.forEach((label, i) => {
          values[label] = toNumber(row[first + 1 + i] ?? null);
        });
        return {
          bucket: asEpochMs(toNumber(row[0] ?? null) ?? 0),
          group,
          identifier: String(row[first]),
          values,
        };
      });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Wait for queued work; the queues never reject.
    await Promise.all([this.writes.run(async () => undefined), this.reads.run(async () => undefined)]);
    this.writer.closeSync();
    this.reader.closeSync();
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
    const series = new Map<string, number>();
    const s = await this.writer.runAndReadAll(
      "SELECT id, entity_id, sampler, sampler_type, dataview, row_name, column_name FROM series",
    );
    for (const [id, entityId, sampler, samplerType, dataview, row, column] of s.getRowsJS()) {
      const key: SeriesKey = {
        sampler: String(sampler),
        samplerType: String(samplerType),
        dataview: String(dataview),
        row: String(row),
        column: String(column),
      };
      series.set(seriesKeyString(asEntityId(Number(entityId)), key), Number(id));
    }
    const span = await this.writer.runAndReadAll("SELECT epoch_ms(min(ts)), epoch_ms(max(ts)) FROM samples");
    const [firstMs, lastMs] = span.getRowsJS()[0] ?? [];
    this.sampleSpan =
      firstMs === null || lastMs === null || firstMs === undefined || lastMs === undefined
        ? null
        : { firstMs: Number(firstMs), lastMs: Number(lastMs) };
    this.entities = entities;
    this.series = series;
    this.cachesLoaded = true;
  }

  /**
   * Applies one upsert inside the open transaction. An upsert older than the one last applied is
   * ignored (a backfilled old record must not undo a newer state); a deletion that carries no
   * attributes keeps the stored ones, so a deleted entity still shows what it was.
   */
  private async upsertEntity(u: EntityUpsert, pending: Map<string, EntityState>): Promise<void> {
    const key = entityKeyString(u.key);
    const known = pending.get(key) ?? this.entities.get(key);
    const attributes = storedAttributes(u.attributes);
    const json = JSON.stringify(attributes);
    if (known === undefined) {
      const id = await this.insertEntity(u.key, json, u.deleted, u.at);
      pending.set(key, { id, updatedAt: u.at });
      return;
    }
    if (u.at < known.updatedAt) return;
    const keepAttributes = u.deleted && Object.keys(attributes).length === 0;
    await this.writer.run(
      `UPDATE entities SET ${keepAttributes ? "" : "attributes = $attributes, "}is_deleted = $deleted,
         updated_at = $at WHERE id = $id`,
      {
        ...(keepAttributes ? {} : { attributes: json }),
        deleted: u.deleted,
        at: timestampTz(u.at),
        id: known.id,
      },
      { ...(keepAttributes ? {} : { attributes: VARCHAR }), id: INTEGER },
    );
    pending.set(key, { id: known.id, updatedAt: u.at });
  }

  private async insertEntity(
    key: EntityKey,
    attributes: string,
    deleted: boolean,
    at: number,
  ): Promise<EntityId> {
    const r = await this.writer.runAndReadAll(
      `INSERT INTO entities (gateway, probe, managed_entity, attributes, is_deleted, updated_at)
       VALUES ($gateway, $probe, $managed_entity, $attributes, $deleted, $at) RETURNING id`,
      {
        gateway: key.gateway,
        probe: key.probe,
        managed_entity: key.managedEntity,
        attributes,
        deleted,
        at: timestampTz(at),
      },
    );
    return asEntityId(Number(r.getRowsJS()[0]?.[0]));
  }

  /**
   * Resolves each sample's series (creating missing entities and series) and bulk-loads the samples.
   * A sample for an entity never upserted creates it with the built-in attributes its key gives
   * (DESIGN 5.1: `svc.gateway`, `svc.probe`, `svc.name`) and the oldest possible `updated_at`, so the
   * first real upsert replaces them.
   */
  private async appendSamples(
    batch: IngestBatch,
    entities: Map<string, EntityState>,
    series: Map<string, number>,
  ): Promise<void> {
    if (batch.samples.length === 0) return;
    const missing: { key: string; entity: EntityId; series: SeriesKey }[] = [];
    const missingKeys = new Set<string>();
    const sampleSeries: (number | string)[] = [];
    for (const sample of batch.samples) {
      const entityKey = entityKeyString(sample.entity);
      let entity = entities.get(entityKey) ?? this.entities.get(entityKey);
      if (entity === undefined) {
        const attributes = {
          "svc.gateway": sample.entity.gateway,
          "svc.probe": sample.entity.probe,
          "svc.name": sample.entity.managedEntity,
        };
        const id = await this.insertEntity(
          sample.entity,
          JSON.stringify(storedAttributes(attributes)),
          false,
          0,
        );
        entity = { id, updatedAt: 0 };
        entities.set(entityKey, entity);
      }
      const key = seriesKeyString(entity.id, sample.series);
      const id = this.series.get(key);
      if (id !== undefined) {
        sampleSeries.push(id);
      } else {
        // New in this batch: its id is drawn below, once for all samples of the series.
        if (!missingKeys.has(key)) missing.push({ key, entity: entity.id, series: sample.series });
        missingKeys.add(key);
        sampleSeries.push(key);
      }
    }

    if (missing.length > 0) {
      const r = await this.writer.runAndReadAll("SELECT nextval('series_id_seq') FROM range($n)", {
        n: missing.length,
      });
      const ids = r.getRowsJS().map(([id]) => Number(id));
      const rows = missing.map((m, i) => {
        const id = ids[i];
        if (id === undefined) throw new Error("series id sequence returned too few values");
        series.set(m.key, id);
        const s = m.series;
        return [id, m.entity, s.sampler, s.samplerType, s.dataview, s.row, s.column];
      });
      await this.append("series", [INTEGER, INTEGER, VARCHAR, VARCHAR, VARCHAR, VARCHAR, VARCHAR], rows);
    }

    const rows = batch.samples.map((sample, i) => {
      const ref = sampleSeries[i];
      const id = typeof ref === "number" ? ref : series.get(ref ?? "");
      if (id === undefined) throw new Error("internal: a sample's series has no id");
      // Only finite numbers aggregate; NaN and ±Infinity have no JSON form either.
      const value = sample.value !== null && Number.isFinite(sample.value) ? sample.value : null;
      return [id, timestampTz(sample.at), value, sample.text];
    });
    await this.append("samples", [INTEGER, TIMESTAMPTZ, DOUBLE, VARCHAR], rows);
  }

  /** Bulk-loads rows into `table` through the appender, one DataChunk per 2048 rows. */
  private async append(
    table: string,
    types: readonly DuckDBType[],
    rows: readonly DuckDBValue[][],
  ): Promise<void> {
    const appender: DuckDBAppender = await this.writer.createAppender(table);
    try {
      for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
        const slice = rows.slice(start, start + CHUNK_ROWS);
        const chunk = DuckDBDataChunk.create(types, slice.length);
        types.forEach((_, column) => {
          chunk.setColumnValues(
            column,
            slice.map((row) => row[column] ?? null),
          );
        });
        appender.appendDataChunk(chunk);
      }
    } finally {
      appender.closeSync();
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
