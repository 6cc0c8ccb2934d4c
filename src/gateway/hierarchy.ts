/**
 * The gateway's model of what its probes hold (DESIGN 4.1): probes, managed entities and the
 * dataviews they publish. What a probe sends over its link is turned into public-v2 messages here
 * (DESIGN 4.3), in time proportional to the change:
 *
 * - a row upsert is `create` for a new row and `update` otherwise (even with unchanged values: every
 *   accepted value is a sample); a row delete is `delete`; a dataview replace is `update` for every
 *   row it holds that existed, `create` for new ones, `delete` for the rows it no longer has;
 *   headlines are `create` with their dataview, `update` when they change, `delete` with it;
 * - the probe's state after a (re)connect is compared with what the gateway had: unchanged items
 *   are republished as `snapshot`, real differences as `create`/`update`/`delete` only for them;
 *   the first connection of a probe is all `create`;
 * - a probe whose link is lost or that says `bye` is published with `ConState: Down`.
 *
 * Changes for items the probe's setup does not have, or beyond its bounds, are refused and counted
 * (a probe never sends them; a wrong one must not grow the gateway).
 */
import { GATEWAY_MAX_DATAVIEWS_PER_SAMPLER } from "../config/defaults.js";
import type { GatewaySetup, ProbeSetup } from "../config/setup.js";
import {
  type Change,
  type DataviewAddress,
  decodeCells,
  type ProbeParameters,
  type WireSeverities,
} from "../link/protocol.js";
import type { EventTarget, Operation, PublicV2Message } from "../messages/types.js";
import {
  type DataviewRecord,
  dataviewKeyOf,
  headlinesObject,
  maxRowsOf,
  type RowRecord,
  rowObject,
  sameHeadlines,
  sameParameters,
  sameRow,
  samplerKeyOf,
} from "./hierarchy-records.js";
import {
  headlineMessage,
  iso,
  type MetricsContext,
  managedEntityMessage,
  probeMessage,
  tableMessage,
} from "./message-builders.js";
import { type DataviewTarget, itemOf } from "./severity/item-target.js";
import type { FoundItem, ItemLookup } from "./severity/item-views.js";

type Parameters = ProbeParameters & { readonly ConState: string };

interface SamplerInfo {
  readonly maxRows: number;
  dataviews: number;
}

interface ProbeRecord {
  setup: ProbeSetup;
  /** Samplers of the setup by `[managedEntity, sampler, type]`. */
  samplers: Map<string, SamplerInfo>;
  /** Latest parameters from the link (hello / parameters). */
  parameters: ProbeParameters | undefined;
  /** What was last published for the probe; undefined until its first connection. */
  published: Parameters | undefined;
  readonly dataviews: Map<string, DataviewRecord>;
  /** Present while the probe's state after a (re)connect is arriving: what it holds. */
  sync: Map<string, Set<string>> | undefined;
  /**
   * The probe said it was linked before (`hello.resumed`): what its state holds that this gateway
   * does not know is republished current state (`snapshot`: a restarted gateway, DESIGN 4.3), not new.
   */
  resumed: boolean;
}

/** Result of applying link changes: the messages, and how many changes were refused. */
export interface Applied {
  readonly messages: PublicV2Message[];
  readonly rejected: number;
}

/** Result of a batch of a probe's state: with its first batch, the probe's state began to arrive. */
export interface StateApplied extends Applied {
  /** Set by the first batch of a state, with the probe's osType. */
  readonly began?: { readonly osType: string };
}

/** One batch from a probe's link being applied: its probe, the instant published, the messages made. */
interface Batch {
  readonly record: ProbeRecord;
  readonly now: string;
  readonly out: PublicV2Message[];
}

/** A dataview of a probe's state as it arrives: the rows it holds so far. */
interface DataviewSync {
  readonly dataview: DataviewRecord;
  readonly seen: Set<string>;
}

/** The change of one kind, e.g. `ChangeOf<"row">`. */
type ChangeOf<K extends Change["kind"]> = Extract<Change, { kind: K }>;

