/**
 * Hub ingest (DESIGN 1 "Hand-offs", 5.1, 5.5): turns deliveries (messages with their envelope ids)
 * into entity upserts, metric samples and event records, and commits each batch in one store
 * transaction.
 *
 * - Every message is checked first: not JSON, not public-v2, or holding a string that is not
 *   well-formed Unicode → rejected with the reason (the caller dead-letters it or reports it).
 * - De-duplication happens inside the transaction (`claim`): a message id stored before is skipped,
 *   so redelivery and replay never count twice, also across hubs sharing one database. A message
 *   without an id is known by the SHA-256 of its JSON text.
 * - A batch the store refuses as data (`StoreDataError`: a series limit, text it cannot hold) is
 *   split in halves until the one message at fault is found; it is rejected and the rest stored.
 *   Any other store error is an outage: it is thrown and the caller retries the batch with back-off.
 * - The ingester's caches (known entities and probes) change only after the commit.
 *
 * Messages are dispatched by type through one record, so a new message type fails to compile until
 * handled (STYLE 6).
 */
import { hash } from "node:crypto";
import type { Logger } from "pino";
import type { Delivery } from "../../bus/bus.js";
import { parseMessageId } from "../../bus/envelope.js";
import { DEFAULT_MAX_ENTITIES } from "../../config/defaults.js";
import { asEpochMs, type EpochMs } from "../../ids.js";
import type { MessageOf, MessageType, PublicV2Message } from "../../messages/types.js";
import { validateMessage } from "../../messages/validate.js";
import { isWellFormed } from "../../text/well-formed.js";
import { SampleCells, SampleRowsBuilder } from "../store/sample-rows.js";
import {
  type EntityKey,
  type EntityUpsert,
  type EventInput,
  type MessageKey,
  type Store,
  StoreDataError,
} from "../store/store.js";
import { isCanonicalJson } from "./canonical-json.js";
import { entityAttributes, type ProbeInfo, userAttributesOf } from "./entity-attributes.js";

/** A cell value that is a plain decimal number (no blanks, units, hex or Infinity). */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The numeric value of a published cell, or null when it is not a number. */
export function numericValue(text: string): number | null {
  const trimmed = text.trim();
  if (!NUMBER.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : null;
}

/** The `at` of an entity the hub creates from metrics alone: older than any real update. */
const EPOCH_START = new Date(0).toISOString();

const entityKeyText = (key: EntityKey): string => JSON.stringify([key.gateway, key.probe, key.managedEntity]);
const probeKeyText = (gateway: string, probe: string): string => JSON.stringify([gateway, probe]);

interface KnownEntity {
  readonly key: EntityKey;
  readonly user: Readonly<Record<string, string>>;
  readonly deleted: boolean;
}

/** One message rejected by the ingester: its index in the batch and why. */
export interface Rejection {
  readonly index: number;
  readonly reason: string;
}

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
  /** Samples in columns: one object per row of the part's cells, none per cell (issue 12). */
  readonly rows: SampleRowsBuilder;
  /** One key object per entity the batch's samples name, so the store resolves a run of rows once. */
  readonly sampleEntities = new Map<string, EntityKey>();
  readonly events: EventInput[] = [];
  readonly probes = new Map<string, ProbeInfo>();
  readonly known = new Map<string, KnownEntity>();

  constructor(cells: SampleCells) {
    this.rows = new SampleRowsBuilder(cells);
  }
}

type Handlers = {
  [T in MessageType]: (message: MessageOf<T>, batch: BatchBuilder, item: Checked) => void;
};

export interface IngesterOptions {
  /**
   * Most entities (and most probes) the hub holds (`hub.maxEntities`, default DEFAULT_MAX_ENTITIES):
   * a message that would add one more is refused with the reason, so no client can grow the hub's
   * entity caches without bound.
   */
  readonly maxEntities?: number;
  /** Called with the seconds each committed store transaction took (self-metrics, issue 13). */
  readonly onCommit?: (seconds: number) => void;
}

