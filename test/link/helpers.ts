/**
 * Test doubles for the probe link: a publisher fake whose readiness a test controls, a fake
 * gateway end that records what a probe sends, and waiting helpers that poll an event source
 * (never a fixed sleep).
 */
import assert from "node:assert/strict";
import type { Envelope, MessageId } from "../../src/bus/envelope.js";
import type { DeploymentSetup } from "../../src/config/setup.js";
import type { GatewayPublisher } from "../../src/gateway/app.js";
import type { PublisherStatus } from "../../src/gateway/publish/publisher.js";
import { type InProcessConnector, inProcessConnector } from "../../src/link/in-process.js";
import {
  type Change,
  type GatewayFrame,
  LINK_PROTOCOL_VERSION,
  type ProbeFrame,
  probeLimits,
} from "../../src/link/protocol.js";
import type { LinkConnector, LinkEnd } from "../../src/link/transport.js";
import { frameBounds, parseProbeFrame } from "../../src/link/validate.js";
import { type PublicV2Message, TOPIC_OF } from "../../src/messages/types.js";
import { validateMessage } from "../../src/messages/validate.js";

/** A link secret for tests' probe `p1` (`linkSecret: ${P1_SECRET}` in their setups). */
export const P1_SECRET = "p1-link-secret-for-tests-0123456789";
/** Another probe's secret (`p2`), for tests where one probe's secret must not open another's link. */
export const P2_SECRET = "p2-link-secret-for-tests-9876543210";

/**
 * Runs `check` on every turn of the event loop until it returns a value (not undefined or false);
 * a minute bounds it. No fixed sleep: the loop waits for whatever the code under test does next.
 */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what = "condition",
): Promise<T> {
  const started = Date.now();
  for (let polls = 0; ; polls += 1) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > 60_000) assert.fail(`timed out waiting for ${what}`);
    // Poll on every turn at first, then every few milliseconds (timers drive heartbeats).
    await new Promise((resolve) => (polls < 100 ? setImmediate(resolve) : setTimeout(resolve, 5)));
  }
}

/** `type:operation[:row]` of a message, the way tests compare them. */
export function summary(message: PublicV2Message): string {
  const target = message.data.target as { row?: string };
  return `${message.type}:${message.operation}${target.row === undefined ? "" : `:${target.row}`}`;
}

/** A publisher whose `ready` the test sets; it checks every message against the schema. */
export class FakePublisher implements GatewayPublisher {
  readonly messages: PublicV2Message[] = [];
  private isReady = true;
  private readonly readyWaiters: (() => void)[] = [];
  private readonly listeners = new Set<(envelope: Envelope) => void>();
  private seq = 0;

  get ready(): boolean {
    return this.isReady;
  }

  setReady(ready: boolean): void {
    this.isReady = ready;
    if (ready) for (const wake of this.readyWaiters.splice(0)) wake();
  }

  whenReady(): Promise<void> {
    if (this.isReady) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  publish(messages: readonly PublicV2Message[]): void {
    for (const message of messages) {
      const result = validateMessage(message);
      assert.ok(result.ok, `${summary(message)} invalid: ${result.ok ? "" : result.errors.join("; ")}`);
      this.messages.push(message);
      this.seq += 1;
      const envelope: Envelope = {
        id: `fake.${this.seq}` as MessageId,
        topic: TOPIC_OF[message.type],
        message,
      };
      for (const listener of this.listeners) listener(envelope);
    }
  }

  subscribe(listener: (envelope: Envelope) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  status(): PublisherStatus {
    return { published: this.messages.length, invalid: 0, origin: "fake", sinks: [] };
  }

  /**
   * Entity and metric messages published from index `from` on, summarised. Severity events (a lost
   * link turns the probe's items UNKNOWN, DESIGN 4.1) are the severity tests' concern
   * (test/gateway/severity), not the link's.
   */
  since(from: number): string[] {
    return this.messages
      .slice(from)
      .filter((m) => TOPIC_OF[m.type] !== "events")
      .map(summary);
  }
}

/**
 * A fake gateway for probe tests: answers `hello` with `welcome` (the probe's part of `setup`),
 * acknowledges every batch while `autoAck` is true, and records every frame.
 */
export class FakeGateway {
  readonly frames: ProbeFrame[] = [];
  readonly connector: InProcessConnector;
  autoAck = true;
  end: LinkEnd | undefined;

  constructor(
    private readonly setup: DeploymentSetup,
    private readonly credit = 8,
  ) {
    this.connector = inProcessConnector((end) => this.accept(end));
  }

  /** Every change in `changes` frames received so far, in order. */
  get changes(): Change[] {
    return this.frames.flatMap((f) => (f.type === "changes" ? f.changes : []));
  }

  send(frame: GatewayFrame): void {
    this.end?.send(frame);
  }

  private accept(end: LinkEnd): void {
    this.end = end;
    end.listen({
      frame: (value) => {
        const frame = parseProbeFrame(value, frameBounds(probeLimits(this.setup.gateway), 500));
        this.frames.push(frame);
        if (frame.type === "hello") {
          const probe = this.setup.probes.find((p) => p.name === frame.probe);
          assert.ok(probe, `unknown probe ${frame.probe}`);
          end.send({
            type: "welcome",
            version: LINK_PROTOCOL_VERSION,
            gateway: this.setup.gateway.name,
            setup: probe,
            limits: probeLimits(this.setup.gateway),
            credit: this.credit,
            maxBatchChanges: 500,
            heartbeatMs: 60_000,
          });
        }
        if ((frame.type === "state" || frame.type === "changes") && this.autoAck) {
          end.send({ type: "ack", seq: frame.seq });
        }
      },
      close: () => {},
    });
  }
}

/** A connector whose current link can be silenced: frames both ways vanish (a dead network). */
export interface SilenceableConnector extends LinkConnector {
  silence(): void;
}

/** Wraps a connector so a test can cut the current link without closing it (heartbeat tests). */
export function silenceable(inner: LinkConnector): SilenceableConnector {
  let current: { silenced: boolean } | undefined;
  return {
    description: inner.description,
    silence() {
      if (current !== undefined) current.silenced = true;
    },
    async connect() {
      const end = await inner.connect();
      const state = { silenced: false };
      current = state;
      return {
        remote: end.remote,
        listen: (handlers) =>
          end.listen({
            frame: (value) => {
              if (!state.silenced) handlers.frame(value);
            },
            close: (info) => handlers.close(info),
          }),
        send: (frame) => {
          if (!state.silenced) end.send(frame);
        },
        close: (code, reason) => end.close(code, reason),
      };
    },
  };
}
