/**
 * Every entity, kept in the hub between changes, so the entity endpoints (`/v0/entities?filter=`,
 * the summary, the attribute lists, the metric query's entity filter) need no scan of the store and
 * no JSON parse of every entity's attributes per request (DESIGN 5.1, 5.2).
 *
 * It answers the same as the store: before each answer it asks the store for its entity version
 * ({@link Store.entityVersion}), a cheap check that changes whenever a committed transaction changed
 * an entity, by this hub or by another sharing the database; when the version moved, the entities
 * are read again (one read at a time; callers waiting meanwhile share it): only those changed since,
 * when the store can tell which ({@link Store.changedEntities}, DuckDB), else every one. The version
 * is read before the entities, so entities newer than their version only cause one more read.
 *
 * Bounded by count and bytes (DESIGN 1: no map a client can grow without bound): it holds the
 * entities only while they number at most `maxEntries` and weigh at most `maxBytes` (an estimate of
 * their strings and objects, {@link entityBytes}); past either, it holds nothing and every call reads
 * the store, as without the cache (logged once per crossing). Entity attributes are bounded by the
 * setup's `limits` (64 attributes of 4 KiB each, 1 KiB names), so one entity weighs at most about
 * 330 KiB; `hub.entityCacheMb` (default 128 MiB) holds about 100 000 entities of a dozen short
 * attributes each.
 */
import type { Logger } from "pino";
import type { EntityId } from "../../ids.js";
import type { EntityRecord, Store } from "./store.js";

/** Estimated bytes of one record apart from its attributes: the record, its attributes object, the id. */
const RECORD_BYTES = 160; // bytes (estimate)
/** Estimated bytes of one attribute apart from its two strings: the property and two string headers. */
const ATTRIBUTE_BYTES = 48; // bytes (estimate)

/** An estimate of the memory `record` holds: strings at 2 bytes a UTF-16 code unit, objects as above. */
export function entityBytes(record: EntityRecord): number {
  let bytes = RECORD_BYTES;
  for (const [name, value] of Object.entries(record.attributes)) {
    bytes += ATTRIBUTE_BYTES + 2 * (name.length + value.length);
  }
  return bytes;
}

export interface EntityCacheOptions {
  /** Most entities held (the hub passes `hub.maxEntities`). */
  readonly maxEntries: number;
  /** Most bytes held, by {@link entityBytes} (the hub passes `hub.entityCacheMb`); 0 turns the cache off. */
  readonly maxBytes: number;
  readonly logger?: Logger;
}

/** The entities of one version, with the lists and the index the endpoints read. */
interface Snapshot {
  readonly version: string;
  readonly all: readonly EntityRecord[];
  readonly live: readonly EntityRecord[];
  readonly byId: ReadonlyMap<EntityId, EntityRecord>;
  readonly bytes: number;
}

/** What `/v1/status` shows of the cache. */
export interface EntityCacheStatus {
  readonly state: "holding" | "over its bound" | "empty";
  readonly entities: number;
  readonly bytes: number;
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** Times every entity was read because the store's entity version moved. */
  readonly reads: number;
  /** Times only the entities changed since were read (a store that can tell which: DuckDB). */
  readonly updates: number;
}

export class EntityCache {
  private snapshot: Snapshot | undefined;
  /** The version last found over the bound: calls at that version read the store. */
  private overAt: { readonly version: string; readonly entities: number; readonly bytes: number } | undefined;
  private loading: Promise<Snapshot | undefined> | undefined;
  private reads = 0;
  private updates = 0;

  constructor(
    private readonly store: Store,
    private readonly options: EntityCacheOptions,
  ) {
    for (const [name, n] of [
      ["maxEntries", options.maxEntries],
      ["maxBytes", options.maxBytes],
    ] as const) {
      if (!Number.isSafeInteger(n) || n < 0)
        throw new RangeError(`entity cache ${name} must be a non-negative integer, got ${n}`);
    }
  }

  /** Whether this store can tell its entity version (without it every call reads the store). */
  get enabled(): boolean {
    return this.store.entityVersion !== undefined && this.options.maxBytes > 0 && this.options.maxEntries > 0;
  }

  status(): EntityCacheStatus {
    const held = this.snapshot;
    return {
      state: held !== undefined ? "holding" : this.overAt !== undefined ? "over its bound" : "empty",
      entities: held?.all.length ?? 0,
      bytes: held?.bytes ?? 0,
      maxEntries: this.options.maxEntries,
      maxBytes: this.options.maxBytes,
      reads: this.reads,
      updates: this.updates,
    };
  }