/** How an item of a probe's state of one kind is applied; false when it is refused. */
type SyncHandler<C extends Change> = (batch: Batch, sync: Map<string, Set<string>>, item: C) => boolean;
type SyncHandlers = { readonly [K in Change["kind"]]: SyncHandler<ChangeOf<K>> };

/** The dataview a live change names, as the gateway holds it, and the change's time as published. */
interface LiveDataview {
  readonly key: string;
  readonly dataview: DataviewRecord | undefined;
  readonly probeTime: string;
}

/** How a live change of one kind is applied; false when it is refused. */
type LiveHandler<C extends Change> = (batch: Batch, change: C, live: LiveDataview) => boolean;
type LiveHandlers = { readonly [K in Change["kind"]]: LiveHandler<ChangeOf<K>> };

/** A row of a probe's state. */
interface SyncedRow {
  readonly name: string;
  readonly cells: readonly string[];
  readonly at: number;
  readonly severities: WireSeverities | undefined;
}

/**
 * The gateway's view of every probe of its setup; each method returns the messages to publish.
 * It is the hierarchy stage of the gateway's pipeline (link server → hierarchy → severity →
 * publisher, `gateway-model.ts`), and answers the severity stage's questions about items
 * (`ItemLookup`, `samplerSeverities`).
 */
export class Hierarchy implements ItemLookup {
  private readonly probes = new Map<string, ProbeRecord>();
  /** Changes refused since start (unknown sampler or dataview, beyond a bound). */
  rejected = 0;
  /**
   * Set once any row is stored with cell severities (only sampler-made dataviews have them): until
   * then the severity stage's per-row question for them has the answer "none" without a lookup.
   */
  private severitiesSeen = false;
  /** The last instant turned into an ISO string and that string: a batch's changes share instants. */
  private isoMs = Number.NaN;
  private isoText = "";
  /** The last address turned into a dataview key and that key. */
  private lastAddress: DataviewAddress | undefined;
  private lastKey = "";

  constructor(
    private gateway: GatewaySetup,
    probes: readonly ProbeSetup[],
  ) {
    for (const setup of probes) {
      this.probes.set(setup.name, this.newProbeRecord(setup));
    }
  }

  /** Whether the setup has a probe of that name. */
  has(probe: string): boolean {
    return this.probes.has(probe);
  }

  /** The setup of a probe, undefined when the setup has none of that name. */
  probeSetup(probe: string): ProbeSetup | undefined {
    return this.probes.get(probe)?.setup;
  }

  /** A link said `hello`: remembers its parameters; the probe is published with its state. */
  hello(probe: string, parameters: ProbeParameters, resumed = false): void {
    const record = this.record(probe);
    record.parameters = parameters;
    // Republished state only when this gateway run has not published the probe yet (it restarted);
    // a gateway that knew the probe compares and creates what is really new.
    record.resumed = resumed && record.published === undefined;
    record.sync = undefined;
  }

  /** New parameters from the link: an `update` once the probe is published and they changed. */
  parameters(probe: string, parameters: ProbeParameters, nowMs: number): PublicV2Message[] {
    const record = this.record(probe);
    record.parameters = parameters;
    const published = record.published;
    if (published === undefined || published.ConState !== "Up" || record.sync !== undefined) return [];
    if (sameParameters(published, parameters)) return [];
    record.published = { ...parameters, ConState: "Up" };
    return [probeMessage("update", this.gateway.name, probe, record.published, iso(nowMs))];
  }

