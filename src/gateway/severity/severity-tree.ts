/**
 * The tree of the items that have a severity or a state (DESIGN 4.1): gateway › probe › managed
 * entity › sampler › dataview › headline | row/cell. Each node counts its children per severity
 * (snoozed ones left out) and a parent's severity is the highest non-empty count, so a leaf's
 * change reaches the gateway in O(depth), never a walk of siblings.
 *
 * - A parent ignores snoozed children (and inactive ones: vigil has no active times, so every
 *   item is active) and is `UNDEFINED` when nothing counts.
 * - Under a disconnected probe every item above the cells is `UNKNOWN`, and so are its cells and
 *   headlines that rules target (an `evaluated` severity); untargeted ones stay `UNDEFINED`.
 *
 * What a change means for publication and for automatic releases is the hooks' matter.
 */
import type { EventTarget, Severity } from "../../messages/types.js";
import type { AssignmentState, SnoozeState } from "./event-messages.js";
import {
  type DataviewTarget,
  type Item,
  type ItemLevel,
  type ItemOf,
  itemKey,
  type ProbeTarget,
} from "./item-target.js";
import { BY_RANK, type DataviewRules, SEVERITY_RANK } from "./rules.js";

/** One item of the tree. */
export interface Node {
  /** The item's level and names. */
  readonly item: Item;
  readonly key: string;
  readonly parent: Node | undefined;
  /** The probe node above (itself for a probe); undefined for the gateway. */
  probe: Node | undefined;
  /** Child items by name (samplers by `[name, type]`, a dataview's headlines by name). */
  readonly children: Map<string, Node>;
  /** A dataview's cells: row → column → cell. */
  readonly rows: Map<string, Map<string, Node>> | undefined;
  /** Counted children per severity rank (not snoozed). */
  readonly counts: number[];
  /** Leaves: what the rules and the sampler say. */
  evaluated: Severity;
  severity: Severity;
  published: Severity | undefined;
  value: string | undefined;
  snooze: SnoozeState | undefined;
  assignment: AssignmentState | undefined;
  /** Probe: its link is down. */
  down: boolean;
  /** Probe: osType; sampler and below: the plug-in. */
  osType: string | undefined;
  plugin: string | undefined;
  /** Dataview: the rules that apply to it (rules.ts). */
  rules: DataviewRules | undefined;
}

/** What the tree asks of its owner. */
export interface TreeHooks {
  /** What is kept for an item while it has no node: its last published severity and its states. */
  kept(key: string): Pick<Node, "published" | "snooze" | "assignment">;
  /** A node's severity changed from `previous` (to `node.severity`). */
  changed(node: Node, previous: Severity): void;
  /** A node left the tree (its item is gone). */
  removed(node: Node): void;
}

/** The levels whose items are made by `child` (the probe and the cells have their own). */
type ChildItem = ItemOf<"managedEntity" | "sampler" | "dataview" | "headline">;

export const isLeaf = (node: Node): boolean => node.item.level === "cell" || node.item.level === "headline";

/** The name a node is kept under in its parent's `children`. */
function childName(item: Item): string {
  switch (item.level) {
    case "gateway":
      return item.target.gateway;
    case "probe":
      return item.target.probe;
    case "managedEntity":
      return item.target.managedEntity;
    case "sampler":
      return JSON.stringify([item.target.sampler, item.target.type]);
    case "dataview":
      return item.target.dataview;
    case "headline":
    case "cell":
      return item.target.column;
  }
}

/** The target messages carry: the item's names, and `filter` where the probe and plug-in are known. */
export function targetOf(node: Node): EventTarget {
  const { item } = node;
  if (item.level === "gateway" || item.level === "probe" || item.level === "managedEntity")
    return item.target;
  const osType = node.probe?.osType;
  if (osType === undefined || node.plugin === undefined) return item.target;
  return { ...item.target, filter: { osType, pluginName: node.plugin } };
}

/** Snoozed items above a node. */
export function snoozedParents(node: Node): number {
  let n = 0;
  for (let p = node.parent; p !== undefined; p = p.parent) if (p.snooze !== undefined) n += 1;
  return n;
}

