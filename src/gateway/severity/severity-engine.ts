/**
 * Severity, snooze and user assignment of every item of the gateway (DESIGN 4.1, 4.2, seed C).
 *
 * The engine watches the metrics messages the hierarchy publishes and keeps a tree of the items
 * that have a severity or a state: cells and headlines that rules (or their sampler) target, and
 * every item above one of them; an untargeted cell costs nothing until someone snoozes or assigns
 * it. Work is proportional to the change: a table message evaluates the cells of its row; a leaf
 * whose severity changes updates its parent's count of children per severity, and the parent's
 * severity is the highest non-empty count, so propagation is O(depth) (never a walk of siblings).
 *
 * - A parent ignores snoozed children (and inactive ones: vigil has no active times, so every
 *   item is active) and is `UNDEFINED` when nothing counts.
 * - A disconnected probe's items are `UNKNOWN`: the probe, its managed entities, samplers and
 *   dataviews, and its cells and headlines that rules target; untargeted cells stay `UNDEFINED`.
 * - One `severity` `update` per change of an item's severity, with the previously published
 *   value; while a probe's state arrives after a (re)connect its items are held back, and at the
 *   end each is published once: `update` when it differs from what was last published, otherwise
 *   `snapshot` (DESIGN 4.3), with `snooze`/`userassignment` snapshots of its states.
 * - Snoozes and assignments are kept by item key, also while their item is gone (a probe away, a
 *   row re-pushed), and are released by `system` when their `until*` condition is met.
 */
import { GATEWAY_MAX_ITEM_STATES } from "../../config/defaults.js";
import type { RuleSetup } from "../../config/setup.js";
import type { WireSeverities } from "../../link/protocol.js";
import type { EventTarget, PublicV2Message, Severity } from "../../messages/types.js";
import { iso } from "../message-builders.js";
import {
  type AssignmentState,
  assignMessage,
  type SeverityFacts,
  type SnoozeState,
  severityMessage,
  snoozeOffMessage,
  snoozeOnMessage,
  unassignMessage,
} from "./event-messages.js";
import { bareTarget, type ItemLevel, itemKey, keyUnderProbe, levelOf } from "./item-target.js";
import { BY_RANK, type CompiledRule, compileRules, parseNumber, SEVERITY_RANK } from "./rules.js";

/** What the engine asks the hierarchy about items it holds no node for. */
export interface ItemLookup {
  /** The item, when it exists: a cell's or headline's value, the probe's osType, the plug-in. */
  find(target: EventTarget): FoundItem | undefined;
  /** The items directly below an existing item (for `GET /v1/items`). */
  children(target: EventTarget): EventTarget[];
}

export interface FoundItem {
  readonly value?: string;
  readonly osType?: string;
  readonly plugin?: string;
}

/** Cell severities a sampler set on a row (fkm `matches`), looked up when its table message is seen. */
export type SamplerSeverities = (
  probe: string,
  target: { managedEntity: string; sampler: string; type: string; dataview: string },
  row: string,
) => WireSeverities | undefined;

interface DataviewRules {
  readonly generation: number;
  readonly cells: readonly CompiledRule[];
  readonly headlines: readonly CompiledRule[];
  readonly byColumn: Map<string, readonly CompiledRule[]>;
  readonly byHeadline: Map<string, readonly CompiledRule[]>;
}

interface Node {
  readonly level: ItemLevel;
  readonly key: string;
  readonly target: EventTarget;
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
  rules: DataviewRules | undefined;
}

interface Held<S> {
  readonly target: EventTarget;
  readonly state: S;
}

/** Why a command was refused; the HTTP layer answers it (404, 409). */
export class CommandRefused extends Error {
  constructor(
    readonly reason: "not-found" | "not-applicable",
    message: string,
  ) {
    super(message);
    this.name = "CommandRefused";
  }
}

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

/** What survives a restart (the state file, src/gateway/state). */
export interface EngineState {
  readonly snoozes: readonly Held<SnoozeState>[];
  readonly assignments: readonly Held<AssignmentState>[];
  /** Last published severity by item key (UNDEFINED left out). */
  readonly severities: readonly (readonly [string, Severity])[];
}

export interface SeverityEngineOptions {
  readonly gateway: string;
  readonly rules: readonly RuleSetup[];
  readonly lookup: ItemLookup;
  readonly samplerSeverities?: SamplerSeverities;
  /** Snoozes plus assignments held at most; default GATEWAY_MAX_ITEM_STATES. */
  readonly maxStates?: number;
  readonly restored?: EngineState;
}

export interface SnoozeCommand {
  readonly user: string;
  /** The `sub` of the token that sent it, when security is on. */
  readonly subject?: string;
  readonly comment: string;
  readonly period: SnoozeState["period"];
  readonly until: Omit<SnoozeState, "snoozedBy" | "snoozedBySubject" | "comment" | "period" | "at">;
}

export interface AssignCommand {
  readonly user: string;
  /** The `sub` of the token that sent it, when security is on. */
  readonly subject?: string;
  readonly assignedTo: string;
  readonly comment: string;
  readonly period: AssignmentState["period"];
  readonly until: Omit<
    AssignmentState,
    "assignedTo" | "assignedBy" | "assignedBySubject" | "comment" | "period" | "at"
  >;
}

