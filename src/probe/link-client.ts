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
  PROBE_BACKLOG_WAITERS,
  PROBE_OUTGOING_BYTES,
  PROBE_OUTGOING_CHANGES,
  RETRY_AFTER_SECONDS,
} from "../config/defaults.js";
import { VigilError } from "../errors/catalog.js";
import {
  type Change,
  CLOSE_HEARTBEAT_TIMEOUT,
  CLOSE_NORMAL,
  CLOSE_POLICY,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
  CLOSE_TOO_DEEP,
  encodeCells,
  estimateChangeSize,
  type GatewayFrame,
  LINK_PROTOCOL_VERSION,
  type LinkErrorCode,
  type ProbeFrame,
  type ProbeParameters,
  type WireRow,
  type WireSeverities,
} from "../link/protocol.js";
import type { LinkClose, LinkConnector, LinkEnd } from "../link/transport.js";
import { FrameError, parseGatewayFrame } from "../link/validate.js";
import type { DataviewSnapshot } from "./dataview-model.js";

export type WelcomeFrame = Extract<GatewayFrame, { type: "welcome" }>;
export type SetupFrame = Extract<GatewayFrame, { type: "setup" }>;

/**
 * A dataview of the probe's state as the link sends it: a custom dataview's snapshot, or a
 * sampler-made one (Streams Dataview, fkm) whose rows may carry the cell severities it sets.
 */
export type StateSnapshot = Omit<DataviewSnapshot, "rows"> & {
  readonly rows: readonly (DataviewSnapshot["rows"][number] & { readonly severities?: WireSeverities })[];
};

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
}

interface InFlight {
  readonly seq: number;
  readonly changes: number;
}

interface Session {
  readonly end: LinkEnd;
  phase: "handshake" | "syncing" | "up";
  closed: boolean;
  welcome: WelcomeFrame | undefined;
  helloParameters: ProbeParameters;
  /** New parameters wait for credit: the gateway counts them as a batch. */
  parametersDue: boolean;
  nextSeq: number;
  readonly inFlight: InFlight[];
  state: StateCursor | undefined;
  lastReceived: number;
  heartbeat: NodeJS.Timeout | undefined;
  welcomeTimer: NodeJS.Timeout | undefined;
}

interface Outgoing {
  readonly change: Change;
  readonly bytes: number;
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
  private readonly outgoing: Outgoing[] = [];
  private outgoingHead = 0;
  private outgoingBytes = 0;
  private pumpScheduled = false;
  private started = false;
  private stopped = false;
  private connecting = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private attempts = 0;
  private nextDelayMs: number | undefined;
  /** Changes coalesced into a state since the process started, and since the last log line. */
  private coalescedTotal = 0;
  /** Requests waiting in `waitForCapacity`. */
  private capacityWaiters = 0;
  /** Whether a gateway ever welcomed this probe process (its next hello says `resumed`). */
  private everWelcomed = false;
  private coalescedPending = 0;
  private sentBatches = 0;
  private ackedBatches = 0;
  private connections = 0;
  private readonly waiters = new Set<() => void>();
  private readonly log: Logger;
  private readonly maxChanges: number;
  private readonly maxBytes: number;
  private readonly minDelay: number;
  private readonly maxDelay: number;
  private readonly welcomeTimeout: number;

