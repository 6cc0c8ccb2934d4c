/**
 * The gateway's side of the probe link (DESIGN 1 "probe link" and "Hand-offs", DESIGN 4.3).
 *
 * A link comes with who it is (DESIGN 5.4b): an in-process link (`vigil up`) is trusted; a
 * WebSocket link presented a probe's link secret on its upgrade (checked in `app.ts` before the
 * upgrade) and may speak only for that probe. Each link must say `hello` within
 * LINK_HELLO_TIMEOUT_MS: a `hello` naming another probe than the secret's (NOT_THIS_PROBE), a probe
 * of another protocol version or one the setup does not name is refused with an `error` frame
 * and closed; otherwise it gets `welcome` with its own part of the setup, and a newer link of the
 * same probe (which presented the same probe's secret) replaces an older one. Every frame that
 * makes the gateway publish (`parameters`, `state`, `changes`) is a batch within the link's credit:
 * validated, applied to the hierarchy, its messages handed to the publisher at once, and
 * acknowledged only when the publisher is ready and the gateway's memory is below its protection
 * threshold, so a slow sink slows the probe down and nothing a probe sends grows a queue. A link
 * silent for 3 heartbeat intervals is lost; a lost link, like `bye`, publishes the probe with
 * `ConState: Down`. A frame that breaks the protocol closes its link; refusals are counted and
 * their log lines rate-limited (`link-refusals.ts`).
 */
import type { Logger } from "pino";
import {
  LINK_BATCH_CHANGES,
  LINK_CREDIT_BATCHES,
  LINK_HEARTBEAT_MS,
  LINK_HELLO_TIMEOUT_MS,
  MEMORY_CHECK_INTERVAL_MS,
} from "../config/defaults.js";
import type { DeploymentSetup, ProbeSetup } from "../config/setup.js";
import type { MemoryProtection } from "../http/memory-protection.js";
import type { LimitRefusals } from "../limits/limit-refusals.js";
import {
  type Change,
  CLOSE_GOING_AWAY,
  CLOSE_HEARTBEAT_TIMEOUT,
  CLOSE_HELLO_TIMEOUT,
  CLOSE_INVALID_DATA,
  CLOSE_NORMAL,
  CLOSE_POLICY,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
  CLOSE_TOO_DEEP,
  type GatewayFrame,
  LINK_PROTOCOL_VERSION,
  type LinkErrorCode,
  type ProbeFrame,
  type ProbeParameters,
  probeLimits,
} from "../link/protocol.js";
import type { LinkClose, LinkEnd } from "../link/transport.js";
import {
  type FrameBounds,
  FrameError,
  frameBounds,
  LimitFrameError,
  parseProbeFrame,
} from "../link/validate.js";
import { wireProbeLimits, wireProbeSetup } from "../link/wire-setup.js";
import type { PublicV2Message } from "../messages/types.js";
import type { Applied } from "./hierarchy.js";
import { type LinkRefusalReason, LinkRefusals } from "./link-refusals.js";

/** Binary frames: `ws` and the WebSocket end close them with 1003. */
const CLOSE_UNSUPPORTED_DATA = 1003;

/**
 * Who a link is: `in-process` (`vigil up`, trusted) or the probe whose link secret the upgrade
 * presented (`digest`: the secret's SHA-256, to end the link when the setup changes the secret).
 */
export type LinkIdentity =
  | { readonly kind: "in-process" }
  | { readonly kind: "secret"; readonly probe: string; readonly digest: string };

/** What the link server needs of the publisher (the lead's `Publisher` has it). */
export interface LinkPublisher {
  publish(messages: readonly PublicV2Message[]): void;
  readonly ready: boolean;
  whenReady(): Promise<void>;
}

/**
 * What the link server drives, the next stage of the gateway's pipeline: the hierarchy, followed
 * by the severity stage in a gateway (`GatewayModel`). Each method returns the messages to publish.
 */
export interface LinkModel {
  /** The setup of a probe, undefined when the setup has none of that name. */
  probeSetup(probe: string): ProbeSetup | undefined;
  hello(probe: string, parameters: ProbeParameters, resumed: boolean): void;
  parameters(probe: string, parameters: ProbeParameters, nowMs: number): PublicV2Message[];
  state(probe: string, items: readonly Change[], last: boolean, nowMs: number): Applied;
  changes(probe: string, changes: readonly Change[], nowMs: number): Applied;
  /** The probe's link is gone (lost or `bye`). */
  down(probe: string, nowMs: number): PublicV2Message[];
}

