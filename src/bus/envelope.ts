/**
 * What travels on every hand-off after the gateway (DESIGN 1, 4.3): a public-v2 message with its
 * topic and a stable id. The id is `<origin>.<seq>`: `origin` names one run of one gateway (its
 * name's safe characters, the start time and 64 random bits, so it is never reused after a restart)
 * and `seq` counts the messages of that run from 1. Every consumer de-duplicates on it: the NATS
 * sink sends it as `Nats-Msg-Id`, the hub stores it once (as ranges of seqs per origin).
 */
import { randomBytes } from "node:crypto";
import type { PublicV2Message, Topic } from "../messages/types.js";
import { TOPIC_OF } from "../messages/types.js";

declare const messageIdBrand: unique symbol;
/** `<origin>.<seq>`, unique per gateway run. */
export type MessageId = string & { readonly [messageIdBrand]: true };

export interface Envelope {
  readonly id: MessageId;
  readonly topic: Topic;
  readonly message: PublicV2Message;
}

/** Hands out the ids of one gateway run, in publication order. */
export class MessageIdSource {
  readonly origin: string;
  private seq = 0;

  /** `gateway` only makes ids readable; uniqueness comes from the time and random part. */
  constructor(gateway: string, now = Date.now()) {
    const readable = gateway.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 32) || "gw";
    this.origin = `${readable}-${now.toString(36)}-${randomBytes(8).toString("hex")}`;
  }

  /** Wraps messages in envelopes with the next ids. */
  wrap(messages: readonly PublicV2Message[]): Envelope[] {
    return messages.map((message) => {
      this.seq += 1;
      return { id: `${this.origin}.${this.seq}` as MessageId, topic: TOPIC_OF[message.type], message };
    });
  }

  /** The last seq handed out (0 before the first message). */
  get lastSeq(): number {
    return this.seq;
  }
}

/** Splits `<origin>.<seq>` into its parts; undefined when the text is not such an id. */
export function parseMessageId(id: string): { origin: string; seq: number } | undefined {
  const dot = id.lastIndexOf(".");
  if (dot <= 0 || dot > 200) return undefined;
  const digits = id.slice(dot + 1);
  if (!/^[1-9]\d{0,15}$/.test(digits)) return undefined;
  const seq = Number(digits);
  return Number.isSafeInteger(seq) ? { origin: id.slice(0, dot), seq } : undefined;
}
