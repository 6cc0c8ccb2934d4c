/**
 * The gateway's publisher: checks every message against the public-v2 schema (DESIGN 4.3: "every
 * message the gateway emits is valid against it") and fans it out to every sink, in order.
 * A message that fails the schema is a gateway bug: it is logged and counted, never sent.
 */
import type { Logger } from "pino";
import type { PublicV2Message } from "../../messages/types.js";
import { validateMessage } from "../../messages/validate.js";
import type { Sink } from "./sink.js";

export type PublishListener = (message: PublicV2Message) => void;

export class Publisher {
  private readonly listeners = new Set<PublishListener>();
  published = 0;
  invalid = 0;

  constructor(
    private readonly sinks: readonly Sink[],
    private readonly logger: Logger,
  ) {}

  publish(messages: readonly PublicV2Message[]): void {
    const valid: PublicV2Message[] = [];
    for (const message of messages) {
      const result = validateMessage(message);
      if (result.ok) valid.push(message);
      else {
        this.invalid += 1;
        this.logger.error(
          { message, errors: result.errors },
          "gateway built an invalid public-v2 message; not sent",
        );
      }
    }
    if (valid.length === 0) return;
    for (const sink of this.sinks) sink.write(valid);
    this.published += valid.length;
    for (const message of valid) for (const listener of this.listeners) listener(message);
  }

  /** Every published message, for the live message tap (`GET /v1/messages`). */
  subscribe(listener: PublishListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    for (const sink of this.sinks) await sink.close();
  }
}