export interface LinkServerOptions {
  readonly setup: () => DeploymentSetup;
  readonly model: LinkModel;
  readonly publisher: LinkPublisher;
  readonly memory: MemoryProtection;
  readonly logger: Logger;
  /** Default LINK_HEARTBEAT_MS. */
  readonly heartbeatMs?: number;
  /** Default LINK_CREDIT_BATCHES. */
  readonly creditBatches?: number;
  /** Default LINK_BATCH_CHANGES. */
  readonly maxBatchChanges?: number;
  /** Default LINK_HELLO_TIMEOUT_MS. */
  readonly helloTimeoutMs?: number;
  /** Where refusals are counted and logged; default one of its own. */
  readonly refusals?: LinkRefusals;
  /** Counts frames refused at a limit of the setup's `limits` (the gateway's /metrics). */
  readonly limitRefusals?: LimitRefusals;
}

/** One link on the status page (`GET /v1/status`). */
export interface LinkStatus {
  readonly probe: string | undefined;
  readonly remote: string;
  readonly state: "handshake" | "syncing" | "up";
  readonly connectedAt: string;
  /** Batches received and not acknowledged yet, of `credit`. */
  readonly unacknowledged: number;
  readonly credit: number;
  readonly batches: number;
  readonly changes: number;
  readonly rejectedChanges: number;
  /** Changes the probe coalesced into a state since it started (as it said in `hello`). */
  readonly coalesced: number;
  /** True while acknowledgements wait for the publisher or for memory. */
  readonly waiting: boolean;
}

interface Session {
  readonly end: LinkEnd;
  readonly identity: LinkIdentity;
  readonly connectedAt: number;
  probe: string | undefined;
  phase: "handshake" | "syncing" | "up";
  closed: boolean;
  /** Set when the session ended with `bye` or was replaced: no Down from its close. */
  quiet: boolean;
  expectedSeq: number;
  unacknowledged: number;
  acks: Promise<void>;
  waiting: boolean;
  lastReceived: number;
  timer: NodeJS.Timeout | undefined;
  helloTimer: NodeJS.Timeout | undefined;
  batches: number;
  changes: number;
  rejectedChanges: number;
  coalesced: number;
}

/** The frame of one type, e.g. `FrameOf<"bye">`. */
type FrameOf<T extends ProbeFrame["type"]> = Extract<ProbeFrame, { type: T }>;
/** How a linked session takes a frame of one type (`probe`: the probe its hello named). */
type FrameHandler<F extends ProbeFrame> = (session: Session, probe: string, frame: F) => void;
type FrameHandlers = { readonly [T in ProbeFrame["type"]]: FrameHandler<FrameOf<T>> };

/** Accepts and runs the probe links of one gateway (see the file comment). */
export class LinkServer {
  private readonly sessions = new Set<Session>();
  private readonly byProbe = new Map<string, Session>();
  private readonly log: Logger;
  private readonly heartbeatMs: number;
  private readonly credit: number;
  private readonly maxBatchChanges: number;
  private readonly helloTimeoutMs: number;
  /** Refused links, counted for `/metrics` and logged at most once a minute per reason. */
  readonly refusals: LinkRefusals;
  private accepting = true;
  private bounds: FrameBounds;

  constructor(private readonly options: LinkServerOptions) {
    // Under the gateway's logger, which already names the component.
    this.log = options.logger.child({ part: "link-server" });
    this.heartbeatMs = options.heartbeatMs ?? LINK_HEARTBEAT_MS;
    this.credit = options.creditBatches ?? LINK_CREDIT_BATCHES;
    this.maxBatchChanges = options.maxBatchChanges ?? LINK_BATCH_CHANGES;
    this.helloTimeoutMs = options.helloTimeoutMs ?? LINK_HELLO_TIMEOUT_MS;
    this.refusals = options.refusals ?? new LinkRefusals(this.log);
    const setup = options.setup();
    this.bounds = frameBounds(probeLimits(setup.gateway, setup.limits), this.maxBatchChanges);
  }

  /**
   * WebSocket links that have not said `hello` yet (in-process ones are not counted): the upgrade
   * refuses one more past LINK_MAX_UNAUTHENTICATED.
   */
  awaitingHello(): number {
    let count = 0;
    for (const session of this.sessions) {
      if (session.phase === "handshake" && session.identity.kind === "secret") count += 1;
    }
    return count;
  }