const SYSTEM = "system";

export class SeverityEngine {
  private readonly gatewayName: string;
  private readonly root: Node;
  private readonly nodes = new Map<string, Node>();
  private readonly lookup: ItemLookup;
  private readonly samplerSeverities: SamplerSeverities | undefined;
  private readonly maxStates: number;
  private rules: CompiledRule[];
  private generation = 0;
  private readonly snoozes = new Map<string, Held<SnoozeState>>();
  private readonly assignments = new Map<string, Held<AssignmentState>>();
  /** Last published severity of items (also of items with no node, after a restart). */
  private readonly lastPublished = new Map<string, Severity>();
  private readonly syncing = new Set<Node>();
  /** The dataview node `dataviewNode` found last. */
  private lastDataview: Node | undefined;
  private readonly held = new Set<Node>();
  private readonly releases: { node: Node; what: "snooze" | "assignment"; reason: string }[] = [];
  private out: PublicV2Message[] = [];
  private now = "";
  private nowMs = 0;
  /** Set when snoozes or assignments changed since the last `takeDirty()`. */
  private statesDirty = false;
  /** Set when last published severities changed since the last `takeDirty()`. */
  private severitiesDirty = false;

  constructor(options: SeverityEngineOptions) {
    this.gatewayName = options.gateway;
    this.lookup = options.lookup;
    this.samplerSeverities = options.samplerSeverities;
    this.maxStates = options.maxStates ?? GATEWAY_MAX_ITEM_STATES;
    this.rules = compileRules(options.rules);
    const restored = options.restored;
    if (restored !== undefined) {
      for (const held of restored.snoozes) this.snoozes.set(itemKey(held.target), held);
      for (const held of restored.assignments) this.assignments.set(itemKey(held.target), held);
      for (const [key, severity] of restored.severities) this.lastPublished.set(key, severity);
    }
    this.root = this.makeNode("gateway", { gateway: this.gatewayName }, undefined, undefined);
  }

  /** New rules (setup reload); the caller feeds every current row and headline to `observe` again. */
  setRules(rules: readonly RuleSetup[]): void {
    this.rules = compileRules(rules);
    this.generation += 1;
  }

  /**
   * Applies the hierarchy's messages; returns them with the event messages they cause, each
   * right after its cause. With `reevaluate`, the messages are current state being evaluated again
   * (a rule change): only the event messages are returned.
   */
  observe(messages: readonly PublicV2Message[], nowMs: number, reevaluate = false): PublicV2Message[] {
    this.begin(nowMs);
    const result: PublicV2Message[] = [];
    for (const message of messages) {
      if (!reevaluate) result.push(message);
      this.apply(message, reevaluate);
      this.settle();
      if (this.out.length > 0) {
        for (const event of this.out) result.push(event);
        this.out = [];
      }
    }
    return result;
  }

  /** A probe's state starts arriving (hello, then `state`): its items are held back until `endSync`. */
  beginSync(probe: string, osType: string, nowMs: number): PublicV2Message[] {
    this.begin(nowMs);
    const node = this.probeNode(probe);
    node.osType = osType;
    this.syncing.add(node);
    if (node.down) {
      node.down = false;
      this.refresh(node);
    }
    return this.finish();
  }

  /**
   * The probe's state is complete: each of its items with a severity is published once,
   * `update` when it changed since last published, else `snapshot`; its snoozes and assignments
   * are republished as `snapshot` (DESIGN 4.3).
   */
  endSync(probe: string, nowMs: number): PublicV2Message[] {
    this.begin(nowMs);
    const node = this.nodes.get(itemKey({ gateway: this.gatewayName, probe }));
    if (node === undefined) return this.finish();
    this.syncing.delete(node);
    this.walk(node, (item) => {
      this.held.delete(item);
      if (item.severity !== item.published) this.publishSeverity(item, "update");
      else if (item.severity !== "UNDEFINED") this.publishSeverity(item, "snapshot");
      if (item.snooze !== undefined)
        this.out.push(snoozeOnMessage("snapshot", this.targetOf(item), item.snooze, this.now));
      if (item.assignment !== undefined)
        this.out.push(assignMessage("snapshot", this.targetOf(item), item.assignment, this.now));
    });
    // What was published before a restart and is not there any more is gone.
    for (const key of this.lastPublished.keys()) {
      if (keyUnderProbe(key, probe) && !this.nodes.has(key)) {
        this.lastPublished.delete(key);
        this.severitiesDirty = true;
      }
    }
    if (this.syncing.size === 0 && this.held.delete(this.root)) this.publishSeverity(this.root, "update");
    this.settle();
    return this.finish();
  }

