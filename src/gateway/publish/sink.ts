/**
 * A publish target of the gateway (DESIGN 2 `gateway.publish`): the in-process bus, an NDJSON file,
 * NATS JetStream. A sink only knows how to hand one batch on and say when it holds it durably; the
 * {@link SinkChannel} in front of it gives it a bounded buffer, batching, a window of batches in
 * flight and retries, so a slow or failing sink never fails a probe request or another sink.
 */
import type { Envelope } from "../../bus/envelope.js";

export interface Sink {
  /** For logs and the status page: `memory`, `file:<path>`, `nats:<url>/<stream>`. */
  readonly name: string;
  /**
   * Hands a batch on, in order after the batches before it. Resolves once the sink holds it
   * durably (the in-process hub: store committed; NATS: every publish acknowledged; file: written
   * and flushed to disk); rejects when it cannot, and the batch is then sent again (consumers
   * de-duplicate on the envelope ids).
   */
  publish(batch: readonly Envelope[]): Promise<void>;
  /** Releases the sink (after the channel has flushed what it could). */
  close(): Promise<void>;
}