  /**
   * A batch of the probe's state after a (re)connect (DESIGN 4.3). The first batch publishes the
   * probe and its managed entities; each item is compared with what the gateway had; the last
   * batch deletes what the probe no longer holds.
   */
  state(probe: string, items: readonly Change[], last: boolean, nowMs: number): StateApplied {
    const record = this.record(probe);
    const batch: Batch = { record, now: iso(nowMs), out: [] };
    let rejected = 0;
    let began: StateApplied["began"];
    if (record.sync === undefined) {
      record.sync = new Map();
      began = { osType: record.parameters?.osType ?? "" };
      batch.out.push(...this.announce(record, batch.now));
    }
    const sync = record.sync;
    for (const item of items) if (!this.syncItem(batch, sync, item)) rejected += 1;
    if (last) {
      const { now, out } = batch;
      for (const [key, dataview] of record.dataviews) {
        const seen = sync.get(key);
        if (seen === undefined) {
          this.dropDataview(batch, key, dataview, iso(dataview.headlinesAt));
          continue;
        }
        for (const [name, row] of dataview.rows) {
          if (seen.has(name)) continue;
          dataview.rows.delete(name);
          out.push(tableMessage("delete", this.context(record, dataview), name, rowObject(row), now, now));
        }
      }
      record.sync = undefined;
    }
    this.rejected += rejected;
    return { messages: batch.out, rejected, ...(began === undefined ? {} : { began }) };
  }

  /** A batch of live changes, each applied in time proportional to its size. */
  changes(probe: string, changes: readonly Change[], nowMs: number): Applied {
    const batch: Batch = { record: this.record(probe), now: iso(nowMs), out: [] };
    let rejected = 0;
    for (const change of changes) if (!this.applyChange(batch, change)) rejected += 1;
    this.rejected += rejected;
    return { messages: batch.out, rejected };
  }

  /** The probe's link is gone (lost or `bye`): `probe update` with `ConState: Down`. */
  down(probe: string, nowMs: number): PublicV2Message[] {
    const record = this.probes.get(probe);
    if (record === undefined) return [];
    record.sync = undefined;
    const published = record.published;
    if (published === undefined || published.ConState === "Down") return [];
    record.published = { ...published, ConState: "Down" };
    return [probeMessage("update", this.gateway.name, probe, record.published, iso(nowMs))];
  }

  /**
   * A new setup (reload): managed entities added, changed or removed are published for probes
   * already published; probes no longer in the setup are deleted with everything they held.
   */
  updateSetup(gateway: GatewaySetup, probes: readonly ProbeSetup[], nowMs: number): PublicV2Message[] {
    this.gateway = gateway;
    const now = iso(nowMs);
    const messages: PublicV2Message[] = [];
    const next = new Map(probes.map((setup) => [setup.name, setup] as const));
    for (const [name, record] of this.probes) {
      if (next.has(name)) continue;
      for (const [key, dataview] of record.dataviews)
        this.dropDataview({ record, now, out: messages }, key, dataview, now);
      if (record.published !== undefined) {
        for (const entity of record.setup.managedEntities) {
          messages.push(
            managedEntityMessage("delete", gateway.name, name, entity.name, entity.attributes, now),
          );
        }
        messages.push(probeMessage("delete", gateway.name, name, record.published, now));
      }
      this.probes.delete(name);
    }
    for (const setup of probes) {
      const record = this.probes.get(setup.name);
      if (record === undefined) {
        this.probes.set(setup.name, this.newProbeRecord(setup));
        continue;
      }
      if (record.published !== undefined) messages.push(...this.entityChanges(record, setup, now));
      record.setup = setup;
      record.samplers = this.samplersOf(setup);
      // Dataviews of samplers that went are deleted (the probe drops them too).
      for (const [key, dataview] of record.dataviews) {
        const sampler = record.samplers.get(dataview.samplerKey);
        if (sampler === undefined) this.dropDataview({ record, now, out: messages }, key, dataview, now);
        else sampler.dataviews += 1;
      }
    }
    return messages;
  }

  // ---- ItemLookup (the severity stage and `GET /v1/items`) --------------------------------------

