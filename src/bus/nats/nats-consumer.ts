/**
 * The hub's side of the NATS JetStream bus (DESIGN 5.5): a durable pull consumer, created by the
 * first hub and delivering from the start of the stream, whose batches go to one handler; a batch
 * is acknowledged only after the handler resolved (the store committed it). Hubs that use the same
 * durable name share the work: JetStream gives each message to one of them (redelivery aside, which
 * the hub de-duplicates on the `Nats-Msg-Id`).
 *
 * The loop pulls up to `batchSize` messages per request and hands the handler what has arrived as
 * soon as nothing more is buffered, so a lone message waits for nothing and batches grow under
 * load. A rejected batch is not acknowledged: it is `nak`ed with a capped exponential delay (and
 * the loop waits as long before pulling again), so it comes back, in order, without a busy loop.
 * NATS being down, at the start or later, is waited out with back-off; state changes are logged
 * once each.
 */
import {
  AckPolicy,
  type Consumer,
  type ConsumerConfig,
  type ConsumerMessages,
  DeliverPolicy,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { type NatsConnection, nanos } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  MAX_BATCH_MESSAGES,
  NATS_ACK_WAIT_MS,
  NATS_CLOSE_FLUSH_MS,
  NATS_DEFAULT_DURABLE,
  NATS_FETCH_EXPIRES_MS,
  NATS_MAX_ACK_PENDING,
  NATS_PUBLISH_TIMEOUT_MS,
  RETRY_INITIAL_MS,
  RETRY_MAX_MS,
} from "../../config/defaults.js";
import { Backoff } from "../../flow/backoff.js";
import { DEFAULT_DATA_LIMITS } from "../../limits/data-limits.js";
import { jsonTextTooDeep } from "../../limits/json-depth.js";
import { limitReason } from "../../limits/limit-refusals.js";
import type { BatchHandler, BusConsumer, ConsumerStatus, Delivery } from "../bus.js";
import { NatsLink, sleep } from "./nats-connect.js";
import { checkNatsNames, displayUrl, ensureStream, isConsumerNotFound, subjectsOf } from "./nats-stream.js";

export interface NatsConsumerOptions {
  /** `nats://HOST:PORT`. */
  readonly url: string;
  readonly stream: string;
  readonly subjectPrefix: string;
  /** Durable consumer name the hubs share; default `vigil-hub`. */
  readonly durable?: string;
  /** Most messages per handler call, 1 to MAX_BATCH_MESSAGES (1,000), which is the default. */
  readonly batchSize?: number;
  readonly logger: Logger;
  /** Ack wait of a durable consumer created here; default 30 s. */
  readonly ackWaitMs?: number;
  /** Max ack pending of a durable consumer created here; default 20,000. */
  readonly maxAckPending?: number;
  /** Longest one pull request waits for messages (at least 1 s); default 2 s. */
  readonly fetchExpiresMs?: number;
  /** First and largest retry delay (handler rejections, NATS failures); defaults 100 ms and 5 s. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  /**
   * Deepest nesting of a message's JSON text (the setup's `limits.jsonDepth`, default 64): a deeper
   * one is handed over unparsed, marked with the limit (see {@link toDelivery}).
   */
  readonly jsonDepth?: number;
}

/** What went wrong last: NATS (connection, stream, consumer, pull) or the handler. */
type Problem = "nats" | "handler";

