/**
 * Where published messages go (DESIGN 2 `gateway.publish`): the in-process bus, an NDJSON file,
 * NATS JetStream. Every sink receives every message, in publication order.
 */
import type { PublicV2Message } from "../../messages/types.js";

export interface Sink {
  readonly name: string;
  write(messages: readonly PublicV2Message[]): void;
  /** Flushes what was written and releases the sink. */
  close(): Promise<void>;
}
