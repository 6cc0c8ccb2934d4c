/**
 * The `nats` publish target (DESIGN 2 `gateway.publish`, 4.3 "Topics", 5.5 "Bus"): each envelope
 * goes to JetStream on `<subjectPrefix>.<topic>` as the JSON of its public-v2 message, with the
 * envelope id as `Nats-Msg-Id`, so a batch sent again after a failure is stored once within the
 * stream's duplicate window (and the hub de-duplicates on the id beyond it).
 *
 * A batch is pipelined (every publish started, then every acknowledgement awaited, the batch bounded
 * by one timeout; `bus/nats/jetstream-batch.ts`) and resolves only when JetStream acknowledged all of it; any failure rejects and the
 * {@link SinkChannel} in front sends the batch again with back-off. NATS being down never throws at
 * construction and never piles data up in the client: while the connection is down, a publish
 * waits at most the publish timeout for it to come back, then rejects without sending anything.
 * While the hubs' durable consumer lags more than NATS_MAX_CONSUMER_LAG messages behind, a batch
 * waits before it is published (back-pressure through the bus, so the PUT→queryable delay stays short).
 */
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { Envelope } from "../../bus/envelope.js";
import { JetStreamBatchPublisher, type JetStreamItem } from "../../bus/nats/jetstream-batch.js";
import { NatsLink } from "../../bus/nats/nats-connect.js";
import { checkNatsNames, displayUrl, ensureStream, subjectOf } from "../../bus/nats/nats-stream.js";
import {
  NATS_DEFAULT_DURABLE,
  NATS_LAG_CHECK_MS,
  NATS_MAX_CONSUMER_LAG,
  NATS_PUBLISH_TIMEOUT_MS,
} from "../../config/defaults.js";
import type { Sink } from "./sink.js";

/** Room kept under the server's max_payload for the protocol's header framing. */
const HEADER_FRAMING_BYTES = 64; // bytes

export interface NatsSinkOptions {
  /** `nats://HOST:PORT`. */
  readonly url: string;
  /** JetStream stream name (default in setup: `VIGIL`). */
  readonly stream: string;
  /** Subjects are `<subjectPrefix>.entities|metrics|events` (default in setup: `vigil`). */
  readonly subjectPrefix: string;
  readonly logger: Logger;
  /** Longest wait for one acknowledgement, and for a lost connection; default 5 s. */
  readonly publishTimeoutMs?: number;
  /**
   * The hubs' durable consumer whose lag throttles this sink (default `vigil-hub`), and the lag
   * (messages published and not yet acknowledged by a hub) past which a batch's acknowledgement
   * waits; default NATS_MAX_CONSUMER_LAG; 0 turns the throttle off.
   */
  readonly durable?: string;
  readonly maxConsumerLag?: number;
  /** Duplicate window of a stream this sink creates; default 2 min. */
  readonly duplicateWindowMs?: number;
  /** First and largest delay between two first-connection attempts; defaults 100 ms and 5 s. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  /**
   * Called once per batch JetStream acknowledged whole, with the sink's name and the seconds from
   * the first message sent to the last acknowledgement (the self-metrics' publish latency).
   */
  readonly onPublished?: (sink: string, seconds: number) => void;
}

/** Counters of a NATS sink, for the gateway's status. */
export interface NatsSinkStats {
  /** Messages JetStream acknowledged (duplicates included). */
  readonly acknowledged: number;
  /** Acknowledged as duplicates: stored earlier, within the duplicate window. */
  readonly duplicates: number;
  /** Messages larger than the server's max_payload, dropped with an error log line each. */
  readonly droppedTooLarge: number;
}

export class NatsSink implements Sink {
  readonly name: string;
  private readonly options: NatsSinkOptions;
  private readonly log: Logger;
  private readonly link: NatsLink;
  private readonly timeoutMs: number;
  private readonly encoder = new TextEncoder();
  /** The publisher on the connection the stream was last checked on. */
  private js: JetStreamBatchPublisher | undefined;
  private jsOf: NatsConnection | undefined;
  private jsm: JetStreamManager | undefined;
  private closed = false;
  /** The hubs' consumer lag at the last look, and when that was (DESIGN 1: bounded at every hop). */
  private lag: number | undefined;
  private lagCheckedAt = Number.NEGATIVE_INFINITY;
  private throttled = false;
  /** The lag gate's queue: the batch before this one has passed it when this resolves. */
  private gate: Promise<void> = Promise.resolve();
  private acknowledged = 0;
  private duplicates = 0;
  private droppedTooLarge = 0;

  constructor(options: NatsSinkOptions) {
    checkNatsNames(options.url, options.stream, options.subjectPrefix);
    this.options = options;
    this.name = `nats:${displayUrl(options.url)}/${options.stream}`;
    this.log = options.logger.child({ sink: this.name });
    this.timeoutMs = options.publishTimeoutMs ?? NATS_PUBLISH_TIMEOUT_MS;
    this.link = new NatsLink({
      url: options.url,
      name: "vigil-gateway",
      logger: this.log,
      ...(options.retryInitialMs === undefined ? {} : { retryInitialMs: options.retryInitialMs }),
      ...(options.retryMaxMs === undefined ? {} : { retryMaxMs: options.retryMaxMs }),
    });
  }

