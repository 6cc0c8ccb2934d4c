/**
 * The bounded, acknowledged hand-off in front of each publish target (DESIGN 1 "Hand-offs"), with
 * fake sinks that fail, stall and reject one batch. Deterministic: fakes settle when the test says.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { Envelope, MessageId } from "../../../src/bus/envelope.js";
import type { Sink } from "../../../src/gateway/publish/sink.js";
import { SinkChannel } from "../../../src/gateway/publish/sink-channel.js";
import type { PublicV2Message } from "../../../src/messages/types.js";

const logger = pino({ level: "silent" });

const message: PublicV2Message = {
  type: "probe",
  operation: "update",
  data: {
    timestamp: "2026-01-01T00:00:00.000Z",
    target: { gateway: "GW", probe: "p" },
    parameters: { osType: "Linux" },
  },
};

let seq = 0;
const envelopes = (n: number): Envelope[] =>
  Array.from({ length: n }, () => ({ id: `o.${++seq}` as MessageId, topic: "entities", message }));

/** A sink whose publishes wait until the test settles them. */
class ManualSink implements Sink {
  readonly name = "manual";
  readonly calls: { batch: readonly Envelope[]; resolve(): void; reject(e: Error): void }[] = [];
  closed = false;
  publish(batch: readonly Envelope[]): Promise<void> {
    return new Promise((resolve, reject) => this.calls.push({ batch, resolve, reject }));
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

const ids = (batch: readonly Envelope[]) => batch.map((e) => e.id);
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Polls `condition` on each turn of the event loop, failing after `limit` turns. */
async function until(condition: () => boolean, limit = 10_000): Promise<void> {
  for (let i = 0; i < limit; i++) {
    if (condition()) return;
    await tick();
  }
  throw new Error("condition not reached");
}

describe("SinkChannel", () => {
  test("sends at once when idle, then batches what arrives while the window is full", async () => {
    const sink = new ManualSink();
    const channel = new SinkChannel(sink, { logger, windowBatches: 1, maxBatch: 3 });
    channel.offer(envelopes(1));
    assert.equal(sink.calls.length, 1);
    assert.equal(sink.calls[0]?.batch.length, 1);
    channel.offer(envelopes(2));
    channel.offer(envelopes(2));
    assert.equal(sink.calls.length, 1, "window of one: nothing more in flight");
    sink.calls[0]?.resolve();
    await until(() => sink.calls.length === 2);
    assert.equal(sink.calls[1]?.batch.length, 3, "up to maxBatch from several offers");
    sink.calls[1]?.resolve();
    await until(() => sink.calls.length === 3);
    assert.equal(sink.calls[2]?.batch.length, 1);
    sink.calls[2]?.resolve();
    await until(() => channel.status().acknowledged === 5);
    assert.equal(channel.buffered, 0);
  });

  test("has no room at capacity and wakes the publisher once a batch is acknowledged", async () => {
    const sink = new ManualSink();
    const channel = new SinkChannel(sink, { logger, bufferMessages: 4, windowBatches: 1, maxBatch: 2 });
    channel.offer(envelopes(4));
    assert.equal(channel.hasRoom, false);
    let woke = false;
    const room = channel.whenRoom().then(() => {
      woke = true;
    });
    await tick();
    assert.equal(woke, false);
    sink.calls[0]?.resolve();
    await room;
    assert.equal(channel.hasRoom, true);
    assert.equal(channel.buffered, 2);
  });

  test("a rejected batch is sent again, in order, before anything newer; state shows failing", async () => {
    const sink = new ManualSink();
    const channel = new SinkChannel(sink, {
      logger,
      windowBatches: 2,
      maxBatch: 2,
      retryInitialMs: 1,
      retryMaxMs: 2,
    });
    const first = envelopes(2);
    const second = envelopes(2);
    channel.offer(first);
    channel.offer(second);
    assert.equal(sink.calls.length, 2);
    sink.calls[0]?.reject(new Error("disk full"));
    sink.calls[1]?.resolve();
    await until(() => channel.status().state === "failing");
    channel.offer(envelopes(2)); // waits behind the retry
    await until(() => sink.calls.length === 3);
    assert.deepEqual(ids(sink.calls[2]?.batch ?? []), ids(first), "the failed batch again");
    assert.equal(channel.status().lastError, "disk full");
    sink.calls[2]?.resolve();
    await until(() => sink.calls.length === 4);
    assert.equal(channel.status().state, "ok");
    sink.calls[3]?.resolve();
    await until(() => channel.buffered === 0);
    assert.equal(channel.status().acknowledged, 6);
    assert.equal(channel.status().retries, 1);
  });

  test("keeps retrying with capped back-off while the sink keeps failing; nothing is lost", async () => {
    let failures = 3;
    const delivered: MessageId[] = [];
    const sink: Sink = {
      name: "flaky",
      publish: async (batch) => {
        if (failures > 0) {
          failures -= 1;
          throw new Error("down");
        }
        delivered.push(...batch.map((e) => e.id));
      },
      close: async () => {},
    };
    const channel = new SinkChannel(sink, { logger, retryInitialMs: 1, retryMaxMs: 4 });
    const sent = envelopes(5);
    channel.offer(sent);
    await until(() => channel.buffered === 0);
    assert.deepEqual(delivered, ids(sent));
    assert.equal(channel.status().retries, 3);
  });

  test("a sink that throws synchronously is treated like a rejection", async () => {
    let calls = 0;
    const sink: Sink = {
      name: "throws",
      publish: (() => {
        calls += 1;
        if (calls === 1) throw new Error("sync");
        return Promise.resolve();
      }) as Sink["publish"],
      close: async () => {},
    };
    const channel = new SinkChannel(sink, { logger, retryInitialMs: 1 });
    channel.offer(envelopes(1));
    await until(() => channel.status().acknowledged === 1);
    assert.equal(calls, 2);
  });

  test("close waits for acknowledgement, then closes the sink", async () => {
    const sink = new ManualSink();
    const channel = new SinkChannel(sink, { logger });
    channel.offer(envelopes(3));
    const closing = channel.close(60_000);
    await tick();
    assert.equal(sink.closed, false);
    sink.calls[0]?.resolve();
    await closing;
    assert.equal(sink.closed, true);
    assert.equal(channel.status().abandoned, 0);
    assert.throws(() => channel.offer(envelopes(1)), /closed/);
  });

  test("close gives up at the deadline on a stalled sink and counts what it abandoned", async () => {
    const sink = new ManualSink();
    const channel = new SinkChannel(sink, { logger, windowBatches: 1, maxBatch: 2 });
    channel.offer(envelopes(5));
    await channel.close(5);
    assert.equal(channel.status().state, "closed");
    assert.equal(channel.status().abandoned, 5);
    assert.equal(sink.closed, true);
  });
});
