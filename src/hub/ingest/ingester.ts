/**
 * Hub ingest (DESIGN 1 "Hand-offs", 5.1, 5.5): turns deliveries (messages with their envelope ids)
 * into entity upserts, metric samples and event records, and commits each batch in one store
 * transaction.
 *
 * - Every message is checked first: not JSON, not public-v2, beyond a limit of the setup's `limits`,
 *   or holding a string that is not well-formed Unicode → rejected with the reason (the caller
 *   dead-letters it or reports it, and counts a limit's refusals).
 * - De-duplication happens inside the transaction (`claim`): a message id stored before is skipped,
 *   so redelivery and replay never count twice, also across hubs sharing one database. A message
 *   without an id is known by the SHA-256 of its JSON text.
 * - A batch the store refuses as data (`StoreDataError`: a series limit, text it cannot hold) is
 *   split in halves until the one message at fault is found; it is rejected and the rest stored.
 *   Any other store error is an outage: it is thrown and the caller retries the batch with back-off.
 * - The ingester's caches (the key texts of known entities and probes) change only after the commit. They bound
 *   what a client can add (`hub.maxEntities`) and save upserts; what the hub answers comes from the
 *   store: a probe's OS type and host name are a row of the store's `probes`, which every entity
 *   of the probe shows, whichever hub received the probe message; the plug-in and OS type of a
 *   dataview, and its deleted rows, go to the store with each batch (`IngestBatch.dataviews`).
 *
 * Messages are dispatched by type through one record, so a new message type fails to compile until
 * handled (STYLE 6).
 */
import type { Logger } from "pino";
import { DEFAULT_MAX_ENTITIES } from "../../config/defaults.js";
import { asEpochMs } from "../../ids.js";
import { type DataLimits, DEFAULT_DATA_LIMITS } from "../../limits/data-limits.js";
import type { MessageOf, MessageType, PublicV2Message } from "../../messages/types.js";
import { type SampleCells, SampleRowsBuilder } from "../store/sample-rows.js";
import {
  type DataviewInput,
  type EntityKey,
  type EntityUpsert,
  type EventInput,
  type ProbeUpsert,
  type Store,
  StoreDataError,
} from "../store/store.js";
import {
  type Checked,
  CheckedPart,
  type CheckedTextDelivery,
  checkInto,
  entityKeyText,
  type MetricsRow,
  type Rejection,
} from "./check-message.js";
import { entityAttributes } from "./entity-attributes.js";

export {
  CheckedPart,
  type CheckedTextDelivery,
  messageKey,
  numericValue,
  type Rejection,
  wellFormedJsonText,
} from "./check-message.js";

/** The `at` of an entity the hub creates from metrics alone: older than any real update. */
const EPOCH_START = new Date(0).toISOString();

const probeKeyText = (gateway: string, probe: string): string => JSON.stringify([gateway, probe]);

export interface IngestResult {
  /** Messages newly stored. */
  readonly stored: number;
  /** Messages skipped because their id was stored before. */
  readonly duplicates: number;
  readonly rejected: readonly Rejection[];
}

/** What one transaction writes, with the cache changes it makes once committed. */
class BatchBuilder {
  readonly entities = new Map<string, EntityUpsert>();
  /** Samples in columns: one object per row of the part's cells, none per cell. */
  readonly rows: SampleRowsBuilder;
  /** One key object per entity the batch's samples name, so the store resolves a run of rows once. */
  readonly sampleEntities = new Map<string, EntityKey>();
  readonly events: EventInput[] = [];
  readonly probes = new Map<string, ProbeUpsert>();
  /** {@link entityKeyText} of the entities the batch upserts. */
  readonly known = new Set<string>();
  /** Per dataview: the last message's filter, and per row whether its last message deletes it. */
  readonly dataviews = new Map<string, DataviewChange>();
  /**
   * The entity and dataview of the last row of metrics: the rows of a part mostly come in runs of one
   * dataview (every row of a table at one instant), and each after the first needs no key text.
   */
  lastRow: { readonly row: MetricsRow; readonly key: EntityKey; readonly change: DataviewChange } | undefined;

  constructor(cells: SampleCells) {
    this.rows = new SampleRowsBuilder(cells);
  }
}

interface DataviewChange {
  readonly entity: EntityKey;
  readonly sampler: string;
  readonly samplerType: string;
  readonly dataview: string;
  plugin: string;
  osType: string;
  readonly rows: Map<string, boolean>;
}

