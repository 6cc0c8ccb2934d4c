/**
 * The probe's side of the probe link (DESIGN 1 "probe link" and "Hand-offs", DESIGN 4.3).
 *
 * It connects through a {@link LinkConnector}, says `hello`, waits for `welcome`, sends the probe's
 * current state and then the changes the ingest endpoints hand it, in batches, never more than the
 * gateway's credit window unacknowledged (new parameters, once it listens, are a batch too). Changes wait in an outgoing buffer bounded by
 * PROBE_OUTGOING_CHANGES (and an estimated size); when it is full `checkCapacity()` throws the 503
 * INGEST_BACKLOG, so the slowness of a sink reaches the clients that push data.
 *
 * While the link is down nothing is queued: the data is in the probe's memory, and the state sent
 * on the next connection carries it. The changes that were pending or made meanwhile are counted
 * as `coalesced` (one log line per reconnect). A lost link is retried with a capped exponential
 * back-off; a link silent for 3 heartbeat intervals is lost.
 */
import type { Logger } from "pino";
import {
  LINK_BATCH_TARGET_BYTES,
  LINK_HEARTBEAT_MS,
  LINK_RECONNECT_MAX_MS,
  LINK_RECONNECT_MIN_MS,
  PROBE_BACKLOG_WAIT_BYTES,
  PROBE_BACKLOG_WAIT_MS,
  PROBE_BACKLOG_WAITERS,
  PROBE_OUTGOING_BYTES,
  PROBE_OUTGOING_CHANGES,
  RETRY_AFTER_SECONDS,
} from "../config/defaults.js";
import type { ProbeSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import { Backoff } from "../flow/backoff.js";
import { BoundedQueue } from "../flow/bounded-queue.js";
import { CreditWindow } from "../flow/credit-window.js";
import {
  type Change,
  CLOSE_HEARTBEAT_TIMEOUT,
  CLOSE_NORMAL,
  CLOSE_POLICY,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
  CLOSE_TOO_DEEP,
  estimateChangeSize,
  type GatewayFrame,
  LINK_PROTOCOL_VERSION,
  type LinkErrorCode,
  type ProbeFrame,
  type ProbeLimits,
  type ProbeParameters,
} from "../link/protocol.js";
import type { LinkClose, LinkConnector, LinkEnd } from "../link/transport.js";
import { FrameError, parseGatewayFrame } from "../link/validate.js";
import { probeLimitsOfWire, probeSetupOfWire } from "../link/wire-setup.js";
import { StateCursor, type StateSnapshot } from "./state-cursor.js";

/** A `welcome` with the setup's part and limits mapped from their wire types to the config's. */
export type WelcomeFrame = Omit<Extract<GatewayFrame, { type: "welcome" }>, "setup" | "limits"> &
  SetupOfFrame;
/** A `setup` frame, mapped like {@link WelcomeFrame}. */
export type SetupFrame = { readonly type: "setup" } & SetupOfFrame;
interface SetupOfFrame {
  readonly setup: ProbeSetup;
  readonly limits: ProbeLimits;
}

export interface LinkClientOptions {
  readonly probe: string;
  readonly connector: LinkConnector;
  readonly logger: Logger;
  /** The probe's parameters now (its port is known once it listens). */
  readonly parameters: () => ProbeParameters;
  /**
   * Runs on every `welcome` before the state is sent: applies the setup and, the first time,
   * may start listening. A rejection closes the link (and is retried like a lost link).
   */
  readonly onWelcome: (welcome: WelcomeFrame) => Promise<void>;
  /** A live setup update from the gateway. */
  readonly onSetup: (frame: SetupFrame) => void;
  /** The probe's current state, taken at one instant (the rows' arrays are shared, not copied). */
  readonly snapshot: () => readonly StateSnapshot[];
  /** Default PROBE_OUTGOING_CHANGES. */
  readonly maxOutgoingChanges?: number;
  /** Default PROBE_OUTGOING_BYTES. */
  readonly maxOutgoingBytes?: number;
  /** Longest an ingest request waits for room; default PROBE_BACKLOG_WAIT_MS. */
  readonly backlogWaitMs?: number;
  /** Requests that may wait for room at once; default PROBE_BACKLOG_WAITERS. */
  readonly maxWaitingRequests?: number;
  /** Body bytes the waiting requests may hold together; default PROBE_BACKLOG_WAIT_BYTES. */
  readonly maxWaitingBytes?: number;
  /** Default LINK_RECONNECT_MIN_MS. */
  readonly reconnectMinMs?: number;
  /** Default LINK_RECONNECT_MAX_MS. */
  readonly reconnectMaxMs?: number;
  /** Time to wait for `welcome` after `hello`; default 3 × LINK_HEARTBEAT_MS. */
  readonly welcomeTimeoutMs?: number;
}

/** What the probe's status shows about its link. */
export interface LinkClientStatus {
  readonly gateway: string;
  readonly state: "connecting" | "handshake" | "syncing" | "up" | "down" | "stopped";
  readonly outgoing: number;
  readonly inFlightBatches: number;
  readonly credit: number;
  readonly sentBatches: number;
  readonly ackedBatches: number;
  readonly coalesced: number;
  readonly connections: number;
  /** Ingest requests waiting for room in the outgoing buffer, and the bytes of their bodies. */
  readonly waitingRequests: number;
  readonly waitingBytes: number;
  /** Ingest requests that have waited for room since the probe started (taken or refused after). */
  readonly waitedRequests: number;
}

interface Session {
  readonly end: LinkEnd;
  phase: "handshake" | "syncing" | "up";
  closed: boolean;
  welcome: WelcomeFrame | undefined;
  helloParameters: ProbeParameters;
  /** New parameters wait for credit: the gateway counts them as a batch. */
  parametersDue: boolean;
  /** Batches sent and not yet acknowledged, within the credit of the gateway's `welcome`. */
  readonly window: CreditWindow;
  state: StateCursor | undefined;
  lastReceived: number;
  heartbeat: NodeJS.Timeout | undefined;
  welcomeTimer: NodeJS.Timeout | undefined;
}

/** Refusals that the next attempt, soon after, would meet again: retried after the longest delay. */
const RETRY_LATER: ReadonlySet<LinkErrorCode> = new Set([
  "VERSION_MISMATCH",
  "UNKNOWN_PROBE",
  "NOT_THIS_PROBE",
  "SECRET_CHANGED",
]);

/** The probe's end of the link: start it once, hand it changes, stop it once. */
export class ProbeLinkClient {
  private session: Session | undefined;
  /** Changes accepted and not yet sent; its waiters are the requests in `waitForCapacity`. */
  private readonly outgoing: BoundedQueue<Change>;
  /** Delays between connection attempts; counts the attempts since the last welcome. */
  private readonly reconnect: Backoff;
  private pumpScheduled = false;
  private started = false;
  private stopped = false;
  private connecting = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Changes coalesced into a state since the process started, and since the last log line. */
  private coalescedTotal = 0;
  /** Whether a gateway ever welcomed this probe process (its next hello says `resumed`). */
  private everWelcomed = false;
  private coalescedPending = 0;
  private sentBatches = 0;
  private ackedBatches = 0;
  private connections = 0;
  /** `stop` and its waits, woken by every link event. */
  private readonly waiters = new Set<() => void>();
  private readonly log: Logger;
  private readonly welcomeTimeout: number;
  private readonly backlogWaitMs: number;
  private readonly maxWaitingRequests: number;
  private readonly maxWaitingBytes: number;
  /** Ingest requests in `whenCapacity` and the bytes of their bodies (bounded, see there). */
  private waitingRequests = 0;
  private waitingBytes = 0;
  private waitedRequests = 0;

  constructor(private readonly options: LinkClientOptions) {
    this.log = options.logger.child({ component: "probe-link", gatewayLink: options.connector.description });
    this.outgoing = new BoundedQueue({
      maxItems: options.maxOutgoingChanges ?? PROBE_OUTGOING_CHANGES,
      maxBytes: options.maxOutgoingBytes ?? PROBE_OUTGOING_BYTES,
    });
    this.reconnect = new Backoff({
      initialMs: options.reconnectMinMs ?? LINK_RECONNECT_MIN_MS,
      maxMs: options.reconnectMaxMs ?? LINK_RECONNECT_MAX_MS,
    });
    this.welcomeTimeout = options.welcomeTimeoutMs ?? 3 * LINK_HEARTBEAT_MS;
    this.backlogWaitMs = options.backlogWaitMs ?? PROBE_BACKLOG_WAIT_MS;
    this.maxWaitingRequests = options.maxWaitingRequests ?? PROBE_BACKLOG_WAITERS;
    this.maxWaitingBytes = options.maxWaitingBytes ?? PROBE_BACKLOG_WAIT_BYTES;
  }

  /** Starts connecting (and reconnecting until `stop`). */
  start(): void {
    if (this.started) return;
    this.started = true;
    void this.connect();
  }

  /**
   * Throws INGEST_BACKLOG (503 with Retry-After) when the outgoing buffer is full: call it before
   * changing the probe's memory, so a refused request changes nothing.
   */
  checkCapacity(): void {
    const reached = this.outgoing.boundReached;
    if (reached === undefined) return;
    // Name the bound that tripped: a few large changes (whole dataviews) fill the byte bound long
    // before the count's.
    const limit =
      reached.bound === "items" ? `${reached.limit} changes` : `${reached.limit} bytes (estimated)`;
    throw new VigilError(
      "INGEST_BACKLOG",
      { pending: this.outgoing.length, bytes: this.outgoing.bytes, limit },
      { headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } },
    );
  }

  /** Whether the outgoing buffer has room for another request's changes. */
  hasCapacity(): boolean {
    return this.outgoing.hasRoom;
  }

  /**
   * Runs `accept` (which checks nothing and hands its changes to `submit`) once the outgoing buffer
   * has room, waiting up to `backlogWaitMs` (250 ms) for it; without room by then it throws like
   * `checkCapacity()`. A request that waits a moment and is then taken keeps a client busy where an
   * immediate 503 would idle it for a whole `Retry-After` second. At most `maxWaitingRequests`
   * requests wait at once, holding at most `maxWaitingBytes` of bodies together (`bodyBytes` is
   * this one's), except that one may wait whatever its size when none does; the others get the 503
   * at once. The room is checked and `accept` runs in one step, so requests woken together take
   * the room in turn and those that find none left wait on, within their own time.
   */
  async whenCapacity<T>(bodyBytes: number, accept: () => T): Promise<T> {
    if (!this.hasCapacity() && this.mayWait(bodyBytes)) {
      const until = Date.now() + this.backlogWaitMs;
      this.waitingRequests += 1;
      this.waitingBytes += bodyBytes;
      this.waitedRequests += 1;
      try {
        while (!this.hasCapacity() && !this.stopped) {
          const left = until - Date.now();
          if (left <= 0) break;
          await this.outgoing.whenRoom(left);
        }
      } finally {
        this.waitingRequests -= 1;
        this.waitingBytes -= bodyBytes;
      }
    }
    this.checkCapacity();
    return accept();
  }

  /** Whether a request with a body of `bodyBytes` may wait for room (see `whenCapacity`). */
  private mayWait(bodyBytes: number): boolean {
    if (this.stopped) return false;
    if (this.waitingRequests === 0) return true;
    return (
      this.waitingRequests < this.maxWaitingRequests && this.waitingBytes + bodyBytes <= this.maxWaitingBytes
    );
  }

  /** Hands the changes of one accepted request to the link (queued, or coalesced while down). */
  submit(changes: readonly Change[]): void {
    if (changes.length === 0) return;
    const session = this.session;
    if (session === undefined || session.closed || session.phase === "handshake") {
      this.coalescedTotal += changes.length;
      this.coalescedPending += changes.length;
      return;
    }
    for (const change of changes) this.outgoing.push(change, estimateChangeSize(change));
    this.schedulePump();
  }

  /** Sends the probe's parameters again when they changed since `hello` (its port, once it listens). */
  parametersChanged(): void {
    const session = this.session;
    if (session === undefined || session.closed || session.welcome === undefined) return;
    this.sendParametersIfChanged(session);
  }

  status(): LinkClientStatus {
    const session = this.session;
    const state = this.stopped
      ? "stopped"
      : session === undefined || session.closed
        ? this.connecting
          ? "connecting"
          : "down"
        : session.phase;
    return {
      gateway: this.options.connector.description,
      state,
      outgoing: this.outgoing.length,
      inFlightBatches: session?.window.batches ?? 0,
      credit: session?.welcome?.credit ?? 0,
      sentBatches: this.sentBatches,
      ackedBatches: this.ackedBatches,
      coalesced: this.coalescedTotal,
      connections: this.connections,
      waitingRequests: this.waitingRequests,
      waitingBytes: this.waitingBytes,
      waitedRequests: this.waitedRequests,
    };
  }

  /**
   * Stops: waits (up to `deadlineMs`) until every change handed over is acknowledged — reconnecting
   * meanwhile if the link is down and something is undelivered — then says `bye` and closes.
   */
  async stop(deadlineMs: number): Promise<void> {
    if (this.stopped) return;
    const until = Date.now() + deadlineMs;
    // A link never started has nobody to deliver to.
    if (this.started) await this.waitUntil(() => this.delivered(), until);
    if (this.started && !this.delivered()) {
      this.log.warn(
        {
          outgoing: this.outgoing.length,
          inFlightBatches: this.session?.window.batches ?? 0,
          coalesced: this.coalescedPending,
        },
        "stopping before the gateway acknowledged every change",
      );
    }
    this.stopped = true;
    // Requests waiting for room are answered now: nothing will be sent any more.
    this.outgoing.close();
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    const session = this.session;
    if (session !== undefined && !session.closed) {
      this.send(session, { type: "bye", reason: "probe stopping" });
      session.end.close(CLOSE_NORMAL, "probe stopping");
      await this.waitUntil(() => session.closed, until);
      this.closeSession(session);
    }
    this.wake();
  }

  /** True when nothing handed to the link is left unacknowledged or undelivered. */
  private delivered(): boolean {
    const session = this.session;
    const queued = this.outgoing.length;
    if (session !== undefined && !session.closed && session.phase !== "handshake") {
      return session.phase === "up" && queued === 0 && session.window.batches === 0;
    }
    // Down (or not welcomed yet): delivered only when nothing was coalesced since the last state.
    return queued === 0 && this.coalescedPending === 0;
  }

  private async connect(): Promise<void> {
    if (this.stopped || this.connecting) return;
    this.connecting = true;
    this.retryTimer = undefined;
    let end: LinkEnd;
    try {
      end = await this.options.connector.connect();
    } catch (error) {
      this.connecting = false;
      const attempts = this.reconnect.attempts;
      if (attempts === 0 || attempts % 10 === 0) {
        this.log.warn({ err: error, attempts: attempts + 1 }, "cannot reach the gateway; retrying");
      }
      this.retry();
      return;
    }
    this.connecting = false;
    if (this.stopped) {
      end.close(CLOSE_NORMAL, "probe stopping");
      return;
    }
    this.open(end);
  }

  private open(end: LinkEnd): void {
    const helloParameters = this.options.parameters();
    const session: Session = {
      end,
      phase: "handshake",
      closed: false,
      welcome: undefined,
      helloParameters,
      parametersDue: false,
      window: new CreditWindow(),
      state: undefined,
      lastReceived: Date.now(),
      heartbeat: undefined,
      welcomeTimer: undefined,
    };
    this.session = session;
    this.connections += 1;
    end.listen({
      frame: (value) => this.receive(session, value),
      close: (info) => this.closed(session, info),
    });
    this.send(session, {
      type: "hello",
      version: LINK_PROTOCOL_VERSION,
      probe: this.options.probe,
      parameters: helloParameters,
      coalesced: this.coalescedTotal,
      resumed: this.everWelcomed,
    });
    session.welcomeTimer = setTimeout(() => {
      if (session.welcome === undefined && !session.closed) {
        session.end.close(CLOSE_HEARTBEAT_TIMEOUT, "no welcome from the gateway");
      }
    }, this.welcomeTimeout);
  }

  private receive(session: Session, value: unknown): void {
    if (session.closed) return;
    session.lastReceived = Date.now();
    // A gateway of another protocol version may say so in a shape this version does not know.
    const version = (value as { type?: unknown; version?: unknown } | null)?.version;
    const welcome = (value as { type?: unknown } | null)?.type === "welcome";
    if (welcome && typeof version === "number" && version !== LINK_PROTOCOL_VERSION) {
      this.log.error(
        { gatewayVersion: version, version: LINK_PROTOCOL_VERSION },
        "the gateway speaks another probe link protocol version; retrying later",
      );
      this.reconnect.waitLongest();
      session.end.close(CLOSE_POLICY, "protocol version mismatch");
      return;
    }
    let frame: GatewayFrame;
    try {
      frame = parseGatewayFrame(value);
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      this.protocolError(session, error.message);
      return;
    }
    switch (frame.type) {
      case "welcome":
        if (session.welcome !== undefined) {
          this.protocolError(session, "a second welcome");
          return;
        }
        void this.welcomed(session, {
          ...frame,
          setup: probeSetupOfWire(frame.setup),
          limits: probeLimitsOfWire(frame.limits),
        });
        return;
      case "setup":
        if (session.welcome === undefined) {
          this.protocolError(session, "setup before welcome");
          return;
        }
        this.options.onSetup({
          type: "setup",
          setup: probeSetupOfWire(frame.setup),
          limits: probeLimitsOfWire(frame.limits),
        });
        return;
      case "ack":
        this.acked(session, frame.seq);
        return;
      case "heartbeat":
        return;
      case "error":
        this.log.warn({ code: frame.code, reason: frame.message }, "the gateway refused or ended the link");
        if (RETRY_LATER.has(frame.code)) this.reconnect.waitLongest();
        return;
    }
  }

  private async welcomed(session: Session, welcome: WelcomeFrame): Promise<void> {
    session.welcome = welcome;
    session.window.setCredit(welcome.credit);
    this.everWelcomed = true;
    if (session.welcomeTimer !== undefined) clearTimeout(session.welcomeTimer);
    try {
      await this.options.onWelcome(welcome);
    } catch (error) {
      this.log.error({ err: error }, "cannot apply the gateway's welcome; closing the link");
      session.end.close(CLOSE_NORMAL, "probe could not apply the setup");
      return;
    }
    if (session.closed) return;
    this.sendParametersIfChanged(session);
    // From this instant every change is queued; what happened before is in the state.
    session.state = new StateCursor(this.options.snapshot());
    session.phase = "syncing";
    if (this.coalescedPending > 0) {
      this.log.info(
        { coalesced: this.coalescedPending },
        "changes made while the link was down are sent as the probe's current state",
      );
    }
    this.coalescedPending = 0;
    this.reconnect.reset();
    this.log.info({ gateway: welcome.gateway, credit: welcome.credit }, "connected to the gateway");
    session.heartbeat = setInterval(() => this.beat(session), welcome.heartbeatMs);
    this.pump();
  }

  private sendParametersIfChanged(session: Session): void {
    const now = this.options.parameters();
    const before = session.helloParameters;
    if (
      now.osType === before.osType &&
      now.HostName === before.HostName &&
      now.Port === before.Port &&
      now.OS === before.OS &&
      now.Version === before.Version
    ) {
      return;
    }
    session.helloParameters = now;
    session.parametersDue = true;
    this.pump();
  }

  private beat(session: Session): void {
    const interval = session.welcome?.heartbeatMs ?? LINK_HEARTBEAT_MS;
    if (Date.now() - session.lastReceived > 3 * interval) {
      this.log.warn({ silentMs: Date.now() - session.lastReceived }, "the gateway went silent; reconnecting");
      session.end.close(CLOSE_HEARTBEAT_TIMEOUT, "heartbeat timeout");
      return;
    }
    this.send(session, { type: "heartbeat" });
  }

  private acked(session: Session, seq: number): void {
    const acked = session.window.ackThrough(seq);
    if (acked < 0) {
      this.protocolError(session, `ack of batch ${seq}, which is not in flight`);
      return;
    }
    this.ackedBatches += acked;
    this.pump();
    this.wake();
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // One turn of the event loop lets concurrent requests share a batch.
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Sends batches while there is credit: the rest of the state first, then queued changes. */
  private pump(): void {
    const session = this.session;
    if (session === undefined || session.closed || session.welcome === undefined) return;
    const { maxBatchChanges } = session.welcome;
    const window = session.window;
    while (window.hasCredit) {
      if (session.parametersDue) {
        session.parametersDue = false;
        const seq = window.open(0);
        this.send(session, { type: "parameters", seq, parameters: session.helloParameters });
        this.sentBatches += 1;
        continue;
      }
      if (session.phase === "handshake") break; // the state starts once the welcome is applied
      if (session.phase === "syncing") {
        const state = session.state as StateCursor;
        const { items, last } = state.next(maxBatchChanges, LINK_BATCH_TARGET_BYTES);
        const seq = window.open(0);
        this.send(session, { type: "state", seq, items, last });
        this.sentBatches += 1;
        if (last) {
          session.phase = "up";
          session.state = undefined;
        }
        continue;
      }
      if (this.outgoing.length === 0) break;
      const changes = this.outgoing.take(maxBatchChanges, LINK_BATCH_TARGET_BYTES);
      const seq = window.open(changes.length);
      this.send(session, { type: "changes", seq, changes });
      this.sentBatches += 1;
    }
    this.wake();
  }

  private send(session: Session, frame: ProbeFrame): void {
    if (!session.closed) session.end.send(frame);
  }

  private protocolError(session: Session, reason: string): void {
    this.log.error({ reason }, "the gateway broke the probe link protocol; closing the link");
    session.end.close(CLOSE_PROTOCOL_ERROR, reason);
  }

  private closed(session: Session, info: LinkClose): void {
    if (session.closed) return;
    const wasUp = session.welcome !== undefined;
    this.closeSession(session);
    if (this.stopped || this.session !== session) {
      this.wake();
      return;
    }
    // What was queued or unacknowledged is in the probe's memory: the next state carries it.
    const lost = this.outgoing.clear() + session.window.clear();
    this.coalescedTotal += lost;
    this.coalescedPending += lost;
    const level = info.code === CLOSE_NORMAL && !wasUp ? "info" : "warn";
    this.log[level]({ code: info.code, reason: info.reason, byProbe: info.local }, "probe link closed");
    if (!info.local && (info.code === CLOSE_TOO_BIG || info.code === CLOSE_TOO_DEEP)) {
      // The gateway refused a frame of this probe's: sent again at once, the same state would be
      // refused again. The longest back-off keeps such a loop to one attempt per interval.
      this.log.error(
        { code: info.code, reason: info.reason },
        "the gateway refused a frame of this probe's as too large or too deep (its limits section); retrying later",
      );
      this.reconnect.waitLongest();
    }
    this.wake();
    this.retry();
  }

  private closeSession(session: Session): void {
    session.closed = true;
    if (session.heartbeat !== undefined) clearInterval(session.heartbeat);
    if (session.welcomeTimer !== undefined) clearTimeout(session.welcomeTimer);
  }

  private retry(): void {
    if (this.stopped || this.retryTimer !== undefined) return;
    this.retryTimer = setTimeout(() => void this.connect(), this.reconnect.next());
  }

  private wake(): void {
    this.outgoing.notify();
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves when `done()` holds or `until` (epoch ms) passes; re-checked on every link event. */
  private async waitUntil(done: () => boolean, until: number): Promise<void> {
    while (!done() && Date.now() < until) {
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => {
        wake = resolve;
      });
      this.waiters.add(wake);
      const timer = setTimeout(wake, Math.max(0, until - Date.now()));
      await woken;
      clearTimeout(timer);
      this.waiters.delete(wake);
    }
  }
}