  /**
   * Republishes current state (gateway start): every snooze and assignment, as `snapshot`, and the
   * gateway's severity when it has one (at start no probe is linked yet: the probes' items are
   * republished when each one's state has arrived, `endSync`).
   */
  snapshot(nowMs: number): PublicV2Message[] {
    this.begin(nowMs);
    if (this.root.severity !== "UNDEFINED") this.publishSeverity(this.root, "snapshot");
    for (const [key, held] of this.snoozes) {
      const node = this.nodes.get(key);
      this.out.push(
        snoozeOnMessage("snapshot", node ? this.targetOf(node) : held.target, held.state, this.now),
      );
    }
    for (const [key, held] of this.assignments) {
      const node = this.nodes.get(key);
      this.out.push(
        assignMessage("snapshot", node ? this.targetOf(node) : held.target, held.state, this.now),
      );
    }
    return this.finish();
  }

  /** Releases snoozes and assignments whose `untilTime` has come (call it every second or so). */
  tick(nowMs: number): PublicV2Message[] {
    this.begin(nowMs);
    for (const [key, held] of [...this.snoozes]) {
      if (held.state.untilTime !== undefined && held.state.untilTime <= nowMs)
        this.release(key, "snooze", SYSTEM, "time passed");
    }
    for (const [key, held] of [...this.assignments]) {
      if (held.state.untilTime !== undefined && held.state.untilTime <= nowMs)
        this.release(key, "assignment", SYSTEM, "time passed");
    }
    this.settle();
    return this.finish();
  }

  // ---- Commands (DESIGN 4.2) -------------------------------------------------------------------

  snooze(
    target: EventTarget,
    command: SnoozeCommand,
    nowMs: number,
  ): { view: ItemView; messages: PublicV2Message[] } {
    this.begin(nowMs);
    const node = this.resolve(target);
    if (node.snooze !== undefined)
      throw new CommandRefused("not-applicable", "the item is already snoozed; unsnooze it first");
    this.checkRoom();
    const until = this.completeUntil(node, command.period, command.until);
    const state: SnoozeState = {
      snoozedBy: command.user,
      ...(command.subject === undefined ? {} : { snoozedBySubject: command.subject }),
      comment: command.comment,
      period: command.period,
      ...until,
      at: nowMs,
    };
    this.snoozes.set(node.key, { target: node.target, state });
    this.statesDirty = true;
    this.out.push(snoozeOnMessage("update", this.targetOf(node), state, this.now));
    this.setSnooze(node, state);
    this.settle();
    return { view: this.view(node), messages: this.finish() };
  }

  unsnooze(target: EventTarget, user: string, comment: string | undefined, nowMs: number) {
    this.begin(nowMs);
    this.checkGateway(target);
    const key = itemKey(target);
    // A snooze can be released while its item is away (a probe down, a row not pushed again).
    if (!this.snoozes.has(key)) {
      this.existing(target); // 404 first when the item does not exist
      throw new CommandRefused("not-applicable", "the item is not snoozed");
    }
    this.release(key, "snooze", user, comment);
    this.settle();
    return { view: this.viewOf(target), messages: this.finish() };
  }

  assign(
    target: EventTarget,
    command: AssignCommand,
    nowMs: number,
  ): { view: ItemView; messages: PublicV2Message[] } {
    this.begin(nowMs);
    const node = this.resolve(target);
    if (node.assignment !== undefined)
      throw new CommandRefused(
        "not-applicable",
        `the item is already assigned to '${node.assignment.assignedTo}'; unassign it first`,
      );
    this.checkRoom();
    const until = this.completeUntil(node, command.period, command.until);
    const state: AssignmentState = {
      assignedTo: command.assignedTo,
      assignedBy: command.user,
      ...(command.subject === undefined ? {} : { assignedBySubject: command.subject }),
      comment: command.comment,
      period: command.period,
      ...until,
      at: nowMs,
    };
    this.assignments.set(node.key, { target: node.target, state });
    this.statesDirty = true;
    node.assignment = state;
    this.out.push(assignMessage("update", this.targetOf(node), state, this.now));
    this.settle();
    return { view: this.view(node), messages: this.finish() };
  }

  unassign(target: EventTarget, user: string, comment: string | undefined, nowMs: number) {
    this.begin(nowMs);
    this.checkGateway(target);
    const key = itemKey(target);
    if (!this.assignments.has(key)) {
      this.existing(target);
      throw new CommandRefused("not-applicable", "no user is assigned to the item");
    }
    this.release(key, "assignment", user, comment);
    this.settle();
    return { view: this.viewOf(target), messages: this.finish() };
  }

  /** The state of an item and of the items directly below it (`GET /v1/items`); 404 when unknown. */
  items(target: EventTarget): { item: ItemView; children: ItemView[] } {
    const node = this.existing(target);
    const children = this.lookup.children(target).map((child) => {
      const known = this.nodes.get(itemKey(child));
      return known !== undefined ? this.view(known) : this.detachedView(child);
    });
    return { item: node !== undefined ? this.view(node) : this.detachedView(bareTarget(target)), children };
  }

  /** Which state that survives a restart changed since the last call. */
  takeDirty(): { states: boolean; severities: boolean } {
    const dirty = { states: this.statesDirty, severities: this.severitiesDirty };
    this.statesDirty = false;
    this.severitiesDirty = false;
    return dirty;
  }

  /** Snoozes and assignments (small; written at every command). */
  exportStates(): Pick<EngineState, "snoozes" | "assignments"> {
    return { snoozes: [...this.snoozes.values()], assignments: [...this.assignments.values()] };
  }