/** The key of a dataview in a batch: its entity's key text and its names, length-prefixed. */
const dataviewKeyText = (
  entityText: string,
  sampler: string,
  samplerType: string,
  dataview: string,
): string =>
  `${entityText}${sampler.length}:${sampler}${samplerType.length}:${samplerType}${dataview.length}:${dataview}`;

type Handlers = {
  [T in MessageType]: (message: MessageOf<T>, batch: BatchBuilder) => void;
};

export interface IngesterOptions {
  /**
   * Most entities (and most probes) the hub holds (`hub.maxEntities`, default DEFAULT_MAX_ENTITIES):
   * a message that would add one more is refused with the reason, so no client can grow the hub's
   * entity caches without bound.
   */
  readonly maxEntities?: number;
  /** Called with the seconds each committed store transaction took (self-metrics). */
  readonly onCommit?: (seconds: number) => void;
  /**
   * The setup's `limits` (DESIGN 5.4b; default DEFAULT_DATA_LIMITS): a message beyond one is
   * rejected with the reason and the limit (message-limits.ts).
   */
  readonly limits?: DataLimits;
}

export class Ingester {
  /** Probes this hub knows the store holds (probeKeyText), to bound them by `maxEntities`. */
  private readonly probes = new Set<string>();
  /**
   * {@link entityKeyText} of every entity the store holds: only the key text, at most three names
   * of `limits.nameBytes` each, so `hub.maxEntities` bounds its bytes as well as its count.
   */
  private readonly entities = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Counters for the status page. */
  readonly counts = { stored: 0, duplicates: 0, rejected: 0, batches: 0 };

  private readonly handlers: Handlers = {
    // One probe row: entities show its details when read (the store joins them), none is rewritten.
    probe: (message, batch) => {
      const { gateway, probe } = message.data.target;
      const { osType, HostName } = message.data.parameters;
      batch.probes.set(probeKeyText(gateway, probe), {
        gateway,
        probe,
        osType,
        hostname: HostName ?? null,
        at: asEpochMs(Date.parse(message.data.timestamp)),
        fallback: false,
      });
    },
    managedEntity: (message, batch) => {
      this.upsert(
        batch,
        message.data.target,
        message.data.attributes,
        message.operation === "delete",
        message.data.timestamp,
      );
    },
    // An update comes as its row (check-message.ts, `Checked.row`); a delete marks its row (the
    // headlines) deleted in its dataview.
    headline: (message, batch) => this.deleted(message, batch),
    table: (message, batch) => this.deleted(message, batch),
    severity: (message, batch) => this.event(message, batch),
    snooze: (message, batch) => this.event(message, batch),
    userassignment: (message, batch) => this.event(message, batch),
  };

