/**
 * The in-process probe link (`vigil up`, DESIGN 1: "the same parts and the same hand-offs as the
 * separate processes"): a pair of ends that pass frame objects asynchronously, in order, so the
 * probe and the gateway behave exactly as over a socket (nothing is handled inside `send`). The
 * sender must not change a frame after sending it; the receiver validates it like a parsed one.
 */
import { CLOSE_GOING_AWAY } from "./protocol.js";
import type { LinkClose, LinkConnector, LinkEnd, LinkHandlers } from "./transport.js";

class Side implements LinkEnd {
  readonly remote = "in-process";
  peer!: Side;
  private handlers: LinkHandlers | undefined;
  private readonly inbox: unknown[] = [];
  private closeInfo: LinkClose | undefined;
  private scheduled = false;
  closed = false;
  /** While true, frames in either direction vanish (a dead network, for heartbeat tests). */
  blackholed = false;

  listen(handlers: LinkHandlers): void {
    this.handlers = handlers;
    this.schedule();
  }

  send(frame: object): void {
    if (this.closed || this.blackholed) return;
    this.peer.receive(frame);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.shut({ code, reason, local: true });
    this.peer.shut({ code, reason, local: false });
  }

  private receive(frame: unknown): void {
    if (this.closed) return;
    this.inbox.push(frame);
    this.schedule();
  }

  shut(info: LinkClose): void {
    if (this.closed) return;
    this.closed = true;
    this.closeInfo = info;
    // Frames already delivered to this side stay deliverable only if this side did not close it.
    if (info.local) this.inbox.length = 0;
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.handlers === undefined) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.deliver();
    });
  }

  private deliver(): void {
    const handlers = this.handlers;
    if (handlers === undefined) return;
    while (this.inbox.length > 0) {
      const frame = this.inbox.shift();
      handlers.frame(frame);
      if (this.closed && this.closeInfo?.local === true) break;
    }
    if (this.closed && this.closeInfo !== undefined) {
      const info = this.closeInfo;
      this.closeInfo = undefined;
      this.inbox.length = 0;
      handlers.close(info);
    }
  }
}

/** A connected pair: `probe` for the probe, `gateway` for the gateway. */
export interface InProcessPair {
  readonly probe: LinkEnd;
  readonly gateway: LinkEnd;
  /** Drops every frame from now on without closing (a dead network). */
  blackhole(): void;
}

/** Creates a connected in-process pair. */
export function inProcessPair(): InProcessPair {
  const probe = new Side();
  const gateway = new Side();
  probe.peer = gateway;
  gateway.peer = probe;
  return {
    probe,
    gateway,
    blackhole() {
      probe.blackholed = true;
      gateway.blackholed = true;
    },
  };
}

/** A connector whose every `connect()` makes a new pair and hands its gateway end to `accept`. */
export interface InProcessConnector extends LinkConnector {
  /** The pair of the latest connection, for tests that cut or silence it. */
  readonly current: InProcessPair | undefined;
}

/**
 * The probe side of an in-process link to a gateway: `accept` is the gateway's entry for new
 * links. Refuses to connect after `accept` throws (the gateway is stopped).
 */
export function inProcessConnector(accept: (end: LinkEnd) => void): InProcessConnector {
  let current: InProcessPair | undefined;
  return {
    description: "in-process",
    get current() {
      return current;
    },
    async connect() {
      const pair = inProcessPair();
      try {
        accept(pair.gateway);
      } catch (error) {
        pair.gateway.close(CLOSE_GOING_AWAY, "gateway not accepting links");
        throw error;
      }
      current = pair;
      return pair.probe;
    },
  };
}