  /** Last published severities (one per item with a severity; written at most every second). */
  exportSeverities(): Pick<EngineState, "severities"> {
    return { severities: [...this.lastPublished] };
  }

  /** Counts for the status page. */
  stats(): { items: number; snoozed: number; assigned: number; severity: Severity } {
    return {
      items: this.nodes.size,
      snoozed: this.snoozes.size,
      assigned: this.assignments.size,
      severity: this.root.severity,
    };
  }

  // ---- Messages from the hierarchy -------------------------------------------------------------

  private apply(message: PublicV2Message, reevaluate: boolean): void {
    switch (message.type) {
      case "probe": {
        const { probe } = message.data.target;
        if (message.operation === "delete") {
          const node = this.nodes.get(itemKey({ gateway: this.gatewayName, probe }));
          if (node !== undefined) this.remove(node);
          return;
        }
        if (reevaluate) return;
        const node = this.probeNode(probe);
        node.osType = message.data.parameters.osType;
        if (message.data.parameters.ConState === "Down" && !node.down) {
          node.down = true;
          this.syncing.delete(node);
          this.refresh(node);
        }
        return;
      }
      case "managedEntity": {
        const { probe, managedEntity } = message.data.target;
        const key = itemKey({ gateway: this.gatewayName, probe, managedEntity });
        if (message.operation === "delete") {
          const node = this.nodes.get(key);
          if (node !== undefined) this.remove(node);
          return;
        }
        if (!reevaluate)
          this.child(
            this.probeNode(probe),
            managedEntity,
            { gateway: this.gatewayName, probe, managedEntity },
            "managedEntity",
          );
        return;
      }
      case "headline": {
        const t = message.data.target;
        if (message.operation === "delete") {
          const { filter: _filter, ...names } = t;
          const node = this.nodes.get(itemKey({ ...names }));
          if (node !== undefined) this.remove(node);
          return;
        }
        const dataview = this.dataviewNode(
          t.probe,
          t.managedEntity,
          t.sampler,
          t.type,
          t.dataview,
          t.filter.pluginName,
        );
        this.headlines(dataview, message.data.row);
        return;
      }
      case "table": {
        const t = message.data.target;
        if (message.operation === "delete") {
          const key = itemKey({
            gateway: this.gatewayName,
            probe: t.probe,
            managedEntity: t.managedEntity,
            sampler: t.sampler,
            type: t.type,
            dataview: t.dataview,
          });
          const cells = this.nodes.get(key)?.rows?.get(t.row);
          if (cells !== undefined) for (const cell of [...cells.values()]) this.remove(cell);
          return;
        }
        const dataview = this.dataviewNode(
          t.probe,
          t.managedEntity,
          t.sampler,
          t.type,
          t.dataview,
          t.filter.pluginName,
        );
        const severities = this.samplerSeverities?.(t.probe, t, t.row);
        this.cells(dataview, t.row, message.data.row, severities);
        return;
      }
      default:
        return;
    }
  }

  private rulesOf(dataview: Node): DataviewRules {
    const cached = dataview.rules;
    if (cached !== undefined && cached.generation === this.generation) return cached;
    const t = dataview.target;
    const me = t.managedEntity ?? "";
    const sampler = t.sampler ?? "";
    const type = t.type ?? "";
    const name = t.dataview ?? "";
    const applicable = this.rules.filter(
      (r) => r.managedEntity(me) && r.sampler(sampler, type) && r.dataview(name),
    );
    const rules: DataviewRules = {
      generation: this.generation,
      cells: applicable.filter((r) => !r.headline),
      headlines: applicable.filter((r) => r.headline),
      byColumn: new Map(),
      byHeadline: new Map(),
    };
    dataview.rules = rules;
    return rules;
  }

  private candidates(
    list: readonly CompiledRule[],
    cache: Map<string, readonly CompiledRule[]>,
    name: string,
  ) {
    let found = cache.get(name);
    if (found === undefined) {
      found = list.filter((r) => r.column(name));
      // Bounded by the dataview's columns; cleared rather than grown past a few thousand names.
      if (cache.size >= 4096) cache.clear();
      cache.set(name, found);
    }
    return found;
  }

  private headlines(dataview: Node, row: Readonly<Record<string, string>>): void {
    const rules = this.rulesOf(dataview);
    for (const [name, node] of dataview.children) if (row[name] === undefined) this.remove(node);
    for (const name in row) {
      const value = row[name] as string;
      const candidates =
        rules.headlines.length === 0
          ? rules.headlines
          : this.candidates(rules.headlines, rules.byHeadline, name);
      const existing = dataview.children.get(name);
      if (candidates.length === 0 && existing === undefined) continue;
      const evaluated = this.evaluate(candidates, undefined, value);
      const node = existing ?? this.child(dataview, name, { ...dataview.target, column: name }, "headline");
      this.leaf(node, evaluated, value);
    }
  }