  /** As {@link Store.listEntities}; the array is the caller's, the records are shared (read-only). */
  async listEntities(options: { includeDeleted: boolean }): Promise<EntityRecord[]> {
    const held = await this.current();
    if (held === undefined) return this.store.listEntities(options);
    return (options.includeDeleted ? held.all : held.live).slice();
  }

  /** As {@link Store.getEntity}. */
  async getEntity(id: EntityId): Promise<EntityRecord | undefined> {
    const held = await this.current();
    if (held === undefined) return this.store.getEntity(id);
    return held.byId.get(id);
  }

  /** The snapshot of the store's current entity version; undefined when the cache cannot hold it. */
  private async current(): Promise<Snapshot | undefined> {
    const versionOf = this.store.entityVersion;
    if (versionOf === undefined || !this.enabled) return undefined;
    const version = await versionOf.call(this.store);
    if (this.snapshot?.version === version) return this.snapshot;
    if (this.overAt?.version === version) return undefined;
    // One read at a time; a caller that finds one in progress waits for it, then checks again (a
    // read that started before its version moved does not answer for the new one).
    while (this.loading !== undefined) {
      await this.loading.catch(() => undefined);
      if (this.snapshot?.version === version) return this.snapshot;
      if (this.overAt?.version === version) return undefined;
    }
    const loading = this.load(version);
    this.loading = loading;
    try {
      return await loading;
    } finally {
      this.loading = undefined;
    }
  }

  /**
   * The entities of `version` or later: the held ones with those changed since read again, when the
   * store can tell which (DuckDB); else every entity.
   */
  private async load(version: string): Promise<Snapshot | undefined> {
    let previous = this.snapshot;
    this.snapshot = undefined;
    if (previous !== undefined && this.store.changedEntities !== undefined) {
      const changed = await this.store.changedEntities(previous.version);
      if (changed !== undefined) {
        this.updates += 1;
        const next = merged(previous, changed.records);
        return this.keep(changed.version, next.all, next.bytes);
      }
    }
    previous = undefined; // released before the read, so two generations are never held at once
    this.reads += 1;
    return this.keep(version, await this.store.listEntities({ includeDeleted: true }));
  }

  /**
   * Holds `all` as the entities of `version` when they fit the bounds (their bytes counted here
   * unless given); undefined when they do not.
   */
  private keep(version: string, all: EntityRecord[], weighed?: number): Snapshot | undefined {
    let bytes = weighed ?? 0;
    let over = all.length > this.options.maxEntries || bytes > this.options.maxBytes;
    if (weighed === undefined) {
      for (const record of all) {
        if (over) break;
        bytes += entityBytes(record);
        over = bytes > this.options.maxBytes;
      }
    }
    if (over) {
      if (this.overAt === undefined)
        this.options.logger?.warn(
          { entities: all.length, maxEntries: this.options.maxEntries, maxBytes: this.options.maxBytes },
          "the entities outgrew the entity cache (hub.maxEntities, hub.entityCacheMb): entity requests read the store",
        );
      this.overAt = { version, entities: all.length, bytes };
      return undefined;
    }
    if (this.overAt !== undefined) {
      this.options.logger?.info(
        { entities: all.length, bytes },
        "the entities fit in the entity cache again",
      );
      this.overAt = undefined;
    }
    const snapshot: Snapshot = {
      version,
      all,
      live: all.filter((e) => !e.isDeleted),
      byId: new Map(all.map((e) => [e.id, e])),
      bytes,
    };
    this.snapshot = snapshot;
    return snapshot;
  }
}

/**
 * `previous`'s entities, by id, with `changed` in place of (or beside) their older records, and
 * their bytes.
 */
function merged(
  previous: Snapshot,
  changed: readonly EntityRecord[],
): { all: EntityRecord[]; bytes: number } {
  let bytes = previous.bytes;
  const byId = new Map(changed.map((e) => [e.id, e]));
  const all = previous.all.map((e) => {
    const newer = byId.get(e.id);
    if (newer === undefined) return e;
    byId.delete(e.id);
    bytes += entityBytes(newer) - entityBytes(e);
    return newer;
  });
  const last = all.at(-1)?.id ?? 0;
  let sorted = true;
  for (const e of byId.values()) {
    if (e.id < last) sorted = false;
    bytes += entityBytes(e);
    all.push(e);
  }
  if (!sorted) all.sort((a, b) => a.id - b.id);
  return { all, bytes };
}

/**
 * `store` with `listEntities` and `getEntity` answered through `cache`; every other member is the
 * store's own (bound to it), so the store's interface may grow without this changing.
 */
export function withEntityCache(store: Store, cache: EntityCache): Store {
  return new Proxy(store, {
    get(target, property) {
      if (property === "listEntities") return cache.listEntities.bind(cache);
      if (property === "getEntity") return cache.getEntity.bind(cache);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
