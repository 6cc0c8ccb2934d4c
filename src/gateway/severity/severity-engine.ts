/**
 * Severity, snooze and user assignment of every item of the gateway (DESIGN 4.1, 4.2, seed C):
 * the severity stage of the gateway's pipeline (link server → hierarchy → severity → publisher).
 *
 * The engine watches the metrics messages the hierarchy publishes and keeps a tree of the items
 * that have a severity or a state (severity-tree.ts): cells and headlines that rules or their
 * sampler target (dataview-evaluation.ts, rules.ts), and every item above one of them; an
 * untargeted cell costs nothing until someone snoozes or assigns it. Work is proportional to the
 * change: a table message evaluates the cells of its row, and a leaf's change reaches the gateway
 * in O(depth).
 *
 * - One `severity` `update` per change of an item's severity, with the previously published
 *   value (publication.ts); while a probe's state arrives after a (re)connect its items are held
 *   back, and at the end each is published once: `update` when it differs from what was last
 *   published, otherwise `snapshot` (DESIGN 4.3), with `snooze`/`userassignment` snapshots of its
 *   states.
 * - Snoozes and assignments are kept by item key, also while their item is gone, and are released
 *   by `system` when their `until*` condition is met (item-states.ts); the commands on them and
 *   the views `GET /v1/items` shows are item-commands.ts and item-views.ts.
 */
import type { RuleSetup } from "../../config/setup.js";
import type { WireSeverities } from "../../link/protocol.js";
import type {
  EventTarget,
  MessageOf,
  MessageType,
  MetricsTarget,
  PublicV2Message,
  Severity,
} from "../../messages/types.js";
import { DataviewEvaluation } from "./dataview-evaluation.js";
import { assignMessage, snoozeOnMessage } from "./event-messages.js";
import { type AssignCommand, type CommandResult, ItemCommands, type SnoozeCommand } from "./item-commands.js";
import { type EngineState, ItemStates } from "./item-states.js";
import { type DataviewTarget, itemKey, keyUnderProbe } from "./item-target.js";
import { type ItemLookup, type ItemView, ItemViews } from "./item-views.js";
import { Publication, SYSTEM } from "./publication.js";
import { RuleBook } from "./rules.js";
import { type SeverityTree, targetOf } from "./severity-tree.js";

/** Cell severities a sampler set on a row (fkm `matches`), looked up when its table message is seen. */
export type SamplerSeverities = (
  probe: string,
  target: DataviewTarget,
  row: string,
) => WireSeverities | undefined;

export interface SeverityEngineOptions {
  readonly gateway: string;
  readonly rules: readonly RuleSetup[];
  readonly lookup: ItemLookup;
  readonly samplerSeverities?: SamplerSeverities;
  /** Snoozes plus assignments held at most; default GATEWAY_MAX_ITEM_STATES. */
  readonly maxStates?: number;
  readonly restored?: EngineState;
}

/** How the engine takes a message of each type the hierarchy publishes (DESIGN 4.3). */
type Observers = {
  readonly [T in MessageType]: (message: MessageOf<T>, reevaluate: boolean) => void;
};

export class SeverityEngine {
  private readonly gatewayName: string;
  private readonly samplerSeverities: SamplerSeverities | undefined;
  private readonly rules: RuleBook;
  private readonly states: ItemStates;
  private readonly publication: Publication;
  private readonly tree: SeverityTree;
  private readonly commands: ItemCommands;
  private readonly evaluation: DataviewEvaluation;
  /** Every message type: a new one fails to compile until the engine says what it does with it. */
  private readonly observers: Observers = {
    probe: (message, reevaluate) => this.probe(message, reevaluate),
    managedEntity: (message, reevaluate) => this.managedEntity(message, reevaluate),
    headline: (message) => this.headline(message),
    table: (message) => this.table(message),
    // The engine's own messages (and a tap's) change no item.
    severity: () => {},
    snooze: () => {},
    userassignment: () => {},
  };

  constructor(options: SeverityEngineOptions) {
    this.gatewayName = options.gateway;
    this.samplerSeverities = options.samplerSeverities;
    this.rules = new RuleBook(options.rules);
    this.states = new ItemStates(options.maxStates, options.restored);
    this.publication = new Publication(options.gateway, this.states);
    this.tree = this.publication.tree;
    this.evaluation = new DataviewEvaluation(this.publication, this.rules);
    const views = new ItemViews(this.tree, this.states, options.lookup);
    this.commands = new ItemCommands(options.gateway, this.publication, this.states, views, options.lookup);
  }

