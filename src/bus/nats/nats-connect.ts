/**
 * One NATS connection for a sink or a consumer that rides out NATS being down (DESIGN 1
 * "Hand-offs", 5.5): constructing it never throws because of the network. The first connection is
 * retried here with a capped back-off for ever (the client gives up on a first connect that fails);
 * once connected, the client reconnects by itself for ever (`maxReconnectAttempts: -1`). A
 * connection the client closes on its own (a fatal server error) is replaced by a new one.
 * State changes (connected, lost, back) are logged once each, never once per attempt.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  NATS_CLOSE_FLUSH_MS,
  NATS_PING_INTERVAL_MS,
  NATS_RECONNECT_WAIT_MS,
  RETRY_INITIAL_MS,
  RETRY_MAX_MS,
} from "../../config/defaults.js";
import { Backoff } from "../../flow/backoff.js";
import { displayUrl } from "./nats-stream.js";

/** Unanswered pings after which the client takes the connection as lost. */
const MAX_PINGS_OUT = 3; // pings

export interface NatsLinkOptions {
  /** `nats://HOST:PORT`, or `tls://HOST:PORT` to require TLS (the system's CAs verify the server). */
  readonly url: string;
  /** Client name the server shows in its monitoring, e.g. `vigil-gateway`. */
  readonly name: string;
  readonly logger: Logger;
  /** First and largest delay between two first-connection attempts; defaults 100 ms and 5 s. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
}

/** `connecting` until the first attempt ends; `down` after a failed attempt or a lost connection. */
export type NatsLinkState = "connecting" | "up" | "down" | "closed";

/**
 * Sleeps `ms`, resolving early (never rejecting) when `signal` aborts. The timer does not outlive
 * the abort, so a stopped component leaves nothing that holds the process.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class NatsLink {
  /** The URL without credentials, for logs and errors. */
  readonly url: string;
  private readonly options: NatsLinkOptions;
  private readonly log: Logger;
  private nc: NatsConnection | undefined;
  private linkState: NatsLinkState = "connecting";
  private lastError: string | undefined;
  private attemptsFailed = 0;
  private readonly abort = new AbortController();
  private waiters: (() => void)[] = [];

  /** Starts connecting in the background at once. */
  constructor(options: NatsLinkOptions) {
    this.options = options;
    this.url = displayUrl(options.url);
    this.log = options.logger.child({ nats: this.url });
    this.run().catch((error: unknown) => this.log.error({ err: error }, "the NATS connection loop failed"));
  }

  get state(): NatsLinkState {
    return this.linkState;
  }

  /** Why the last attempt failed or the connection was lost; undefined while all is well. */
  get error(): string | undefined {
    return this.lastError;
  }

  /** Connection attempts that failed since the link was created (the client's own reconnects aside). */
  get failedAttempts(): number {
    return this.attemptsFailed;
  }

  /** The connection while it is up, else undefined. */
  get connection(): NatsConnection | undefined {
    return this.linkState === "up" ? this.nc : undefined;
  }

  /**
   * Resolves with the connection when it is up, waiting up to `timeoutMs` for it (or until `signal`
   * aborts); rejects then with an Error naming the URL and the last connection error. Nothing is
   * sent while the connection is down, so a caller that retries does not pile data up in the
   * client's buffer.
   */
  async whenUp(timeoutMs: number, signal?: AbortSignal): Promise<NatsConnection> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const nc = this.connection;
      if (nc !== undefined) return nc;
      const left = deadline - Date.now();
      if (this.linkState === "closed" || left <= 0 || signal?.aborted === true) {
        const why =
          this.linkState === "closed" ? "the connection is closed" : (this.lastError ?? "not connected yet");
        throw new Error(`NATS at ${this.url} is not reachable: ${why}`);
      }
      await this.changed(left, signal);
    }
  }

  /**
   * Closes the connection after at most `flushMs` (default 1 s) spent making sure what was sent
   * (acks, publishes) reached the server; stops the connection attempts.
   */
  async close(flushMs = NATS_CLOSE_FLUSH_MS): Promise<void> {
    if (this.linkState === "closed") return;
    this.setState("closed");
    this.abort.abort();
    const nc = this.nc;
    this.nc = undefined;
    if (nc === undefined || nc.isClosed()) return;
    if (flushMs > 0 && !nc.isClosed()) {
      const timeout = new AbortController();
      await Promise.race([nc.flush().catch(() => undefined), sleep(flushMs, timeout.signal)]);
      timeout.abort();
    }
    await nc.close().catch(() => undefined);
  }

  /** Resolves at the next state change, after `ms`, or when `signal` aborts, whichever is first. */
  private changed(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const stop = new AbortController();
      const done = (): void => {
        stop.abort();
        signal?.removeEventListener("abort", done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener("abort", done, { once: true });
      void sleep(ms, stop.signal).then(done);
    });
  }

  private setState(state: NatsLinkState): void {
    this.linkState = state;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const backoff = new Backoff({
      initialMs: this.options.retryInitialMs ?? RETRY_INITIAL_MS,
      maxMs: this.options.retryMaxMs ?? RETRY_MAX_MS,
    });
    while (!signal.aborted) {
      let nc: NatsConnection;
      try {
        nc = await connect({
          servers: this.options.url,
          name: this.options.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: NATS_RECONNECT_WAIT_MS,
          pingInterval: NATS_PING_INTERVAL_MS,
          maxPingOut: MAX_PINGS_OUT,
          // The client otherwise builds an Error (with a stack) for every request to be ready for a
          // timeout: 21% of the gateway's CPU under load (bench/end-to-end.bench.ts profile).
          noAsyncTraces: true,
          // The Node transport ignores the scheme: `tls://` must ask for TLS itself.
          ...(this.options.url.startsWith("tls://") ? { tls: {} } : {}),
        });
      } catch (error) {
        if (signal.aborted) return;
        this.lastError = messageOf(error);
        this.attemptsFailed += 1;
        if (this.linkState !== "down") {
          this.log.warn({ err: error }, "cannot connect to NATS; retrying with back-off");
          this.setState("down");
        }
        await sleep(backoff.next(), signal);
        continue;
      }
      if (signal.aborted) {
        await nc.close().catch(() => undefined);
        return;
      }
      backoff.reset();
      this.nc = nc;
      this.lastError = undefined;
      this.log.info("connected to NATS");
      this.setState("up");
      this.watch(nc).catch((error: unknown) =>
        this.log.warn({ err: error }, "lost track of the NATS status"),
      );
      const closedWith = await nc.closed();
      if (signal.aborted) return;
      this.nc = undefined;
      this.lastError = closedWith instanceof Error ? closedWith.message : "the connection closed";
      this.log.warn({ err: closedWith }, "the NATS connection closed; connecting again");
      this.setState("down");
    }
  }

  /** Follows the client's own disconnect/reconnect cycle and logs each change once. */
  private async watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (this.nc !== nc) return;
      switch (status.type) {
        case "disconnect":
          this.lastError = "the connection was lost; reconnecting";
          this.log.warn("lost the NATS connection; reconnecting");
          this.setState("down");
          break;
        case "reconnect":
          this.lastError = undefined;
          this.log.info("reconnected to NATS");
          this.setState("up");
          break;
        case "error":
          this.log.warn({ err: status.error }, "NATS reported an error");
          break;
        default:
          break;
      }
    }
  }
}