  private cells(
    dataview: Node,
    rowName: string,
    row: Readonly<Record<string, string>>,
    severities: WireSeverities | undefined,
  ): void {
    const rules = this.rulesOf(dataview);
    const rows = dataview.rows as Map<string, Map<string, Node>>;
    let cells = rows.get(rowName);
    if (cells !== undefined)
      for (const [column, node] of cells) if (row[column] === undefined) this.remove(node);
    if (rules.cells.length === 0 && severities === undefined && cells === undefined) return;
    for (const column in row) {
      const value = row[column] as string;
      const candidates =
        rules.cells.length === 0 ? rules.cells : this.candidates(rules.cells, rules.byColumn, column);
      let sampler: Severity | undefined;
      if (severities !== undefined) for (const [c, s] of severities) if (c === column) sampler = s;
      const existing = cells?.get(column);
      if (existing === undefined && sampler === undefined && !candidates.some((r) => r.row(rowName)))
        continue;
      let evaluated = this.evaluate(candidates, rowName, value);
      if (sampler !== undefined && SEVERITY_RANK[sampler] > SEVERITY_RANK[evaluated]) evaluated = sampler;
      let node = existing;
      if (node === undefined) {
        if (cells === undefined) {
          cells = new Map();
          rows.set(rowName, cells);
        }
        node = this.makeNode("cell", { ...dataview.target, row: rowName, column }, dataview, dataview.probe);
        cells.set(column, node);
        this.attach(node);
      }
      this.leaf(node, evaluated, value);
    }
  }

  private evaluate(candidates: readonly CompiledRule[], row: string | undefined, value: string): Severity {
    let targeted = false;
    let result: Severity = "UNDEFINED";
    let number: number | undefined | null = null;
    for (const rule of candidates) {
      if (row !== undefined && !rule.row(row)) continue;
      if (!targeted) {
        targeted = true;
        result = "OK";
      }
      if (SEVERITY_RANK[rule.severity] <= SEVERITY_RANK[result]) continue;
      if (number === null) number = parseNumber(value);
      if (rule.holds(value, number)) result = rule.severity;
    }
    return result;
  }

  /** A cell's or headline's new evaluation and value. */
  private leaf(node: Node, evaluated: Severity, value: string): void {
    const before = node.value;
    node.value = value;
    node.evaluated = evaluated;
    if (before !== undefined && before !== value) {
      const snoozeUntil = node.snooze?.untilValueNot;
      if (snoozeUntil !== undefined && value !== snoozeUntil)
        this.releases.push({ node, what: "snooze", reason: "value changed" });
      const assignUntil = node.assignment?.untilValueNot;
      if (assignUntil !== undefined && value !== assignUntil)
        this.releases.push({ node, what: "assignment", reason: "value changed" });
    }
    this.setSeverity(node, this.leafSeverity(node));
    this.collect(node);
  }

  private leafSeverity(node: Node): Severity {
    return node.probe?.down === true && node.evaluated !== "UNDEFINED" ? "UNKNOWN" : node.evaluated;
  }

  // ---- The tree ----------------------------------------------------------------------------------

  private makeNode(
    level: ItemLevel,
    target: EventTarget,
    parent: Node | undefined,
    probe: Node | undefined,
  ): Node {
    const key = itemKey(target);
    const node: Node = {
      level,
      key,
      target,
      parent,
      probe,
      children: new Map(),
      rows: level === "dataview" ? new Map() : undefined,
      counts: [0, 0, 0, 0, 0],
      evaluated: "UNDEFINED",
      severity: "UNDEFINED",
      published: this.lastPublished.get(key),
      value: undefined,
      snooze: this.snoozes.get(key)?.state,
      assignment: this.assignments.get(key)?.state,
      down: false,
      osType: undefined,
      plugin: parent?.plugin,
      rules: undefined,
    };
    this.nodes.set(key, node);
    return node;
  }

  private child(parent: Node, name: string, target: EventTarget, level: ItemLevel): Node {
    const existing = parent.children.get(name);
    if (existing !== undefined) return existing;
    const node = this.makeNode(level, target, parent, level === "probe" ? undefined : parent.probe);
    parent.children.set(name, node);
    this.attach(node);
    // A new item above the cells under a disconnected probe is UNKNOWN at once.
    if (level !== "headline") this.recompute(node);
    return node;
  }

  private probeNode(probe: string): Node {
    const existing = this.root.children.get(probe);
    if (existing !== undefined) return existing;
    const node = this.makeNode("probe", { gateway: this.gatewayName, probe }, this.root, undefined);
    node.probe = node;
    this.root.children.set(probe, node);
    this.attach(node);
    return node;
  }

