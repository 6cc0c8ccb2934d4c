/**
 * The middle of the gateway's pipeline (DESIGN 4): link server → hierarchy → severity →
 * publisher. What a probe's link sends is applied to the hierarchy, which answers the metrics
 * messages it makes (DESIGN 4.3); the severity stage watches them and adds its `severity`,
 * `snooze` and `userassignment` messages right after their causes (DESIGN 4.1–4.2); the link
 * server hands the result to the publisher. `app.ts` builds the two stages and joins them here.
 */
import type { GatewaySetup, ProbeSetup, RuleSetup } from "../config/setup.js";
import type { Change, ProbeParameters } from "../link/protocol.js";
import type { PublicV2Message } from "../messages/types.js";
import type { Applied, Hierarchy } from "./hierarchy.js";
import type { LinkModel } from "./link-server.js";
import type { SeverityEngine } from "./severity/severity-engine.js";

/** What the model needs of the severity stage. */
export type SeverityStage = Pick<SeverityEngine, "observe" | "beginSync" | "endSync" | "setRules">;

/** The hierarchy stage followed by the severity stage; each method returns the messages to publish. */
export class GatewayModel<S extends SeverityStage = SeverityStage> implements LinkModel {
  constructor(
    readonly hierarchy: Hierarchy,
    readonly severity: S,
  ) {}

  probeSetup(probe: string): ProbeSetup | undefined {
    return this.hierarchy.probeSetup(probe);
  }

  hello(probe: string, parameters: ProbeParameters, resumed = false): void {
    this.hierarchy.hello(probe, parameters, resumed);
  }

  parameters(probe: string, parameters: ProbeParameters, nowMs: number): PublicV2Message[] {
    return this.observed(this.hierarchy.parameters(probe, parameters, nowMs), nowMs);
  }

  /**
   * A batch of a probe's state: the first holds the probe's items back in the severity stage
   * until the last, after which each is published once (DESIGN 4.3).
   */
  state(probe: string, items: readonly Change[], last: boolean, nowMs: number): Applied {
    const applied = this.hierarchy.state(probe, items, last, nowMs);
    const held =
      applied.began === undefined ? [] : this.severity.beginSync(probe, applied.began.osType, nowMs);
    const out = this.observed(held.length === 0 ? applied.messages : [...held, ...applied.messages], nowMs);
    if (last) out.push(...this.severity.endSync(probe, nowMs));
    return { messages: out, rejected: applied.rejected };
  }

  changes(probe: string, changes: readonly Change[], nowMs: number): Applied {
    const applied = this.hierarchy.changes(probe, changes, nowMs);
    return { messages: this.observed(applied.messages, nowMs), rejected: applied.rejected };
  }

  down(probe: string, nowMs: number): PublicV2Message[] {
    return this.observed(this.hierarchy.down(probe, nowMs), nowMs);
  }

  /** A new setup (reload): see `Hierarchy.updateSetup`. */
  updateSetup(gateway: GatewaySetup, probes: readonly ProbeSetup[], nowMs: number): PublicV2Message[] {
    return this.observed(this.hierarchy.updateSetup(gateway, probes, nowMs), nowMs);
  }

  /**
   * New rules (setup reload): every row and headline is evaluated again at once; returns the
   * severity messages of the items whose severity changed.
   */
  updateRules(rules: readonly RuleSetup[], nowMs: number): PublicV2Message[] {
    this.severity.setRules(rules);
    const current = this.hierarchy.snapshot(nowMs).filter((m) => m.type === "headline" || m.type === "table");
    return this.severity.observe(current, nowMs, true);
  }

  /** The messages with the events they cause. */
  private observed(messages: PublicV2Message[], nowMs: number): PublicV2Message[] {
    if (messages.length === 0) return messages;
    return this.severity.observe(messages, nowMs);
  }
}
