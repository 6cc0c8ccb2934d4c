/**
 * One transaction of the PostgreSQL store (DESIGN 1, 5.5): message claims and batch writes on the
 * connection `sql.begin` reserved, between its BEGIN and COMMIT.
 *
 * A write runs in three steps:
 * 1. checks that need no database (data-checks.ts, and U+0000 for PostgreSQL text);
 * 2. the weekly `samples` partitions the batch needs, created when missing (postgres-partitions.ts);
 * 3. everything else inside a SAVEPOINT: entity upserts, entities named only by samples or events,
 *    series ids (the transaction's own, the bounded cache, one lookup for the misses, one insert
 *    for the new ones after the `maxSeriesPerEntity` check), samples by COPY, events.
 * A refusal in step 3 (the series limit, or a PostgreSQL data exception) rolls back to the savepoint
 * and is a StoreDataError: nothing of the batch is written and the transaction stays usable.
 *
 * Several hubs may write one database at once, so nothing here trusts in-process state for
 * correctness: entity and series rows are inserted with `ON CONFLICT` on their unique keys (a
 * concurrent insert of the same key waits for the other transaction, then finds its row), and locks
 * are taken in one order everywhere (entities by key, series by entity and names, origins by name),
 * so two hubs never wait on each other in a cycle. The caches only save lookups; what a write
 * learnt reaches them after COMMIT, so a rolled-back transaction leaves no id the database lacks.
 */
import type { PostgresError, Sql, TransactionSql } from "postgres";
import { asEntityId, type EntityId } from "../../../ids.js";
import { byCodePoint } from "../core/message-claims.js";
import {
  entityKeyString,
  rowKeyString,
  seriesKeyOf,
  seriesKeyString,
  storedAttributes,
} from "../core/store-keys.js";
import {
  checkAttributes,
  checkEntityKey,
  checkEvent,
  checkText,
  checkTime,
  eachRowText,
} from "../data-checks.js";
import { type DataviewState, dataviewChanges, dataviewKeyString, deletedAfter } from "../dataviews.js";
import type { DigestForm } from "../message-digest.js";
import { QueuedTransaction } from "../queued-transaction.js";
import type { RecencyCache } from "../recency-cache.js";
import { type RowSeries, rowSeriesOf } from "../row-series.js";
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
import { checkBatchText, checkNoNul } from "./postgres-checks.js";
import { claimMessageKeys } from "./postgres-claims.js";
import { closedSafe } from "./postgres-closed.js";
import { copySamples } from "./postgres-copy.js";
import { insertEvents } from "./postgres-events.js";
import { createPartitions, createPartitionsInTransaction, weekOf } from "./postgres-partitions.js";
import { FALLBACK_PROBE_MS } from "./postgres-schema.js";

/** The caches of a PostgreSQL store, which a transaction reads and the store changes after COMMIT. */
export interface PgCaches {
  /** Entity ids by {@link entityKeyString}: entities are few, and their ids never change. */
  readonly entities: ReadonlyMap<string, EntityId>;
  /**
   * Series ids by row (the row's {@link rowKeyString}), then column (row-series.ts), bounded; a
   * miss is looked up in the database. An id is held negated while the series has held no number
   * (`numeric_series`): a numeric sample then flips the flag once (one sign test per sample).
   */
  readonly series: RecencyCache<string, RowSeries>;
  /** Weeks whose sample partitions exist. */
  readonly partitions: ReadonlySet<number>;
  /** How the database keeps message digests (message-digest.ts), fixed when it was created. */
  readonly digestForm: DigestForm;
  /** Dataview rows by {@link dataviewKeyString} (dataviews.ts), bounded. */
  readonly dataviews: ReadonlyMap<string, DataviewState>;
}

/** What a transaction learnt, applied to {@link PgCaches} once it commits. */
export interface PgPending {
  readonly entities: Map<string, EntityId>;
  /** By row, then column, as in {@link PgCaches.series}. */
  readonly series: Map<string, Map<string, number>>;
  readonly partitions: Set<number>;
  readonly dataviews: Map<string, DataviewState>;
}