  constructor(private readonly options: LinkClientOptions) {
    this.log = options.logger.child({ component: "probe-link", gatewayLink: options.connector.description });
    this.maxChanges = options.maxOutgoingChanges ?? PROBE_OUTGOING_CHANGES;
    this.maxBytes = options.maxOutgoingBytes ?? PROBE_OUTGOING_BYTES;
    this.minDelay = options.reconnectMinMs ?? LINK_RECONNECT_MIN_MS;
    this.maxDelay = options.reconnectMaxMs ?? LINK_RECONNECT_MAX_MS;
    this.welcomeTimeout = options.welcomeTimeoutMs ?? 3 * LINK_HEARTBEAT_MS;
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
    const pending = this.outgoing.length - this.outgoingHead;
    if (this.hasCapacity()) return;
    throw new VigilError(
      "INGEST_BACKLOG",
      { pending, limit: this.maxChanges },
      { headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } },
    );
  }

  /** Whether the outgoing buffer has room for another request's changes. */
  hasCapacity(): boolean {
    return this.outgoing.length - this.outgoingHead < this.maxChanges && this.outgoingBytes < this.maxBytes;
  }

  /**
   * Waits up to `maxWaitMs` for room in the outgoing buffer, then checks it like `checkCapacity()`.
   * A request that waits a moment and is then taken keeps a client busy where an immediate 503 would
   * idle it for a whole `Retry-After` second; at most PROBE_BACKLOG_WAITERS requests wait at once
   * (each holds its body), the others get the 503 at once.
   */
  async waitForCapacity(maxWaitMs: number): Promise<void> {
    if (!this.hasCapacity() && this.capacityWaiters < PROBE_BACKLOG_WAITERS) {
      this.capacityWaiters += 1;
      try {
        await this.waitUntil(() => this.hasCapacity() || this.stopped, Date.now() + maxWaitMs);
      } finally {
        this.capacityWaiters -= 1;
      }
    }
    this.checkCapacity();
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
    for (const change of changes) {
      const bytes = estimateChangeSize(change);
      this.outgoing.push({ change, bytes });
      this.outgoingBytes += bytes;
    }
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
      outgoing: this.outgoing.length - this.outgoingHead,
      inFlightBatches: session?.inFlight.length ?? 0,
      credit: session?.welcome?.credit ?? 0,
      sentBatches: this.sentBatches,
      ackedBatches: this.ackedBatches,
      coalesced: this.coalescedTotal,
      connections: this.connections,
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
          outgoing: this.outgoing.length - this.outgoingHead,
          inFlightBatches: this.session?.inFlight.length ?? 0,
          coalesced: this.coalescedPending,
        },
        "stopping before the gateway acknowledged every change",
      );
    }
    this.stopped = true;
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
    const queued = this.outgoing.length - this.outgoingHead;
    if (session !== undefined && !session.closed && session.phase !== "handshake") {
      return session.phase === "up" && queued === 0 && session.inFlight.length === 0;
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
      if (this.attempts === 0 || this.attempts % 10 === 0) {
        this.log.warn({ err: error, attempts: this.attempts + 1 }, "cannot reach the gateway; retrying");
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
      nextSeq: 1,
      inFlight: [],
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
      this.nextDelayMs = this.maxDelay;
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
        void this.welcomed(session, frame);
        return;
      case "setup":
        if (session.welcome === undefined) {
          this.protocolError(session, "setup before welcome");
          return;
        }
        this.options.onSetup(frame);
        return;
      case "ack":
        this.acked(session, frame.seq);
        return;
      case "heartbeat":
        return;
      case "error":
        this.log.warn({ code: frame.code, reason: frame.message }, "the gateway refused or ended the link");
        if (RETRY_LATER.has(frame.code)) this.nextDelayMs = this.maxDelay;
        return;
    }
  }

  private async welcomed(session: Session, welcome: WelcomeFrame): Promise<void> {
    session.welcome = welcome;
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
    this.attempts = 0;
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
    const first = session.inFlight[0];
    const last = session.inFlight.at(-1);
    if (first === undefined || last === undefined || seq < first.seq || seq > last.seq) {
      this.protocolError(session, `ack of batch ${seq}, which is not in flight`);
      return;
    }
    while ((session.inFlight[0]?.seq ?? Number.POSITIVE_INFINITY) <= seq) {
      session.inFlight.shift();
      this.ackedBatches += 1;
    }
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
    const { credit, maxBatchChanges } = session.welcome;
    while (session.inFlight.length < credit) {
      if (session.parametersDue) {
        session.parametersDue = false;
        const seq = session.nextSeq++;
        this.send(session, { type: "parameters", seq, parameters: session.helloParameters });
        session.inFlight.push({ seq, changes: 0 });
        this.sentBatches += 1;
        continue;
      }
      if (session.phase === "handshake") break; // the state starts once the welcome is applied
      if (session.phase === "syncing") {
        const state = session.state as StateCursor;
        const { items, last } = state.next(maxBatchChanges, LINK_BATCH_TARGET_BYTES);
        const seq = session.nextSeq++;
        this.send(session, { type: "state", seq, items, last });
        session.inFlight.push({ seq, changes: 0 });
        this.sentBatches += 1;
        if (last) {
          session.phase = "up";
          session.state = undefined;
        }
        continue;
      }
      if (this.outgoingHead >= this.outgoing.length) break;
      const changes: Change[] = [];
      let bytes = 0;
      while (
        this.outgoingHead < this.outgoing.length &&
        changes.length < maxBatchChanges &&
        (changes.length === 0 || bytes < LINK_BATCH_TARGET_BYTES)
      ) {
        const next = this.outgoing[this.outgoingHead] as Outgoing;
        this.outgoingHead += 1;
        changes.push(next.change);
        bytes += next.bytes;
      }
      this.outgoingBytes -= bytes;
      this.compactOutgoing();
      const seq = session.nextSeq++;
      this.send(session, { type: "changes", seq, changes });
      session.inFlight.push({ seq, changes: changes.length });
      this.sentBatches += 1;
    }
    this.wake();
  }

  private compactOutgoing(): void {
    if (this.outgoingHead === this.outgoing.length) {
      this.outgoing.length = 0;
      this.outgoingHead = 0;
    } else if (this.outgoingHead > 1024 && this.outgoingHead * 2 > this.outgoing.length) {
      this.outgoing.splice(0, this.outgoingHead);
      this.outgoingHead = 0;
    }
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
    let lost = this.outgoing.length - this.outgoingHead;
    for (const batch of session.inFlight) lost += batch.changes;
    session.inFlight.length = 0;
    this.outgoing.length = 0;
    this.outgoingHead = 0;
    this.outgoingBytes = 0;
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
      this.nextDelayMs = this.maxDelay;
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
    const delay =
      this.nextDelayMs ?? Math.min(this.maxDelay, this.minDelay * 2 ** Math.min(this.attempts, 20));
    this.nextDelayMs = undefined;
    this.attempts += 1;
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }

  private wake(): void {
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

/**
 * Turns the probe's state into `state` items: per dataview, one `dataview` item with as many rows
 * as fit the batch's size budget, then `row` items for the rest, so no frame grows with the
 * dataview's size.
 */
class StateCursor {
  private dataview = 0;
  private row = 0;
  private headerSent = false;

  constructor(private readonly snapshots: readonly StateSnapshot[]) {}

  next(maxItems: number, targetBytes: number): { items: Change[]; last: boolean } {
    const items: Change[] = [];
    let bytes = 0;
    while (items.length < maxItems && bytes < targetBytes && this.dataview < this.snapshots.length) {
      const snapshot = this.snapshots[this.dataview] as StateSnapshot;
      if (!this.headerSent) {
        const rows: WireRow[] = [];
        let size = 0;
        for (const column of snapshot.columns) size += column.length + 3;
        while (this.row < snapshot.rows.length && bytes + size < targetBytes) {
          const row = snapshot.rows[this.row] as StateSnapshot["rows"][number];
          const wire: WireRow = {
            name: row.name,
            cells: encodeCells(row.cells),
            at: row.at,
            ...(row.severities === undefined ? {} : { severities: row.severities }),
          };
          size += estimateRow(wire);
          rows.push(wire);
          this.row += 1;
        }
        items.push({
          kind: "dataview",
          dataview: snapshot.address,
          at: snapshot.at,
          plugin: snapshot.plugin,
          columns: snapshot.columns,
          rows,
          headlines: snapshot.headlines,
        });
        bytes += size + 64;
        this.headerSent = true;
      } else if (this.row < snapshot.rows.length) {
        const row = snapshot.rows[this.row] as StateSnapshot["rows"][number];
        const change: Change = {
          kind: "row",
          dataview: snapshot.address,
          at: row.at,
          name: row.name,
          cells: encodeCells(row.cells),
          ...(row.severities === undefined ? {} : { severities: row.severities }),
        };
        bytes += estimateChangeSize(change);
        items.push(change);
        this.row += 1;
      }
      if (this.headerSent && this.row >= snapshot.rows.length) {
        this.dataview += 1;
        this.row = 0;
        this.headerSent = false;
      }
    }
    return { items, last: this.dataview >= this.snapshots.length };
  }
}

function estimateRow(row: WireRow): number {
  let size = row.name.length + 24;
  for (const cell of row.cells) size += typeof cell === "string" ? cell.length + 3 : 4;
  return size;
}