  /** New rules (setup reload); the caller feeds every current row and headline to `observe` again. */
  setRules(rules: readonly RuleSetup[]): void {
    this.rules.set(rules);
  }

  /**
   * Applies the hierarchy's messages; returns them with the event messages they cause, each
   * right after its cause. With `reevaluate`, the messages are current state being evaluated again
   * (a rule change): only the event messages are returned.
   */
  observe(messages: readonly PublicV2Message[], nowMs: number, reevaluate = false): PublicV2Message[] {
    const p = this.publication;
    p.begin(nowMs);
    const result: PublicV2Message[] = [];
    for (const message of messages) {
      if (!reevaluate) result.push(message);
      (this.observers[message.type] as (message: PublicV2Message, reevaluate: boolean) => void)(
        message,
        reevaluate,
      );
      p.settle();
      if (p.pending) for (const event of p.take()) result.push(event);
    }
    return result;
  }

  /** A probe's state starts arriving (hello, then `state`): its items are held back until `endSync`. */
  beginSync(probe: string, osType: string, nowMs: number): PublicV2Message[] {
    const p = this.publication;
    p.begin(nowMs);
    const node = this.tree.probeNode(probe);
    node.osType = osType;
    p.syncing.add(node);
    if (node.down) {
      node.down = false;
      this.tree.refresh(node);
    }
    return p.take();
  }

  /**
   * The probe's state is complete: each of its items with a severity is published once,
   * `update` when it changed since last published, else `snapshot`; its snoozes and assignments
   * are republished as `snapshot` (DESIGN 4.3).
   */
  endSync(probe: string, nowMs: number): PublicV2Message[] {
    const p = this.publication;
    p.begin(nowMs);
    const node = this.tree.get(itemKey({ gateway: this.gatewayName, probe }));
    if (node === undefined) return p.take();
    p.syncing.delete(node);
    this.tree.walk(node, (item) => {
      p.held.delete(item);
      if (item.severity !== item.published) p.publishSeverity(item, "update");
      else if (item.severity !== "UNDEFINED") p.publishSeverity(item, "snapshot");
      if (item.snooze !== undefined) p.push(snoozeOnMessage("snapshot", targetOf(item), item.snooze, p.now));
      if (item.assignment !== undefined)
        p.push(assignMessage("snapshot", targetOf(item), item.assignment, p.now));
    });
    // What was published before a restart and is not there any more is gone.
    for (const key of this.states.publishedKeys()) {
      if (keyUnderProbe(key, probe) && this.tree.get(key) === undefined) this.states.forgetPublished(key);
    }
    if (p.syncing.size === 0 && p.held.delete(this.tree.root)) p.publishSeverity(this.tree.root, "update");
    p.settle();
    return p.take();
  }

  /**
   * Republishes current state (gateway start): every snooze and assignment, as `snapshot`, and the
   * gateway's severity when it has one (at start no probe is linked yet: the probes' items are
   * republished when each one's state has arrived, `endSync`).
   */
  snapshot(nowMs: number): PublicV2Message[] {
    const p = this.publication;
    p.begin(nowMs);
    if (this.tree.root.severity !== "UNDEFINED") p.publishSeverity(this.tree.root, "snapshot");
    for (const [key, held] of this.states.all("snooze")) {
      const node = this.tree.get(key);
      p.push(snoozeOnMessage("snapshot", node ? targetOf(node) : held.target, held.state, p.now));
    }
    for (const [key, held] of this.states.all("assignment")) {
      const node = this.tree.get(key);
      p.push(assignMessage("snapshot", node ? targetOf(node) : held.target, held.state, p.now));
    }
    return p.take();
  }

  /** Releases snoozes and assignments whose `untilTime` has come (call it every second or so). */
  tick(nowMs: number): PublicV2Message[] {
    const p = this.publication;
    p.begin(nowMs);
    for (const key of this.states.expired("snooze", nowMs)) p.release(key, "snooze", SYSTEM, "time passed");
    for (const key of this.states.expired("assignment", nowMs))
      p.release(key, "assignment", SYSTEM, "time passed");
    p.settle();
    return p.take();
  }

