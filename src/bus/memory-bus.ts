/**
 * The in-process bus `vigil up` uses: an ordered queue delivered to one consumer in batches of up
 * to MAX_BATCH messages. A failed batch is retried after RETRY_DELAY_MS, so nothing accepted is
 * dropped while the process lives; a clean stop drains the queue first.
 */
import type { Logger } from "pino";
import type { PublicV2Message } from "../messages/types.js";
import type { BatchHandler, Bus } from "./bus.js";

const MAX_BATCH = 5_000; // messages per delivered batch
const RETRY_DELAY_MS = 1_000; // 1 s before a failed batch is delivered again

export class MemoryBus implements Bus {
  private queue: PublicV2Message[] = [];
  private handler: BatchHandler | undefined;
  private pumping: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly logger: Logger) {}

  publish(messages: readonly PublicV2Message[]): void {
    if (this.closed) throw new Error("bus is closed");
    for (const message of messages) this.queue.push(message);
    this.kick();
  }

  consume(handler: BatchHandler): void {
    if (this.handler !== undefined) throw new Error("the memory bus has one consumer");
    this.handler = handler;
    this.kick();
  }

  async drain(): Promise<void> {
    while (this.pumping !== undefined) await this.pumping;
  }

  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
  }

  /** Number of messages waiting, for status pages. */
  get pending(): number {
    return this.queue.length;
  }

  private kick(): void {
    if (this.pumping !== undefined || this.handler === undefined || this.queue.length === 0) return;
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      this.kick();
    });
  }

  private async pump(): Promise<void> {
    const handler = this.handler;
    if (handler === undefined) return;
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, MAX_BATCH);
      try {
        await handler(batch);
        this.queue.splice(0, batch.length);
      } catch (error) {
        if (this.closed) throw error;
        this.logger.error(
          { err: error, size: batch.length },
          "bus consumer failed; delivering the batch again",
        );
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      }
    }
  }
}