/** The nodes of the items of one gateway, and the propagation of their severities. */
export class SeverityTree {
  readonly root: Node;
  private readonly nodes = new Map<string, Node>();
  /** The dataview node `dataviewNode` found last. */
  private lastDataview: Node | undefined;

  constructor(
    private readonly gateway: string,
    private readonly hooks: TreeHooks,
  ) {
    this.root = this.makeNode({ level: "gateway", target: { gateway } }, undefined, undefined);
  }

  /** Nodes in the tree. */
  get size(): number {
    return this.nodes.size;
  }

  get(key: string): Node | undefined {
    return this.nodes.get(key);
  }

  /** Whether `node` is still its item's node (remove() and a node made anew both end that). */
  holds(node: Node): boolean {
    return this.nodes.get(node.key) === node;
  }

  /** The node of a probe, made when it has none. */
  probeNode(probe: string): Node {
    const existing = this.root.children.get(probe);
    if (existing !== undefined) return existing;
    const target: ProbeTarget = { gateway: this.gateway, probe };
    const node = this.makeNode({ level: "probe", target }, this.root, undefined);
    node.probe = node;
    this.root.children.set(probe, node);
    this.attach(node);
    return node;
  }

  /** The node of a managed entity, sampler, dataview or headline, made below `parent` when it has none. */
  child(parent: Node, item: ChildItem): Node {
    const name = childName(item);
    const existing = parent.children.get(name);
    if (existing !== undefined) return existing;
    const node = this.makeNode(item, parent, parent.probe);
    parent.children.set(name, node);
    this.attach(node);
    // A new item above the cells under a disconnected probe is UNKNOWN at once.
    if (item.level !== "headline") this.recompute(node);
    return node;
  }

  /** A new cell of a dataview's row (the caller knows it has none), with its value when known. */
  cell(dataview: Node, target: DataviewTarget, row: string, column: string, value?: string): Node {
    const rows = dataview.rows as Map<string, Map<string, Node>>;
    let cells = rows.get(row);
    if (cells === undefined) {
      cells = new Map();
      rows.set(row, cells);
    }
    const node = this.makeNode(
      { level: "cell", target: { ...target, row, column } },
      dataview,
      dataview.probe,
    );
    node.value = value;
    cells.set(column, node);
    this.attach(node);
    return node;
  }

  /** The node of a dataview (made with those above it when needed); its sampler's plug-in noted. */
  dataviewNode(target: DataviewTarget, plugin: string): Node {
    // The messages of a batch mostly name one dataview: its node is found again without walking
    // (and building the targets of) probe, entity and sampler.
    const last = this.lastDataview;
    if (last !== undefined && last.item.level === "dataview" && this.holds(last)) {
      const t = last.item.target;
      if (
        t.dataview === target.dataview &&
        t.sampler === target.sampler &&
        t.type === target.type &&
        t.managedEntity === target.managedEntity &&
        t.probe === target.probe
      ) {
        (last.parent as Node).plugin = plugin;
        last.plugin = plugin;
        return last;
      }
    }
    const { gateway, probe, managedEntity, type, sampler, dataview } = target;
    const me = this.child(this.probeNode(probe), {
      level: "managedEntity",
      target: { gateway, probe, managedEntity },
    });
    const s = this.child(me, { level: "sampler", target: { gateway, probe, managedEntity, type, sampler } });
    s.plugin = plugin;
    const dv = this.child(s, {
      level: "dataview",
      target: { gateway, probe, managedEntity, type, sampler, dataview },
    });
    dv.plugin = plugin;
    this.lastDataview = dv;
    return dv;
  }

  /** Removes an item and everything below it (the item is gone; its snooze and assignment stay). */
  remove(node: Node): void {
    this.walk(node, (item) => {
      this.nodes.delete(item.key);
      this.hooks.removed(item);
    });
    const parent = node.parent;
    if (parent === undefined) return;
    const { item } = node;
    if (item.level === "cell") {
      const cells = parent.rows?.get(item.target.row);
      cells?.delete(item.target.column);
      if (cells?.size === 0) parent.rows?.delete(item.target.row);
    } else parent.children.delete(childName(item));
    if (node.snooze === undefined) {
      parent.counts[SEVERITY_RANK[node.severity]] = (parent.counts[SEVERITY_RANK[node.severity]] ?? 0) - 1;
      this.recompute(parent);
    }
  }