  // ---- Commands (DESIGN 4.2, item-commands.ts) -----------------------------------------------------

  snooze(target: EventTarget, command: SnoozeCommand, nowMs: number): CommandResult {
    return this.commands.snooze(target, command, nowMs);
  }

  unsnooze(target: EventTarget, user: string, comment: string | undefined, nowMs: number): CommandResult {
    return this.commands.release("snooze", target, user, comment, nowMs);
  }

  assign(target: EventTarget, command: AssignCommand, nowMs: number): CommandResult {
    return this.commands.assign(target, command, nowMs);
  }

  unassign(target: EventTarget, user: string, comment: string | undefined, nowMs: number): CommandResult {
    return this.commands.release("assignment", target, user, comment, nowMs);
  }

  /** The state of an item and of the items directly below it (`GET /v1/items`); 404 when unknown. */
  items(target: EventTarget): { item: ItemView; children: ItemView[] } {
    return this.commands.items(target);
  }

  // ---- State that survives a restart (item-states.ts, src/gateway/state) --------------------------

  /** Which state that survives a restart changed since the last call. */
  takeDirty(): { states: boolean; severities: boolean } {
    return this.states.takeDirty();
  }

  /** Snoozes and assignments (small; written at every command). */
  exportStates(): Pick<EngineState, "snoozes" | "assignments"> {
    return this.states.exportStates();
  }

  /** Last published severities (one per item with a severity; written at most every second). */
  exportSeverities(): Pick<EngineState, "severities"> {
    return this.states.exportSeverities();
  }

  /** Counts for the status page. */
  stats(): { items: number; snoozed: number; assigned: number; severity: Severity } {
    return {
      items: this.tree.size,
      snoozed: this.states.count("snooze"),
      assigned: this.states.count("assignment"),
      severity: this.tree.root.severity,
    };
  }

  // ---- Messages from the hierarchy -------------------------------------------------------------

  private probe(message: MessageOf<"probe">, reevaluate: boolean): void {
    const { probe } = message.data.target;
    if (message.operation === "delete") {
      const node = this.tree.get(itemKey({ gateway: this.gatewayName, probe }));
      if (node !== undefined) this.tree.remove(node);
      return;
    }
    if (reevaluate) return;
    const node = this.tree.probeNode(probe);
    node.osType = message.data.parameters.osType;
    if (message.data.parameters.ConState === "Down" && !node.down) {
      node.down = true;
      this.publication.syncing.delete(node);
      this.tree.refresh(node);
    }
  }

  private managedEntity(message: MessageOf<"managedEntity">, reevaluate: boolean): void {
    const { probe, managedEntity } = message.data.target;
    const target = { gateway: this.gatewayName, probe, managedEntity };
    if (message.operation === "delete") {
      const node = this.tree.get(itemKey(target));
      if (node !== undefined) this.tree.remove(node);
      return;
    }
    if (!reevaluate) this.tree.child(this.tree.probeNode(probe), { level: "managedEntity", target });
  }

  private headline(message: MessageOf<"headline">): void {
    const names = this.dataviewOf(message.data.target);
    if (message.operation === "delete") {
      const node = this.tree.get(itemKey(names));
      if (node !== undefined) this.tree.remove(node);
      return;
    }
    const dataview = this.tree.dataviewNode(names, message.data.target.filter.pluginName);
    this.evaluation.headlines(dataview, names, message.data.row);
  }

  private table(message: MessageOf<"table">): void {
    const t = message.data.target;
    const names = this.dataviewOf(t);
    if (message.operation === "delete") {
      const cells = this.tree.get(itemKey(names))?.rows?.get(t.row);
      if (cells !== undefined) for (const cell of [...cells.values()]) this.tree.remove(cell);
      return;
    }
    const dataview = this.tree.dataviewNode(names, t.filter.pluginName);
    const severities = this.samplerSeverities?.(t.probe, names, t.row);
    this.evaluation.cells(dataview, names, t.row, message.data.row, severities);
  }

  /** The dataview a metrics message is of. */
  private dataviewOf(t: MetricsTarget): DataviewTarget {
    const { probe, managedEntity, type, sampler, dataview } = t;
    return { gateway: this.gatewayName, probe, managedEntity, type, sampler, dataview };
  }
}
