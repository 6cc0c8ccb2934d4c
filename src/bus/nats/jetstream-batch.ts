/**
 * Publishing a batch to JetStream with one acknowledgement per message, pipelined on one reply
 * subscription (DESIGN 1 "Hand-offs": a batch is acknowledged when the stream has stored all of it).
 *
 * `jetstream().publish()` makes a request per message: a reply-mux entry, a timer, a promise, an
 * `async` frame and, on every successful answer, an `Error` built only to cancel the request (the
 * client rejects the settled promise with a new `RequestError("cancelled")`). Under load that was
 * ~15% of the gateway's CPU (bench/end-to-end.bench.ts profile, NATS configuration). Here a batch
 * costs one timer and one promise: every message is published with a reply subject under this
 * publisher's own inbox, and the server's `PubAck` answers (or its 503 "no responders" status, when
 * no stream captures the subject) are matched back by token.
 *
 * What stays bounded: one entry per message of the batches in flight, which the sink channel's
 * window bounds; a batch that times out or whose connection closes is removed with all its tokens.
 */
import type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { createInbox, headers } from "@nats-io/transport-node";

/** One message to publish: its subject, its bytes and its de-duplication id (`Nats-Msg-Id`). */
export interface JetStreamItem {
  readonly subject: string;
  readonly payload: Uint8Array;
  readonly msgId: string;
}

/** A batch every message of which JetStream acknowledged (some as duplicates of earlier ones). */
export interface JetStreamBatchResult {
  readonly acknowledged: number;
  readonly duplicates: number;
}

/** The server's answer to a JetStream publish. */
interface PubAckJson {
  readonly stream?: string;
  readonly seq?: number;
  readonly duplicate?: boolean;
  readonly error?: { readonly code?: number; readonly description?: string };
}

interface PendingBatch {
  remaining: number;
  /** The first refusal; the batch still waits for every other answer before it rejects. */
  refusal: string | undefined;
  acknowledged: number;
  duplicates: number;
  readonly tokens: number[];
  readonly resolve: (result: JetStreamBatchResult) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** Publishes batches on one connection; make a new one after the connection is replaced. */
export class JetStreamBatchPublisher {
  private readonly prefix: string;
  private readonly subscription: Subscription;
  /** Token → its batch; tokens are the last subject token of the reply, never reused. */
  private readonly pending = new Map<number, PendingBatch>();
  private nextToken = 1;
  private closed = false;

  constructor(private readonly nc: NatsConnection) {
    this.prefix = createInbox();
    this.subscription = nc.subscribe(`${this.prefix}.*`, {
      callback: (error, msg) => {
        if (error !== null) this.failAll(error);
        else this.answer(msg);
      },
    });
    // The subscription ends when the connection closes: fail what is waiting at once.
    void nc.closed().then(() => this.failAll(new Error("the NATS connection closed")));
  }

  /**
   * Publishes every item and resolves once JetStream acknowledged all of them; once every message
   * is answered, rejects with the first refusal (no stream captures a subject, the stream refused
   * it); rejects when `timeoutMs` passes first (the batch
   * is then sent again whole by the caller; `Nats-Msg-Id` keeps it stored once).
   */
  publish(items: readonly JetStreamItem[], timeoutMs: number): Promise<JetStreamBatchResult> {
    if (this.closed) return Promise.reject(new Error("the NATS connection closed"));
    if (items.length === 0) return Promise.resolve({ acknowledged: 0, duplicates: 0 });
    return new Promise<JetStreamBatchResult>((resolve, reject) => {
      const batch: PendingBatch = {
        remaining: items.length,
        refusal: undefined,
        acknowledged: 0,
        duplicates: 0,
        tokens: [],
        resolve,
        reject,
        timer: setTimeout(() => {
          const missing = batch.remaining;
          this.settle(batch);
          reject(
            new Error(
              `JetStream did not acknowledge ${missing} of ${items.length} messages within ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs),
      };
      try {
        for (const item of items) {
          const token = this.nextToken;
          this.nextToken += 1;
          batch.tokens.push(token);
          this.pending.set(token, batch);
          this.nc.publish(item.subject, item.payload, {
            reply: `${this.prefix}.${token}`,
            headers: msgIdHeaders(item.msgId),
          });
        }
      } catch (error) {
        this.settle(batch);
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  /** Fails what is waiting and stops answering; the connection itself is not closed here. */
  close(): void {
    this.failAll(new Error("the JetStream publisher closed"));
    this.subscription.unsubscribe();
  }

  private answer(msg: Msg): void {
    const token = Number(msg.subject.slice(this.prefix.length + 1));
    const batch = this.pending.get(token);
    if (batch === undefined) return; // an answer after its batch timed out
    this.pending.delete(token);
    const answer = readAnswer(msg);
    batch.remaining -= 1;
    if ("refusal" in answer) batch.refusal ??= answer.refusal;
    else {
      batch.acknowledged += 1;
      if (answer.duplicate) batch.duplicates += 1;
    }
    if (batch.remaining > 0) return;
    // Every message answered: the batch's fate is told only now, so a retry never overlaps it.
    clearTimeout(batch.timer);
    if (batch.refusal !== undefined) batch.reject(new Error(batch.refusal));
    else batch.resolve({ acknowledged: batch.acknowledged, duplicates: batch.duplicates });
  }

  /** Removes every token of `batch` and its timer (its promise is settled by the caller). */
  private settle(batch: PendingBatch): void {
    clearTimeout(batch.timer);
    for (const token of batch.tokens) this.pending.delete(token);
    batch.remaining = 0;
  }

  private failAll(error: Error): void {
    this.closed = true;
    const batches = new Set(this.pending.values());
    for (const batch of batches) {
      this.settle(batch);
      batch.reject(error);
    }
  }
}

function msgIdHeaders(msgId: string): MsgHdrs {
  const h = headers();
  h.set("Nats-Msg-Id", msgId);
  return h;
}

/** The server's answer: an acknowledgement (perhaps of a duplicate), or why it refused the message. */
function readAnswer(msg: Msg): { readonly duplicate: boolean } | { readonly refusal: string } {
  if (msg.data.length === 0 && msg.headers?.code === 503) {
    return {
      refusal: `no JetStream stream captures the subject (${msg.headers.description || "no responders"})`,
    };
  }
  let ack: PubAckJson;
  try {
    const value: unknown = msg.json();
    if (typeof value !== "object" || value === null) throw new TypeError("not an object");
    ack = value as PubAckJson;
  } catch {
    return { refusal: "JetStream answered with something that is not a publish acknowledgement" };
  }
  if (ack.error !== undefined) {
    return {
      refusal: `JetStream refused the message: ${ack.error.description ?? "no reason given"} (code ${ack.error.code ?? "?"})`,
    };
  }
  if (typeof ack.seq !== "number") return { refusal: "JetStream's acknowledgement has no sequence number" };
  return { duplicate: ack.duplicate === true };
}
