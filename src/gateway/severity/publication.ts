/**
 * What the changes of the severity tree publish (DESIGN 4.1–4.3): one `severity` `update` per
 * change of an item's severity, with the previously published value; while a probe's state
 * arrives after a (re)connect its items are held back (the engine publishes them at its end); and
 * the releases by `system` that the changes cause (an `until*` condition met), applied in turn
 * once the change that caused them is complete (`settle`).
 */
import type { PublicV2Message, Severity } from "../../messages/types.js";
import { iso } from "../message-builders.js";
import { type SeverityFacts, severityMessage, snoozeOffMessage, unassignMessage } from "./event-messages.js";
import { type ItemStates, type StateKind, severityRelease, valueReleases } from "./item-states.js";
import { isLeaf, type Node, SeverityTree, snoozedParents, targetOf } from "./severity-tree.js";

/** Who releases states whose condition is met. */
export const SYSTEM = "system";

interface Release {
  readonly node: Node;
  readonly kind: StateKind;
  readonly reason: string;
}

/** The tree of one gateway and the messages its changes make, gathered until `take()`. */
export class Publication {
  readonly tree: SeverityTree;
  /** Probes whose state is arriving: their items' changes are held back. */
  readonly syncing = new Set<Node>();
  /** Items whose severity changed while held back. */
  readonly held = new Set<Node>();
  private readonly releases: Release[] = [];
  private out: PublicV2Message[] = [];
  /** The instant of the work in progress, as epoch ms and as published. */
  nowMs = 0;
  now = "";

  constructor(
    gateway: string,
    private readonly states: ItemStates,
  ) {
    this.tree = new SeverityTree(gateway, {
      kept: (key) => ({
        published: states.published(key),
        snooze: states.get("snooze", key)?.state,
        assignment: states.get("assignment", key)?.state,
      }),
      changed: (node, previous) => this.changed(node, previous),
      removed: (node) => {
        this.held.delete(node);
        this.syncing.delete(node);
        states.forgetPublished(node.key);
      },
    });
  }

  /** Starts a piece of work at `nowMs`. */
  begin(nowMs: number): void {
    this.nowMs = nowMs;
    this.now = iso(nowMs);
  }

  /** The messages made since the last call. */
  take(): PublicV2Message[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  /** Whether messages are waiting for `take()`. */
  get pending(): boolean {
    return this.out.length > 0;
  }

  push(message: PublicV2Message): void {
    this.out.push(message);
  }

  /** Publishes a node's severity: `update` when it differs from what was published, or `snapshot`. */
  publishSeverity(node: Node, operation: "update" | "snapshot"): void {
    if (operation === "update" && node.severity === node.published) return;
    if (operation === "update" && node.severity === "UNDEFINED" && node.published === undefined) return;
    const previous = operation === "update" ? node.published : undefined;
    this.out.push(severityMessage(operation, targetOf(node), this.facts(node, previous), this.now));
    node.published = node.severity;
    this.states.notePublished(node.key, node.severity);
  }

  /** A leaf's new value: states watching its value are released when it changed. */
  valueChanged(node: Node, before: string | undefined, value: string): void {
    if (before === undefined || before === value) return;
    if (valueReleases(node.snooze, value))
      this.releases.push({ node, kind: "snooze", reason: "value changed" });
    if (valueReleases(node.assignment, value))
      this.releases.push({ node, kind: "assignment", reason: "value changed" });
  }

  /** Applies the automatic releases the last change caused, and what they cause in turn. */
  settle(): void {
    while (this.releases.length > 0) {
      const { node, kind, reason } = this.releases.shift() as Release;
      if (!this.tree.holds(node)) continue;
      if (kind === "snooze" ? node.snooze === undefined : node.assignment === undefined) continue;
      this.release(node.key, kind, SYSTEM, reason);
    }
  }

  /** Releases an item's snooze or assignment (`by` a user, or `system`); no-op when it has none. */
  release(key: string, kind: StateKind, by: string, comment: string | undefined): void {
    const node = this.tree.get(key);
    const held = this.states.take(kind, key);
    if (held === undefined) return;
    const target = node ? targetOf(node) : held.target;
    if (kind === "snooze") {
      this.out.push(snoozeOffMessage(target, by, comment, this.now));
      if (node !== undefined) this.tree.setSnooze(node, undefined);
    } else {
      this.out.push(unassignMessage(target, by, comment, this.now));
      if (node !== undefined) node.assignment = undefined;
    }
    if (node !== undefined && isLeaf(node)) this.tree.collect(node);
  }

  private isHeld(node: Node): boolean {
    if (node.item.level === "gateway") return this.syncing.size > 0;
    return node.probe !== undefined && this.syncing.has(node.probe);
  }

  private changed(node: Node, previous: Severity): void {
    if (this.isHeld(node)) this.held.add(node);
    else this.publishSeverity(node, "update");
    if (node.snooze !== undefined) {
      const reason = severityRelease(node.snooze, previous, node.severity);
      if (reason !== undefined) this.releases.push({ node, kind: "snooze", reason });
    }
    if (node.assignment !== undefined) {
      const reason = severityRelease(node.assignment, previous, node.severity);
      if (reason !== undefined) this.releases.push({ node, kind: "assignment", reason });
    }
  }

  private facts(node: Node, previous: Severity | undefined): SeverityFacts {
    return {
      severity: node.severity,
      previousSeverity: previous,
      active: true,
      snoozed: node.snooze !== undefined,
      snoozedParents: snoozedParents(node),
      userAssigned: node.assignment !== undefined,
      value: isLeaf(node) ? (node.value ?? "") : undefined,
    };
  }
}