  private dataviewNode(
    probe: string,
    managedEntity: string,
    sampler: string,
    type: string,
    dataview: string,
    plugin: string,
  ): Node {
    // The messages of a batch mostly name one dataview: its node is found again without walking
    // (and building the targets of) probe, entity and sampler. It is still the item's
    // node while `nodes` holds it (remove() and a node made anew both change that).
    const last = this.lastDataview;
    if (last !== undefined && this.nodes.get(last.key) === last) {
      const t = last.target;
      if (
        t.dataview === dataview &&
        t.sampler === sampler &&
        t.type === type &&
        t.managedEntity === managedEntity &&
        t.probe === probe
      ) {
        (last.parent as Node).plugin = plugin;
        last.plugin = plugin;
        return last;
      }
    }
    const g = this.gatewayName;
    const me = this.child(
      this.probeNode(probe),
      managedEntity,
      { gateway: g, probe, managedEntity },
      "managedEntity",
    );
    const s = this.child(
      me,
      JSON.stringify([sampler, type]),
      { gateway: g, probe, managedEntity, type, sampler },
      "sampler",
    );
    s.plugin = plugin;
    const dv = this.child(
      s,
      dataview,
      { gateway: g, probe, managedEntity, type, sampler, dataview },
      "dataview",
    );
    dv.plugin = plugin;
    this.lastDataview = dv;
    return dv;
  }

  /** A new node counts towards its parent. */
  private attach(node: Node): void {
    const parent = node.parent;
    if (parent === undefined || node.snooze !== undefined) return;
    parent.counts[SEVERITY_RANK[node.severity]] = (parent.counts[SEVERITY_RANK[node.severity]] ?? 0) + 1;
    this.recompute(parent);
  }

  /** Removes an item and everything below it (the item is gone; its snooze and assignment stay). */
  private remove(node: Node): void {
    this.walk(node, (item) => {
      this.nodes.delete(item.key);
      this.held.delete(item);
      this.syncing.delete(item);
      if (this.lastPublished.delete(item.key)) this.severitiesDirty = true;
    });
    const parent = node.parent;
    if (parent === undefined) return;
    if (node.level === "cell") {
      const row = node.target.row as string;
      const cells = parent.rows?.get(row);
      cells?.delete(node.target.column as string);
      if (cells?.size === 0) parent.rows?.delete(row);
    } else {
      const name =
        node.level === "sampler"
          ? JSON.stringify([node.target.sampler, node.target.type])
          : ((node.level === "headline" ? node.target.column : node.target[node.level as "probe"]) as string);
      parent.children.delete(name);
    }
    if (node.snooze === undefined) {
      parent.counts[SEVERITY_RANK[node.severity]] = (parent.counts[SEVERITY_RANK[node.severity]] ?? 0) - 1;
      this.recompute(parent);
    }
  }

  /** A leaf with nothing to say (UNDEFINED, never published, no state) is dropped. */
  private collect(node: Node): void {
    if (
      node.evaluated === "UNDEFINED" &&
      node.severity === "UNDEFINED" &&
      (node.published === undefined || node.published === "UNDEFINED") &&
      node.snooze === undefined &&
      node.assignment === undefined
    )
      this.remove(node);
  }

  private setSeverity(node: Node, next: Severity): void {
    const previous = node.severity;
    if (previous === next) return;
    const parent = node.parent;
    const counted = parent !== undefined && node.snooze === undefined;
    if (counted) {
      parent.counts[SEVERITY_RANK[previous]] = (parent.counts[SEVERITY_RANK[previous]] ?? 0) - 1;
      parent.counts[SEVERITY_RANK[next]] = (parent.counts[SEVERITY_RANK[next]] ?? 0) + 1;
    }
    node.severity = next;
    this.changed(node, previous);
    if (counted) this.recompute(parent);
  }