  /**
   * Publishes the batch and resolves once JetStream acknowledged every message (DESIGN 1
   * "Hand-offs"); rejects when the connection stays down past the publish timeout, when the stream
   * cannot be created or does not capture the subjects, or when any acknowledgement fails or times
   * out. The stream is checked again after a failure (it may have been deleted meanwhile).
   */
  async publish(batch: readonly Envelope[]): Promise<void> {
    if (this.closed) throw new Error(`the publish target ${this.name} is closed`);
    if (batch.length === 0) return;
    try {
      const nc = await this.link.whenUp(this.timeoutMs);
      const js = await this.ready(nc);
      // Wait before publishing while the hubs lag: the stream then holds at most the bound plus the
      // channel's window, and the batch's acknowledgement waits with it. Batches pass this gate one
      // after another, in the order they came, so the stream keeps the publication order.
      const turn = this.gate.then(() => this.whileHubsLag());
      this.gate = turn.catch(() => undefined);
      await turn;
      const maxPayload = nc.info?.max_payload ?? Number.POSITIVE_INFINITY;
      const items: JetStreamItem[] = [];
      for (const envelope of batch) {
        const payload = this.encoder.encode(JSON.stringify(envelope.message));
        if (payload.length + envelope.id.length + HEADER_FRAMING_BYTES > maxPayload) {
          this.dropTooLarge(envelope, payload.length, maxPayload);
          continue;
        }
        items.push({
          subject: subjectOf(this.options.subjectPrefix, envelope.topic),
          payload,
          msgId: envelope.id,
        });
      }
      const sent = performance.now();
      const result = await js.publish(items, this.timeoutMs);
      this.options.onPublished?.(this.name, (performance.now() - sent) / 1000);
      this.acknowledged += result.acknowledged;
      this.duplicates += result.duplicates;
    } catch (error) {
      this.js?.close();
      this.js = undefined;
      this.jsOf = undefined;
      throw error;
    }
  }

  /** Counters since the sink was created. */
  stats(): NatsSinkStats {
    return {
      acknowledged: this.acknowledged,
      duplicates: this.duplicates,
      droppedTooLarge: this.droppedTooLarge,
    };
  }

  /** Closes the connection after at most 1 s flushing what was sent; later publishes reject. */
  async close(): Promise<void> {
    this.closed = true;
    await this.link.close();
  }

  /**
   * The stream is a hop too (DESIGN 1: bounded work in flight at every hop): while the hubs' durable
   * consumer has more than `maxConsumerLag` messages it has not acknowledged, the batch's
   * acknowledgement waits, so the gateway's buffer fills and its probes slow down instead of a
   * backlog growing in the stream. No consumer yet (no hub started), or a failed look: no wait —
   * the stream holds the messages durably until a hub comes.
   */
  private async whileHubsLag(): Promise<void> {
    const maxLag = this.options.maxConsumerLag ?? NATS_MAX_CONSUMER_LAG;
    if (maxLag <= 0) return;
    for (;;) {
      const lag = await this.consumerLag();
      const over = lag !== undefined && lag > maxLag && !this.closed;
      if (over !== this.throttled) {
        this.throttled = over;
        this.log.info({ lag, maxLag }, over ? "hubs lag behind; slowing publication" : "hubs caught up");
      }
      if (!over) return;
      await new Promise((resolve) => setTimeout(resolve, NATS_LAG_CHECK_MS));
    }
  }

  /** The durable consumer's lag, looked up at most every NATS_LAG_CHECK_MS; undefined when unknown. */
  private async consumerLag(): Promise<number | undefined> {
    const now = Date.now();
    if (now - this.lagCheckedAt < NATS_LAG_CHECK_MS) return this.lag;
    this.lagCheckedAt = now;
    const jsm = this.jsm;
    if (jsm === undefined) return undefined;
    try {
      const info = await jsm.consumers.info(
        this.options.stream,
        this.options.durable ?? NATS_DEFAULT_DURABLE,
      );
      this.lag = info.num_pending + info.num_ack_pending;
    } catch {
      this.lag = undefined;
    }
    return this.lag;
  }

  /** Checks the stream once per connection (creating it when missing) and returns the client. */
  private async ready(nc: NatsConnection): Promise<JetStreamBatchPublisher> {
    if (this.js !== undefined && this.jsOf === nc) return this.js;
    const jsm = await jetstreamManager(nc, { timeout: this.timeoutMs });
    await ensureStream(
      jsm,
      {
        stream: this.options.stream,
        subjectPrefix: this.options.subjectPrefix,
        ...(this.options.duplicateWindowMs === undefined
          ? {}
          : { duplicateWindowMs: this.options.duplicateWindowMs }),
      },
      this.log,
    );
    const js = new JetStreamBatchPublisher(nc);
    this.jsm = jsm;
    this.js = js;
    this.jsOf = nc;
    return js;
  }

  /**
   * A message the server would refuse whatever happens (larger than its max_payload) is dropped,
   * counted and logged, rather than failing its batch for ever and stopping the gateway.
   */
  private dropTooLarge(envelope: Envelope, bytes: number, maxPayload: number): void {
    this.droppedTooLarge += 1;
    this.log.error(
      { id: envelope.id, topic: envelope.topic, type: envelope.message.type, bytes, maxPayload },
      "message larger than the NATS server's max_payload; dropped (raise max_payload on the server)",
    );
  }
}

/**
 * Creates the `nats` publish target. It starts connecting at once but never throws because NATS
 * is down: the first publishes reject until the connection is up, and the connection is retried
 * for ever. Defaults: publish timeout 5 s, duplicate window 2 min (for a stream it creates),
 * first-connection back-off 100 ms doubling to 5 s. Throws only for an unusable url, stream name
 * or subject prefix.
 */
export function createNatsSink(options: NatsSinkOptions): NatsSink {
  return new NatsSink(options);
}