/** PostgreSQL errors caused by the data written (SQLSTATE class 22, data exception). */
const isDataException = (error: unknown): error is PostgresError =>
  typeof error === "object" &&
  error !== null &&
  (error as { name?: unknown }).name === "PostgresError" &&
  String((error as { code?: unknown }).code).startsWith("22");

/** One distinct new-or-uncached series of a write. */
interface SeriesSlot {
  readonly entityId: EntityId;
  readonly entity: EntityKey;
  /** The row's key in the caches ({@link rowKeyString}). */
  readonly rowKey: string;
  readonly cacheKey: string;
  readonly series: SeriesKey;
  id: number | undefined;
  /** A cell of this write holds a number. */
  numeric: boolean;
  /** The database has the series as numeric already. */
  storedNumeric: boolean;
}

interface SeriesRow {
  id: number;
  entity_id: number;
  sampler: string;
  sampler_type: string;
  dataview: string;
  row_name: string;
  column_name: string;
  is_numeric?: boolean;
}

export class PgTransaction extends QueuedTransaction implements StoreTransaction {
  readonly pending: PgPending = {
    entities: new Map(),
    series: new Map(),
    partitions: new Set(),
    dataviews: new Map(),
  };
  /** This transaction wrote into `samples` (then holds a lock on it): partitions are made in it. */
  private wroteSamples = false;
  /** The earliest time of a sample this transaction wrote (compaction follows for a closed hour). */
  earliestSampleMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly sql: TransactionSql,
    private readonly pool: Sql,
    private readonly caches: PgCaches,
    private readonly maxSeriesPerEntity: number,
  ) {
    super();
  }

  claim(keys: readonly MessageKey[]): Promise<boolean[]> {
    return this.run(() => claimMessageKeys(this.sql, keys, this.caches.digestForm));
  }

  write(batch: IngestBatch): Promise<void> {
    return this.run(() => this.writeBatch(batch));
  }

  private async writeBatch(batch: IngestBatch): Promise<void> {
    const events = batch.events ?? [];
    for (const u of batch.entities) {
      checkEntityKey(u.key);
      checkAttributes(u.attributes);
      checkTime("entity update time", u.at);
    }
    const cells = sampleRowsOf(batch);
    checkRows(cells);
    for (const event of events) checkEvent(event);
    // U+0000 (postgres-checks.ts): `checkBatchText` covers the single samples, this the row form.
    checkBatchText(batch);
    if (batch.rows !== undefined) eachRowText(batch.rows, checkNoNul);

    await this.ensurePartitions(cells);

    const local: PgPending = {
      entities: new Map(),
      series: new Map(),
      partitions: new Set(),
      dataviews: new Map(),
    };
    const probes = batch.probes ?? [];
    for (const p of probes) checkProbe(p);
    const dataviews = batch.dataviews ?? [];
    for (const d of dataviews) checkDataview(d);
    try {
      await this.sql.savepoint(
        closedSafe(async (sql) => {
          for (const probe of sortedProbes(probes)) await upsertProbe(sql, probe);
          for (const upsert of sortedUpserts(batch.entities)) await this.upsertEntity(sql, upsert, local);
          const named = [...cells.rows.map((r) => r.entity), ...events.flatMap((e) => e.entity ?? [])];
          await this.createNamedEntities(sql, named, local);
          const ids = await this.resolveSeries(sql, cells, local);
          if (cells.rows.length > 0) {
            this.wroteSamples = true;
            await copySamples(sql, cells, ids);
          }
          if (events.length > 0) {
            const entityIds = events.map((e) =>
              e.entity === null ? null : (this.entityId(entityKeyString(e.entity), local) ?? null),
            );
            await insertEvents(sql, events, entityIds);
          }
          if (dataviews.length > 0) await this.writeDataviews(sql, dataviews, local);
        }),
      );
    } catch (error) {
      if (error instanceof StoreDataError) throw error;
      if (isDataException(error)) {
        throw new StoreDataError(`the store refused the data: ${error.message}`, { cause: error });
      }
      throw error;
    }
    for (const [k, v] of local.entities) this.pending.entities.set(k, v);
    for (const [rowKey, columns] of local.series) {
      const row = rowSeriesOf(this.pending.series, rowKey);
      for (const [column, id] of columns) row.set(column, id);
    }
    for (const [k, v] of local.dataviews) this.pending.dataviews.set(k, v);
  }

  /**
   * Creates the partitions of the weeks `samples` fall in that are not known to exist. On a pool
   * connection, in its own transaction, unless this transaction already wrote samples: it then
   * holds a lock on `samples` that the other connection would wait for, so it creates them itself.
   */
  private async ensurePartitions(cells: SampleRows): Promise<void> {
    const missing = new Set<number>();
    let lastWeek = Number.NaN;
    for (const row of cells.rows) {
      if (row.at < this.earliestSampleMs) this.earliestSampleMs = row.at;
      const week = weekOf(row.at);
      if (week === lastWeek) continue;
      lastWeek = week;
      if (!this.caches.partitions.has(week) && !this.pending.partitions.has(week)) missing.add(week);
    }
    if (missing.size === 0) return;
    const weeks = [...missing];
    if (this.wroteSamples) await createPartitionsInTransaction(this.sql, weeks);
    else await createPartitions(this.pool, weeks);
    for (const w of weeks) this.pending.partitions.add(w);
  }

  private entityId(key: string, local: PgPending): EntityId | undefined {
    return local.entities.get(key) ?? this.pending.entities.get(key) ?? this.caches.entities.get(key);
  }

  /**
   * Applies one upsert. One older than the state stored is ignored (a backfilled old record must
   * not undo a newer state); a deletion without attributes keeps the stored ones. The age test is
   * in the statement, so it holds against another hub's write too.
   */
  private async upsertEntity(sql: TransactionSql, u: EntityUpsert, local: PgPending): Promise<void> {
    const key = entityKeyString(u.key);
    const attributes = storedAttributes(u.attributes);
    const json = JSON.stringify(attributes);
    const keep = u.deleted && Object.keys(attributes).length === 0;
    const known = this.entityId(key, local);
    if (known !== undefined) {
      await sql`UPDATE entities SET
          attributes = CASE WHEN ${keep}::boolean THEN attributes ELSE ${json}::text::json END,
          is_deleted = ${u.deleted}, updated_ms = ${u.at}
        WHERE id = ${known} AND updated_ms <= ${u.at}`;
      return;
    }
    const [row] = await sql<{ id: number }[]>`
      INSERT INTO entities AS e (gateway, probe, managed_entity, attributes, is_deleted, updated_ms)
      VALUES (${u.key.gateway}, ${u.key.probe}, ${u.key.managedEntity}, ${json}::text::json, ${u.deleted}, ${u.at})
      ON CONFLICT (gateway, probe, managed_entity) DO UPDATE SET
        attributes = CASE WHEN ${keep}::boolean THEN e.attributes ELSE excluded.attributes END,
        is_deleted = excluded.is_deleted, updated_ms = excluded.updated_ms
      WHERE e.updated_ms <= excluded.updated_ms
      RETURNING id`;
    const id = row?.id ?? (await selectEntityIds(sql, [u.key])).get(key);
    if (id === undefined) throw new Error(`internal: entity ${key} has no id after its upsert`);
    local.entities.set(key, asEntityId(id));
  }

  /**
   * Entities that samples or events name but no upsert made: created with the built-in attributes
   * their key gives (DESIGN 5.1) and the oldest `updated_ms`, so the first real upsert replaces them.
   */
  private async createNamedEntities(
    sql: TransactionSql,
    keys: readonly EntityKey[],
    local: PgPending,
  ): Promise<void> {
    const missing = new Map<string, EntityKey>();
    let last: EntityKey | undefined;
    for (const k of keys) {
      if (k === last) continue;
      last = k;
      const key = entityKeyString(k);
      if (this.entityId(key, local) === undefined) missing.set(key, k);
    }
    if (missing.size === 0) return;
    const sorted = [...missing.entries()].sort(([a], [b]) => byCodePoint(a, b)).map(([, k]) => k);
    const builtIn = sorted.map((k) =>
      JSON.stringify(
        storedAttributes({ "svc.gateway": k.gateway, "svc.probe": k.probe, "svc.name": k.managedEntity }),
      ),
    );
    await sql`
      INSERT INTO entities (gateway, probe, managed_entity, attributes, is_deleted, updated_ms)
      SELECT g, p, m, a::json, false, -9223372036854775808
      FROM unnest(${sorted.map((k) => k.gateway)}::text[], ${sorted.map((k) => k.probe)}::text[],
                  ${sorted.map((k) => k.managedEntity)}::text[], ${builtIn}::text[]) WITH ORDINALITY AS n(g, p, m, a, ord)
      ORDER BY ord
      ON CONFLICT (gateway, probe, managed_entity) DO NOTHING`;
    const ids = await selectEntityIds(sql, sorted);
    for (const [key, id] of ids) local.entities.set(key, asEntityId(id));
  }

  /**
   * The series id of every cell, by cell index, creating the new series (after the series-limit
   * check). A row's key prefix is built once; each cell adds its column name to it.
   */
  private async resolveSeries(sql: TransactionSql, cells: SampleRows, local: PgPending): Promise<Int32Array> {
    const ids = new Int32Array(cells.cells.length);
    const slots: SeriesSlot[] = [];
    const slotOf = new Map<string, SeriesSlot>();
    const missCells: number[] = [];
    const missSlots: SeriesSlot[] = [];
    const flips: { id: number; rowKey: string; column: string }[] = [];
    const columns = cells.cells;
    let lastEntity: EntityKey | undefined;
    let entityId: EntityId | undefined;
    for (const r of cells.rows) {
      if (r.entity !== lastEntity) {
        lastEntity = r.entity;
        entityId = this.entityId(entityKeyString(r.entity), local);
      }
      if (entityId === undefined) throw new Error("internal: a sample's entity has no id");
      // The row's key once, then a lookup of each cell's column: no key text per cell.
      const rowKey = rowKeyString(entityId, r);
      const mine = local.series.size === 0 ? undefined : local.series.get(rowKey);
      const pending = this.pending.series.size === 0 ? undefined : this.pending.series.get(rowKey);
      const cached = this.caches.series.get(rowKey);
      for (let c = r.start; c < r.end; c++) {
        const column = columns.column(c);
        const hit = mine?.get(column) ?? pending?.get(column) ?? cached?.get(column);
        if (hit !== undefined) {
          if (hit > 0) ids[c] = hit;
          else {
            // A series that has held no number yet: this cell may flip it.
            ids[c] = -hit;
            if (!Number.isNaN(columns.value(c))) flips.push({ id: -hit, rowKey, column });
          }
          continue;
        }
        const cacheKey = seriesKeyOf(rowKey, column);
        let slot = slotOf.get(cacheKey);
        if (slot === undefined) {
          const series = {
            sampler: r.sampler,
            samplerType: r.samplerType,
            dataview: r.dataview,
            row: r.row,
            column,
          };
          slot = {
            entityId,
            entity: r.entity,
            rowKey,
            cacheKey,
            series,
            id: undefined,
            numeric: false,
            storedNumeric: false,
          };
          slotOf.set(cacheKey, slot);
          slots.push(slot);
        }
        if (!Number.isNaN(columns.value(c))) slot.numeric = true;
        missCells.push(c);
        missSlots.push(slot);
      }
    }
    const numeric = new Set<number>(flips.map((f) => f.id));
    if (slots.length > 0) {
      await this.lookupSeries(sql, slots);
      const fresh = slots.filter((slot) => slot.id === undefined);
      if (fresh.length > 0) {
        await this.checkSeriesLimit(sql, fresh);
        await this.insertSeries(sql, fresh);
      }
      for (const slot of slots) {
        if (slot.id === undefined) throw new Error("internal: a series has no id after its insert");
        if (slot.numeric && !slot.storedNumeric) numeric.add(slot.id);
        const known = slot.numeric || slot.storedNumeric;
        rowSeriesOf(local.series, slot.rowKey).set(slot.series.column, known ? slot.id : -slot.id);
      }
      missCells.forEach((c, m) => {
        ids[c] = (missSlots[m] as SeriesSlot).id as number;
      });
    }
    if (numeric.size > 0) {
      await sql`INSERT INTO numeric_series SELECT unnest(${[...numeric].sort((a, b) => a - b)}::int[])
        ON CONFLICT DO NOTHING`;
      for (const flip of flips) rowSeriesOf(local.series, flip.rowKey).set(flip.column, flip.id);
    }
    return ids;
  }

  /** Finds stored ids of `slots` (this transaction's rows and other hubs' committed ones included). */
  private async lookupSeries(sql: TransactionSql, slots: readonly SeriesSlot[]): Promise<void> {
    const rows = await sql<SeriesRow[]>`
      SELECT s.id, s.entity_id, s.sampler, s.sampler_type, s.dataview, s.row_name, s.column_name,
             EXISTS (SELECT 1 FROM numeric_series n WHERE n.series_id = s.id) AS is_numeric
      FROM series s
      JOIN unnest(${slots.map((x) => x.entityId)}::int[], ${slots.map((x) => x.series.sampler)}::text[],
                  ${slots.map((x) => x.series.samplerType)}::text[], ${slots.map((x) => x.series.dataview)}::text[],
                  ${slots.map((x) => x.series.row)}::text[], ${slots.map((x) => x.series.column)}::text[])
        AS k(entity_id, sampler, sampler_type, dataview, row_name, column_name)
      USING (entity_id, sampler, sampler_type, dataview, row_name, column_name)`;
    assignIds(slots, rows);
  }

  /**
   * Refuses the write when an entity would pass `maxSeriesPerEntity`, counting the series stored
   * now (one statement). Two hubs adding series to one entity at the same instant may each pass
   * the check and together exceed the limit by at most one batch's new series.
   */
  private async checkSeriesLimit(sql: TransactionSql, fresh: readonly SeriesSlot[]): Promise<void> {
    const added = new Map<EntityId, { entity: EntityKey; count: number }>();
    for (const slot of fresh) {
      const a = added.get(slot.entityId);
      if (a === undefined) added.set(slot.entityId, { entity: slot.entity, count: 1 });
      else a.count += 1;
    }
    const rows = await sql<{ entity_id: number; n: string }[]>`
      SELECT entity_id, count(*) AS n FROM series WHERE entity_id = ANY(${[...added.keys()]}::int[])
      GROUP BY entity_id`;
    const stored = new Map(rows.map((r) => [r.entity_id, Number(r.n)]));
    for (const [id, a] of added) {
      const before = stored.get(id) ?? 0;
      const after = before + a.count;
      if (after > this.maxSeriesPerEntity) {
        const e = a.entity;
        throw new StoreDataError(
          `entity ${JSON.stringify(e.managedEntity)} of probe ${JSON.stringify(e.probe)} on gateway ` +
            `${JSON.stringify(e.gateway)} would have ${after} series (${before} stored, ${a.count} new), ` +
            `more than the limit of ${this.maxSeriesPerEntity} (maxSeriesPerEntity)`,
        );
      }
    }
  }

  /** Inserts new series in key order; a row another hub inserted meanwhile is read back instead. */
  private async insertSeries(sql: TransactionSql, fresh: readonly SeriesSlot[]): Promise<void> {
    const sorted = [...fresh].sort((a, b) => a.entityId - b.entityId || byCodePoint(a.cacheKey, b.cacheKey));
    const rows = await sql<SeriesRow[]>`
      INSERT INTO series (entity_id, sampler, sampler_type, dataview, row_name, column_name)
      SELECT entity_id, sampler, sampler_type, dataview, row_name, column_name
      FROM unnest(${sorted.map((x) => x.entityId)}::int[], ${sorted.map((x) => x.series.sampler)}::text[],
                  ${sorted.map((x) => x.series.samplerType)}::text[], ${sorted.map((x) => x.series.dataview)}::text[],
                  ${sorted.map((x) => x.series.row)}::text[], ${sorted.map((x) => x.series.column)}::text[])
        WITH ORDINALITY AS k(entity_id, sampler, sampler_type, dataview, row_name, column_name, ord)
      ORDER BY ord
      ON CONFLICT (entity_id, sampler, sampler_type, dataview, row_name, column_name) DO NOTHING
      RETURNING id, entity_id, sampler, sampler_type, dataview, row_name, column_name`;
    assignIds(sorted, rows);
    const raced = sorted.filter((slot) => slot.id === undefined);
    if (raced.length > 0) await this.lookupSeries(sql, raced);
    // Every series has its dataview row (its id, DESIGN 5.1 `includeMappings`); in key order.
    const dataviews = new Map<string, SeriesSlot>();
    for (const slot of sorted)
      dataviews.set(`${slot.entityId}|${dataviewKeyString(slot.entity, slot.series)}`, slot);
    const list = [...dataviews.values()];
    await sql`
      INSERT INTO dataviews (entity_id, sampler, sampler_type, dataview)
      SELECT * FROM unnest(${list.map((x) => x.entityId)}::int[], ${list.map((x) => x.series.sampler)}::text[],
                           ${list.map((x) => x.series.samplerType)}::text[], ${list.map((x) => x.series.dataview)}::text[])
      ON CONFLICT DO NOTHING`;
  }

  /**
   * Records the plug-in, OS type and deleted rows of the batch's dataviews whose cached state they
   * change (dataviews.ts). A dataview whose entity the store does not hold is skipped. The upsert
   * reads back the deleted rows, so a hub that had not cached the dataview learns what another
   * hub recorded.
   */
  private async writeDataviews(
    sql: TransactionSql,
    inputs: readonly DataviewInput[],
    local: PgPending,
  ): Promise<void> {
    const work = inputs
      .map((input) => ({ input, key: dataviewKeyString(input.entity, input) }))
      .filter(({ input, key }) =>
        dataviewChanges(
          local.dataviews.get(key) ?? this.pending.dataviews.get(key) ?? this.caches.dataviews.get(key),
          input,
        ),
      )
      .sort((a, b) => byCodePoint(a.key, b.key));
    for (const { input, key } of work) {
      const entity = this.entityId(entityKeyString(input.entity), local);
      if (entity === undefined) continue;
      const [row] = await sql<{ id: number; deleted: string[] }[]>`
        INSERT INTO dataviews AS d (entity_id, sampler, sampler_type, dataview, plugin, os_type)
        VALUES (${entity}, ${input.sampler}, ${input.samplerType}, ${input.dataview}, ${input.plugin}, ${input.osType})
        ON CONFLICT (entity_id, sampler, sampler_type, dataview) DO UPDATE SET
          plugin = excluded.plugin, os_type = excluded.os_type
        RETURNING id, ARRAY(SELECT row_name FROM dataview_deletes x WHERE x.dataview_id = d.id) AS deleted`;
      if (row === undefined) throw new Error("internal: a dataview has no id after its upsert");
      const before = new Set(row.deleted);
      const deleted = deletedAfter(before, input);
      const cleared = input.updated.filter((r) => before.has(r));
      if (cleared.length > 0) {
        await sql`DELETE FROM dataview_deletes WHERE dataview_id = ${row.id} AND row_name = ANY(${cleared}::text[])`;
      }
      if (input.deleted.length > 0) {
        await sql`INSERT INTO dataview_deletes SELECT ${row.id}, unnest(${[...input.deleted]}::text[])
          ON CONFLICT DO NOTHING`;
      }
      local.dataviews.set(key, { id: row.id, plugin: input.plugin, osType: input.osType, deleted });
    }
  }
}

