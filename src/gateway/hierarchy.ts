/**
 * The gateway's model of what its probes hold (DESIGN 4.1): probes, managed entities and the
 * dataviews they publish. Probe events are turned into public-v2 messages here: `create` when an
 * item first appears, `update` on every change (a row the request wrote is an update even when its
 * values are unchanged, so every accepted value becomes a sample), `delete` when it goes,
 * `snapshot` when current state is republished (DESIGN 4.3).
 */
import type { GatewaySetup, ProbeSetup } from "../config/setup.js";
import type { DataviewAddress, ProbeEvent, ProbeParameters } from "../link/probe-link.js";
import type { Operation, PublicV2Message } from "../messages/types.js";
import {
  headlineMessage,
  iso,
  type MetricsContext,
  managedEntityMessage,
  probeMessage,
  tableMessage,
} from "./message-builders.js";

interface DataviewRecord {
  context: MetricsContext;
  rows: Map<string, Readonly<Record<string, string>>>;
  headlines: Readonly<Record<string, string>>;
}

interface ProbeRecord {
  readonly setup: ProbeSetup;
  parameters: (ProbeParameters & { ConState: string }) | undefined;
  /** True once the probe and its managed entities were announced with `create`. */
  announced: boolean;
  readonly dataviews: Map<string, DataviewRecord>;
}

const dataviewKey = (a: DataviewAddress): string =>
  JSON.stringify([a.managedEntity, a.sampler, a.samplerType, a.dataview]);

function sameCells(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => a[k] === b[k]);
}

export class Hierarchy {
  private readonly probes = new Map<string, ProbeRecord>();

  constructor(
    private readonly gateway: GatewaySetup,
    probes: readonly ProbeSetup[],
  ) {
    for (const setup of probes) {
      this.probes.set(setup.name, { setup, parameters: undefined, announced: false, dataviews: new Map() });
    }
  }

  /** Applies one probe event and returns the messages it causes, in publication order. */
  apply(probeName: string, event: ProbeEvent, nowMs: number): PublicV2Message[] {
    const now = iso(nowMs);
    const probe = this.probes.get(probeName);
    if (probe === undefined) throw new Error(`probe '${probeName}' is not in the setup`);
    switch (event.kind) {
      case "hello":
        return this.hello(probe, event.parameters, now);
      case "bye":
        return this.bye(probe, now);
      case "dataview":
        return this.dataview(
          probe,
          event.address,
          event.plugin,
          event.state,
          event.touched,
          iso(event.at),
          now,
        );
      case "dataviewDeleted":
        return this.dataviewDeleted(probe, event.address, iso(event.at), now);
    }
  }

  /** Current state of every item as `snapshot` messages (gateway start, on request). */
  snapshot(nowMs: number): PublicV2Message[] {
    const now = iso(nowMs);
    const out: PublicV2Message[] = [];
    for (const probe of this.probes.values()) {
      if (!probe.announced || probe.parameters === undefined) continue;
      out.push(...this.announce(probe, "snapshot", now));
      for (const record of probe.dataviews.values()) {
        out.push(headlineMessage("snapshot", record.context, record.headlines, now, now));
        for (const [row, cells] of record.rows)
          out.push(tableMessage("snapshot", record.context, row, cells, now, now));
      }
    }
    return out;
  }

  private announce(probe: ProbeRecord, operation: Operation, now: string): PublicV2Message[] {
    const parameters = probe.parameters;
    if (parameters === undefined) return [];
    const out: PublicV2Message[] = [
      probeMessage(operation, this.gateway.name, probe.setup.name, parameters, now),
    ];
    for (const entity of probe.setup.managedEntities) {
      out.push(
        managedEntityMessage(
          operation,
          this.gateway.name,
          probe.setup.name,
          entity.name,
          entity.attributes,
          now,
        ),
      );
    }
    return out;
  }

  private hello(probe: ProbeRecord, parameters: ProbeParameters, now: string): PublicV2Message[] {
    // A probe that (re)connects starts with empty memory (DESIGN 4.3): what it held before is gone.
    const out: PublicV2Message[] = [];
    for (const [key, record] of probe.dataviews) {
      out.push(...this.deleteRecord(record, now, now));
      probe.dataviews.delete(key);
    }
    probe.parameters = { ...parameters, ConState: "Up" };
    out.push(...this.announce(probe, probe.announced ? "snapshot" : "create", now));
    probe.announced = true;
    return out;
  }

  private bye(probe: ProbeRecord, now: string): PublicV2Message[] {
    if (probe.parameters === undefined) return [];
    probe.parameters = { ...probe.parameters, ConState: "Down" };
    return [probeMessage("update", this.gateway.name, probe.setup.name, probe.parameters, now)];
  }

  private dataview(
    probe: ProbeRecord,
    address: DataviewAddress,
    plugin: string,
    state: {
      rows: readonly { name: string; cells: Readonly<Record<string, string>> }[];
      headlines: Readonly<Record<string, string>>;
    },
    touched: readonly string[],
    probeTime: string,
    now: string,
  ): PublicV2Message[] {
    const key = dataviewKey(address);
    const previous = probe.dataviews.get(key);
    const context: MetricsContext = {
      gateway: this.gateway.name,
      probe: probe.setup.name,
      osType: probe.parameters?.osType ?? "",
      plugin,
      address,
    };
    const out: PublicV2Message[] = [];
    const rows = new Map(state.rows.map((r) => [r.name, r.cells] as const));
    if (previous === undefined) {
      out.push(headlineMessage("create", context, state.headlines, now, probeTime));
    } else {
      if (!sameCells(previous.headlines, state.headlines)) {
        out.push(headlineMessage("update", context, state.headlines, now, probeTime));
      }
      for (const [name, cells] of previous.rows) {
        if (!rows.has(name)) out.push(tableMessage("delete", context, name, cells, now, probeTime));
      }
    }
    const wrote = new Set(touched);
    for (const [name, cells] of rows) {
      const before = previous?.rows.get(name);
      if (before === undefined) out.push(tableMessage("create", context, name, cells, now, probeTime));
      else if (wrote.has(name) || !sameCells(before, cells)) {
        out.push(tableMessage("update", context, name, cells, now, probeTime));
      }
    }
    probe.dataviews.set(key, { context, rows, headlines: state.headlines });
    return out;
  }

  private dataviewDeleted(probe: ProbeRecord, address: DataviewAddress, probeTime: string, now: string) {
    const key = dataviewKey(address);
    const record = probe.dataviews.get(key);
    if (record === undefined) return [];
    probe.dataviews.delete(key);
    return this.deleteRecord(record, now, probeTime);
  }

  private deleteRecord(record: DataviewRecord, now: string, probeTime: string): PublicV2Message[] {
    const out: PublicV2Message[] = [];
    for (const [name, cells] of record.rows)
      out.push(tableMessage("delete", record.context, name, cells, now, probeTime));
    out.push(headlineMessage("delete", record.context, record.headlines, now, probeTime));
    return out;
  }
}
