// The `nats` publish target against the real JetStream server (DESIGN 4.3 "Topics", 5.5): the
// stream is created when missing, each message lands on its topic's subject with its envelope id as
// Nats-Msg-Id, a batch sent twice is stored once, and a sink without NATS rejects instead of hanging.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { pino } from "pino";
import { MessageIdSource } from "../../../src/bus/envelope.js";
import { createNatsConsumer } from "../../../src/bus/nats/nats-consumer.js";
import { createNatsSink, type NatsSink } from "../../../src/gateway/publish/nats-sink.js";
import {
  closedPort,
  NATS_SKIP,
  NATS_URL,
  NatsAdmin,
  natsReachable,
  oneOfEachTopic,
  subjectFor,
  tableEnvelopes,
  tableMessage,
  uniqueNames,
} from "../../helpers/nats.js";
import { needs } from "../../helpers/needs.js";

const reachable = await natsReachable();
const silent = pino({ level: "silent" });

describe("NATS sink", { skip: needs(reachable ? false : NATS_SKIP) }, () => {
  let admin: NatsAdmin;
  const sinks: NatsSink[] = [];
  const sinkFor = (names: { stream: string; subjectPrefix: string }): NatsSink => {
    admin.track(names.stream);
    const sink = createNatsSink({ url: NATS_URL, ...names, logger: silent });
    sinks.push(sink);
    return sink;
  };

  before(async () => {
    admin = await NatsAdmin.open();
  });
  after(async () => {
    for (const sink of sinks) await sink.close();
    await admin?.cleanup();
  });

  it("creates the stream when missing and publishes each message to its topic with its id", async () => {
    const names = uniqueNames("sink");
    assert.equal(await admin.exists(names.stream), false);
    const sink = sinkFor(names);
    const envelopes = new MessageIdSource("GW1").wrap(oneOfEachTopic());

    await sink.publish(envelopes);

    const info = await admin.jsm.streams.info(names.stream);
    assert.deepEqual(info.config.subjects, [
      `${names.subjectPrefix}.entities`,
      `${names.subjectPrefix}.metrics`,
      `${names.subjectPrefix}.events`,
    ]);
    assert.equal(info.config.storage, StorageType.File);
    assert.equal(info.config.duplicate_window, nanos(120_000));
    const stored = await admin.read(names.stream);
    assert.deepEqual(
      stored.map((m) => [m.subject, m.header.get("Nats-Msg-Id"), m.json()]),
      envelopes.map((e) => [subjectFor(names.subjectPrefix, e.message), e.id, e.message]),
    );
    assert.deepEqual(
      stored.map((m) => m.subject.slice(names.subjectPrefix.length + 1)),
      ["entities", "metrics", "events"],
    );
  });

  it("holds batches back while the hubs' consumer lags, and lets go once it catches up", async () => {
    const names = uniqueNames("lag");
    admin.track(names.stream);
    const sink = createNatsSink({
      url: NATS_URL,
      ...names,
      durable: names.durable,
      maxConsumerLag: 5,
      logger: silent,
    });
    sinks.push(sink);
    await sink.publish(tableEnvelopes(10)); // no consumer yet: nothing to wait for
    // A hub's durable consumer exists but takes nothing yet: 10 messages lag behind (> 5).
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handled: number[] = [];
    const consumer = createNatsConsumer({ url: NATS_URL, ...names, durable: names.durable, logger: silent });
    await consumer.start(async (batch) => {
      await gate;
      handled.push(batch.length);
    });
    // The sink looks at the lag at most every 200 ms; let its "no consumer yet" look expire.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = new MessageIdSource("GW-lag");
    let acknowledged = false;
    const publishing = sink
      .publish(ids.wrap(Array.from({ length: 10 }, (_, i) => tableMessage(`r${i}`))))
      .then(() => {
        acknowledged = true;
      });
    // While the consumer lags, the batch is held back: not in the stream, not acknowledged.
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(acknowledged, false, "the batch waits for the hubs");
    assert.equal((await admin.jsm.streams.info(names.stream)).state.messages, 10);
    release();
    await publishing;
    assert.equal(acknowledged, true);
    await waitForStored(admin, names.stream, 20);
    await consumer.stop(1_000);
  });

  it("stores a batch published twice once, thanks to the duplicate window", async () => {
    const names = uniqueNames("dup");
    const sink = sinkFor(names);
    const batch = tableEnvelopes(50);

    await sink.publish(batch);
    await sink.publish(batch);
    await sink.publish(batch.slice(10, 20));

    const stored = await admin.read(names.stream);
    assert.deepEqual(
      stored.map((m) => m.header.get("Nats-Msg-Id")),
      batch.map((e) => e.id),
    );
    assert.deepEqual(sink.stats(), { acknowledged: 110, duplicates: 60, droppedTooLarge: 0 });
  });

  it("pipelines a full batch of 2,000 messages and resolves once all are acknowledged", async () => {
    const names = uniqueNames("big");
    const sink = sinkFor(names);
    const batch = tableEnvelopes(2_000);

    await sink.publish(batch);

    const info = await admin.jsm.streams.info(names.stream);
    assert.equal(info.state.messages, 2_000);
    assert.equal(sink.stats().acknowledged, 2_000);
  });

  it("uses an existing stream whose subjects capture the topics (a wildcard)", async () => {
    const names = uniqueNames("wild");
    admin.track(names.stream);
    await admin.jsm.streams.add({ name: names.stream, subjects: [`${names.subjectPrefix}.>`] });
    const sink = sinkFor(names);

    await sink.publish(tableEnvelopes(3));

    const info = await admin.jsm.streams.info(names.stream);
    assert.deepEqual(info.config.subjects, [`${names.subjectPrefix}.>`]);
    assert.equal(info.state.messages, 3);
  });

  it("rejects clearly, and changes nothing, when the stream exists without the topics' subjects", async () => {
    const names = uniqueNames("other");
    admin.track(names.stream);
    await admin.jsm.streams.add({ name: names.stream, subjects: [`${names.subjectPrefix}.entities`] });
    const sink = sinkFor(names);

    await assert.rejects(sink.publish(tableEnvelopes(1)), (error: Error) => {
      assert.match(error.message, new RegExp(`stream '${names.stream}' exists with subjects`));
      assert.match(error.message, new RegExp(`does not capture \\[${names.subjectPrefix}.metrics, `));
      return true;
    });
    const info = await admin.jsm.streams.info(names.stream);
    assert.deepEqual(info.config.subjects, [`${names.subjectPrefix}.entities`]);
    assert.equal(info.state.messages, 0);
  });

  it("creates the stream again when it was deleted under a running sink", async () => {
    const names = uniqueNames("gone");
    const sink = sinkFor(names);
    await sink.publish(tableEnvelopes(2));
    await admin.jsm.streams.delete(names.stream);

    // The first attempt after the deletion fails (nothing captures the subject any more); the
    // channel retries, and the sink checks the stream again and creates it.
    await sink.publish(tableEnvelopes(2)).catch(() => undefined);
    await sink.publish(tableEnvelopes(2));

    assert.ok(await admin.exists(names.stream));
  });

  it("drops a message larger than the server's max_payload, counted, and publishes the rest", async () => {
    const names = uniqueNames("huge");
    const sink = sinkFor(names);
    const ids = new MessageIdSource("GW1");
    const huge = tableMessage("huge", "x".repeat(admin.nc.info?.max_payload ?? 1024 * 1024));
    const batch = ids.wrap([tableMessage("a"), huge, tableMessage("b")]);

    await sink.publish(batch);

    const stored = await admin.read(names.stream);
    assert.deepEqual(
      stored.map((m) => m.header.get("Nats-Msg-Id")),
      [batch[0]?.id, batch[2]?.id],
    );
    assert.equal(sink.stats().droppedTooLarge, 1);
  });
});

