/**
 * Hub ingest: turns public-v2 messages into entity upserts and metric samples and commits each
 * batch in one store transaction (DESIGN 5.1, 5.5). Messages are dispatched by type through one
 * record, so a new message type fails to compile until handled (STYLE 6).
 */
import type { Logger } from "pino";
import { asEpochMs, type EpochMs } from "../../ids.js";
import type { MessageOf, MessageType, PublicV2Message } from "../../messages/types.js";
import type { EntityKey, EntityUpsert, SampleInput, Store } from "../store/store.js";
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

const entityKeyText = (key: EntityKey): string => JSON.stringify([key.gateway, key.probe, key.managedEntity]);
const probeKeyText = (gateway: string, probe: string): string => JSON.stringify([gateway, probe]);

interface KnownEntity {
  key: EntityKey;
  user: Record<string, string>;
  deleted: boolean;
}

interface BatchBuilder {
  entities: Map<string, EntityUpsert>;
  samples: SampleInput[];
}

type Handlers = { [T in MessageType]: (message: MessageOf<T>, batch: BatchBuilder) => void };

export class Ingester {
  private readonly probes = new Map<string, ProbeInfo>();
  private readonly entities = new Map<string, KnownEntity>();
  private queue: Promise<void> = Promise.resolve();
  ingestedMessages = 0;

  private readonly handlers: Handlers = {
    probe: (message, batch) => {
      const { gateway, probe } = message.data.target;
      const { osType, HostName } = message.data.parameters;
      const info: ProbeInfo = { osType, ...(HostName === undefined ? {} : { hostname: HostName }) };
      this.probes.set(probeKeyText(gateway, probe), info);
      // Entities of this probe carry its host name and OS type: refresh them.
      for (const known of this.entities.values()) {
        if (known.key.gateway === gateway && known.key.probe === probe) {
          this.upsert(batch, known.key, known.user, known.deleted, message.data.timestamp);
        }
      }
    },
    managedEntity: (message, batch) => {
      const key: EntityKey = message.data.target;
      this.upsert(
        batch,
        key,
        message.data.attributes,
        message.operation === "delete",
        message.data.timestamp,
      );
    },
    headline: (message, batch) => this.metrics(message, batch),
    table: (message, batch) => this.metrics(message, batch),
    // Events are stored by the event history work (DESIGN 5.1 recordsQuery); nothing to do yet.
    severity: () => {},
    snooze: () => {},
    userassignment: () => {},
  };

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
  ) {}

  /** Loads what the store already knows, so a restarted hub keeps entity attributes. */
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
   * Ingests valid messages in order and resolves once the store has committed them. Calls are
   * serialized, so batches commit in the order they were handed in.
   */
  ingest(messages: readonly PublicV2Message[]): Promise<void> {
    const run = this.queue.then(() => this.commit(messages));
    this.queue = run.catch(() => {});
    return run;
  }

  private async commit(messages: readonly PublicV2Message[]): Promise<void> {
    const batch: BatchBuilder = { entities: new Map(), samples: [] };
    for (const message of messages) {
      (this.handlers[message.type] as (m: PublicV2Message, b: BatchBuilder) => void)(message, batch);
    }
    if (batch.entities.size > 0 || batch.samples.length > 0) {
      await this.store.ingest({ entities: [...batch.entities.values()], samples: batch.samples });
    }
    this.ingestedMessages += messages.length;
    this.logger.debug({ messages: messages.length, samples: batch.samples.length }, "ingested");
  }

  private upsert(
    batch: BatchBuilder,
    key: EntityKey,
    user: Readonly<Record<string, string>>,
    deleted: boolean,
    timestamp: string,
  ): void {
    const text = entityKeyText(key);
    const probe = this.probes.get(probeKeyText(key.gateway, key.probe));
    this.entities.set(text, { key, user: { ...user }, deleted });
    batch.entities.set(text, {
      key: { gateway: key.gateway, probe: key.probe, managedEntity: key.managedEntity },
      attributes: entityAttributes(key, probe, user),
      deleted,
      at: asEpochMs(Date.parse(timestamp)),
    });
  }

  private metrics(message: MessageOf<"headline"> | MessageOf<"table">, batch: BatchBuilder): void {
    if (message.operation === "delete") return;
    const { target, row, sampleTime } = message.data;
    const key: EntityKey = {
      gateway: target.gateway,
      probe: target.probe,
      managedEntity: target.managedEntity,
    };
    const text = entityKeyText(key);
    if (!this.entities.has(text)) {
      // Metrics for an entity the hub has not seen announced (e.g. a backfill of metrics only).
      const known = this.probes.get(probeKeyText(key.gateway, key.probe));
      if (known === undefined)
        this.probes.set(probeKeyText(key.gateway, key.probe), { osType: target.filter.osType });
      this.upsert(batch, key, {}, false, sampleTime);
    }
    const at: EpochMs = asEpochMs(Date.parse(sampleTime));
    const series = {
      sampler: target.sampler,
      samplerType: target.type,
      dataview: target.dataview,
      row: target.row ?? "",
    };
    for (const [column, value] of Object.entries(row)) {
      batch.samples.push({
        entity: key,
        series: { ...series, column },
        at,
        text: value,
        value: numericValue(value),
      });
    }
  }
}