  /**
   * Takes a new link (from the WebSocket upgrade, which checked its secret, or an in-process
   * connector); it must say `hello` within the hello timeout.
   */
  accept(end: LinkEnd, identity: LinkIdentity): void {
    if (!this.accepting) {
      this.send(end, { type: "error", code: "SHUTTING_DOWN", message: "the gateway is stopping" });
      end.close(CLOSE_GOING_AWAY, "gateway stopping");
      return;
    }
    const session: Session = {
      end,
      identity,
      connectedAt: Date.now(),
      probe: undefined,
      phase: "handshake",
      closed: false,
      quiet: false,
      expectedSeq: 1,
      unacknowledged: 0,
      acks: Promise.resolve(),
      waiting: false,
      lastReceived: Date.now(),
      timer: undefined,
      helloTimer: undefined,
      batches: 0,
      changes: 0,
      rejectedChanges: 0,
      coalesced: 0,
    };
    this.sessions.add(session);
    session.timer = setInterval(() => this.beat(session), this.heartbeatMs);
    session.helloTimer = setTimeout(() => {
      if (session.closed || session.phase !== "handshake") return;
      this.refusals.note(
        "hello_timeout",
        { remote: end.remote, helloTimeoutMs: this.helloTimeoutMs },
        "probe link closed: no hello in time",
      );
      session.end.close(CLOSE_HELLO_TIMEOUT, `no hello within ${this.helloTimeoutMs} ms`);
      this.forget(session);
    }, this.helloTimeoutMs);
    end.listen({
      frame: (value) => this.receive(session, value),
      close: (info) => this.closed(session, info),
    });
  }

  /**
   * A new setup: connected probes get their part (`setup` frame) when it changed; links of probes
   * no longer in the setup are refused (`UNKNOWN_PROBE`) and closed.
   */
  updateSetup(before: DeploymentSetup, after: DeploymentSetup): void {
    const limitsBefore = JSON.stringify(probeLimits(before.gateway, before.limits));
    const limits = probeLimits(after.gateway, after.limits);
    const limitsChanged = JSON.stringify(limits) !== limitsBefore;
    this.bounds = frameBounds(limits, this.maxBatchChanges);
    for (const [probe, session] of this.byProbe) {
      const next = after.probes.find((p) => p.name === probe);
      if (next === undefined) {
        this.refuse(session, "UNKNOWN_PROBE", `probe '${probe}' is no longer in the gateway's setup`);
        continue;
      }
      if (session.identity.kind === "secret") {
        const digest = after.linkSecrets.find((s) => s.probe === probe)?.secret.digest;
        if (digest !== session.identity.digest) {
          this.refuse(session, "SECRET_CHANGED", "the gateway's setup changed this probe's link secret");
          continue;
        }
      }
      const previous = before.probes.find((p) => p.name === probe);
      if (limitsChanged || JSON.stringify(previous) !== JSON.stringify(next)) {
        this.send(session.end, {
          type: "setup",
          setup: wireProbeSetup(next),
          limits: wireProbeLimits(limits),
        });
      }
    }
  }

  status(): LinkStatus[] {
    return [...this.sessions].map((s) => ({
      probe: s.probe,
      remote: s.end.remote,
      state: s.phase,
      connectedAt: new Date(s.connectedAt).toISOString(),
      unacknowledged: s.unacknowledged,
      credit: this.credit,
      batches: s.batches,
      changes: s.changes,
      rejectedChanges: s.rejectedChanges,
      coalesced: s.coalesced,
      waiting: s.waiting,
    }));
  }