  find(target: EventTarget): FoundItem | undefined {
    if (target.gateway !== this.gateway.name) return undefined;
    const item = itemOf(target);
    if (item.level === "gateway") return {};
    const record = this.probes.get(item.target.probe);
    if (record === undefined) return undefined;
    const osType = record.published?.osType ?? record.parameters?.osType;
    if (item.level === "probe") return osType === undefined ? {} : { osType };
    const entity = record.setup.managedEntities.find((e) => e.name === item.target.managedEntity);
    if (entity === undefined) return undefined;
    if (item.level === "managedEntity") return {};
    const { sampler: name, type } = item.target;
    const sampler = entity.samplers.find((s) => s.name === name && s.type === type);
    if (sampler === undefined) return undefined;
    if (item.level === "sampler") return { plugin: sampler.plugin };
    const dataview = record.dataviews.get(
      dataviewKeyOf({
        managedEntity: entity.name,
        sampler: sampler.name,
        samplerType: sampler.type,
        dataview: item.target.dataview,
      }),
    );
    if (dataview === undefined) return undefined;
    if (item.level === "dataview") return { plugin: dataview.plugin };
    const { column } = item.target;
    if (item.level === "headline") {
      const headline = dataview.headlines.find(([name]) => name === column);
      return headline === undefined ? undefined : { plugin: dataview.plugin, value: headline[1] };
    }
    const row = dataview.rows.get(item.target.row);
    const index = row?.columns.indexOf(column) ?? -1;
    if (row === undefined || index < 0) return undefined;
    return { plugin: dataview.plugin, value: row.cells[index] ?? "" };
  }

  children(target: EventTarget): EventTarget[] {
    const gateway = this.gateway.name;
    const item = itemOf(target);
    if (item.level === "gateway") return [...this.probes.keys()].map((probe) => ({ gateway, probe }));
    const record = this.probes.get(item.target.probe);
    if (record === undefined) return [];
    const probe = record.setup.name;
    if (item.level === "probe")
      return record.setup.managedEntities.map((e) => ({ gateway, probe, managedEntity: e.name }));
    const entity = record.setup.managedEntities.find((e) => e.name === item.target.managedEntity);
    if (entity === undefined) return [];
    const managedEntity = entity.name;
    if (item.level === "managedEntity")
      return entity.samplers.map((s) => ({ gateway, probe, managedEntity, type: s.type, sampler: s.name }));
    const { type, sampler } = item.target;
    if (item.level === "sampler") {
      const key = samplerKeyOf(managedEntity, sampler, type);
      return [...record.dataviews.values()]
        .filter((d) => d.samplerKey === key)
        .map((d) => ({ gateway, probe, managedEntity, type, sampler, dataview: d.address.dataview }));
    }
    if (item.level !== "dataview") return [];
    const dataview = record.dataviews.get(
      dataviewKeyOf({ managedEntity, sampler, samplerType: type, dataview: item.target.dataview }),
    );
    if (dataview === undefined) return [];
    const base = { gateway, probe, managedEntity, type, sampler, dataview: item.target.dataview };
    const out: EventTarget[] = dataview.headlines.map(([column]) => ({ ...base, column }));
    for (const [row, record] of dataview.rows)
      for (const column of record.columns) out.push({ ...base, row, column });
    return out;
  }

  /** Current state of every item as `snapshot` messages (gateway start, on request). */
  snapshot(nowMs: number): PublicV2Message[] {
    const now = iso(nowMs);
    const out: PublicV2Message[] = [];
    for (const record of this.probes.values()) {
      const published = record.published;
      if (published === undefined) continue;
      out.push(probeMessage("snapshot", this.gateway.name, record.setup.name, published, now));
      out.push(...this.entities(record, "snapshot", now));
      for (const dataview of record.dataviews.values()) {
        const context = this.context(record, dataview);
        out.push(
          headlineMessage(
            "snapshot",
            context,
            headlinesObject(dataview.headlines),
            now,
            iso(dataview.headlinesAt),
          ),
        );
        for (const [name, row] of dataview.rows) {
          out.push(tableMessage("snapshot", context, name, rowObject(row), now, iso(row.at)));
        }
      }
    }
    return out;
  }

  /** Counts for the status page. */
  stats(): { probes: number; dataviews: number; rows: number; rejected: number } {
    let dataviews = 0;
    let rows = 0;
    for (const record of this.probes.values()) {
      dataviews += record.dataviews.size;
      for (const dataview of record.dataviews.values()) rows += dataview.rows.size;
    }
    return { probes: this.probes.size, dataviews, rows, rejected: this.rejected };
  }

