/**
 * Refused and ended probe links, counted by reason for the gateway's `/metrics`
 * (`vigil_gateway_link_refusals_total{reason}`) and logged at most once per reason every
 * LINK_REFUSAL_LOG_INTERVAL_MS (DESIGN 5.4b: "counted and logged"; house rule: repeated warnings
 * are rate-limited), so a peer that keeps trying cannot fill the log. Each line carries the count
 * so far and how many refusals of that reason went unlogged since the last line.
 */
import type { Logger } from "pino";
import { LINK_REFUSAL_LOG_INTERVAL_MS } from "../config/defaults.js";

/** Why a link was refused or ended by the gateway for something its peer did. */
export const LINK_REFUSAL_REASONS = [
  /** The upgrade carried no `Authorization: Bearer` secret (HTTP 401). */
  "missing_secret",
  /** The upgrade's secret is no probe's (HTTP 401, the same answer as a missing one). */
  "wrong_secret",
  /** As many links as LINK_MAX_UNAUTHENTICATED had not said `hello` yet (HTTP 503). */
  "busy",
  /** No `hello` within LINK_HELLO_TIMEOUT_MS (close 4002). */
  "hello_timeout",
  /** The `hello` named a probe other than the secret's (close 1008). */
  "not_this_probe",
  /** A frame that breaks the protocol, credit included (close 1002). */
  "protocol_error",
  /** A message over `limits.linkFrameBytes`, however fragmented (close 1009). */
  "frame_too_large",
  /** A frame whose JSON nests deeper than `limits.jsonDepth` (close 4001). */
  "too_deep",
  /** A binary frame or text that is not JSON (close 1003, 1007). */
  "invalid_data",
] as const;
export type LinkRefusalReason = (typeof LINK_REFUSAL_REASONS)[number];

interface Tally {
  total: number;
  unlogged: number;
  loggedAt: number;
}

/** The counts and the rate-limited log lines of one gateway's refused links. */
export class LinkRefusals {
  private readonly tallies = new Map<LinkRefusalReason, Tally>();

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = LINK_REFUSAL_LOG_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one refusal; logs it (with `fields`) unless one of its reason was logged lately. */
  note(reason: LinkRefusalReason, fields: Record<string, unknown>, message: string): void {
    let tally = this.tallies.get(reason);
    if (tally === undefined) {
      tally = { total: 0, unlogged: 0, loggedAt: Number.NEGATIVE_INFINITY };
      this.tallies.set(reason, tally);
    }
    tally.total += 1;
    const now = this.now();
    if (now - tally.loggedAt < this.intervalMs) {
      tally.unlogged += 1;
      return;
    }
    this.log.warn({ ...fields, reason, refusedTotal: tally.total, unloggedSince: tally.unlogged }, message);
    tally.loggedAt = now;
    tally.unlogged = 0;
  }

  /** Refusals so far by reason (every reason, 0 when none). */
  counts(): [LinkRefusalReason, number][] {
    return LINK_REFUSAL_REASONS.map((reason) => [reason, this.tallies.get(reason)?.total ?? 0]);
  }
}