/** Probes in key order (locks in one order across hubs), each probe's upserts still in order. */
function sortedProbes(probes: readonly ProbeUpsert[]): ProbeUpsert[] {
  return probes
    .map((p, i) => ({ p, i, key: JSON.stringify([p.gateway, p.probe]) }))
    .sort((a, b) => byCodePoint(a.key, b.key) || a.i - b.i)
    .map(({ p }) => p);
}

/**
 * A probe's details: a probe message replaces what is stored unless it is older (the test is in
 * the statement, so it holds against another hub's write); the fallback from metrics is stored
 * only when the probe has no row.
 */
async function upsertProbe(sql: TransactionSql, p: ProbeUpsert): Promise<void> {
  const os = p.osType === "" ? null : p.osType;
  const host = p.hostname === "" ? null : p.hostname;
  if (p.fallback) {
    await sql`INSERT INTO probes VALUES (${p.gateway}, ${p.probe}, ${os}, ${host}, ${FALLBACK_PROBE_MS})
      ON CONFLICT DO NOTHING`;
    return;
  }
  await sql`INSERT INTO probes AS p VALUES (${p.gateway}, ${p.probe}, ${os}, ${host}, ${p.at})
    ON CONFLICT (gateway, probe) DO UPDATE SET os_type = excluded.os_type, hostname = excluded.hostname,
      updated_ms = excluded.updated_ms
    WHERE p.updated_ms <= excluded.updated_ms`;
}

