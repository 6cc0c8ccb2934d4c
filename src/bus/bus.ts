/**
 * The bus between gateway and hub (DESIGN 5.5): the gateway publishes public-v2 messages, the hub
 * consumes them in batches and acknowledges a batch only once its store has committed it.
 * Implementations: in-process (`memory-bus.ts`, the default) and NATS JetStream (`nats/`, for the
 * scale-out deployment).
 */
import type { PublicV2Message } from "../messages/types.js";

/** Handles one batch; resolves once the batch is durable. A rejection means "deliver again". */
export type BatchHandler = (messages: readonly PublicV2Message[]) => Promise<void>;

export interface Bus {
  /** Queues messages for delivery, in order. */
  publish(messages: readonly PublicV2Message[]): void;
  /** Registers the one consumer. */
  consume(handler: BatchHandler): void;
  /** Resolves when every message published so far has been handled. */
  drain(): Promise<void>;
  close(): Promise<void>;
}