/**
 * A delivery whose JSON text is known to hold no lone surrogate and no `\u` escape (backfill knows
 * the text it parsed): every string parsed from such text is well-formed, so the check skips its
 * walk over the message's strings. Without the mark every string is checked.
 */
export interface CheckedTextDelivery extends Delivery {
  readonly wellFormedText?: boolean;
  /**
   * The JSON text the message was parsed from, when it had one of its own (an NDJSON line). With
   * `wellFormedText`, the digest of a message without an id is taken of it when it is canonical
   * (see {@link messageKey}).
   */
  readonly text?: string;
}

/** Whether every string JSON.parse makes of `text` is well-formed: only a `\u` escape can add a lone surrogate. */
export function wellFormedJsonText(text: string): boolean {
  return !text.includes("\\u") && isWellFormed(text);
}

/**
 * Deliveries checked before they wait for the store (see {@link Ingester.ingest}), with the cells of
 * their headline and table messages made; {@link Ingester.check} adds a slice at a time.
 */
export class CheckedPart {
  readonly checked: Checked[] = [];
  readonly rejected: Rejection[] = [];
  readonly cells = new SampleCells();
  /** Deliveries added so far: the index in the part of the next one. */
  length = 0;
}

interface Checked {
  readonly index: number;
  readonly key: MessageKey;
  readonly message: PublicV2Message;
  /** The message's cells are `[start, end)` of {@link CheckedPart.cells} (none: equal). */
  readonly start: number;
  readonly end: number;
}

export class Ingester {
  private readonly probes = new Map<string, ProbeInfo>();
  private readonly entities = new Map<string, KnownEntity>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Counters for the status page. */
  readonly counts = { stored: 0, duplicates: 0, rejected: 0, batches: 0 };

