/**
 * Items of the gateway's hierarchy named by an event target (seed C "Event target", DESIGN 4.2):
 * gateway › probe › managed entity › sampler (name and type) › dataview › headline | cell. A
 * headline is a `column` without a `row`; rows are not items of their own (the seed's target
 * dependencies: `row` requires `column`).
 */
import type { EventTarget } from "../../messages/types.js";

export type ItemLevel = "gateway" | "probe" | "managedEntity" | "sampler" | "dataview" | "headline" | "cell";

/** The level of the item a (well-formed) target names: its deepest field. */
export function levelOf(target: EventTarget): ItemLevel {
  if (target.column !== undefined) return target.row === undefined ? "headline" : "cell";
  if (target.dataview !== undefined) return "dataview";
  if (target.sampler !== undefined) return "sampler";
  if (target.managedEntity !== undefined) return "managedEntity";
  if (target.probe !== undefined) return "probe";
  return "gateway";
}

/**
 * A map key for an item (the gateway name is left out: one gateway). Names are data, so the key
 * is the JSON of the path, never an object property.
 */
export function itemKey(target: EventTarget): string {
  return JSON.stringify([
    target.probe ?? null,
    target.managedEntity ?? null,
    target.sampler ?? null,
    target.type ?? null,
    target.dataview ?? null,
    target.row ?? null,
    target.column ?? null,
  ]);
}

/** Whether the item of `key` is `probe` or lies below it. */
export function keyUnderProbe(key: string, probe: string): boolean {
  return key.startsWith(`[${JSON.stringify(probe)},`);
}

/** The target without `filter` (what identifies the item). */
export function bareTarget(target: EventTarget): EventTarget {
  const out: EventTarget = { gateway: target.gateway };
  if (target.probe !== undefined) out.probe = target.probe;
  if (target.managedEntity !== undefined) out.managedEntity = target.managedEntity;
  if (target.type !== undefined) out.type = target.type;
  if (target.sampler !== undefined) out.sampler = target.sampler;
  if (target.dataview !== undefined) out.dataview = target.dataview;
  if (target.row !== undefined) out.row = target.row;
  if (target.column !== undefined) out.column = target.column;
  return out;
}

/** The item of each level names every level above it (seed C's target dependencies). */
export interface GatewayTarget {
  readonly gateway: string;
}
export interface ProbeTarget extends GatewayTarget {
  readonly probe: string;
}
export interface EntityTarget extends ProbeTarget {
  readonly managedEntity: string;
}
export interface SamplerTarget extends EntityTarget {
  readonly type: string;
  readonly sampler: string;
}
export interface DataviewTarget extends SamplerTarget {
  readonly dataview: string;
}
export interface HeadlineTarget extends DataviewTarget {
  readonly column: string;
}
export interface CellTarget extends DataviewTarget {
  readonly row: string;
  readonly column: string;
}

/** The target of each level, every name of it present. */
export interface TargetOfLevel {
  readonly gateway: GatewayTarget;
  readonly probe: ProbeTarget;
  readonly managedEntity: EntityTarget;
  readonly sampler: SamplerTarget;
  readonly dataview: DataviewTarget;
  readonly headline: HeadlineTarget;
  readonly cell: CellTarget;
}

/** An item: its level and the target of that level (a union keyed on `level`). */
export type Item = {
  readonly [L in ItemLevel]: { readonly level: L; readonly target: TargetOfLevel[L] };
}[ItemLevel];

/** The item of one level, e.g. `ItemOf<"cell">`. */
export type ItemOf<L extends ItemLevel> = Extract<Item, { level: L }>;

/**
 * The item a (well-formed) target names, its names checked present from the deepest up: the
 * target without `filter`. A name missing above the deepest one (a target no command body
 * or message yields) names the level where the names stop.
 */
export function itemOf(target: EventTarget): Item {
  const { gateway, probe, managedEntity, type, sampler, dataview, row, column } = target;
  if (probe === undefined) return { level: "gateway", target: { gateway } };
  if (managedEntity === undefined) return { level: "probe", target: { gateway, probe } };
  if (sampler === undefined) return { level: "managedEntity", target: { gateway, probe, managedEntity } };
  const s = { gateway, probe, managedEntity, type: type ?? "", sampler };
  if (dataview === undefined) return { level: "sampler", target: s };
  const d = { ...s, dataview };
  if (column === undefined) return { level: "dataview", target: d };
  if (row === undefined) return { level: "headline", target: { ...d, column } };
  return { level: "cell", target: { ...d, row, column } };
}

/** The item directly above (undefined for the gateway). */
export function parentItem(item: Item): Item | undefined {
  switch (item.level) {
    case "gateway":
      return undefined;
    case "probe":
      return { level: "gateway", target: { gateway: item.target.gateway } };
    case "managedEntity": {
      const { gateway, probe } = item.target;
      return { level: "probe", target: { gateway, probe } };
    }
    case "sampler": {
      const { gateway, probe, managedEntity } = item.target;
      return { level: "managedEntity", target: { gateway, probe, managedEntity } };
    }
    case "dataview": {
      const { gateway, probe, managedEntity, type, sampler } = item.target;
      return { level: "sampler", target: { gateway, probe, managedEntity, type, sampler } };
    }
    case "headline":
    case "cell": {
      const { gateway, probe, managedEntity, type, sampler, dataview } = item.target;
      return { level: "dataview", target: { gateway, probe, managedEntity, type, sampler, dataview } };
    }
  }
}

/** The probe an item key names (null for the gateway); undefined for a key this module did not make. */
export function probeOfKey(key: string): string | null | undefined {
  try {
    const probe: unknown = (JSON.parse(key) as unknown[])[0];
    return probe === null || typeof probe === "string" ? probe : undefined;
  } catch {
    return undefined;
  }
}