describe("NATS sink without a server", () => {
  it("rejects a publish within the timeout instead of hanging, and closes", async () => {
    const port = await closedPort();
    const sink = createNatsSink({
      url: `nats://127.0.0.1:${port}`,
      stream: "NEVER",
      subjectPrefix: "never",
      logger: silent,
      publishTimeoutMs: 300,
    });
    assert.equal(sink.name, `nats:nats://127.0.0.1:${port}/NEVER`);

    await assert.rejects(
      sink.publish(tableEnvelopes(3)),
      /NATS at nats:\/\/127\.0\.0\.1:\d+ is not reachable/,
    );
    await assert.rejects(sink.publish(tableEnvelopes(3)), /is not reachable/);
    await sink.close();
    await assert.rejects(sink.publish(tableEnvelopes(1)), /is closed/);
  });

  it("throws at construction only for unusable names", () => {
    const base = { url: NATS_URL, stream: "S", subjectPrefix: "p", logger: silent };
    assert.throws(() => createNatsSink({ ...base, url: "ws://127.0.0.1:8080" }), /use nats:\/\/HOST:PORT/);
    assert.throws(() => createNatsSink({ ...base, stream: "a.b" }), /stream name 'a\.b' is invalid/);
    assert.throws(
      () => createNatsSink({ ...base, subjectPrefix: "a.*" }),
      /subject prefix 'a\.\*' is invalid/,
    );
  });
});

async function waitForStored(admin: NatsAdmin, stream: string, count: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const info = await admin.jsm.streams.info(stream);
    if (info.state.messages >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the stream never held ${count} messages`);
}