  /**
   * Stops taking links; waits (up to `deadlineMs`) for the acknowledgements in progress, then
   * closes every link with "going away" (probes reconnect to the next gateway run).
   */
  async close(deadlineMs: number): Promise<void> {
    this.accepting = false;
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, deadlineMs).unref());
    await Promise.race([Promise.all([...this.sessions].map((s) => s.acks)), deadline]);
    for (const session of [...this.sessions]) {
      session.quiet = true;
      this.send(session.end, { type: "error", code: "SHUTTING_DOWN", message: "the gateway is stopping" });
      session.end.close(CLOSE_GOING_AWAY, "gateway stopping");
      this.forget(session);
    }
  }

  private receive(session: Session, value: unknown): void {
    if (session.closed) return;
    session.lastReceived = Date.now();
    // A probe of another version may say hello in a shape this version does not know.
    const head = value as { type?: unknown; version?: unknown } | null;
    if (
      session.phase === "handshake" &&
      head?.type === "hello" &&
      typeof head.version === "number" &&
      head.version !== LINK_PROTOCOL_VERSION
    ) {
      this.refuse(
        session,
        "VERSION_MISMATCH",
        `this gateway speaks probe link protocol version ${LINK_PROTOCOL_VERSION}, the probe ${String(head.version)}; run the same vigil version on both`,
      );
      return;
    }
    let frame: ProbeFrame;
    try {
      frame = parseProbeFrame(value, this.bounds);
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      if (error instanceof LimitFrameError)
        this.options.limitRefusals?.refused("link", error.limit, error.message);
      this.protocolError(session, error.message);
      return;
    }
    if (session.phase === "handshake") {
      if (frame.type !== "hello") {
        this.protocolError(session, `expected hello, got ${frame.type}`);
        return;
      }
      this.hello(session, frame);
      return;
    }
    (this.linked[frame.type] as FrameHandler<ProbeFrame>)(session, session.probe as string, frame);
  }

  /**
   * The frames of a link past its hello, by type. Every type is here: a new one fails to compile
   * until it is handled.
   */
  private readonly linked: FrameHandlers = {
    hello: (session) => this.protocolError(session, "a second hello"),
    heartbeat: () => {},
    bye: (session, probe, frame) => {
      this.log.info({ probe, reason: frame.reason }, "probe said bye");
      session.quiet = true;
      this.options.publisher.publish(this.options.model.down(probe, Date.now()));
      session.end.close(CLOSE_NORMAL, "bye");
    },
    parameters: (session, probe, frame) => this.batch(session, probe, frame),
    state: (session, probe, frame) => this.batch(session, probe, frame),
    changes: (session, probe, frame) => this.batch(session, probe, frame),
  };

  private hello(session: Session, frame: Extract<ProbeFrame, { type: "hello" }>): void {
    const { identity } = session;
    if (identity.kind === "secret" && identity.probe !== frame.probe) {
      // The same answer whether the named probe exists or not: no oracle of probe names.
      this.refusals.note(
        "not_this_probe",
        { remote: session.end.remote, secretOf: identity.probe },
        "probe link refused: its hello names another probe than its secret's",
      );
      this.refuse(
        session,
        "NOT_THIS_PROBE",
        "the link secret presented is not that of the probe named in hello",
      );
      return;
    }
    const probeSetup = this.options.model.probeSetup(frame.probe);
    if (probeSetup === undefined) {
      this.refuse(session, "UNKNOWN_PROBE", `the gateway's setup has no probe named '${frame.probe}'`);
      return;
    }
    const previous = this.byProbe.get(frame.probe);
    if (previous !== undefined) {
      this.log.warn(
        { probe: frame.probe, remote: session.end.remote },
        "a new link replaces the probe's old one",
      );
      previous.quiet = true;
      this.refuse(previous, "REPLACED", "a newer link of this probe replaced this one");
    }
    session.probe = frame.probe;
    session.phase = "syncing";
    session.coalesced = frame.coalesced;
    this.byProbe.set(frame.probe, session);
    this.options.model.hello(frame.probe, frame.parameters, frame.resumed);
    this.send(session.end, {
      type: "welcome",
      version: LINK_PROTOCOL_VERSION,
      gateway: this.options.setup().gateway.name,
      setup: wireProbeSetup(probeSetup),
      limits: wireProbeLimits(probeLimits(this.options.setup().gateway, this.options.setup().limits)),
      credit: this.credit,
      maxBatchChanges: this.maxBatchChanges,
      heartbeatMs: this.heartbeatMs,
    });
    this.log.info({ probe: frame.probe, remote: session.end.remote }, "probe link up");
  }

  private batch(
    session: Session,
    probe: string,
    frame: Extract<ProbeFrame, { type: "parameters" | "state" | "changes" }>,
  ): void {
    if (frame.seq !== session.expectedSeq) {
      this.protocolError(session, `batch ${frame.seq} where ${session.expectedSeq} was due`);
      return;
    }
    if (session.unacknowledged >= this.credit) {
      this.protocolError(session, `more than ${this.credit} batches unacknowledged`);
      return;
    }
    if (frame.type === "state" && session.phase !== "syncing") {
      this.protocolError(session, "a state after the state was complete");
      return;
    }
    if (frame.type === "changes" && session.phase !== "up") {
      this.protocolError(session, "changes before the state was complete");
      return;
    }
    session.expectedSeq += 1;
    session.unacknowledged += 1;
    session.batches += 1;
    const now = Date.now();
    const model = this.options.model;
    if (frame.type === "parameters") {
      this.options.publisher.publish(model.parameters(probe, frame.parameters, now));
      session.acks = session.acks.then(() => this.ack(session, frame.seq));
      return;
    }
    const applied =
      frame.type === "state"
        ? model.state(probe, frame.items, frame.last, now)
        : model.changes(probe, frame.changes, now);
    if (frame.type === "state" && frame.last) session.phase = "up";
    session.changes += frame.type === "state" ? frame.items.length : frame.changes.length;
    if (applied.rejected > 0) {
      session.rejectedChanges += applied.rejected;
      this.log.warn(
        { probe, rejected: applied.rejected, seq: frame.seq },
        "changes for items outside the probe's setup or beyond its bounds were refused",
      );
    }
    this.options.publisher.publish(applied.messages);
    session.acks = session.acks.then(() => this.ack(session, frame.seq));
  }

  /** Acknowledges a batch once the publisher has room and memory is below its threshold. */
  private async ack(session: Session, seq: number): Promise<void> {
    const { publisher, memory } = this.options;
    session.waiting = true;
    try {
      while (!session.closed) {
        if (!publisher.ready) {
          await publisher.whenReady();
          continue;
        }
        if (memory.over()) {
          await new Promise((resolve) => setTimeout(resolve, MEMORY_CHECK_INTERVAL_MS));
          continue;
        }
        break;
      }
    } catch (error) {
      this.log.error({ err: error, probe: session.probe }, "waiting for the publisher failed");
    } finally {
      session.waiting = false;
    }
    if (session.closed) return;
    session.unacknowledged -= 1;
    this.send(session.end, { type: "ack", seq });
  }

  private beat(session: Session): void {
    if (session.closed) return;
    const silent = Date.now() - session.lastReceived;
    if (silent > 3 * this.heartbeatMs) {
      this.log.warn(
        { probe: session.probe, silentMs: silent },
        "probe link silent for 3 heartbeats; taken as lost",
      );
      session.end.close(CLOSE_HEARTBEAT_TIMEOUT, "heartbeat timeout");
      return;
    }
    this.send(session.end, { type: "heartbeat" });
  }

  private refuse(session: Session, code: LinkErrorCode, message: string): void {
    if (code !== "NOT_THIS_PROBE") {
      this.log.warn(
        { probe: session.probe, remote: session.end.remote, code, reason: message },
        "probe link refused",
      );
    }
    this.send(session.end, { type: "error", code, message });
    session.end.close(code === "REPLACED" ? CLOSE_NORMAL : CLOSE_POLICY, message);
    if (code !== "REPLACED") this.forget(session);
    else this.forget(session, false);
  }

  private protocolError(session: Session, reason: string): void {
    this.refusals.note(
      "protocol_error",
      { probe: session.probe, remote: session.end.remote, reason },
      "probe link protocol error; closing",
    );
    this.send(session.end, { type: "error", code: "PROTOCOL_ERROR", message: reason });
    session.end.close(CLOSE_PROTOCOL_ERROR, reason.slice(0, 100));
  }

  private closed(session: Session, info: LinkClose): void {
    // Closed by this side's WebSocket end for what the peer sent (a peer's own close is its matter).
    const transport = info.local ? TRANSPORT_REFUSALS.get(info.code) : undefined;
    if (transport !== undefined) {
      this.refusals.note(
        transport,
        { probe: session.probe, remote: session.end.remote, code: info.code, reason: info.reason },
        "probe link closed for a frame it may not send",
      );
    }
    if (session.closed) return;
    const probe = session.probe;
    const current = probe !== undefined && this.byProbe.get(probe) === session;
    this.forget(session);
    if (probe !== undefined && current && !session.quiet) {
      this.log.warn({ probe, code: info.code, reason: info.reason }, "probe link lost");
      this.options.publisher.publish(this.options.model.down(probe, Date.now()));
    } else if (probe !== undefined) {
      this.log.info({ probe, code: info.code, reason: info.reason }, "probe link closed");
    }
  }

  /** Ends a session's bookkeeping (timers, maps). */
  private forget(session: Session, unmap = true): void {
    session.closed = true;
    if (session.timer !== undefined) clearInterval(session.timer);
    if (session.helloTimer !== undefined) clearTimeout(session.helloTimer);
    this.sessions.delete(session);
    if (unmap && session.probe !== undefined && this.byProbe.get(session.probe) === session) {
      this.byProbe.delete(session.probe);
    }
  }

  private send(end: LinkEnd, frame: GatewayFrame): void {
    end.send(frame);
  }
}

/** Close codes of the WebSocket end for frames a peer may not send, as refusal reasons. */
const TRANSPORT_REFUSALS: ReadonlyMap<number, LinkRefusalReason> = new Map([
  [CLOSE_TOO_BIG, "frame_too_large"],
  [CLOSE_TOO_DEEP, "too_deep"],
  [CLOSE_INVALID_DATA, "invalid_data"],
  [CLOSE_UNSUPPORTED_DATA, "invalid_data"],
]);
