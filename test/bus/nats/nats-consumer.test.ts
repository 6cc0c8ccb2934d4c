// The hub's NATS JetStream consumer against the real server (DESIGN 5.5): batches acknowledged only
// after the handler resolved, redelivery after a rejection, hubs sharing one durable, non-JSON
// payloads as deliveries with parseError, a stop bounded by its deadline, NATS down at the start.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { pino } from "pino";
import type { Delivery } from "../../../src/bus/bus.js";
import {
  createNatsConsumer,
  type NatsConsumer,
  type NatsConsumerOptions,
} from "../../../src/bus/nats/nats-consumer.js";
import { MAX_BATCH_MESSAGES } from "../../../src/config/defaults.js";
import { createNatsSink } from "../../../src/gateway/publish/nats-sink.js";
import {
  captureLogger,
  closedPort,
  NATS_SKIP,
  NATS_URL,
  NatsAdmin,
  natsReachable,
  tableEnvelopes,
  tableMessage,
  uniqueNames,
  waitFor,
} from "../../helpers/nats.js";
import { needs } from "../../helpers/needs.js";

const reachable = await natsReachable();
const silent = pino({ level: "silent" });

describe("NATS consumer", { skip: needs(reachable ? false : NATS_SKIP) }, () => {
  let admin: NatsAdmin;
  const consumers: NatsConsumer[] = [];
  const consumerFor = (
    names: { stream: string; subjectPrefix: string; durable: string },
    options: Partial<NatsConsumerOptions> = {},
  ): NatsConsumer => {
    admin.track(names.stream);
    const consumer = createNatsConsumer({
      url: NATS_URL,
      ...names,
      logger: silent,
      retryInitialMs: 20,
      ...options,
    });
    consumers.push(consumer);
    return consumer;
  };
  /** Publishes `count` table messages through the real sink; returns their ids in order. */
  const publish = async (
    names: { stream: string; subjectPrefix: string },
    count: number,
  ): Promise<string[]> => {
    admin.track(names.stream);
    const sink = createNatsSink({ url: NATS_URL, ...names, logger: silent });
    const envelopes = tableEnvelopes(count);
    await sink.publish(envelopes);
    await sink.close();
    return envelopes.map((e) => e.id);
  };

  before(async () => {
    admin = await NatsAdmin.open();
  });
  after(async () => {
    for (const consumer of consumers) await consumer.stop(1_000);
    await admin?.cleanup();
  });

  it("delivers in batches of at most batchSize, in order, and acks once the handler resolved", async () => {
    const names = uniqueNames("batches");
    const ids = await publish(names, 25);
    const batches: Delivery[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const consumer = consumerFor(names, { batchSize: 10 });

    await consumer.start(async (batch) => {
      batches.push([...batch]);
      await gate;
    });

    // The handler holds the first batch: nothing is acknowledged yet.
    await waitFor("the first batch", () => batches.length === 1);
    const held = await waitFor("the consumer info", () => admin.consumerCounts(names.stream, names.durable));
    assert.ok(
      held.ackPending >= (batches[0]?.length ?? 0),
      `ack pending ${held.ackPending} while the handler runs`,
    );
    assert.equal(consumer.status().delivered, 0);

    release();
    await waitFor("all 25 messages", () => batches.flat().length >= 25);
    await waitFor("every ack", () => admin.consumerDone(names.stream, names.durable));
    assert.ok(batches.every((b) => b.length >= 1 && b.length <= 10));
    assert.deepEqual(
      batches.flat().map((d) => d.id),
      ids,
    );
    const first = batches[0]?.[0];
    assert.equal(first?.parseError, undefined);
    assert.deepEqual(first?.message, tableMessage("row-0", "0"));
    assert.deepEqual(consumer.status(), {
      name: `nats:${NATS_URL}/${names.stream}/${names.durable}`,
      state: "ok",
      delivered: 25,
      retries: 0,
      // JetStream's pending count with the last batch: every message delivered.
      pending: 0,
    });
  });

  it("delivers a rejected batch again, logs the retrying state once, then acks it", async () => {
    const names = uniqueNames("redeliver");
    const ids = await publish(names, 5);
    const { logger, lines } = captureLogger();
    const calls: string[][] = [];
    const states: string[] = [];
    const consumer = consumerFor(names, { logger, fetchExpiresMs: 1_000 });

    await consumer.start(async (batch) => {
      calls.push(batch.map((d) => d.id ?? "?"));
      states.push(consumer.status().state);
      if (calls.length <= 3) throw new Error(`store unavailable (${calls.length})`);
    });

    await waitFor(
      "every message acknowledged",
      async () => consumer.status().delivered >= 5 && (await admin.consumerDone(names.stream, names.durable)),
    );
    const failed = new Set(calls.slice(0, 3).flat());
    const succeeded = calls.slice(3).flat();
    assert.ok(failed.size > 0);
    for (const id of failed) assert.ok(succeeded.includes(id), `${id} delivered again after the rejection`);
    assert.deepEqual([...new Set(succeeded)].sort(), [...ids].sort());
    assert.deepEqual(states.slice(0, 4), ["ok", "retrying", "retrying", "retrying"]);
    const status = consumer.status();
    assert.equal(status.state, "ok");
    assert.equal(status.retries, 3);
    assert.equal(status.lastError, undefined);
    const rejected = lines.filter((l) => l.msg.startsWith("bus handler rejected a batch"));
    assert.equal(rejected.length, 1, "one log line for the change of state, not one per retry");
    assert.equal(lines.filter((l) => l.msg === "NATS consumer delivering again").length, 1);
  });

  it("shares one durable between two hubs: each message is handled once in all", async () => {
    const names = uniqueNames("shared");
    const seen = [new Map<string, number>(), new Map<string, number>()] as const;
    const calls = [0, 0];
    const both = (): boolean => calls[0] !== 0 && calls[1] !== 0;
    const handlerOf = (index: 0 | 1) => async (batch: readonly Delivery[]) => {
      calls[index] = (calls[index] ?? 0) + 1;
      for (const d of batch) seen[index].set(d.id ?? "?", (seen[index].get(d.id ?? "?") ?? 0) + 1);
      // Hold the first batch until the other hub has had one too, so that both take part.
      await waitFor("both hubs to get a batch", both, 10_000).catch(() => undefined);
    };
    const first = consumerFor(names, { batchSize: 20 });
    const second = consumerFor(names, { batchSize: 20 });
    await first.start(handlerOf(0));
    await second.start(handlerOf(1));
    await waitFor("the durable consumer", () => admin.consumerCounts(names.stream, names.durable));

    const ids = await publish(names, 400);

    await waitFor("all 400 messages", () => seen[0].size + seen[1].size >= 400);
    await waitFor("every ack", () => admin.consumerDone(names.stream, names.durable));
    assert.ok(seen[0].size > 0 && seen[1].size > 0, `split ${seen[0].size} / ${seen[1].size}`);
    const all = [...seen[0].keys(), ...seen[1].keys()];
    assert.equal(new Set(all).size, all.length, "no message went to both hubs");
    assert.deepEqual(all.sort(), [...ids].sort());
    assert.ok(
      [...seen[0].values(), ...seen[1].values()].every((n) => n === 1),
      "no message came twice",
    );
    assert.equal(first.status().delivered + second.status().delivered, 400);
  });

  it("hands a non-JSON payload over with parseError and its id; a message without id has none", async () => {
    const names = uniqueNames("raw");
    const got: Delivery[] = [];
    const consumer = consumerFor(names);
    // The hub starts first: it creates the stream and the durable consumer itself.
    await consumer.start(async (batch) => {
      got.push(...batch);
    });
    await waitFor("the stream", () => admin.exists(names.stream));

    await admin.publishRaw(`${names.subjectPrefix}.metrics`, "not json {", "bad-1");
    await admin.publishRaw(`${names.subjectPrefix}.events`, '{"type":"severity"}');

    await waitFor("both messages", () => got.length >= 2);
    assert.equal(got[0]?.id, "bad-1");
    assert.equal(got[0]?.message, "not json {");
    assert.match(got[0]?.parseError ?? "", /JSON/);
    assert.deepEqual(got[1], { id: undefined, message: { type: "severity" } });
    await waitFor("the acks", () => admin.consumerDone(names.stream, names.durable));
  });

  it("stops by its deadline with a handler that never resolves; the batch comes again later", async () => {
    const names = uniqueNames("stop");
    const ids = await publish(names, 3);
    let entered = false;
    const stuck = consumerFor(names, { ackWaitMs: 1_000 });
    await stuck.start(async () => {
      entered = true;
      await new Promise<never>(() => undefined);
    });
    await waitFor("the handler to hold a batch", () => entered);

    await stuck.stop(200); // returns although the handler never does (else the test times out)
    assert.equal(stuck.status().state, "stopped");
    assert.equal(stuck.status().delivered, 0);

    // Not acknowledged: another hub on the same durable gets the messages after the ack wait.
    const got = new Set<string>();
    const next = consumerFor(names);
    await next.start(async (batch) => {
      for (const d of batch) got.add(d.id ?? "?");
    });
    await waitFor("the redelivery", () => got.size >= 3);
    assert.deepEqual([...got].sort(), [...ids].sort());
  });
});

describe("NATS consumer without a server", () => {
  it("starts, reports retrying with the reason, and stops, never crashing", async () => {
    const port = await closedPort();
    const { logger, lines } = captureLogger();
    const consumer = createNatsConsumer({
      url: `nats://127.0.0.1:${port}`,
      stream: "NEVER",
      subjectPrefix: "never",
      logger,
      retryInitialMs: 10,
      retryMaxMs: 50,
    });
    let called = false;
    await consumer.start(async () => {
      called = true;
    });

    await waitFor("the retrying state", () => consumer.status().state === "retrying");
    assert.match(consumer.status().lastError ?? "", /ECONNREFUSED|refused/i);
    // Attempts go on (10 ms doubling to 50 ms), each counted; the log says it once.
    await waitFor("a few attempts", () => consumer.status().retries >= 4);
    await consumer.stop(1_000);
    assert.equal(consumer.status().state, "stopped");
    assert.equal(called, false);
    assert.equal(lines.filter((l) => l.msg.startsWith("cannot connect to NATS")).length, 1);
  });

  it("refuses a batch size outside 1 to MAX_BATCH_MESSAGES and a second start", async () => {
    const base = { url: NATS_URL, stream: "S", subjectPrefix: "p", logger: silent };
    assert.throws(
      () => createNatsConsumer({ ...base, batchSize: 0 }),
      new RegExp(`batchSize must be an integer from 1 to ${MAX_BATCH_MESSAGES}`),
    );
    assert.throws(() => createNatsConsumer({ ...base, batchSize: 2_001 }), /batchSize/);
    assert.throws(() => createNatsConsumer({ ...base, durable: "a.b" }), /durable consumer name 'a\.b'/);
    const port = await closedPort();
    const consumer = createNatsConsumer({ ...base, url: `nats://127.0.0.1:${port}` });
    await consumer.start(async () => undefined);
    await assert.rejects(
      consumer.start(async () => undefined),
      /already started/,
    );
    await consumer.stop(100);
  });
});