  /** The cell severities the sampler set on a row (the severity stage asks for every table message). */
  samplerSeverities(probe: string, t: DataviewTarget, row: string): WireSeverities | undefined {
    if (!this.severitiesSeen) return undefined;
    const key = dataviewKeyOf({
      managedEntity: t.managedEntity,
      sampler: t.sampler,
      samplerType: t.type,
      dataview: t.dataview,
    });
    return this.probes.get(probe)?.dataviews.get(key)?.rows.get(row)?.severities;
  }

  /** `dataviewKeyOf(address)`, remembering the last address (a batch's changes mostly share one). */
  private keyOf(address: DataviewAddress): string {
    const last = this.lastAddress;
    if (
      last === undefined ||
      last.dataview !== address.dataview ||
      last.sampler !== address.sampler ||
      last.samplerType !== address.samplerType ||
      last.managedEntity !== address.managedEntity
    ) {
      this.lastAddress = { ...address };
      this.lastKey = dataviewKeyOf(address);
    }
    return this.lastKey;
  }

  /** `iso(ms)`, remembering the last instant (the changes of a batch mostly share theirs). */
  private isoOf(ms: number): string {
    if (ms !== this.isoMs) {
      this.isoText = iso(ms);
      this.isoMs = ms;
    }
    return this.isoText;
  }

  private record(probe: string): ProbeRecord {
    const record = this.probes.get(probe);
    if (record === undefined) throw new Error(`probe '${probe}' is not in the setup`);
    return record;
  }

  /** A probe of the setup as it is before its first link: nothing received, nothing published. */
  private newProbeRecord(setup: ProbeSetup): ProbeRecord {
    return {
      setup,
      samplers: this.samplersOf(setup),
      parameters: undefined,
      published: undefined,
      dataviews: new Map(),
      sync: undefined,
      resumed: false,
    };
  }

  private samplersOf(setup: ProbeSetup): Map<string, SamplerInfo> {
    const samplers = new Map<string, SamplerInfo>();
    for (const entity of setup.managedEntities) {
      for (const sampler of entity.samplers) {
        samplers.set(samplerKeyOf(entity.name, sampler.name, sampler.type), {
          maxRows: maxRowsOf(sampler, this.gateway),
          dataviews: 0,
        });
      }
    }
    return samplers;
  }

  private context(record: ProbeRecord, dataview: DataviewRecord): MetricsContext {
    return {
      gateway: this.gateway.name,
      probe: record.setup.name,
      osType: record.published?.osType ?? record.parameters?.osType ?? "",
      plugin: dataview.plugin,
      address: dataview.address,
    };
  }

  private entities(record: ProbeRecord, operation: Operation, now: string): PublicV2Message[] {
    return record.setup.managedEntities.map((entity) =>
      managedEntityMessage(
        operation,
        this.gateway.name,
        record.setup.name,
        entity.name,
        entity.attributes,
        now,
      ),
    );
  }

  /** Managed entities added, changed or removed by a new setup of a published probe. */
  private entityChanges(record: ProbeRecord, setup: ProbeSetup, now: string): PublicV2Message[] {
    const out: PublicV2Message[] = [];
    const before = new Map(record.setup.managedEntities.map((e) => [e.name, e] as const));
    for (const entity of setup.managedEntities) {
      const old = before.get(entity.name);
      before.delete(entity.name);
      const same =
        old !== undefined &&
        Object.keys(old.attributes).length === Object.keys(entity.attributes).length &&
        Object.entries(entity.attributes).every(
          ([k, v]) => Object.hasOwn(old.attributes, k) && old.attributes[k] === v,
        );
      if (same) continue;
      out.push(
        managedEntityMessage(
          old === undefined ? "create" : "update",
          this.gateway.name,
          setup.name,
          entity.name,
          entity.attributes,
          now,
        ),
      );
    }
    for (const [key, dataview] of record.dataviews) {
      if (before.has(dataview.address.managedEntity)) {
        this.dropDataview({ record, now, out }, key, dataview, now);
      }
    }
    for (const entity of before.values()) {
      out.push(
        managedEntityMessage("delete", this.gateway.name, setup.name, entity.name, entity.attributes, now),
      );
    }
    return out;
  }

