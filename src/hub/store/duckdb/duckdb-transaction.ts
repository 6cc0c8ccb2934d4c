/**
 * One transaction of the DuckDB store (DESIGN 1, 5.5): message claims and batch writes on the writer
 * connection, after the BEGIN it queues first (`begin`) and before the COMMIT that
 * `DuckDbStore.transaction` issues. BEGIN is queued, not awaited, so the first statements and the
 * work of the first write do not wait for its answer; a BEGIN that fails marks the transaction, and
 * nothing queued behind it runs (queued-transaction.ts), so no statement runs outside it.
 *
 * A write runs in three phases so that data the store cannot hold is refused before anything of the
 * batch is written (the transaction stays usable, and the ingester can dead-letter one message):
 * 1. checks that need no database (text, timestamps, event payloads);
 * 2. resolution, reading only: entity ids from the entity cache; series ids from the transaction's
 *    own changes, then the bounded series cache (both by row of cells, then by column name: one
 *    string key per row, none per sample), then one lookup statement for all misses; the
 *    series count of each entity that gains series (one count statement the first time an entity
 *    needs one), checked against `maxSeriesPerEntity`;
 * 3. writes: one statement per entity upsert or new entity, one bulk insert each of new series,
 *    samples and events through the appender (for samples, the writer's appender kept from one
 *    transaction to the next: duckdb-append.ts `KeptAppender`).
 * What needs no connection — phase 1, the series the caches know, and (when they know every one)
 * the first sample chunks — is done as soon as `write` is called, while the statements queued
 * before it run (an optimistic claim, which answers at once and inserts its digests meanwhile):
 * the connection then goes from the claim's insert straight to the appends.
 * Everything learnt goes into `pending`; the store copies it into its caches only after COMMIT, so
 * a rolled-back transaction leaves no id behind that the database does not hold.
 */
import {
  type DuckDBConnection,
  type DuckDBDataChunk,
  type DuckDBValue,
  INTEGER,
  listValue,
  VARCHAR,
} from "@duckdb/node-api";
import { asEntityId, type EntityId } from "../../../ids.js";
import { entityKeyString, rowKeyString, seriesKeyOf, storedAttributes } from "../core/store-keys.js";
import {
  checkAttributes,
  checkEntityKey,
  checkEvent,
  checkSeriesKey,
  checkText,
  checkTime,
} from "../data-checks.js";
import { type DataviewState, dataviewChanges, dataviewKeyString, deletedAfter } from "../dataviews.js";
import type { DigestForm } from "../message-digest.js";
import { QueuedTransaction } from "../queued-transaction.js";
import type { RecencyCache } from "../recency-cache.js";
import { rowSeriesOf } from "../row-series.js";
import { sampleRowsOf } from "../sample-rows.js";
import {
  type DataviewInput,
  type EntityKey,
  type EntityUpsert,
  type IngestBatch,
  type MessageKey,
  type ProbeUpsert,
  type SampleRows,
  type SeriesKey,
  StoreDataError,
  type StoreTransaction,
} from "../store.js";
import { appendRows, type KeptAppender, sampleChunks, timestampTz, toNumber } from "./duckdb-append.js";
import { claimMessageKeys, planOptimisticClaim } from "./duckdb-claims.js";
import { EVENT_COLUMN_TYPES, eventRow } from "./duckdb-events.js";
import { ID_LIST, TEXT_LIST } from "./duckdb-lists.js";
import { FALLBACK_PROBE_MS } from "./duckdb-schema.js";

export interface EntityState {
  readonly id: EntityId;
  /** The `at` of the upsert last applied; older upserts are ignored. */
  readonly updatedAt: number;
}

/** First and last sample time stored, to narrow the metric query's scan. */
export interface SampleSpan {
  firstMs: number;
  lastMs: number;
}

