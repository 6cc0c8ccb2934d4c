/**
 * The commands on items (DESIGN 4.2): snooze, unsnooze, assign, unassign, and the item views of
 * `GET /v1/items`. A command names an existing item (404 otherwise) of this gateway; a snooze or
 * assignment is refused (409) when the item already has one, when its period does not apply to
 * the item, or when the gateway holds GATEWAY_MAX_ITEM_STATES of them. A snooze or assignment can
 * be released while its item is away (a probe down, a row not pushed again).
 */
import type { EventTarget, PublicV2Message } from "../../messages/types.js";
import { type AssignmentState, assignMessage, type SnoozeState, snoozeOnMessage } from "./event-messages.js";
import type { ItemStates, StateKind } from "./item-states.js";
import { itemKey, itemOf } from "./item-target.js";
import type { ItemLookup, ItemView, ItemViews } from "./item-views.js";
import type { Publication } from "./publication.js";
import { isLeaf, type Node, targetOf } from "./severity-tree.js";

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

/** What a command answers: the item's new state and the messages to publish. */
export interface CommandResult {
  readonly view: ItemView;
  readonly messages: PublicV2Message[];
}

/** What a release refuses with when the item holds no such state. */
const NOT_HELD: Readonly<Record<StateKind, string>> = {
  snooze: "the item is not snoozed",
  assignment: "no user is assigned to the item",
};

/** The commands of one gateway's items. */
export class ItemCommands {
  constructor(
    private readonly gateway: string,
    private readonly publication: Publication,
    private readonly states: ItemStates,
    private readonly views: ItemViews,
    private readonly lookup: ItemLookup,
  ) {}

  snooze(target: EventTarget, command: SnoozeCommand, nowMs: number): CommandResult {
    const p = this.publication;
    p.begin(nowMs);
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
    this.states.set("snooze", node.key, { target: node.item.target, state });
    p.push(snoozeOnMessage("update", targetOf(node), state, p.now));
    p.tree.setSnooze(node, state);
    p.settle();
    return { view: this.views.node(node), messages: p.take() };
  }

  assign(target: EventTarget, command: AssignCommand, nowMs: number): CommandResult {
    const p = this.publication;
    p.begin(nowMs);
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
    this.states.set("assignment", node.key, { target: node.item.target, state });
    node.assignment = state;
    p.push(assignMessage("update", targetOf(node), state, p.now));
    p.settle();
    return { view: this.views.node(node), messages: p.take() };
  }

  /** Releases an item's snooze or assignment by `user`. */
  release(
    kind: StateKind,
    target: EventTarget,
    user: string,
    comment: string | undefined,
    nowMs: number,
  ): CommandResult {
    const p = this.publication;
    p.begin(nowMs);
    this.checkGateway(target);
    const key = itemKey(target);
    // A state can be released while its item is away (a probe down, a row not pushed again).
    if (this.states.get(kind, key) === undefined) {
      this.existing(target); // 404 first when the item does not exist
      throw new CommandRefused("not-applicable", NOT_HELD[kind]);
    }
    p.release(key, kind, user, comment);
    p.settle();
    return { view: this.views.of(target), messages: p.take() };
  }

  /** The state of an item and of the items directly below it (`GET /v1/items`); 404 when unknown. */
  items(target: EventTarget): { item: ItemView; children: ItemView[] } {
    const node = this.existing(target);
    const children = this.lookup.children(target).map((child) => this.views.of(child));
    return {
      item: node !== undefined ? this.views.node(node) : this.views.detached(itemOf(target)),
      children,
    };
  }

  private checkRoom(): void {
    if (!this.states.hasRoom())
      throw new CommandRefused(
        "not-applicable",
        `the gateway already holds ${this.states.maxStates} snoozes and assignments, its limit; release some first`,
      );
  }

  private checkGateway(target: EventTarget): void {
    if (target.gateway !== this.gateway)
      throw new CommandRefused("not-found", `this gateway is '${this.gateway}', not '${target.gateway}'`);
  }

  /** The node of an existing item, without creating one; 404 when the item does not exist. */
  private existing(target: EventTarget): Node | undefined {
    this.checkGateway(target);
    const node = this.publication.tree.get(itemKey(target));
    if (node !== undefined) return node;
    if (this.lookup.find(itemOf(target).target) === undefined)
      throw new CommandRefused("not-found", "no such item");
    return undefined;
  }

  /**
   * The node of an existing item, made (with those above it) when it has none yet: an untargeted
   * cell, a quiet probe; what the hierarchy knows of it (osType, plug-in, value) is noted.
   */
  private resolve(target: EventTarget): Node {
    const existing = this.existing(target);
    if (existing !== undefined) return existing;
    const tree = this.publication.tree;
    const item = itemOf(target);
    const found = this.lookup.find(item.target) ?? {};
    if (item.level === "gateway") return tree.root;
    const probe = tree.probeNode(item.target.probe);
    if (item.level === "probe") {
      if (found.osType !== undefined) probe.osType = found.osType;
      return probe;
    }
    const { gateway, managedEntity } = item.target;
    const me = tree.child(probe, {
      level: "managedEntity",
      target: { gateway, probe: item.target.probe, managedEntity },
    });
    if (item.level === "managedEntity") return me;
    const { type, sampler: samplerName } = item.target;
    const samplerTarget = { gateway, probe: item.target.probe, managedEntity, type, sampler: samplerName };
    const sampler = tree.child(me, { level: "sampler", target: samplerTarget });
    if (found.plugin !== undefined) sampler.plugin = found.plugin;
    if (item.level === "sampler") return sampler;
    const dataviewTarget = { ...samplerTarget, dataview: item.target.dataview };
    const dataview = tree.child(sampler, { level: "dataview", target: dataviewTarget });
    if (item.level === "dataview") return dataview;
    if (item.level === "headline") {
      const node = tree.child(dataview, item);
      node.value = found.value ?? "";
      return node;
    }
    return tree.cell(dataview, dataviewTarget, item.target.row, item.target.column, found.value ?? "");
  }

  /** Fills the conditions a period implies and checks they apply to the item. */
  private completeUntil<U extends SnoozeCommand["until"]>(node: Node, period: string, until: U): U {
    const valueItem = isLeaf(node);
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
    if (until.untilTime !== undefined && until.untilTime <= this.publication.nowMs)
      throw new CommandRefused("not-applicable", "untilTime has already passed");
    return until;
  }
}