function checkProbe(p: ProbeUpsert): void {
  for (const [what, text] of [
    ["gateway name", p.gateway],
    ["probe name", p.probe],
    ["probe OS type", p.osType],
    ["probe host name", p.hostname ?? ""],
  ] as const) {
    checkText(what, text);
    checkNoNul(what, text);
  }
  checkTime("probe update time", p.at);
}

function checkDataview(d: DataviewInput): void {
  checkEntityKey(d.entity);
  const texts: [string, string][] = [
    ["gateway name", d.entity.gateway],
    ["probe name", d.entity.probe],
    ["managed entity name", d.entity.managedEntity],
    ["sampler name", d.sampler],
    ["sampler type", d.samplerType],
    ["dataview name", d.dataview],
    ["plug-in name", d.plugin],
    ["OS type", d.osType],
  ];
  for (const row of [...d.updated, ...d.deleted]) texts.push(["row name", row]);
  for (const [what, text] of texts) {
    checkText(what, text);
    checkNoNul(what, text);
  }
}

/** Stable sort of upserts by entity key: locks in one order, each entity's upserts still in order. */
function sortedUpserts(upserts: readonly EntityUpsert[]): EntityUpsert[] {
  return upserts
    .map((u, i) => ({ u, i, key: entityKeyString(u.key) }))
    .sort((a, b) => byCodePoint(a.key, b.key) || a.i - b.i)
    .map(({ u }) => u);
}