/** The caches of a DuckDB store, which a transaction reads and the store changes after COMMIT. */
export interface StoreCaches {
  /**
   * Every entity, by {@link entityKeyString}. Loaded whole at start: entities are few (one per
   * managed entity of the deployment), unlike series.
   */
  readonly entities: ReadonlyMap<string, EntityState>;
  /**
   * Series ids by row ({@link rowKeyString}) and then column name, bounded by the series it holds; a
   * miss is looked up in the database. The store changes these maps only after a COMMIT. An id is
   * held negated while the series has held no number (`numeric_series`): a numeric sample of it
   * then flips the flag, once, at the cost of one sign test per sample.
   */
  readonly series: RecencyCache<string, ReadonlyMap<string, number>>;
  /** Series per entity, for the entities that needed a count so far (bounded by the entities). */
  readonly seriesCounts: ReadonlyMap<EntityId, number>;
  /** How the store keeps message digests (message-digest.ts), fixed when it was created. */
  readonly digestForm: DigestForm;
  /** Dataview rows by {@link dataviewKeyString} (dataviews.ts), bounded. */
  readonly dataviews: ReadonlyMap<string, DataviewState>;
}

/** What a transaction learnt, applied to {@link StoreCaches} once it commits. */
export interface PendingChanges {
  readonly entities: Map<string, EntityState>;
  /** New series ids, and ids read from the database, by row key and column name. */
  readonly series: Map<string, Map<string, number>>;
  readonly seriesCounts: Map<EntityId, number>;
  readonly dataviews: Map<string, DataviewState>;
  /**
   * The probes whose row the transaction wrote, as `[gateway, probe]`: their entities' attributes
   * (`svc.hostname`, `svc.os-type`) are read from that row, so they count as changed entities.
   */
  readonly probes: Map<string, readonly [string, string]>;
  span: SampleSpan | null;
}

/** One distinct series of a write that no cache held. */
interface SeriesSlot {
  readonly entity: EntityKey;
  readonly entityKey: string;
  /** Set when the entity existed before this write; then `rowKey` is its row's key. */
  readonly entityId: EntityId | undefined;
  readonly rowKey: string | undefined;
  readonly series: SeriesKey;
  id: number | undefined;
  /** The id came from the database lookup: remember it in the cache after COMMIT. */
  lookedUp: boolean;
  /** A cell of this write holds a number. */
  numeric: boolean;
  /** The database has the series as numeric already (a looked-up one). */
  storedNumeric: boolean;
}

/** The series a write found in the caches, and the ones it still has to look up or create. */
interface CachedSeries {
  readonly slots: SeriesSlot[];
  /** Per cell: its series id, once known. */
  readonly ids: Int32Array;
  /** The cells whose series no cache held, each with its slot. */
  readonly missCells: number[];
  readonly missSlots: number[];
  /** The slots of entities that exist: looked up in the database. */
  readonly misses: SeriesSlot[];
  /** Cached series not yet numeric that a cell of this write gives a number, with their row and column. */
  readonly flips: { readonly id: number; readonly rowKey: string; readonly column: string }[];
}

/** What a write works out before its turn on the connection (see `write`). */
interface PreparedWrite {
  readonly batch: IngestBatch;
  readonly cells: SampleRows;
  readonly cached: CachedSeries;
  /** Sample chunks, some made already; set when the caches knew every series. */
  readonly chunks: Iterable<DuckDBDataChunk> | undefined;
}

/**
 * Sample chunks (2048 samples each) a write makes before its turn on the connection, at most: the
 * native memory a part holds ahead stays bounded whatever the size of its rows.
 */
const EARLY_SAMPLE_CHUNKS = 32;

/** DuckDB errors that depend on the data written, not on the state of the database. */
const DATA_ERROR = /^(Conversion Error|Out of Range Error)\b/;

export class DuckDbTransaction extends QueuedTransaction implements StoreTransaction {
  readonly pending: PendingChanges = {
    entities: new Map(),
    series: new Map(),
    seriesCounts: new Map(),
    dataviews: new Map(),
    probes: new Map(),
    span: null,
  };

  /** Set when a careful claim found a hash key stored before (a replay or redelivery). */
  duplicateDigests = false;

  /** Writes called and not yet done: a write prepares early only with none ahead of it. */
  private writesAhead = 0;

  /** `optimisticClaims`: hash keys are claimed as if new (claimMessageKeys), DigestConflict if not. */
  constructor(
    private readonly c: DuckDBConnection,
    /** `c`'s appender to `samples`, kept from one transaction to the next. */
    private readonly samples: KeptAppender,
    private readonly caches: StoreCaches,
    private readonly maxSeriesPerEntity: number,
    private readonly optimisticClaims = false,
  ) {
    super();
  }