  private readonly maxEntities: number;
  private readonly onCommit: ((seconds: number) => void) | undefined;
  /** The limits every message is checked against. */
  readonly limits: DataLimits;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    options: IngesterOptions = {},
  ) {
    this.maxEntities = options.maxEntities ?? DEFAULT_MAX_ENTITIES;
    this.onCommit = options.onCommit;
    this.limits = options.limits ?? DEFAULT_DATA_LIMITS;
  }

  /** Loads what the store already knows of entities, so a restarted hub keeps their attributes. */
  async init(): Promise<void> {
    for (const entity of await this.store.listEntities({ includeDeleted: true })) {
      const a = entity.attributes;
      const key = {
        gateway: a["svc.gateway"] ?? "",
        probe: a["svc.probe"] ?? "",
        managedEntity: a["svc.name"] ?? "",
      };
      this.entities.add(entityKeyText(key));
    }
    for (const p of await this.store.listProbes()) this.probes.add(probeKeyText(p.gateway, p.probe));
  }

  /**
   * Checks, de-duplicates and commits `deliveries` and resolves once the store has committed them.
   * Calls run one after another, so batches commit in the order they were handed in. Rejects only
   * when the store is unavailable (the caller retries the same batch later).
   *
   * The messages are checked (schema, Unicode, time, de-duplication key) at the call, before the
   * batch waits for the ones ahead of it: a caller that hands in one part of a large batch after
   * another (backfill) checks the next part while the store commits the previous one.
   */
  ingest(deliveries: readonly CheckedTextDelivery[]): Promise<IngestResult> {
    let part: CheckedPart;
    try {
      part = this.check(deliveries);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.ingestChecked(part);
  }

  /**
   * Checks `deliveries` and adds them to `part` (a new part when absent), which it returns: a
   * caller that reads a large batch a slice at a time (backfill) checks each slice as it is read,
   * in short steps between which the store's callbacks run, then hands the part to
   * {@link ingestChecked}. Indexes of rejections count from the part's first delivery.
   */
  check(deliveries: readonly CheckedTextDelivery[], part: CheckedPart = new CheckedPart()): CheckedPart {
    checkInto(deliveries, part, this.limits);
    return part;
  }

  /** {@link ingest} of a part checked before (see {@link check}). */
  ingestChecked(part: CheckedPart): Promise<IngestResult> {
    const run = this.queue.then(() => this.run(part));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async run({ checked, rejected, cells }: CheckedPart): Promise<IngestResult> {
    const tally = { stored: 0, duplicates: 0 };
    await this.commit(checked, cells, rejected, tally);
    rejected.sort((a, b) => a.index - b.index);
    this.counts.stored += tally.stored;
    this.counts.duplicates += tally.duplicates;
    this.counts.rejected += rejected.length;
    this.counts.batches += 1;
    this.logger.debug({ ...tally, rejected: rejected.length }, "ingested a batch");
    return { ...tally, rejected };
  }

  /** Commits `items` in one transaction; on a data error, halves and tries each half. */
  private async commit(
    items: readonly Checked[],
    cells: SampleCells,
    rejected: Rejection[],
    tally: { stored: number; duplicates: number },
  ): Promise<void> {
    if (items.length === 0) return;
    try {
      const started = performance.now();
      const { batch, fresh } = await this.store.transaction(async (tx) => {
        const isNew = await tx.claim(items.map((item) => item.key));
        const batch = new BatchBuilder(cells);
        let fresh = 0;
        items.forEach((item, i) => {
          if (isNew[i] !== true) return;
          fresh += 1;
          if (item.row !== undefined) {
            this.metrics(item.row, batch, item);
            return;
          }
          const handle = this.handlers[item.message.type] as (m: PublicV2Message, b: BatchBuilder) => void;
          handle(item.message, batch);
        });
        this.checkEntityLimit(batch);
        await tx.write({
          entities: [...batch.entities.values()],
          samples: [],
          rows: batch.rows,
          events: batch.events,
          probes: [...batch.probes.values()],
          dataviews: dataviewInputs(batch.dataviews),
        });
        return { batch, fresh };
      });
      this.onCommit?.((performance.now() - started) / 1000);
      // Committed: only now do the caches learn what the batch changed.
      for (const k of batch.probes.keys()) this.probes.add(k);
      for (const k of batch.known) this.entities.add(k);
      tally.stored += fresh;
      tally.duplicates += items.length - fresh;
    } catch (error) {
      if (!isStoreDataError(error)) throw error;
      if (items.length === 1) {
        const item = items[0] as Checked;
        rejected.push({ index: item.index, reason: `the store refused it: ${error.message}` });
        return;
      }
      const middle = Math.ceil(items.length / 2);
      await this.commit(items.slice(0, middle), cells, rejected, tally);
      await this.commit(items.slice(middle), cells, rejected, tally);
    }
  }

  /** Refuses the batch (a StoreDataError, so it is split down to the messages at fault) past `maxEntities`. */
  private checkEntityLimit(batch: BatchBuilder): void {
    const added = (fresh: Iterable<string>, known: { has(key: string): boolean }): number => {
      let n = 0;
      for (const key of fresh) if (!known.has(key)) n += 1;
      return n;
    };
    const entities = this.entities.size + added(batch.known, this.entities);
    const probes = this.probes.size + added(batch.probes.keys(), this.probes);
    if (entities > this.maxEntities || probes > this.maxEntities) {
      const what = entities > this.maxEntities ? "entities" : "probes";
      throw new StoreDataError(
        `it would make the hub hold more than ${this.maxEntities} ${what}, the limit (hub.maxEntities)`,
      );
    }
  }

  private upsert(
    batch: BatchBuilder,
    key: EntityKey,
    user: Readonly<Record<string, string>>,
    deleted: boolean,
    timestamp: string,
  ): void {
    const text = entityKeyText(key);
    const plainKey = { gateway: key.gateway, probe: key.probe, managedEntity: key.managedEntity };
    batch.known.add(text);
    batch.entities.set(text, {
      key: plainKey,
      // Without the probe's details: the store shows its probe row's (a probe message's, or the
      // fallback of metrics) on every entity of the probe.
      attributes: entityAttributes(plainKey, undefined, user),
      deleted,
      at: asEpochMs(Date.parse(timestamp)),
    });
  }

  /** The row of a headline or table update, over the cells checking made of it. */
  private metrics(row: MetricsRow, batch: BatchBuilder, item: Checked): void {
    const last = batch.lastRow;
    let key: EntityKey;
    let change: DataviewChange;
    if (
      last !== undefined &&
      last.row.entityText === row.entityText &&
      last.row.dataview === row.dataview &&
      last.row.sampler === row.sampler &&
      last.row.samplerType === row.samplerType
    ) {
      // The last row's entity and dataview: its probe and entity are in the batch or the caches
      // already, and it has its dataview's change.
      key = last.key;
      change = last.change;
    } else {
      key = this.rowEntity(row, batch);
      change = this.dataviewChange(batch, key, row.entityText, row.sampler, row.samplerType, row.dataview);
      batch.lastRow = { row, key, change };
    }
    batch.rows.row(key, row.sampler, row.samplerType, row.dataview, row.row, row.at, item.start, item.end);
    change.plugin = row.pluginName;
    change.osType = row.osType;
    change.rows.set(row.row, false);
  }

  /** The key of a row's entity, with the probe and entity added to the batch when the hub does not know them. */
  private rowEntity(row: MetricsRow, batch: BatchBuilder): EntityKey {
    const text = row.entityText;
    let key = batch.sampleEntities.get(text);
    if (key === undefined) {
      key = { gateway: row.gateway, probe: row.probe, managedEntity: row.managedEntity };
      batch.sampleEntities.set(text, key);
    }
    const probeKey = probeKeyText(key.gateway, key.probe);
    if (!this.probes.has(probeKey) && !batch.probes.has(probeKey)) {
      // A probe this hub has not heard of: its OS type from the metrics, stored only when the
      // store holds no row of it (another hub's probe message wins).
      batch.probes.set(probeKey, {
        gateway: key.gateway,
        probe: key.probe,
        osType: row.osType,
        hostname: null,
        at: row.at,
        fallback: true,
      });
    }
    if (!this.entities.has(text) && !batch.known.has(text)) {
      // Metrics for an entity the hub has not seen announced (e.g. a backfill of metrics only).
      // As old as can be: the managed entity's own message, whenever it arrives (batches may be
      // stored out of order after a retry or by several hubs), replaces these attributes.
      this.upsert(batch, key, {}, false, EPOCH_START);
    }
    return key;
  }

  /** A headline or table `delete`: its row ("" for the headlines) is deleted in its dataview. */
  private deleted(message: MessageOf<"headline"> | MessageOf<"table">, batch: BatchBuilder): void {
    if (message.operation !== "delete") return;
    const t = message.data.target;
    const key = { gateway: t.gateway, probe: t.probe, managedEntity: t.managedEntity };
    const change = this.dataviewChange(batch, key, entityKeyText(key), t.sampler, t.type, t.dataview);
    change.plugin = t.filter.pluginName;
    change.osType = t.filter.osType;
    change.rows.set(t.row ?? "", true);
  }

  private dataviewChange(
    batch: BatchBuilder,
    entity: EntityKey,
    entityText: string,
    sampler: string,
    samplerType: string,
    dataview: string,
  ): DataviewChange {
    const key = dataviewKeyText(entityText, sampler, samplerType, dataview);
    let change = batch.dataviews.get(key);
    if (change === undefined) {
      change = { entity, sampler, samplerType, dataview, plugin: "", osType: "", rows: new Map() };
      batch.dataviews.set(key, change);
    }
    return change;
  }

  private event(
    message: MessageOf<"severity"> | MessageOf<"snooze"> | MessageOf<"userassignment">,
    batch: BatchBuilder,
  ): void {
    const { target, timestamp, data } = message.data;
    const entity: EntityKey | null =
      target.probe !== undefined && target.managedEntity !== undefined
        ? { gateway: target.gateway, probe: target.probe, managedEntity: target.managedEntity }
        : null;
    batch.events.push({
      type: message.type,
      operation: message.operation,
      at: asEpochMs(Date.parse(timestamp)),
      entity,
      target,
      payload: data as unknown as Readonly<Record<string, unknown>>,
    });
  }
}

/** What the store is told of each dataview of a batch. */
function dataviewInputs(changes: ReadonlyMap<string, DataviewChange>): DataviewInput[] {
  const inputs: DataviewInput[] = [];
  for (const c of changes.values()) {
    const updated: string[] = [];
    const deleted: string[] = [];
    for (const [row, isDeleted] of c.rows) (isDeleted ? deleted : updated).push(row);
    inputs.push({
      entity: c.entity,
      sampler: c.sampler,
      samplerType: c.samplerType,
      dataview: c.dataview,
      plugin: c.plugin,
      osType: c.osType,
      updated,
      deleted,
    });
  }
  return inputs;
}

function isStoreDataError(error: unknown): error is StoreDataError {
  return error instanceof StoreDataError || (error instanceof Error && error.name === "StoreDataError");
}
