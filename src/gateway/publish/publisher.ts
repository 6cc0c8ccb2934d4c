/**
 * The gateway's publisher (DESIGN 1 "Hand-offs", 4.3). It checks every message against the
 * public-v2 schema ("every message the gateway emits is valid against it": one that fails is a
 * gateway bug, logged and counted, never sent), gives it its topic and a stable id, and hands it to
 * one {@link SinkChannel} per publish target. Targets are independent: each has its own bounded
 * buffer and retries; `ready` is false while any of them is full, and the probe link stops acking
 * probe changes until `whenReady()` resolves, which slows the probes down (their ingest endpoints
 * then answer 503) instead of letting memory grow.
 */
import type { Logger } from "pino";
import { type Envelope, MessageIdSource } from "../../bus/envelope.js";
import type { PublicV2Message } from "../../messages/types.js";
import { validateMessage } from "../../messages/validate.js";
import type { Sink } from "./sink.js";
import { SinkChannel, type SinkChannelOptions, type SinkStatus } from "./sink-channel.js";

export type PublishListener = (envelope: Envelope) => void;

export interface PublisherOptions extends Omit<SinkChannelOptions, "logger"> {
  /** The gateway's name, readable in message ids. */
  readonly gateway: string;
  readonly sinks: readonly Sink[];
  readonly logger: Logger;
}

export interface PublisherStatus {
  /** Messages handed to the targets. */
  readonly published: number;
  /** Messages that failed the schema (gateway bugs), never sent. */
  readonly invalid: number;
  /** The id origin of this gateway run. */
  readonly origin: string;
  readonly sinks: readonly SinkStatus[];
}

export class Publisher {
  private readonly channels: readonly SinkChannel[];
  private readonly ids: MessageIdSource;
  private readonly listeners = new Set<PublishListener>();
  private readonly log: Logger;
  private published = 0;
  private invalid = 0;

  constructor(options: PublisherOptions) {
    this.log = options.logger.child({ component: "publisher" });
    this.ids = new MessageIdSource(options.gateway);
    this.channels = options.sinks.map((sink) => new SinkChannel(sink, { ...options, logger: this.log }));
  }

  /**
   * Validates `messages`, gives them ids and topics, and appends them to every target's buffer in
   * order. Never throws for a target's failure and never waits: check `ready` (or await
   * `whenReady()`) before taking more work from probes.
   */
  publish(messages: readonly PublicV2Message[]): void {
    const valid: PublicV2Message[] = [];
    for (const message of messages) {
      const result = validateMessage(message);
      if (result.ok) valid.push(message);
      else {
        this.invalid += 1;
        this.log.error(
          { message, errors: result.errors },
          "gateway built an invalid public-v2 message; not sent",
        );
      }
    }
    if (valid.length === 0) return;
    const envelopes = this.ids.wrap(valid);
    for (const channel of this.channels) channel.offer(envelopes);
    this.published += envelopes.length;
    if (this.listeners.size > 0) {
      for (const envelope of envelopes) for (const listener of this.listeners) listener(envelope);
    }
  }

  /** True while every target has room in its buffer. */
  get ready(): boolean {
    return this.channels.every((c) => c.hasRoom);
  }

  /** Resolves once every target has room (at once when it has). */
  async whenReady(): Promise<void> {
    while (!this.ready) {
      const full = this.channels.find((c) => !c.hasRoom);
      if (full === undefined) return;
      await full.whenRoom();
      if (full.status().state === "closed") return;
    }
  }

  /** Every published message, for the live message tap (`GET /v1/messages`). */
  subscribe(listener: PublishListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  status(): PublisherStatus {
    return {
      published: this.published,
      invalid: this.invalid,
      origin: this.ids.origin,
      sinks: this.channels.map((c) => c.status()),
    };
  }

  /** Flushes every target until it holds nothing or `deadlineMs` passes, then closes them. */
  async close(deadlineMs: number): Promise<void> {
    await Promise.all(this.channels.map((c) => c.close(deadlineMs)));
  }
}