  private readonly handlers: Handlers = {
    probe: (message, batch) => {
      const { gateway, probe } = message.data.target;
      const { osType, HostName } = message.data.parameters;
      const info: ProbeInfo = { osType, ...(HostName === undefined ? {} : { hostname: HostName }) };
      batch.probes.set(probeKeyText(gateway, probe), info);
      // Entities of this probe carry its host name and OS type: refresh them.
      for (const known of this.knownEntities(batch)) {
        if (known.key.gateway === gateway && known.key.probe === probe) {
          this.upsert(batch, known.key, known.user, known.deleted, message.data.timestamp);
        }
      }
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
    headline: (message, batch, item) => this.metrics(message, batch, item),
    table: (message, batch, item) => this.metrics(message, batch, item),
    severity: (message, batch) => this.event(message, batch),
    snooze: (message, batch) => this.event(message, batch),
    userassignment: (message, batch) => this.event(message, batch),
  };

  private readonly maxEntities: number;
  private readonly onCommit: ((seconds: number) => void) | undefined;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    options: IngesterOptions = {},
  ) {
    this.maxEntities = options.maxEntities ?? DEFAULT_MAX_ENTITIES;
    this.onCommit = options.onCommit;
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
      this.entities.set(entityKeyText(key), { key, user: userAttributesOf(a), deleted: entity.isDeleted });
      if (a["svc.os-type"] !== undefined || a["svc.hostname"] !== undefined) {
        this.probes.set(probeKeyText(key.gateway, key.probe), {
          ...(a["svc.os-type"] === undefined ? {} : { osType: a["svc.os-type"] }),
          ...(a["svc.hostname"] === undefined ? {} : { hostname: a["svc.hostname"] }),
        });
      }
    }
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
    prepare(deliveries, part);
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
          const handle = this.handlers[item.message.type] as (
            m: PublicV2Message,
            b: BatchBuilder,
            item: Checked,
          ) => void;
          handle(item.message, batch, item);
        });
        this.checkEntityLimit(batch);
        await tx.write({
          entities: [...batch.entities.values()],
          samples: [],
          rows: batch.rows,
          events: batch.events,
        });
        return { batch, fresh };
      });
      this.onCommit?.((performance.now() - started) / 1000);
      // Committed: only now do the caches learn what the batch changed.
      for (const [k, v] of batch.probes) this.probes.set(k, v);
      for (const [k, v] of batch.known) this.entities.set(k, v);
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
    const added = (fresh: Iterable<string>, known: ReadonlyMap<string, unknown>): number => {
      let n = 0;
      for (const key of fresh) if (!known.has(key)) n += 1;
      return n;
    };
    const entities = this.entities.size + added(batch.known.keys(), this.entities);
    const probes = this.probes.size + added(batch.probes.keys(), this.probes);
    if (entities > this.maxEntities || probes > this.maxEntities) {
      const what = entities > this.maxEntities ? "entities" : "probes";
      throw new StoreDataError(
        `it would make the hub hold more than ${this.maxEntities} ${what}, the limit (hub.maxEntities)`,
      );
    }
  }

  /** Committed entities, overlaid with the ones this batch changed. */
  private *knownEntities(batch: BatchBuilder): Iterable<KnownEntity> {
    for (const [k, v] of this.entities) if (!batch.known.has(k)) yield v;
    yield* batch.known.values();
  }

  private probeInfo(batch: BatchBuilder, gateway: string, probe: string): ProbeInfo | undefined {
    const key = probeKeyText(gateway, probe);
    return batch.probes.get(key) ?? this.probes.get(key);
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
    batch.known.set(text, { key: plainKey, user: copyAttributes(user), deleted });
    batch.entities.set(text, {
      key: plainKey,
      attributes: entityAttributes(plainKey, this.probeInfo(batch, key.gateway, key.probe), user),
      deleted,
      at: asEpochMs(Date.parse(timestamp)),
    });
  }

  /** The row of a headline or table message, over the cells `prepare` made of it. */
  private metrics(
    message: MessageOf<"headline"> | MessageOf<"table">,
    batch: BatchBuilder,
    item: Checked,
  ): void {
    if (message.operation === "delete") return;
    const { target, sampleTime } = message.data;
    const text = entityKeyText(target);
    let key = batch.sampleEntities.get(text);
    if (key === undefined) {
      key = { gateway: target.gateway, probe: target.probe, managedEntity: target.managedEntity };
      batch.sampleEntities.set(text, key);
    }
    if (!this.entities.has(text) && !batch.known.has(text)) {
      // Metrics for an entity the hub has not seen announced (e.g. a backfill of metrics only).
      if (this.probeInfo(batch, key.gateway, key.probe) === undefined)
        batch.probes.set(probeKeyText(key.gateway, key.probe), { osType: target.filter.osType });
      // As old as can be: the managed entity's own message, whenever it arrives (batches may be
      // stored out of order after a retry or by several hubs), replaces these attributes.
      this.upsert(batch, key, {}, false, EPOCH_START);
    }
    const at: EpochMs = asEpochMs(Date.parse(sampleTime));
    const { sampler, type: samplerType, dataview } = target;
    batch.rows.row(key, sampler, samplerType, dataview, target.row ?? "", at, item.start, item.end);
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

/** Checks every delivery into `part` and gives each storable one its de-duplication key. */
function prepare(deliveries: readonly CheckedTextDelivery[], part: CheckedPart): void {
  const { rejected, checked, cells } = part;
  const offset = part.length;
  part.length += deliveries.length;
  deliveries.forEach((delivery, i) => {
    const index = offset + i;
    const problem = check(delivery);
    if (typeof problem === "string") {
      rejected.push({ index, reason: problem });
      return;
    }
    const start = cells.length;
    if ((problem.type === "table" || problem.type === "headline") && problem.operation !== "delete") {
      addCells(cells, problem.data.row);
    }
    checked.push({
      index,
      // The line's text only when it holds no `\u` escape (`wellFormedText`), as isCanonicalJson needs.
      key: messageKey(delivery.id, problem, delivery.wellFormedText === true ? delivery.text : undefined),
      message: problem,
      start,
      end: cells.length,
    });
  });
}

/**
 * The cells of one headline or table message, in its order: three array entries each, no object
 * (allocation is what a loaded hub spends its time on). A blank cell is no sample and creates no
 * series (issue 6: wide sparse dataviews).
 */
function addCells(cells: SampleCells, row: Readonly<Record<string, string>>): void {
  for (const column of Object.keys(row)) {
    const value = row[column] as string;
    if (value !== "") cells.cell(column, value, numericValue(value));
  }
}

/** The message when it may be stored, otherwise why not. */
function check(delivery: CheckedTextDelivery): PublicV2Message | string {
  if (delivery.parseError !== undefined) return `not JSON: ${delivery.parseError}`;
  const result = validateMessage(delivery.message);
  if (!result.ok) return `not a public-v2 message: ${result.errors.join("; ")}`;
  const bad = delivery.wellFormedText === true ? undefined : illFormedString(result.message);
  if (bad !== undefined) return `holds a string that is not well-formed Unicode (a lone surrogate) at ${bad}`;
  const time = unstorableTime(result.message);
  if (time !== undefined) return time;
  return result.message;
}

/**
 * Why the message's own time cannot be stored, if it cannot. RFC 3339 allows a leap second
 * (`…T23:59:60Z`) and the schema's date-time format accepts it, but stored times are UTC epoch
 * milliseconds, which have no 61st second. The message is rejected alone, with this reason, rather
 * than moved to another instant: values pass through as sent or not at all (issue 9; see
 * docs/hub-api.md). Only this message is refused; the rest of its batch is stored.
 */
function unstorableTime(message: PublicV2Message): string | undefined {
  const data = message.data as { timestamp?: unknown; sampleTime?: unknown };
  const [field, text] =
    typeof data.sampleTime === "string" ? ["sampleTime", data.sampleTime] : ["timestamp", data.timestamp];
  if (typeof text !== "string" || Number.isFinite(Date.parse(text))) return undefined;
  const leap = /T\d{2}:\d{2}:60/i.test(text);
  return leap
    ? `/data/${field}: '${text}' is a leap second, which vigil cannot store (times are UTC milliseconds); send 23:59:59.999 or the next second instead`
    : `/data/${field}: '${text}' is not a time vigil can store`;
}

/** The JSON pointer of the first string (key or value) holding a lone surrogate, if any. */
function illFormedString(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return isWellFormed(value) ? undefined : path || "/";
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const at = `${path}/${key}`;
    if (!isWellFormed(key)) return at;
    const found = illFormedString(inner, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The de-duplication key of a message: its gateway id, or a digest when it has none of that form:
 * the SHA-256 of `JSON.stringify(message)`. `text`, the JSON text the message was parsed from
 * (holding no `\u` escape), is hashed as it is when it is that very text (canonical-json.ts).
 */
export function messageKey(id: string | undefined, message: PublicV2Message, text?: string): MessageKey {
  if (id !== undefined) {
    const parsed = parseMessageId(id);
    if (parsed !== undefined) return { kind: "seq", origin: parsed.origin, seq: parsed.seq };
    return { kind: "hash", hash: hash("sha256", `id:${id}`, "hex") };
  }
  const json = text !== undefined && isCanonicalJson(text, message) ? text : JSON.stringify(message);
  // One-shot `crypto.hash` (Node ≥ 20.12): the same digest as a Hash object, at a third of its cost.
  return { kind: "hash", hash: hash("sha256", json, "hex") };
}

function isStoreDataError(error: unknown): error is StoreDataError {
  return error instanceof StoreDataError || (error instanceof Error && error.name === "StoreDataError");
}

/** A copy that takes client-sent names as data (`__proto__` is an ordinary attribute name). */
function copyAttributes(attributes: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of Object.entries(attributes)) out[k] = v;
  return out;
}