  /** Publishes the probe and its managed entities at the start of its state (DESIGN 4.3). */
  private announce(record: ProbeRecord, now: string): PublicV2Message[] {
    const parameters: Parameters = {
      ...(record.parameters ?? { osType: "", HostName: "", Port: "", OS: "", Version: "" }),
      ConState: "Up",
    };
    const before = record.published;
    record.published = parameters;
    const name = record.setup.name;
    if (before === undefined) {
      const operation: Operation = record.resumed ? "snapshot" : "create";
      return [
        probeMessage(operation, this.gateway.name, name, parameters, now),
        ...this.entities(record, operation, now),
      ];
    }
    // A probe coming back Up with the same parameters is republished as it is: a snapshot.
    const operation: Operation = sameParameters(before, parameters) ? "snapshot" : "update";
    return [
      probeMessage(operation, this.gateway.name, name, parameters, now),
      ...this.entities(record, "snapshot", now),
    ];
  }

  /** Looks up the sampler of an address, checking the dataview bound for a new dataview. */
  private samplerFor(record: ProbeRecord, address: DataviewAddress): SamplerInfo | undefined {
    return record.samplers.get(samplerKeyOf(address.managedEntity, address.sampler, address.samplerType));
  }

  private newDataview(
    record: ProbeRecord,
    change: Extract<Change, { kind: "dataview" }>,
    key: string,
  ): DataviewRecord | undefined {
    const samplerKey = samplerKeyOf(
      change.dataview.managedEntity,
      change.dataview.sampler,
      change.dataview.samplerType,
    );
    const sampler = record.samplers.get(samplerKey);
    if (sampler === undefined || sampler.dataviews >= GATEWAY_MAX_DATAVIEWS_PER_SAMPLER) return undefined;
    if (change.rows.length > sampler.maxRows) return undefined;
    sampler.dataviews += 1;
    const dataview: DataviewRecord = {
      address: change.dataview,
      samplerKey,
      plugin: change.plugin,
      columns: change.columns,
      rows: new Map(),
      headlines: change.headlines,
      headlinesAt: change.at,
    };
    record.dataviews.set(key, dataview);
    return dataview;
  }

  /** Deletes a dataview with its rows and headlines (`probeTime`: the time its messages carry). */
  private dropDataview(batch: Batch, key: string, dataview: DataviewRecord, probeTime: string): void {
    const { record, now, out } = batch;
    const context = this.context(record, dataview);
    for (const [name, row] of dataview.rows)
      out.push(tableMessage("delete", context, name, rowObject(row), now, probeTime));
    out.push(headlineMessage("delete", context, headlinesObject(dataview.headlines), now, probeTime));
    record.dataviews.delete(key);
    const sampler = record.samplers.get(dataview.samplerKey);
    if (sampler !== undefined) sampler.dataviews = Math.max(0, sampler.dataviews - 1);
  }

  /**
   * The items of a probe's state by kind: a whole dataview, then further rows of it; a live kind
   * in a state is refused. Every kind is here: a new one fails to compile until it is handled.
   */
  private readonly syncItems: SyncHandlers = {
    dataview: (batch, sync, item) => this.syncDataview(batch, sync, item),
    row: (batch, sync, item) => this.syncRow(batch, sync, item),
    rowDelete: () => false,
    dataviewDelete: () => false,
    headlines: () => false,
  };

  private syncItem(batch: Batch, sync: Map<string, Set<string>>, item: Change): boolean {
    return (this.syncItems[item.kind] as SyncHandler<Change>)(batch, sync, item);
  }

