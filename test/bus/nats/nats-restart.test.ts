// NATS restarts are ridden out (DESIGN 1 "Hand-offs", 5.5): against a nats-server of the test's own,
// stopped and started again, the sink rejects while NATS is down and publishes again once it is
// back (each message stored once), and the consumer reports retrying, then delivers again.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { createNatsConsumer, type NatsConsumer } from "../../../src/bus/nats/nats-consumer.js";
import { createNatsSink, type NatsSink } from "../../../src/gateway/publish/nats-sink.js";
import { PrivateNats, tableEnvelopes, uniqueNames, waitFor } from "../../helpers/nats.js";
import { needs } from "../../helpers/needs.js";

const server = await PrivateNats.start();
const silent = pino({ level: "silent" });

describe("NATS restart", {
  skip: needs(server === undefined ? "nats-server is not installed: run scripts/services.sh start" : false),
}, () => {
  let nats: PrivateNats;
  const sinks: NatsSink[] = [];
  const consumers: NatsConsumer[] = [];
  before(() => {
    if (server === undefined) throw new Error("unreachable: the suite is skipped");
    nats = server;
  });
  after(async () => {
    for (const consumer of consumers) await consumer.stop(1_000);
    for (const sink of sinks) await sink.close();
    await server?.cleanup();
  });
  const sinkFor = (names: { stream: string; subjectPrefix: string }): NatsSink => {
    const sink = createNatsSink({ url: nats.url, ...names, logger: silent, publishTimeoutMs: 500 });
    sinks.push(sink);
    return sink;
  };

  it("the sink rejects while NATS is down and publishes again after it restarted", async () => {
    const names = uniqueNames("restart");
    const sink = sinkFor(names);
    const before = tableEnvelopes(10);
    const during = tableEnvelopes(10);
    await sink.publish(before);

    await nats.down();
    try {
      // Refused, closed, or (when the client has not noticed the lost connection yet) unacknowledged.
      await assert.rejects(
        sink.publish(during),
        /not reachable|timeout|TIMEOUT|closed|disconnect|did not acknowledge/i,
      );
    } finally {
      await nats.up();
    }
    // The gateway's channel resends the batch until it is acknowledged; so does this loop.
    await waitFor(
      "a publish after the restart",
      () =>
        sink.publish(during).then(
          () => true,
          () => false,
        ),
      30_000,
    );
    const nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(names.stream);
    assert.equal(info.state.messages, 20, "each message stored once");
    await nc.close();
  });

  it("the consumer reports retrying while NATS is down and delivers again after it restarted", async () => {
    await nats.up(); // whatever the test before left
    const names = uniqueNames("crestart");
    const sink = sinkFor(names);
    const consumer = createNatsConsumer({ url: nats.url, ...names, logger: silent, retryInitialMs: 20 });
    consumers.push(consumer);
    const got = new Set<string>();
    await consumer.start(async (batch) => {
      for (const d of batch) got.add(d.id ?? "?");
    });
    const first = tableEnvelopes(5);
    await sink.publish(first);
    await waitFor("the first messages", () => got.size >= 5);

    await nats.down();
    await waitFor("the retrying state", () => consumer.status().state === "retrying");

    await nats.up();
    const second = tableEnvelopes(5);
    await waitFor(
      "a publish after the restart",
      () =>
        sink.publish(second).then(
          () => true,
          () => false,
        ),
      30_000,
    );
    await waitFor("the messages published after the restart", () => got.size >= 10, 30_000);
    assert.deepEqual([...got].sort(), [...first, ...second].map((e) => e.id).sort());
    await waitFor("the ok state", () => consumer.status().state === "ok");
    await consumer.stop(1_000);
    assert.equal(consumer.status().state, "stopped");
  });
});