  /**
   * Queues the transaction's BEGIN, ahead of every claim and write; its failure is the
   * transaction's (`failure`), and the calls behind it then fail with it.
   */
  begin(): void {
    this.run(() => this.c.run("BEGIN TRANSACTION")).catch(() => undefined);
  }

  claim(keys: readonly MessageKey[]): Promise<boolean[]> {
    if (this.optimisticClaims && keys.every((key) => key.kind === "hash")) {
      // Known without the database: the insert runs on the queue while the caller goes on, and a
      // digest stored before fails the transaction (DigestConflict: the store runs it again with
      // the careful claim).
      let plan: ReturnType<typeof planOptimisticClaim>;
      try {
        plan = planOptimisticClaim(keys, this.caches.digestForm);
      } catch (error) {
        return Promise.reject(error);
      }
      this.run(() => plan.insert(this.c)).catch(() => undefined); // the failure is the transaction's
      return Promise.resolve(plan.fresh);
    }
    return this.run(async () => {
      const fresh = await claimMessageKeys(this.c, keys, this.caches.digestForm, this.optimisticClaims);
      if (keys.some((key, i) => key.kind === "hash" && fresh[i] !== true)) this.duplicateDigests = true;
      return fresh;
    });
  }

  /**
   * Queues a write. With no write ahead of it in this transaction (whose changes it would read), it
   * is prepared now (see the module comment); a refusal of the checks then comes at once.
   */
  write(batch: IngestBatch): Promise<void> {
    let early: PreparedWrite | undefined;
    if (this.writesAhead === 0) {
      try {
        early = this.prepare(batch, true);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    this.writesAhead += 1;
    return this.run(() => this.writeBatch(early ?? this.prepare(batch, false))).finally(() => {
      this.writesAhead -= 1;
    });
  }

  private entityOf(key: string): EntityState | undefined {
    return this.pending.entities.get(key) ?? this.caches.entities.get(key);
  }

  /**
   * Phase 1 and the cached part of phase 2; `early`: also the first sample chunks when the caches
   * knew every series (at most EARLY_SAMPLE_CHUNKS; the rest are made on the connection's turn).
   */
  private prepare(batch: IngestBatch, early: boolean): PreparedWrite {
    for (const u of batch.entities) {
      checkEntityKey(u.key);
      checkAttributes(u.attributes);
      checkTime("entity update time", u.at);
    }
    const cells = sampleRowsOf(batch);
    // Only the cells the rows name: a row set may share its cell columns with cells it skips.
    for (const row of cells.rows) {
      checkTime("sample time", row.at);
      for (let c = row.start; c < row.end; c++) {
        // A text left out is a number's canonical text: digits, a sign and a point.
        const text = cells.cells.ownText(c);
        if (text !== undefined) checkText("sample text", text);
      }
    }
    for (const event of batch.events ?? []) checkEvent(event);
    for (const probe of batch.probes ?? []) checkProbe(probe);
    for (const dataview of batch.dataviews ?? []) checkDataview(dataview);
    const cached = this.cachedSeries(cells);
    if (!early || cached.slots.length > 0) return { batch, cells, cached, chunks: undefined };
    const rest = sampleChunks(cells, cached.ids);
    const made: DuckDBDataChunk[] = [];
    try {
      while (made.length < EARLY_SAMPLE_CHUNKS) {
        const next = rest.next();
        if (next.done === true) break;
        made.push(next.value);
      }
    } catch {
      // Made again on the connection's turn, where a DuckDB error becomes a StoreDataError.
      return { batch, cells, cached, chunks: undefined };
    }
    return {
      batch,
      cells,
      cached,
      chunks: (function* () {
        yield* made;
        yield* rest;
      })(),
    };
  }

  private async writeBatch({ batch, cells, cached, chunks }: PreparedWrite): Promise<void> {
    const events = batch.events ?? [];
    const { slots, ids, missCells, missSlots, counts, flips } = await this.resolveSeries(cached);

    try {
      for (const probe of batch.probes ?? []) {
        await this.upsertProbe(probe);
        this.pending.probes.set(JSON.stringify([probe.gateway, probe.probe]), [probe.gateway, probe.probe]);
      }
      for (const upsert of batch.entities) await this.upsertEntity(upsert);
      await this.appendSeries(slots, counts);
      await this.markNumeric(slots, flips);
      for (let m = 0; m < missCells.length; m++) {
        const id = slots[missSlots[m] as number]?.id;
        if (id === undefined) throw new Error("internal: a sample's series has no id");
        ids[missCells[m] as number] = id;
      }
      await this.appendSamples(cells, chunks ?? sampleChunks(cells, ids));
      if (batch.dataviews !== undefined && batch.dataviews.length > 0)
        await this.writeDataviews(batch.dataviews);
      if (events.length > 0) {
        const entities: (EntityId | null)[] = [];
        for (const event of events) {
          entities.push(event.entity === null ? null : (await this.entityFor(event.entity)).id);
        }
        const eventIds = await this.nextIds("event_id_seq", events.length);
        await appendRows(
          this.c,
          "events",
          EVENT_COLUMN_TYPES,
          events.map((event, i) => eventRow(eventIds[i] as number, event, entities[i] ?? null)),
        );
      }
    } catch (error) {
      if (this.failure === undefined) this.failure = { error };
      if (error instanceof Error && DATA_ERROR.test(error.message)) {
        throw new StoreDataError(`the store refused the data: ${error.message}`, { cause: error });
      }
      throw error;
    }
  }

  /**
   * Phase 2, without the database: the series id of each cell whose series is known (this
   * transaction's, then the cache's), found once per row and then by column name; and a slot for
   * each distinct other series.
   */
  private cachedSeries(cells: SampleRows): CachedSeries {
    const slots: SeriesSlot[] = [];
    const slotOf = new Map<string, number>();
    const ids = new Int32Array(cells.cells.length);
    const missCells: number[] = [];
    const missSlots: number[] = [];
    const misses: SeriesSlot[] = [];
    const flips: CachedSeries["flips"][number][] = [];
    const columns = cells.cells;
    // Rows of one message or entity usually share their entity key object: resolve it once for a run.
    let lastEntity: EntityKey | undefined;
    let entityKey = "";
    let entity: EntityState | undefined;
    for (const r of cells.rows) {
      if (r.entity !== lastEntity) {
        lastEntity = r.entity;
        entityKey = entityKeyString(r.entity);
        entity = this.entityOf(entityKey);
      }
      const rowKey = entity === undefined ? undefined : rowKeyString(entity.id, r);
      // This transaction's own series are usually none: skip the lookup then.
      const mine =
        rowKey === undefined || this.pending.series.size === 0 ? undefined : this.pending.series.get(rowKey);
      const cached = rowKey === undefined ? undefined : this.caches.series.get(rowKey);
      for (let c = r.start; c < r.end; c++) {
        const column = columns.column(c);
        // The common case, a series stored before: no slot, no check (what was stored is valid).
        const hit = mine?.get(column) ?? cached?.get(column);
        if (hit !== undefined) {
          if (hit > 0) ids[c] = hit;
          else {
            // A series that has held no number yet: this cell may flip it.
            ids[c] = -hit;
            if (!Number.isNaN(columns.value(c)) && rowKey !== undefined)
              flips.push({ id: -hit, rowKey, column });
          }
          continue;
        }
        // A series of an entity this write creates is new; the prefix keeps its key apart from ids.
        const key =
          rowKey === undefined
            ? `?${entityKey}${seriesKeyOf(rowKeyString(asEntityId(0), r), column)}`
            : seriesKeyOf(rowKey, column);
        let slot = slotOf.get(key);
        if (slot === undefined) {
          slot = slots.length;
          slotOf.set(key, slot);
          const series: SeriesKey = {
            sampler: r.sampler,
            samplerType: r.samplerType,
            dataview: r.dataview,
            row: r.row,
            column,
          };
          const entry: SeriesSlot = {
            entity: r.entity,
            entityKey,
            entityId: entity?.id,
            rowKey,
            series,
            id: undefined,
            lookedUp: false,
            numeric: false,
            storedNumeric: false,
          };
          // Not cached: checked before use, and looked up in the database when its entity exists.
          checkSeriesKey(series);
          if (entity === undefined) checkEntityKey(r.entity);
          else misses.push(entry);
          slots.push(entry);
        }
        if (!Number.isNaN(columns.value(c))) (slots[slot] as SeriesSlot).numeric = true;
        missCells.push(c);
        missSlots.push(slot);
      }
    }
    return { slots, ids, missCells, missSlots, misses, flips };
  }

  /**
   * Phase 2, with the database: the ids of the slots of entities that exist, looked up; and the
   * refusal of the batch when an entity would exceed `maxSeriesPerEntity`. Reads only.
   */
  private async resolveSeries({
    slots,
    ids,
    missCells,
    missSlots,
    misses,
    flips,
  }: CachedSeries): Promise<Omit<CachedSeries, "misses"> & { counts: Map<string, number> }> {
    if (misses.length > 0) await this.lookupSeries(misses);

    // New series per entity, against the entity's count.
    const added = new Map<string, { entity: EntityKey; id: EntityId | undefined; count: number }>();
    for (const slot of slots) {
      if (slot.id !== undefined) continue;
      const a = added.get(slot.entityKey);
      if (a === undefined) added.set(slot.entityKey, { entity: slot.entity, id: slot.entityId, count: 1 });
      else a.count += 1;
    }
    const counts = new Map<string, number>();
    const result = { slots, ids, missCells, missSlots, counts, flips };
    if (added.size === 0) return result;
    const unknown: EntityId[] = [];
    for (const { id } of added.values()) {
      if (id !== undefined && this.storedCount(id) === undefined) unknown.push(id);
    }
    const queried = unknown.length > 0 ? await this.countSeries(unknown) : new Map<EntityId, number>();
    for (const [entityKey, a] of added) {
      const before = a.id === undefined ? 0 : (this.storedCount(a.id) ?? queried.get(a.id) ?? 0);
      const after = before + a.count;
      if (after > this.maxSeriesPerEntity) {
        const e = a.entity;
        throw new StoreDataError(
          `entity ${JSON.stringify(e.managedEntity)} of probe ${JSON.stringify(e.probe)} on gateway ` +
            `${JSON.stringify(e.gateway)} would have ${after} series (${before} stored, ${a.count} new), ` +
            `more than the limit of ${this.maxSeriesPerEntity} (maxSeriesPerEntity)`,
        );
      }
      counts.set(entityKey, after);
    }
    return result;
  }

  private storedCount(entity: EntityId): number | undefined {
    return this.pending.seriesCounts.get(entity) ?? this.caches.seriesCounts.get(entity);
  }

  /** Finds the ids of `misses` in the database (this transaction's rows included), one statement. */
  private async lookupSeries(misses: readonly SeriesSlot[]): Promise<void> {
    const byKey = new Map<string, SeriesSlot>();
    for (const slot of misses) {
      if (slot.rowKey !== undefined) byKey.set(seriesKeyOf(slot.rowKey, slot.series.column), slot);
    }
    const column = (pick: (s: SeriesKey) => string) => listValue(misses.map((m) => pick(m.series)));
    const r = await this.c.runAndReadAll(
      `SELECT s.id, s.entity_id, s.sampler, s.sampler_type, s.dataview, s.row_name, s.column_name,
              EXISTS (SELECT 1 FROM numeric_series n WHERE n.series_id = s.id)
       FROM series s
       JOIN (SELECT unnest($entity) AS entity_id, unnest($sampler) AS sampler,
                    unnest($samplerType) AS sampler_type, unnest($dataview) AS dataview,
                    unnest($row) AS row_name, unnest($column) AS column_name) k
         USING (entity_id, sampler, sampler_type, dataview, row_name, column_name)`,
      {
        entity: listValue(misses.map((m) => m.entityId ?? null)),
        sampler: column((s) => s.sampler),
        samplerType: column((s) => s.samplerType),
        dataview: column((s) => s.dataview),
        row: column((s) => s.row),
        column: column((s) => s.column),
      },
      {
        entity: ID_LIST,
        sampler: TEXT_LIST,
        samplerType: TEXT_LIST,
        dataview: TEXT_LIST,
        row: TEXT_LIST,
        column: TEXT_LIST,
      },
    );
    for (const [id, entity, sampler, samplerType, dataview, row, col, numeric] of r.getRowsJS()) {
      const rowKey = rowKeyString(asEntityId(toNumber(entity ?? null) ?? 0), {
        sampler: String(sampler),
        samplerType: String(samplerType),
        dataview: String(dataview),
        row: String(row),
      });
      const key = seriesKeyOf(rowKey, String(col));
      const slot = byKey.get(key);
      if (slot === undefined) continue;
      slot.id = toNumber(id ?? null) ?? undefined;
      slot.lookedUp = true;
      slot.storedNumeric = numeric === true;
    }
  }

  /** Series stored per entity, for entities whose count no cache holds; one statement. */
  private async countSeries(entities: readonly EntityId[]): Promise<Map<EntityId, number>> {
    const r = await this.c.runAndReadAll(
      `SELECT entity_id, count(*) FROM series WHERE entity_id IN (SELECT unnest($ids))
       GROUP BY entity_id`,
      { ids: listValue([...entities]) },
      { ids: ID_LIST },
    );
    const counts = new Map<EntityId, number>(entities.map((id) => [id, 0]));
    for (const [id, count] of r.getRowsJS()) {
      counts.set(asEntityId(toNumber(id ?? null) ?? 0), toNumber(count ?? null) ?? 0);
    }
    return counts;
  }

  /**
   * Applies one upsert. An upsert older than the one last applied is ignored (a backfilled old
   * record must not undo a newer state); a deletion that carries no attributes keeps the stored
   * ones, so a deleted entity still shows what it was.
   */
  private async upsertEntity(u: EntityUpsert): Promise<void> {
    const key = entityKeyString(u.key);
    const known = this.entityOf(key);
    const attributes = storedAttributes(u.attributes);
    const json = JSON.stringify(attributes);
    if (known === undefined) {
      const id = await this.insertEntity(u.key, json, u.deleted, u.at);
      this.pending.entities.set(key, { id, updatedAt: u.at });
      return;
    }
    if (u.at < known.updatedAt) return;
    const keepAttributes = u.deleted && Object.keys(attributes).length === 0;
    await this.c.run(
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
    this.pending.entities.set(key, { id: known.id, updatedAt: u.at });
  }

  private async insertEntity(
    key: EntityKey,
    attributes: string,
    deleted: boolean,
    at: number,
  ): Promise<EntityId> {
    const r = await this.c.runAndReadAll(
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
   * The entity a sample or event names. One never upserted is created with the built-in attributes
   * its key gives (DESIGN 5.1: `svc.gateway`, `svc.probe`, `svc.name`) and the oldest possible
   * `updated_at`, so the first real upsert replaces them.
   */
  private async entityFor(key: EntityKey): Promise<EntityState> {
    const entityKey = entityKeyString(key);
    const known = this.entityOf(entityKey);
    if (known !== undefined) return known;
    const attributes = {
      "svc.gateway": key.gateway,
      "svc.probe": key.probe,
      "svc.name": key.managedEntity,
    };
    const id = await this.insertEntity(key, JSON.stringify(storedAttributes(attributes)), false, 0);
    const state = { id, updatedAt: 0 };
    this.pending.entities.set(entityKey, state);
    return state;
  }

  /** `n` values of a sequence, in one statement. */
  private async nextIds(sequence: string, n: number): Promise<number[]> {
    const r = await this.c.runAndReadAll(`SELECT nextval('${sequence}') FROM range($n)`, { n });
    const ids = r.getRowsJS().map(([id]) => toNumber(id ?? null) ?? 0);
    if (ids.length !== n) throw new Error(`sequence ${sequence} returned ${ids.length} values, not ${n}`);
    return ids;
  }

  /** This transaction's own series ids of the row `rowKey` (made when missing). */
  private pendingRow(rowKey: string): Map<string, number> {
    return rowSeriesOf(this.pending.series, rowKey);
  }

  /** Gives the new slots ids and bulk-inserts them; records every resolved id as pending. */
  private async appendSeries(
    slots: readonly SeriesSlot[],
    counts: ReadonlyMap<string, number>,
  ): Promise<void> {
    const fresh = slots.filter((slot) => slot.id === undefined);
    for (const slot of slots) {
      if (slot.lookedUp && slot.rowKey !== undefined && slot.id !== undefined) {
        const numeric = slot.numeric || slot.storedNumeric;
        this.pendingRow(slot.rowKey).set(slot.series.column, numeric ? slot.id : -slot.id);
      }
    }
    if (fresh.length === 0) return;
    const ids = await this.nextIds("series_id_seq", fresh.length);
    const rows: DuckDBValue[][] = [];
    for (const [i, slot] of fresh.entries()) {
      const entity = (await this.entityFor(slot.entity)).id;
      const id = ids[i] as number;
      slot.id = id;
      const s = slot.series;
      this.pendingRow(slot.rowKey ?? rowKeyString(entity, s)).set(s.column, slot.numeric ? id : -id);
      rows.push([id, entity, s.sampler, s.samplerType, s.dataview, s.row, s.column]);
    }
    await appendRows(this.c, "series", [INTEGER, INTEGER, VARCHAR, VARCHAR, VARCHAR, VARCHAR, VARCHAR], rows);
    // Every series has its dataview row (its id, DESIGN 5.1 `includeMappings`).
    const dataviews = new Map<string, DuckDBValue[]>();
    for (const [i, row] of rows.entries()) {
      const slot = fresh[i] as SeriesSlot;
      dataviews.set(dataviewKeyString(slot.entity, slot.series), row.slice(1, 5));
    }
    const list = [...dataviews.values()];
    await this.c.run(
      `INSERT INTO dataviews (entity_id, sampler, sampler_type, dataview)
       SELECT unnest($entity), unnest($sampler), unnest($samplerType), unnest($dataview)
       ON CONFLICT DO NOTHING`,
      {
        entity: listValue(list.map((d) => d[0] ?? null)),
        sampler: listValue(list.map((d) => d[1] ?? null)),
        samplerType: listValue(list.map((d) => d[2] ?? null)),
        dataview: listValue(list.map((d) => d[3] ?? null)),
      },
      { entity: ID_LIST, sampler: TEXT_LIST, samplerType: TEXT_LIST, dataview: TEXT_LIST },
    );
    for (const [entityKey, count] of counts) {
      const entity = this.entityOf(entityKey);
      if (entity !== undefined) this.pending.seriesCounts.set(entity.id, count);
    }
  }

  /**
   * Marks as numeric the new series that a cell of this write gives a number, the looked-up ones
   * not marked yet, and the cached ones that flip (`flips`): one statement, only when there is any.
   */
  private async markNumeric(slots: readonly SeriesSlot[], flips: CachedSeries["flips"]): Promise<void> {
    const ids = new Set<number>();
    for (const slot of slots) {
      if (slot.numeric && !slot.storedNumeric && slot.id !== undefined) ids.add(slot.id);
    }
    for (const flip of flips) ids.add(flip.id);
    if (ids.size === 0) return;
    await this.c.run(
      "INSERT INTO numeric_series SELECT unnest($ids) ON CONFLICT DO NOTHING",
      { ids: listValue([...ids]) },
      { ids: ID_LIST },
    );
    for (const flip of flips) this.pendingRow(flip.rowKey).set(flip.column, flip.id);
  }

  /**
   * Applies a probe's details: a probe message replaces what is stored unless it is older; the
   * fallback from metrics is stored only when the probe has no row yet.
   */
  private async upsertProbe(p: ProbeUpsert): Promise<void> {
    const values = {
      gateway: p.gateway,
      probe: p.probe,
      os: p.osType === "" ? null : p.osType,
      host: p.hostname === "" ? null : p.hostname,
      at: p.fallback ? FALLBACK_PROBE_MS : p.at,
    };
    const types = { gateway: VARCHAR, probe: VARCHAR, os: VARCHAR, host: VARCHAR };
    await this.c.run(
      p.fallback
        ? `INSERT INTO probes VALUES ($gateway, $probe, $os, $host, $at) ON CONFLICT DO NOTHING`
        : `INSERT INTO probes VALUES ($gateway, $probe, $os, $host, $at)
           ON CONFLICT (gateway, probe) DO UPDATE SET os_type = excluded.os_type,
             hostname = excluded.hostname, updated_ms = excluded.updated_ms
           WHERE probes.updated_ms <= excluded.updated_ms`,
      values,
      types,
    );
  }

  /**
   * Records the plug-in, OS type and deleted rows of the batch's dataviews, for those whose cached
   * state they change (dataviews.ts): none for a batch of dataviews known and unchanged. A
   * dataview of an entity the store does not hold (a delete of something never stored) is skipped.
   */
  private async writeDataviews(inputs: readonly DataviewInput[]): Promise<void> {
    for (const input of inputs) {
      const key = dataviewKeyString(input.entity, input);
      const state = this.pending.dataviews.get(key) ?? this.caches.dataviews.get(key);
      if (!dataviewChanges(state, input)) continue;
      const entity = this.entityOf(entityKeyString(input.entity));
      if (entity === undefined) continue;
      const plugin = input.plugin;
      const osType = input.osType;
      let id: number;
      let before: ReadonlySet<string>;
      if (state === undefined) {
        // Not cached: upserted, then its deleted rows read.
        const r = await this.c.runAndReadAll(
          `INSERT INTO dataviews (entity_id, sampler, sampler_type, dataview, plugin, os_type)
           VALUES ($entity, $sampler, $type, $dataview, $plugin, $os)
           ON CONFLICT (entity_id, sampler, sampler_type, dataview)
           DO UPDATE SET plugin = excluded.plugin, os_type = excluded.os_type RETURNING id`,
          {
            entity: entity.id,
            sampler: input.sampler,
            type: input.samplerType,
            dataview: input.dataview,
            plugin,
            os: osType,
          },
          {
            entity: INTEGER,
            sampler: VARCHAR,
            type: VARCHAR,
            dataview: VARCHAR,
            plugin: VARCHAR,
            os: VARCHAR,
          },
        );
        id = toNumber(r.getRowsJS()[0]?.[0] ?? null) ?? 0;
        const rows = await this.c.runAndReadAll(
          "SELECT row_name FROM dataview_deletes WHERE dataview_id = $id",
          { id },
          { id: INTEGER },
        );
        before = new Set(rows.getRowsJS().map(([row]) => String(row)));
      } else {
        id = state.id;
        before = state.deleted;
        if (state.plugin !== plugin || state.osType !== osType) {
          await this.c.run(
            "UPDATE dataviews SET plugin = $plugin, os_type = $os WHERE id = $id",
            { plugin, os: osType, id },
            { plugin: VARCHAR, os: VARCHAR, id: INTEGER },
          );
        }
      }
      const deleted = deletedAfter(before, input);
      const touched = [...input.updated.filter((row) => before.has(row)), ...input.deleted];
      if (touched.length > 0) {
        await this.c.run(
          "DELETE FROM dataview_deletes WHERE dataview_id = $id AND list_contains($rows, row_name)",
          { id, rows: listValue(touched) },
          { id: INTEGER, rows: TEXT_LIST },
        );
      }
      if (input.deleted.length > 0) {
        await this.c.run(
          "INSERT INTO dataview_deletes SELECT $id, unnest($rows)",
          { id, rows: listValue([...input.deleted]) },
          { id: INTEGER, rows: TEXT_LIST },
        );
      }
      this.pending.dataviews.set(key, { id, plugin, osType, deleted });
    }
  }

  /** Bulk-inserts the samples of `cells` (their `chunks`); widens the pending time span. */
  private async appendSamples(cells: SampleRows, chunks: Iterable<DuckDBDataChunk>): Promise<void> {
    if (cells.rows.length === 0) return;
    let span = this.pending.span;
    for (const { at } of cells.rows) {
      if (span === null) span = { firstMs: at, lastMs: at };
      else if (at < span.firstMs) span.firstMs = at;
      else if (at > span.lastMs) span.lastMs = at;
    }
    await this.samples.append(chunks);
    this.pending.span = span;
  }
}

function checkProbe(p: ProbeUpsert): void {
  checkText("gateway name", p.gateway);
  checkText("probe name", p.probe);
  checkText("probe OS type", p.osType);
  if (p.hostname !== null) checkText("probe host name", p.hostname);
  checkTime("probe update time", p.at);
}

function checkDataview(d: DataviewInput): void {
  checkEntityKey(d.entity);
  checkText("sampler name", d.sampler);
  checkText("sampler type", d.samplerType);
  checkText("dataview name", d.dataview);
  checkText("plug-in name", d.plugin);
  checkText("OS type", d.osType);
  for (const row of d.updated) checkText("row name", row);
  for (const row of d.deleted) checkText("row name", row);
}
