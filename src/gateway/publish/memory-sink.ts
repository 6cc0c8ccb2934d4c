/**
 * The `memory` publish target (DESIGN 2): hands batches to the in-process bus that an embedded hub
 * consumes (`vigil up`). A batch is acknowledged once the hub has committed it.
 */
import type { Envelope } from "../../bus/envelope.js";
import type { MemoryBus } from "../../bus/memory-bus.js";
import type { Sink } from "./sink.js";

export class MemorySink implements Sink {
  readonly name = "memory";
  constructor(private readonly bus: MemoryBus) {}

  publish(batch: readonly Envelope[]): Promise<void> {
    return this.bus.publish(batch);
  }

  async close(): Promise<void> {}
}
