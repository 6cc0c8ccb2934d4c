/**
 * What `GET /v1/items` and the commands answer for an item (DESIGN 4.2): its severity, whether it
 * is snoozed (and how many items above it are), its assignment, and a cell's or headline's value.
 * An item the tree holds no node for is UNDEFINED (untargeted, or its probe not linked since the
 * start), UNKNOWN above the cells of a disconnected probe; its states come from the kept ones.
 */
import type { EventTarget, Severity } from "../../messages/types.js";
import type { AssignmentState, SnoozeState } from "./event-messages.js";
import type { ItemStates } from "./item-states.js";
import { type Item, itemKey, itemOf, parentItem } from "./item-target.js";
import { isLeaf, type Node, type SeverityTree, snoozedParents, targetOf } from "./severity-tree.js";

/** The state of one item, as `GET /v1/items` and the commands answer it (DESIGN 4.2). */
export interface ItemView {
  readonly target: EventTarget;
  readonly severity: Severity;
  readonly active: boolean;
  readonly snoozed: (SnoozeView & { readonly snoozed: true }) | { readonly snoozed: false };
  readonly snoozedParents: number;
  readonly assignment: AssignmentView | { readonly userAssigned: false };
  readonly value?: string;
}

type SnoozeView = Omit<SnoozeState, "at" | "untilTime"> & {
  readonly at: string;
  readonly untilTime?: string;
};
type AssignmentView = Omit<AssignmentState, "at" | "untilTime"> & {
  readonly userAssigned: true;
  readonly at: string;
  readonly untilTime?: string;
};

/** What the hierarchy knows of an item the tree has no node for (its value, osType, plug-in). */
export interface FoundItem {
  readonly value?: string;
  readonly osType?: string;
  readonly plugin?: string;
}

/** What the views and commands ask the hierarchy about items the tree holds no node for. */
export interface ItemLookup {
  /** The item, when it exists: a cell's or headline's value, the probe's osType, the plug-in. */
  find(target: EventTarget): FoundItem | undefined;
  /** The items directly below an existing item (for `GET /v1/items`). */
  children(target: EventTarget): EventTarget[];
}

/** Views of the items of one tree. */
export class ItemViews {
  constructor(
    private readonly tree: SeverityTree,
    private readonly states: ItemStates,
    private readonly lookup: ItemLookup,
  ) {}

  /** The view of an item, with or without a node. */
  of(target: EventTarget): ItemView {
    const node = this.tree.get(itemKey(target));
    return node !== undefined ? this.node(node) : this.detached(itemOf(target));
  }

  /** The view of an item with a node. */
  node(node: Node): ItemView {
    const s = node.snooze;
    const a = node.assignment;
    return {
      target: targetOf(node),
      severity: node.severity,
      active: true,
      snoozed: s === undefined ? { snoozed: false } : { snoozed: true, ...timed(s) },
      snoozedParents: snoozedParents(node),
      assignment: a === undefined ? { userAssigned: false } : { userAssigned: true, ...timed(a) },
      ...(isLeaf(node) ? { value: node.value ?? "" } : {}),
    };
  }

  /**
   * An item that has no node: UNDEFINED (untargeted, or its probe not linked since the start);
   * its snooze and assignment, and its parents', come from the kept states.
   */
  detached(item: Item): ItemView {
    let parents = 0;
    for (let up = parentItem(item); up !== undefined; up = parentItem(up)) {
      if (this.states.get("snooze", itemKey(up.target)) !== undefined) parents += 1;
    }
    const { target } = item;
    const leaf = item.level === "cell" || item.level === "headline";
    const info = leaf ? this.lookup.find(target) : undefined;
    const key = itemKey(target);
    const s = this.states.get("snooze", key)?.state;
    const a = this.states.get("assignment", key)?.state;
    // Under a disconnected probe every item above the cells is UNKNOWN, also one that never had data.
    const down =
      item.level !== "gateway" && !leaf && this.tree.root.children.get(item.target.probe)?.down === true;
    return {
      target,
      severity: down ? "UNKNOWN" : "UNDEFINED",
      active: true,
      snoozed: s === undefined ? { snoozed: false } : { snoozed: true, ...timed(s) },
      snoozedParents: parents,
      assignment: a === undefined ? { userAssigned: false } : { userAssigned: true, ...timed(a) },
      ...(info === undefined ? {} : { value: info.value ?? "" }),
    };
  }
}

function timed<T extends { at: number; untilTime?: number }>(state: T) {
  const { at, untilTime, ...rest } = state;
  return {
    ...rest,
    at: new Date(at).toISOString(),
    ...(untilTime === undefined ? {} : { untilTime: new Date(untilTime).toISOString() }),
  };
}