  /** A leaf with nothing to say (UNDEFINED, never published, no state) is dropped. */
  collect(node: Node): void {
    if (
      node.evaluated === "UNDEFINED" &&
      node.severity === "UNDEFINED" &&
      (node.published === undefined || node.published === "UNDEFINED") &&
      node.snooze === undefined &&
      node.assignment === undefined
    )
      this.remove(node);
  }

  /** A node's new severity, counted in its parent's, and up the tree. */
  setSeverity(node: Node, next: Severity): void {
    const previous = node.severity;
    if (previous === next) return;
    const parent = node.parent;
    const counted = parent !== undefined && node.snooze === undefined;
    if (counted) {
      parent.counts[SEVERITY_RANK[previous]] = (parent.counts[SEVERITY_RANK[previous]] ?? 0) - 1;
      parent.counts[SEVERITY_RANK[next]] = (parent.counts[SEVERITY_RANK[next]] ?? 0) + 1;
    }
    node.severity = next;
    this.hooks.changed(node, previous);
    if (counted) this.recompute(parent);
  }

  /** A leaf's severity: its evaluation, UNKNOWN when targeted under a disconnected probe. */
  leafSeverity(node: Node): Severity {
    return node.probe?.down === true && node.evaluated !== "UNDEFINED" ? "UNKNOWN" : node.evaluated;
  }

  /** Re-derives the severity of every item of a subtree (a probe went down or came back). */
  refresh(node: Node): void {
    for (const child of [...node.children.values()]) this.refresh(child);
    if (node.rows !== undefined)
      for (const cells of [...node.rows.values()]) for (const cell of [...cells.values()]) this.refresh(cell);
    if (isLeaf(node)) this.setSeverity(node, this.leafSeverity(node));
    else this.recompute(node);
  }

  /** Visits a node and every node below it. */
  walk(node: Node, visit: (node: Node) => void): void {
    visit(node);
    for (const child of [...node.children.values()]) this.walk(child, visit);
    if (node.rows !== undefined)
      for (const cells of [...node.rows.values()])
        for (const cell of [...cells.values()]) this.walk(cell, visit);
  }

  /** Snoozes or unsnoozes a node: a snoozed node does not count in its parent's severity. */
  setSnooze(node: Node, state: SnoozeState | undefined): void {
    const before = node.snooze === undefined;
    node.snooze = state;
    const after = node.snooze === undefined;
    const parent = node.parent;
    if (parent === undefined || before === after) return;
    const rank = SEVERITY_RANK[node.severity];
    parent.counts[rank] = (parent.counts[rank] ?? 0) + (after ? 1 : -1);
    this.recompute(parent);
  }

  private makeNode(item: Item, parent: Node | undefined, probe: Node | undefined): Node {
    const key = itemKey(item.target);
    const level: ItemLevel = item.level;
    const node: Node = {
      item,
      key,
      parent,
      probe,
      children: new Map(),
      rows: level === "dataview" ? new Map() : undefined,
      counts: [0, 0, 0, 0, 0],
      evaluated: "UNDEFINED",
      severity: "UNDEFINED",
      ...this.hooks.kept(key),
      value: undefined,
      down: false,
      osType: undefined,
      plugin: parent?.plugin,
      rules: undefined,
    };
    this.nodes.set(key, node);
    return node;
  }

  /** A new node counts towards its parent. */
  private attach(node: Node): void {
    const parent = node.parent;
    if (parent === undefined || node.snooze !== undefined) return;
    parent.counts[SEVERITY_RANK[node.severity]] = (parent.counts[SEVERITY_RANK[node.severity]] ?? 0) + 1;
    this.recompute(parent);
  }

  private recompute(node: Node): void {
    if (isLeaf(node)) return;
    let next: Severity = "UNDEFINED";
    if (node.item.level !== "gateway" && node.probe?.down === true) next = "UNKNOWN";
    else {
      for (let rank = 4; rank > 0; rank -= 1) {
        if ((node.counts[rank] ?? 0) > 0) {
          next = BY_RANK[rank] as Severity;
          break;
        }
      }
    }
    this.setSeverity(node, next);
  }
}
