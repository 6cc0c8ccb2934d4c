/** The `memory` sink: hands messages to the in-process bus an embedded hub consumes. */
import type { Bus } from "../../bus/bus.js";
import type { PublicV2Message } from "../../messages/types.js";
import type { Sink } from "./sink.js";

export class BusSink implements Sink {
  readonly name = "memory";
  constructor(private readonly bus: Bus) {}

  write(messages: readonly PublicV2Message[]): void {
    this.bus.publish(messages);
  }

  async close(): Promise<void> {
    await this.bus.drain();
  }
}