  /** A whole dataview in the probe's state: snapshot when unchanged, else the differences. */
  private syncDataview(batch: Batch, sync: Map<string, Set<string>>, item: ChangeOf<"dataview">): boolean {
    const { record, now, out } = batch;
    const key = dataviewKeyOf(item.dataview);
    let dataview = record.dataviews.get(key);
    const seen = new Set<string>();
    if (dataview === undefined) {
      dataview = this.newDataview(record, item, key);
      if (dataview === undefined) return false;
      sync.set(key, seen);
      const context = this.context(record, dataview);
      const operation: Operation = record.resumed ? "snapshot" : "create";
      out.push(headlineMessage(operation, context, headlinesObject(item.headlines), now, iso(item.at)));
    } else {
      const sampler = this.samplerFor(record, item.dataview);
      if (sampler === undefined || item.rows.length > sampler.maxRows) return false;
      sync.set(key, seen);
      const operation = sameHeadlines(dataview.headlines, item.headlines) ? "snapshot" : "update";
      dataview.plugin = item.plugin;
      dataview.columns = item.columns;
      dataview.headlines = item.headlines;
      dataview.headlinesAt = item.at;
      out.push(
        headlineMessage(
          operation,
          this.context(record, dataview),
          headlinesObject(item.headlines),
          now,
          iso(item.at),
        ),
      );
    }
    const target: DataviewSync = { dataview, seen };
    for (const row of item.rows) {
      this.syncOneRow(batch, target, {
        name: row.name,
        cells: decodeCells(row.cells, item.columns.length),
        at: row.at ?? item.at,
        severities: row.severities,
      });
    }
    return true;
  }

  /** A further row of a dataview in the probe's state (after its `dataview` item). */
  private syncRow(batch: Batch, sync: Map<string, Set<string>>, item: ChangeOf<"row">): boolean {
    const { record } = batch;
    const key = dataviewKeyOf(item.dataview);
    const dataview = record.dataviews.get(key);
    const seen = sync.get(key);
    if (dataview === undefined || seen === undefined) return false;
    const sampler = this.samplerFor(record, item.dataview);
    if (!seen.has(item.name) && seen.size >= (sampler?.maxRows ?? 0)) return false;
    this.syncOneRow(
      batch,
      { dataview, seen },
      {
        name: item.name,
        cells: decodeCells(item.cells, dataview.columns.length),
        at: item.at,
        severities: item.severities,
      },
    );
    return true;
  }

  /** One row of the probe's state: `snapshot` when unchanged, else `create`/`update`. */
  private syncOneRow(batch: Batch, target: DataviewSync, synced: SyncedRow): void {
    const { record, now, out } = batch;
    const { dataview, seen } = target;
    const { name, cells, at, severities } = synced;
    seen.add(name);
    if (severities !== undefined) this.severitiesSeen = true;
    const row: RowRecord = { columns: dataview.columns, cells, at, severities };
    const before = dataview.rows.get(name);
    dataview.rows.set(name, row);
    const operation: Operation =
      before === undefined
        ? record.resumed
          ? "snapshot"
          : "create"
        : sameRow(before, row)
          ? "snapshot"
          : "update";
    out.push(tableMessage(operation, this.context(record, dataview), name, rowObject(row), now, iso(at)));
  }

  /** Live changes by kind; each handler answers false when it refused the change. */
  private readonly liveChanges: LiveHandlers = {
    row: (batch, change, live) => this.liveRow(batch, change, live),
    rowDelete: (batch, change, live) => {
      const { dataview } = live;
      const row = dataview?.rows.get(change.name);
      if (dataview === undefined || row === undefined) return true;
      dataview.rows.delete(change.name);
      batch.out.push(
        tableMessage(
          "delete",
          this.context(batch.record, dataview),
          change.name,
          rowObject(row),
          batch.now,
          live.probeTime,
        ),
      );
      return true;
    },
    dataview: (batch, change, live) => this.liveDataview(batch, change, live),
    dataviewDelete: (batch, _change, live) => {
      if (live.dataview !== undefined) this.dropDataview(batch, live.key, live.dataview, live.probeTime);
      return true;
    },
    headlines: (batch, change, live) => {
      const { dataview } = live;
      if (dataview === undefined) return false;
      if (!sameHeadlines(dataview.headlines, change.headlines)) {
        dataview.headlines = change.headlines;
        dataview.headlinesAt = change.at;
        batch.out.push(
          headlineMessage(
            "update",
            this.context(batch.record, dataview),
            headlinesObject(change.headlines),
            batch.now,
            live.probeTime,
          ),
        );
      }
      return true;
    },
  };

