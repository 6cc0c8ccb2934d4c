/**
 * The bus between gateway and hub (DESIGN 1, 5.5). The gateway's side is a publish target
 * (`gateway/publish/sink.ts`); the hub's side is a {@link BusConsumer} that delivers batches of
 * envelopes to one handler and treats the handler's promise as the acknowledgement: resolved means
 * "committed, do not deliver again", rejected means "deliver again later".
 * Implementations: in-process (`memory-bus.ts`, what `vigil up` uses) and NATS JetStream (`nats/`).
 */
import type { LimitName } from "../limits/limit-refusals.js";

/**
 * One message as a consumer receives it: not trusted yet (the hub validates it). `id` is the
 * envelope id (`Nats-Msg-Id` on NATS), undefined when the message came without one; `parseError`
 * says why the bytes were not JSON (then `message` is the raw text).
 */
export interface Delivery {
  readonly id: string | undefined;
  readonly message: unknown;
  readonly parseError?: string;
  /**
   * Set with `parseError` when the text was not parsed because it is beyond a limit of the setup's
   * `limits` (its nesting depth, `jsonDepth`): the hub rejects it naming the limit and counts it.
   */
  readonly limit?: LimitName;
}

/** Handles one batch; resolves once the batch is durable. A rejection means "deliver again". */
export type BatchHandler = (batch: readonly Delivery[]) => Promise<void>;

/** What a consumer reports on the hub's status page. */
export interface ConsumerStatus {
  readonly name: string;
  /** `ok`, or `retrying` while the handler keeps failing, or `stopped`. */
  readonly state: "ok" | "retrying" | "stopped";
  readonly delivered: number;
  readonly retries: number;
  /**
   * Messages of the stream not delivered to the consumer yet, as JetStream said with the last batch
   * received (the consumer's lag; NATS only).
   */
  readonly pending?: number;
  readonly lastError?: string;
}

export interface BusConsumer {
  /** Starts delivering to `handler`; one handler per consumer. */
  start(handler: BatchHandler): Promise<void>;
  /**
   * Stops taking new batches, lets the batch in hand finish (or be left unacknowledged for
   * redelivery when `deadlineMs` passes first) and releases the connection.
   */
  stop(deadlineMs: number): Promise<void>;
  status(): ConsumerStatus;
}