/** Margin past a pull's expiry before a `nak`ed message may come back (the server's clock runs a bit later). */
const PULL_EXPIRY_SLACK_MS = 250; // ms
/** Batches asked for in one pull request. */
const PULL_BATCHES = 2;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Turns a JetStream message into what the handler receives: the `Nats-Msg-Id` header as `id` and
 * the parsed JSON as `message`, or the raw text with `parseError` when the bytes are not JSON (the
 * hub dead-letters it; it must not stop the messages behind it, DESIGN 5.5). A text nested deeper
 * than `jsonDepth` (the setup's `limits.jsonDepth`) is not parsed: it comes as its raw text with
 * `parseError` and `limit`.
 */
export function toDelivery(msg: JsMsg, jsonDepth: number = DEFAULT_DATA_LIMITS.jsonDepth): Delivery {
  const header = msg.headers?.get("Nats-Msg-Id");
  const id = header === undefined || header === "" ? undefined : header;
  const text = msg.string();
  if (jsonTextTooDeep(text, jsonDepth)) {
    const parseError = limitReason(
      "jsonDepth",
      "the message nests arrays and objects",
      jsonDepth + 1,
      jsonDepth,
      "levels or more",
    );
    return { id, message: text, parseError, limit: "jsonDepth" };
  }
  try {
    return { id, message: JSON.parse(text) as unknown };
  } catch (error) {
    return { id, message: text, parseError: messageOf(error) };
  }
}

function ackQuietly(msg: JsMsg): void {
  try {
    msg.ack();
  } catch {
    // The connection is gone (a stop past its deadline): the message comes again after ack_wait.
  }
}

function nakQuietly(msg: JsMsg, delayMs?: number): void {
  try {
    msg.nak(delayMs);
  } catch {
    // As above: without a connection, ack_wait brings the message back.
  }
}

export class NatsConsumer implements BusConsumer {
  private readonly options: NatsConsumerOptions;
  private readonly log: Logger;
  private readonly durable: string;
  private readonly batchSize: number;
  private readonly fetchExpiresMs: number;
  private readonly retryInitialMs: number;
  private readonly retryMaxMs: number;
  private readonly jsonDepth: number;
  private readonly name: string;
  private readonly abort = new AbortController();
  private link: NatsLink | undefined;
  private loop: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private stopped = false;
  private fetching: ConsumerMessages | undefined;
  private problem: Problem | undefined;
  private lastError: string | undefined;
  private delivered = 0;
  private retries = 0;
  /** The consumer's pending count JetStream sent with the last message received (its lag). */
  private pending: number | undefined;
  /** Handler rejections in a row, for the back-off. */
  private readonly failures: Backoff;

  constructor(options: NatsConsumerOptions) {
    checkNatsNames(options.url, options.stream, options.subjectPrefix);
    const batchSize = options.batchSize ?? MAX_BATCH_MESSAGES;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_MESSAGES) {
      throw new RangeError(`batchSize must be an integer from 1 to ${MAX_BATCH_MESSAGES}, not ${batchSize}`);
    }
    const durable = options.durable ?? NATS_DEFAULT_DURABLE;
    if (!/^[A-Za-z0-9_-]{1,255}$/.test(durable)) {
      throw new Error(`durable consumer name '${durable}' is invalid: use letters, digits, _ and -`);
    }
    this.options = options;
    this.durable = durable;
    this.batchSize = batchSize;
    this.fetchExpiresMs = Math.max(1_000, options.fetchExpiresMs ?? NATS_FETCH_EXPIRES_MS);
    this.retryInitialMs = options.retryInitialMs ?? RETRY_INITIAL_MS;
    this.retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS;
    this.failures = new Backoff({ initialMs: this.retryInitialMs, maxMs: this.retryMaxMs });
    this.jsonDepth = options.jsonDepth ?? DEFAULT_DATA_LIMITS.jsonDepth;
    this.name = `nats:${displayUrl(options.url)}/${options.stream}/${durable}`;
    this.log = options.logger.child({ consumer: this.name });
  }

  /**
   * Starts the loop and returns at once, whether NATS is up or not: the connection, the stream and
   * the durable consumer are set up in the loop, with back-off while NATS is unreachable.
   */
  async start(handler: BatchHandler): Promise<void> {
    if (this.loop !== undefined) throw new Error(`consumer ${this.name} is already started`);
    if (this.stopping !== undefined) throw new Error(`consumer ${this.name} is stopped`);
    this.link = new NatsLink({
      url: this.options.url,
      name: "vigil-hub",
      logger: this.log,
      retryInitialMs: this.retryInitialMs,
      retryMaxMs: this.retryMaxMs,
    });
    this.loop = this.run(this.link, handler).catch((error: unknown) => {
      this.log.error({ err: error }, "the NATS consumer loop failed");
    });
  }

  /**
   * Stops pulling, lets the batch in hand finish until `deadlineMs` (its messages are acknowledged
   * if the handler resolves in time, else left for redelivery after ack_wait), releases the
   * messages received but not handed over (`nak`, so another hub takes them at once) and closes
   * the connection. Returns by the deadline (plus the socket close).
   */
  stop(deadlineMs: number): Promise<void> {
    this.stopping ??= this.stopNow(deadlineMs);
    return this.stopping;
  }

  status(): ConsumerStatus {
    const linkDown = this.link?.state === "down";
    const state = this.stopped ? "stopped" : this.problem !== undefined || linkDown ? "retrying" : "ok";
    const lastError = this.problem !== undefined ? this.lastError : linkDown ? this.link?.error : undefined;
    return {
      name: this.name,
      state,
      delivered: this.delivered,
      retries: this.retries + (this.link?.failedAttempts ?? 0),
      ...(this.pending === undefined ? {} : { pending: this.pending }),
      ...(lastError === undefined ? {} : { lastError }),
    };
  }

  private async stopNow(deadlineMs: number): Promise<void> {
    const started = Date.now();
    this.abort.abort();
    this.fetching?.stop();
    if (this.loop !== undefined) {
      const timer = new AbortController();
      const finished = await Promise.race([
        this.loop.then(() => true),
        sleep(deadlineMs, timer.signal).then(() => false),
      ]);
      timer.abort();
      if (!finished) {
        this.log.warn(
          { deadlineMs },
          "stop deadline passed before the batch in hand finished; its messages will be delivered again",
        );
      }
    }
    this.stopped = true;
    const left = Math.max(0, deadlineMs - (Date.now() - started));
    await this.link?.close(Math.min(left, NATS_CLOSE_FLUSH_MS));
    this.log.info({ delivered: this.delivered }, "NATS consumer stopped");
  }

  private async run(link: NatsLink, handler: BatchHandler): Promise<void> {
    const signal = this.abort.signal;
    let consumer: Consumer | undefined;
    const retryDelays = { initialMs: this.retryInitialMs, maxMs: this.retryMaxMs };
    const natsFailures = new Backoff(retryDelays);
    const quickEmptyFetches = new Backoff(retryDelays);
    while (!signal.aborted) {
      const nc = link.connection ?? (await link.whenUp(this.retryMaxMs, signal).catch(() => undefined));
      // While NATS is down the link logs and retries; this loop only waits for it.
      if (nc === undefined) continue;
      try {
        consumer ??= await this.bind(nc);
        const started = Date.now();
        const received = await this.fetchOnce(consumer, handler);
        natsFailures.reset();
        if (this.problem === "nats") this.recovered();
        // A pull that ends at once with nothing (it should wait for messages) must not spin.
        if (received === 0 && Date.now() - started < this.fetchExpiresMs / 2) {
          await sleep(quickEmptyFetches.next(), signal);
        } else {
          quickEmptyFetches.reset();
        }
      } catch (error) {
        if (signal.aborted) break;
        // Set everything up again next time: the stream or the consumer may have been deleted.
        consumer = undefined;
        this.retries += 1;
        this.noteProblem("nats", error);
        await sleep(natsFailures.next(), signal);
      }
    }
  }

  /** Makes sure the stream and the durable consumer exist (created by the first hub). */
  private async bind(nc: NatsConnection): Promise<Consumer> {
    const { stream, subjectPrefix } = this.options;
    const jsm = await jetstreamManager(nc, { timeout: NATS_PUBLISH_TIMEOUT_MS });
    const info = await ensureStream(jsm, { stream, subjectPrefix }, this.log);
    try {
      await jsm.consumers.info(stream, this.durable);
    } catch (error) {
      if (!isConsumerNotFound(error)) throw error;
      const wanted = subjectsOf(subjectPrefix);
      const config: Partial<ConsumerConfig> = {
        durable_name: this.durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(this.options.ackWaitMs ?? NATS_ACK_WAIT_MS),
        max_ack_pending: this.options.maxAckPending ?? NATS_MAX_ACK_PENDING,
      };
      // A stream that captures more than vigil's subjects: deliver only ours.
      if ((info.config.subjects ?? []).some((subject) => !wanted.includes(subject))) {
        config.filter_subject = `${subjectPrefix}.*`;
      }
      try {
        await jsm.consumers.add(stream, config);
        this.log.info({ stream, durable: this.durable }, "created the durable JetStream consumer");
      } catch (addError) {
        // Another hub created it meanwhile: use theirs.
        await jsm.consumers.info(stream, this.durable).catch(() => {
          throw addError;
        });
      }
    }
    return jetstream(nc, { timeout: NATS_PUBLISH_TIMEOUT_MS }).consumers.get(stream, this.durable);
  }

  /**
   * One pull request: hands the handler what has arrived each time the buffer runs empty (or a
   * batch is full). After a rejection, the batch and the rest of the pull are `nak`ed with the
   * back-off delay, but at least until the pull has expired, so that nothing comes back into this
   * pull (a pull cannot be cut short without dropping what is on the wire); the loop then waits the
   * back-off before it pulls again. After a stop the rest is `nak`ed at once, for another hub.
   * Returns the number of messages received.
   */
  private async fetchOnce(consumer: Consumer, handler: BatchHandler): Promise<number> {
    const signal = this.abort.signal;
    if (signal.aborted) return 0;
    const expiresAt = Date.now() + this.fetchExpiresMs;
    // Two batches per pull: while the handler commits one batch, the next arrives (fewer idle
    // round trips between pulls under load).
    const messages = await consumer.fetch({
      max_messages: this.batchSize * PULL_BATCHES,
      expires: this.fetchExpiresMs,
    });
    this.fetching = messages;
    if (signal.aborted) messages.stop();
    let held: JsMsg[] = [];
    let received = 0;
    let backoff: number | undefined;
    const retryDelay = (delay: number): number =>
      Math.max(delay, expiresAt - Date.now() + PULL_EXPIRY_SLACK_MS);
    try {
      for await (const msg of messages) {
        received += 1;
        if (backoff !== undefined) {
          nakQuietly(msg, retryDelay(backoff));
          continue;
        }
        if (signal.aborted) {
          nakQuietly(msg);
          continue;
        }
        held.push(msg);
        if (messages.getPending() > 0 && held.length < this.batchSize) continue;
        const batch = held;
        held = [];
        backoff = await this.deliver(handler, batch, retryDelay);
        if (signal.aborted) messages.stop();
      }
    } finally {
      this.fetching = undefined;
      // The pull broke off (an error) while messages were held: release them.
      for (const msg of held) nakQuietly(msg);
    }
    if (backoff !== undefined) await sleep(backoff, signal);
    return received;
  }

  /**
   * Calls the handler; acks on success and returns undefined; on failure `nak`s with
   * `nakDelay(back-off)` and returns the back-off.
   */
  private async deliver(
    handler: BatchHandler,
    batch: readonly JsMsg[],
    nakDelay: (backoff: number) => number,
  ): Promise<number | undefined> {
    const deliveries = batch.map((msg) => toDelivery(msg, this.jsonDepth));
    // Once per batch: the lag behind its last message (parsed from that message's reply subject).
    this.pending = batch.at(-1)?.info.pending ?? this.pending;
    try {
      await handler(deliveries);
    } catch (error) {
      const delay = this.failures.next();
      this.retries += 1;
      for (const msg of batch) nakQuietly(msg, nakDelay(delay));
      this.noteProblem("handler", error);
      return delay;
    }
    for (const msg of batch) ackQuietly(msg);
    this.delivered += batch.length;
    this.failures.reset();
    // A batch handled and acknowledged: both NATS and the handler work again.
    if (this.problem !== undefined) this.recovered();
    return undefined;
  }

  /** Records a failure; logs only when the kind of problem changes, not on every retry. */
  private noteProblem(problem: Problem, error: unknown): void {
    this.lastError = messageOf(error);
    if (this.problem === problem) return;
    this.problem = problem;
    this.log.warn(
      { err: error },
      problem === "handler"
        ? "bus handler rejected a batch; delivering it again with back-off"
        : "cannot pull from JetStream; retrying with back-off",
    );
  }

  private recovered(): void {
    this.log.info({ after: this.problem }, "NATS consumer delivering again");
    this.problem = undefined;
    this.lastError = undefined;
  }
}

/**
 * Creates the hub's NATS consumer (not started; `start(handler)` connects). Defaults: durable
 * `vigil-hub`, batches of at most 2,000 messages, pulls that wait at most 2 s, and for a durable
 * it creates: deliver policy all, explicit acks, ack wait 30 s, max ack pending 20,000; retry
 * back-off 100 ms doubling to 5 s. Throws only for unusable names or a batch size outside 1–2,000.
 */
export function createNatsConsumer(options: NatsConsumerOptions): NatsConsumer {
  return new NatsConsumer(options);
}