  /** One live change; false when it was refused. */
  private applyChange(batch: Batch, change: Change): boolean {
    const key = this.keyOf(change.dataview);
    const live: LiveDataview = {
      key,
      dataview: batch.record.dataviews.get(key),
      probeTime: this.isoOf(change.at),
    };
    return (this.liveChanges[change.kind] as LiveHandler<Change>)(batch, change, live);
  }

  /** A row written: `create` for a new row (within the sampler's row bound), else `update`. */
  private liveRow(batch: Batch, change: ChangeOf<"row">, live: LiveDataview): boolean {
    const { record, now, out } = batch;
    const { dataview } = live;
    if (dataview === undefined) return false;
    const exists = dataview.rows.get(change.name);
    // The row bound is asked only of a new row (an update never grows the dataview).
    if (
      exists === undefined &&
      dataview.rows.size >= (this.samplerFor(record, change.dataview)?.maxRows ?? 0)
    )
      return false;
    if (change.columns !== undefined) dataview.columns = change.columns;
    if (change.severities !== undefined) this.severitiesSeen = true;
    const row: RowRecord = {
      columns: dataview.columns,
      cells: decodeCells(change.cells, dataview.columns.length),
      at: change.at,
      severities: change.severities,
    };
    dataview.rows.set(change.name, row);
    out.push(
      tableMessage(
        exists === undefined ? "create" : "update",
        this.context(record, dataview),
        change.name,
        rowObject(row),
        now,
        live.probeTime,
      ),
    );
    return true;
  }

  /** A row of a whole-dataview change as the hierarchy keeps it (cells decoded, the change's time). */
  private rowRecord(change: ChangeOf<"dataview">, wire: ChangeOf<"dataview">["rows"][number]): RowRecord {
    if (wire.severities !== undefined) this.severitiesSeen = true;
    return {
      columns: change.columns,
      cells: decodeCells(wire.cells, change.columns.length),
      at: change.at,
      severities: wire.severities,
    };
  }

  /** A whole dataview: created with its rows, or replaced (rows it no longer has are deleted). */
  private liveDataview(batch: Batch, change: ChangeOf<"dataview">, live: LiveDataview): boolean {
    const { record, now, out } = batch;
    const { key, dataview, probeTime } = live;
    if (dataview === undefined) {
      const created = this.newDataview(record, change, key);
      if (created === undefined) return false;
      const context = this.context(record, created);
      out.push(headlineMessage("create", context, headlinesObject(change.headlines), now, probeTime));
      for (const wire of change.rows) {
        const row = this.rowRecord(change, wire);
        created.rows.set(wire.name, row);
        out.push(tableMessage("create", context, wire.name, rowObject(row), now, probeTime));
      }
      return true;
    }
    const sampler = this.samplerFor(record, change.dataview);
    if (sampler === undefined || change.rows.length > sampler.maxRows) return false;
    dataview.plugin = change.plugin;
    dataview.columns = change.columns;
    const context = this.context(record, dataview);
    if (!sameHeadlines(dataview.headlines, change.headlines)) {
      out.push(headlineMessage("update", context, headlinesObject(change.headlines), now, probeTime));
    }
    dataview.headlines = change.headlines;
    dataview.headlinesAt = change.at;
    const names = new Set(change.rows.map((row) => row.name));
    for (const [name, row] of dataview.rows) {
      if (names.has(name)) continue;
      dataview.rows.delete(name);
      out.push(tableMessage("delete", context, name, rowObject(row), now, probeTime));
    }
    for (const wire of change.rows) {
      const row = this.rowRecord(change, wire);
      const existed = dataview.rows.has(wire.name);
      dataview.rows.set(wire.name, row);
      out.push(
        tableMessage(existed ? "update" : "create", context, wire.name, rowObject(row), now, probeTime),
      );
    }
    return true;
  }
}