  private recompute(node: Node): void {
    if (node.level === "cell" || node.level === "headline") return;
    let next: Severity = "UNDEFINED";
    if (node.level !== "gateway" && node.probe?.down === true) next = "UNKNOWN";
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

  /** Re-derives the severity of every item of a subtree (a probe went down or came back). */
  private refresh(node: Node): void {
    for (const child of [...node.children.values()]) this.refresh(child);
    if (node.rows !== undefined)
      for (const cells of [...node.rows.values()]) for (const cell of [...cells.values()]) this.refresh(cell);
    if (node.level === "cell" || node.level === "headline") this.setSeverity(node, this.leafSeverity(node));
    else this.recompute(node);
  }

  private walk(node: Node, visit: (node: Node) => void): void {
    visit(node);
    for (const child of [...node.children.values()]) this.walk(child, visit);
    if (node.rows !== undefined)
      for (const cells of [...node.rows.values()])
        for (const cell of [...cells.values()]) this.walk(cell, visit);
  }

  private setSnooze(node: Node, state: SnoozeState | undefined): void {
    const before = node.snooze === undefined;
    node.snooze = state;
    const after = node.snooze === undefined;
    const parent = node.parent;
    if (parent === undefined || before === after) return;
    const rank = SEVERITY_RANK[node.severity];
    parent.counts[rank] = (parent.counts[rank] ?? 0) + (after ? 1 : -1);
    this.recompute(parent);
  }

  // ---- Publication and automatic release -----------------------------------------------------

  private isHeld(node: Node): boolean {
    if (node.level === "gateway") return this.syncing.size > 0;
    return node.probe !== undefined && this.syncing.has(node.probe);
  }

  private changed(node: Node, previous: Severity): void {
    if (this.isHeld(node)) this.held.add(node);
    else this.publishSeverity(node, "update");
    const s = node.snooze;
    if (s !== undefined) {
      if (s.untilSeverity !== undefined && node.severity === s.untilSeverity)
        this.releases.push({ node, what: "snooze", reason: `severity reached ${s.untilSeverity}` });
      else if (
        s.untilSeverityNot !== undefined &&
        previous === s.untilSeverityNot &&
        node.severity !== previous
      )
        this.releases.push({ node, what: "snooze", reason: `severity left ${s.untilSeverityNot}` });
    }
    const a = node.assignment;
    if (a !== undefined) {
      if (a.untilSeverity !== undefined && node.severity === a.untilSeverity)
        this.releases.push({ node, what: "assignment", reason: `severity reached ${a.untilSeverity}` });
      else if (
        a.untilSeverityNot !== undefined &&
        previous === a.untilSeverityNot &&
        node.severity !== previous
      )
        this.releases.push({ node, what: "assignment", reason: `severity left ${a.untilSeverityNot}` });
    }
  }

  private publishSeverity(node: Node, operation: "update" | "snapshot"): void {
    if (operation === "update" && node.severity === node.published) return;
    if (operation === "update" && node.severity === "UNDEFINED" && node.published === undefined) return;
    const previous = operation === "update" ? node.published : undefined;
    this.out.push(severityMessage(operation, this.targetOf(node), this.facts(node, previous), this.now));
    node.published = node.severity;
    if (node.severity === "UNDEFINED") {
      if (this.lastPublished.delete(node.key)) this.severitiesDirty = true;
    } else if (this.lastPublished.get(node.key) !== node.severity) {
      this.lastPublished.set(node.key, node.severity);
      this.severitiesDirty = true;
    }
  }

  private facts(node: Node, previous: Severity | undefined): SeverityFacts {
    return {
      severity: node.severity,
      previousSeverity: previous,
      active: true,
      snoozed: node.snooze !== undefined,
      snoozedParents: this.snoozedParents(node),
      userAssigned: node.assignment !== undefined,
      value: node.level === "cell" || node.level === "headline" ? (node.value ?? "") : undefined,
    };
  }

  private snoozedParents(node: Node): number {
    let n = 0;
    for (let p = node.parent; p !== undefined; p = p.parent) if (p.snooze !== undefined) n += 1;
    return n;
  }

  /** The target messages carry: the item's names, and `filter` where the probe and plug-in are known. */
  private targetOf(node: Node): EventTarget {
    const level = node.level;
    if (level === "gateway" || level === "probe" || level === "managedEntity") return node.target;
    const osType = node.probe?.osType;
    if (osType === undefined || node.plugin === undefined) return node.target;
    return { ...node.target, filter: { osType, pluginName: node.plugin } };
  }

  /** Applies the automatic releases the last change caused, and what they cause in turn. */
  private settle(): void {
    while (this.releases.length > 0) {
      const { node, what, reason } = this.releases.shift() as (typeof this.releases)[number];
      if (this.nodes.get(node.key) !== node) continue;
      if (what === "snooze" ? node.snooze === undefined : node.assignment === undefined) continue;
      this.release(node.key, what, SYSTEM, reason);
    }
  }

  private release(key: string, what: "snooze" | "assignment", by: string, comment: string | undefined): void {
    const node = this.nodes.get(key);
    if (what === "snooze") {
      const held = this.snoozes.get(key);
      if (held === undefined) return;
      this.snoozes.delete(key);
      this.statesDirty = true;
      this.out.push(snoozeOffMessage(node ? this.targetOf(node) : held.target, by, comment, this.now));
      if (node !== undefined) {
        this.setSnooze(node, undefined);
        if (node.level === "cell" || node.level === "headline") this.collect(node);
      }
      return;
    }
    const held = this.assignments.get(key);
    if (held === undefined) return;
    this.assignments.delete(key);
    this.statesDirty = true;
    this.out.push(unassignMessage(node ? this.targetOf(node) : held.target, by, comment, this.now));
    if (node !== undefined) {
      node.assignment = undefined;
      if (node.level === "cell" || node.level === "headline") this.collect(node);
    }
  }

  // ---- Command helpers -----------------------------------------------------------------------------

  private begin(nowMs: number): void {
    this.nowMs = nowMs;
    this.now = iso(nowMs);
  }

  private finish(): PublicV2Message[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  private checkRoom(): void {
    if (this.snoozes.size + this.assignments.size >= this.maxStates)
      throw new CommandRefused(
        "not-applicable",
        `the gateway already holds ${this.maxStates} snoozes and assignments, its limit; release some first`,
      );
  }

  private checkGateway(target: EventTarget): void {
    if (target.gateway !== this.gatewayName)
      throw new CommandRefused("not-found", `this gateway is '${this.gatewayName}', not '${target.gateway}'`);
  }

  private viewOf(target: EventTarget): ItemView {
    const node = this.nodes.get(itemKey(target));
    return node !== undefined ? this.view(node) : this.detachedView(bareTarget(target));
  }

  /** The node of an existing item, without creating one. */
  private existing(target: EventTarget): Node | undefined {
    this.checkGateway(target);
    const node = this.nodes.get(itemKey(target));
    if (node !== undefined) return node;
    if (this.lookup.find(bareTarget(target)) === undefined)
      throw new CommandRefused("not-found", "no such item");
    return undefined;
  }

  /** The node of an existing item, made when it has none yet (an untargeted cell, a quiet probe). */
  private resolve(target: EventTarget): Node {
    const found = this.existing(target);
    if (found !== undefined) return found;
    const bare = bareTarget(target);
    const info = this.lookup.find(bare) as FoundItem;
    const g = this.gatewayName;
    const level = levelOf(bare);
    const probe = bare.probe as string;
    if (level === "probe") {
      const node = this.probeNode(probe);
      if (info.osType !== undefined) node.osType = info.osType;
      return node;
    }
    const me = this.child(
      this.probeNode(probe),
      bare.managedEntity as string,
      { gateway: g, probe, managedEntity: bare.managedEntity as string },
      "managedEntity",
    );
    if (level === "managedEntity") return me;
    const sampler = this.child(
      me,
      JSON.stringify([bare.sampler, bare.type]),
      { ...me.target, type: bare.type as string, sampler: bare.sampler as string },
      "sampler",
    );
    if (info.plugin !== undefined) sampler.plugin = info.plugin;
    if (level === "sampler") return sampler;
    const dataview = this.child(
      sampler,
      bare.dataview as string,
      { ...sampler.target, dataview: bare.dataview as string },
      "dataview",
    );
    if (level === "dataview") return dataview;
    if (level === "headline") {
      const node = this.child(
        dataview,
        bare.column as string,
        { ...dataview.target, column: bare.column as string },
        "headline",
      );
      node.value = info.value ?? "";
      return node;
    }
    const rows = dataview.rows as Map<string, Map<string, Node>>;
    let cells = rows.get(bare.row as string);
    if (cells === undefined) {
      cells = new Map();
      rows.set(bare.row as string, cells);
    }
    const node = this.makeNode(
      "cell",
      { ...dataview.target, row: bare.row as string, column: bare.column as string },
      dataview,
      dataview.probe,
    );
    node.value = info.value ?? "";
    cells.set(bare.column as string, node);
    this.attach(node);
    return node;
  }

  /** Fills the conditions a period implies and checks they apply to the item. */
  private completeUntil<U extends SnoozeCommand["until"]>(node: Node, period: string, until: U): U {
    const valueItem = node.level === "cell" || node.level === "headline";
    if (until.untilValueNot !== undefined && !valueItem)
      throw new CommandRefused(
        "not-applicable",
        `period ${period} watches a value; only cells and headlines have one`,
      );
    if (period === "ValueChanges") {
      if (!valueItem)
        throw new CommandRefused("not-applicable", "period ValueChanges applies to cells and headlines only");
      return { ...until, untilValueNot: until.untilValueNot ?? node.value ?? "" };
    }
    if (period === "SeverityFrom" && until.untilSeverityNot === undefined)
      return { ...until, untilSeverityNot: node.severity };
    if (period === "SeverityToOK") return { ...until, untilSeverity: "OK" };
    if (until.untilTime !== undefined && until.untilTime <= this.nowMs)
      throw new CommandRefused("not-applicable", "untilTime has already passed");
    return until;
  }

  private view(node: Node): ItemView {
    const s = node.snooze;
    const a = node.assignment;
    return {
      target: this.targetOf(node),
      severity: node.severity,
      active: true,
      snoozed: s === undefined ? { snoozed: false } : { snoozed: true, ...timed(s) },
      snoozedParents: this.snoozedParents(node),
      assignment: a === undefined ? { userAssigned: false } : { userAssigned: true, ...timed(a) },
      ...(node.level === "cell" || node.level === "headline" ? { value: node.value ?? "" } : {}),
    };
  }

  /**
   * An item that has no node: UNDEFINED (untargeted, or its probe not linked since the start);
   * its snooze and assignment, and its parents', come from the kept states.
   */
  private detachedView(target: EventTarget): ItemView {
    let parents = 0;
    for (let up = parentTarget(target); up !== undefined; up = parentTarget(up)) {
      if (this.snoozes.has(itemKey(up))) parents += 1;
    }
    const info =
      levelOf(target) === "cell" || levelOf(target) === "headline" ? this.lookup.find(target) : undefined;
    const s = this.snoozes.get(itemKey(target))?.state;
    const a = this.assignments.get(itemKey(target))?.state;
    // Under a disconnected probe every item above the cells is UNKNOWN, also one that never had data.
    const level = levelOf(target);
    const down =
      level !== "gateway" &&
      level !== "cell" &&
      level !== "headline" &&
      this.root.children.get(target.probe as string)?.down === true;
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

function parentTarget(target: EventTarget): EventTarget | undefined {
  const level = levelOf(target);
  const t = bareTarget(target);
  switch (level) {
    case "gateway":
      return undefined;
    case "probe":
      return { gateway: t.gateway };
    case "managedEntity":
      return { gateway: t.gateway, probe: t.probe as string };
    case "sampler":
      return { gateway: t.gateway, probe: t.probe as string, managedEntity: t.managedEntity as string };
    case "dataview": {
      const { dataview: _d, ...rest } = t;
      return rest;
    }
    case "headline":
    case "cell": {
      const { row: _r, column: _c, ...rest } = t;
      return rest;
    }
  }
}
