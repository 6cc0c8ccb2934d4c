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
