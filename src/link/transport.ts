/**
 * The two transports of the probe link share these shapes (DESIGN 1 "probe link"): a
 * {@link LinkEnd} carries frames one way and the other, in order, asynchronously; a probe gets one
 * from a {@link LinkConnector} each time it (re)connects. The in-process link passes frame objects
 * (`in-process.ts`), the WebSocket link JSON text (`websocket.ts`); the receiver validates either.
 */

/** Why a link closed: the WebSocket close code and reason, and which side closed it. */
export interface LinkClose {
  readonly code: number;
  readonly reason: string;
  /** True when this end closed it (a protocol error it found, a heartbeat timeout, a stop). */
  readonly local: boolean;
}

export interface LinkHandlers {
  /** One frame as received: not trusted yet, the receiver validates it. */
  frame(value: unknown): void;
  /** The link is closed; called once, after which no frame arrives. */
  close(info: LinkClose): void;
}

/** One end of an open link. */
export interface LinkEnd {
  /** For logs and status: `in-process`, or the peer's address. */
  readonly remote: string;
  /** Registers the receiver; frames that arrived before are delivered then, in order. */
  listen(handlers: LinkHandlers): void;
  /** Sends one frame; ignored once the link is closed. */
  send(frame: object): void;
  /** Closes the link; both sides' `close` handlers run (this side's with `local: true`). */
  close(code: number, reason: string): void;
}

/** How a probe reaches its gateway; `connect()` rejects when it cannot (the probe retries). */
export interface LinkConnector {
  /** For logs: `in-process` or the gateway's link URL. */
  readonly description: string;
  connect(): Promise<LinkEnd>;
}
