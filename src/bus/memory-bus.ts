/**
 * The in-process bus `vigil up` uses (DESIGN 5.5): the gateway's `memory` target on one side, the
 * embedded hub's consumer on the other. A published batch is acknowledged (its promise resolves)
 * only when the hub's handler has committed it, and rejected when the handler fails, so the
 * gateway's channel retries it with back-off: the same acknowledged hand-off as NATS, without the
 * network. At most `maxPending` batches wait for the consumer; beyond that, and after `stop()`,
 * publishing rejects at once (the channel's window normally keeps it far below).
 */
import type { Logger } from "pino";
import { MEMORY_BUS_MAX_PENDING_BATCHES } from "../config/defaults.js";
import type { BatchHandler, BusConsumer, ConsumerStatus } from "./bus.js";
import type { Envelope } from "./envelope.js";

interface Pending {
  readonly batch: readonly Envelope[];
  resolve(): void;
  reject(error: Error): void;
}

export class MemoryBus implements BusConsumer {
  private readonly queue: Pending[] = [];
  private handler: BatchHandler | undefined;
  private running = false;
  private stopped = false;
  private current: Promise<void> | undefined;
  private delivered = 0;
  private retries = 0;
  private failing = false;
  private lastError: string | undefined;
  private readonly log: Logger;

  constructor(
    logger: Logger,
    private readonly maxPending = MEMORY_BUS_MAX_PENDING_BATCHES,
  ) {
    this.log = logger.child({ component: "memory-bus" });
  }

  /** The gateway's side (its `memory` target): resolves once the hub has committed the batch. */
  publish(batch: readonly Envelope[]): Promise<void> {
    if (this.stopped) return Promise.reject(new Error("the in-process bus is stopped"));
    if (this.queue.length >= this.maxPending) {
      return Promise.reject(new Error(`the in-process bus holds ${this.maxPending} batches already`));
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ batch, resolve, reject });
      this.kick();
    });
  }

  async start(handler: BatchHandler): Promise<void> {
    if (this.handler !== undefined) throw new Error("the in-process bus has one consumer");
    this.handler = handler;
    this.kick();
  }

  /**
   * Stops delivering: the batch in hand may finish until `deadlineMs`; batches still waiting are
   * rejected, so the gateway's channel keeps them (and reports them if its own stop passes).
   */
  async stop(deadlineMs: number): Promise<void> {
    this.stopped = true;
    for (const pending of this.queue.splice(0)) pending.reject(new Error("the in-process bus stopped"));
    if (this.current !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.current,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.max(0, deadlineMs));
        }),
      ]);
      clearTimeout(timer);
    }
  }

  status(): ConsumerStatus {
    return {
      name: "memory",
      state: this.stopped ? "stopped" : this.failing ? "retrying" : "ok",
      delivered: this.delivered,
      retries: this.retries,
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
    };
  }

  private kick(): void {
    if (this.running || this.handler === undefined || this.queue.length === 0) return;
    this.running = true;
    this.current = this.run().finally(() => {
      this.running = false;
      this.current = undefined;
      this.kick();
    });
  }

  private async run(): Promise<void> {
    const handler = this.handler;
    if (handler === undefined) return;
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      try {
        await handler(next.batch);
        this.delivered += next.batch.length;
        if (this.failing) {
          this.failing = false;
          this.log.info("hub consumer recovered");
        }
        next.resolve();
      } catch (error) {
        this.retries += 1;
        this.lastError = error instanceof Error ? error.message : String(error);
        if (!this.failing) {
          this.failing = true;
          this.log.warn({ err: error }, "hub consumer failed a batch; the gateway sends it again");
        }
        next.reject(error instanceof Error ? error : new Error(String(error)));
      }
      if (this.stopped) return;
    }
  }
}