async function selectEntityIds(
  sql: TransactionSql,
  keys: readonly EntityKey[],
): Promise<Map<string, number>> {
  const rows = await sql<{ id: number; gateway: string; probe: string; managed_entity: string }[]>`
    SELECT e.id, e.gateway, e.probe, e.managed_entity FROM entities e
    JOIN unnest(${keys.map((k) => k.gateway)}::text[], ${keys.map((k) => k.probe)}::text[],
                ${keys.map((k) => k.managedEntity)}::text[]) AS k(gateway, probe, managed_entity)
    USING (gateway, probe, managed_entity)`;
  return new Map(
    rows.map((r) => [
      entityKeyString({ gateway: r.gateway, probe: r.probe, managedEntity: r.managed_entity }),
      r.id,
    ]),
  );
}

function assignIds(slots: readonly SeriesSlot[], rows: readonly SeriesRow[]): void {
  const byKey = new Map(slots.map((slot) => [slot.cacheKey, slot]));
  for (const r of rows) {
    const key = seriesKeyString(asEntityId(r.entity_id), {
      sampler: r.sampler,
      samplerType: r.sampler_type,
      dataview: r.dataview,
      row: r.row_name,
      column: r.column_name,
    });
    const slot = byKey.get(key);
    if (slot !== undefined) {
      slot.id = r.id;
      slot.storedNumeric = r.is_numeric === true;
    }
  }
}

/**
 * Checks what the cells hold before anything is written: times, and the names and texts of each row
 * and cell as Unicode (data-checks.ts).
 */
function checkRows(rows: SampleRows): void {
  for (const r of rows.rows) checkTime("sample time", r.at);
  eachRowText(rows, checkText);
}
