// Batches published to the real JetStream server with one reply subscription: every message
// acknowledged (duplicates counted), a refusal told only after every message was answered, a
// subject no stream captures refused, silence bounded by the batch timeout, and a closed
// connection failing what waits.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DiscardPolicy, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamBatchPublisher, type JetStreamItem } from "../../../src/bus/nats/jetstream-batch.js";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../../helpers/nats.js";
import { needs } from "../../helpers/needs.js";

const reachable = await natsReachable();
const encoder = new TextEncoder();

const items = (subject: string, ids: readonly string[]): JetStreamItem[] =>
  ids.map((id) => ({ subject, payload: encoder.encode(JSON.stringify({ id })), msgId: id }));

describe("JetStream batch publisher", { skip: needs(reachable ? false : NATS_SKIP) }, () => {
  let admin: NatsAdmin;
  let nc: NatsConnection;

  before(async () => {
    admin = await NatsAdmin.open();
    nc = await connect({ servers: NATS_URL, noAsyncTraces: true });
  });
  after(async () => {
    await nc?.close();
    await admin?.cleanup();
  });

  const stream = async (extra: { max_msgs?: number; discard?: DiscardPolicy } = {}) => {
    const names = uniqueNames("jsbatch");
    admin.track(names.stream);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: names.stream,
      subjects: [`${names.subjectPrefix}.>`],
      storage: StorageType.Memory,
      ...extra,
    });
    return { jsm, names, subject: `${names.subjectPrefix}.metrics` };
  };

  it("resolves once every message is acknowledged, and counts a batch sent again as duplicates", async () => {
    const { jsm, names, subject } = await stream();
    const publisher = new JetStreamBatchPublisher(nc);
    const ids = Array.from({ length: 1_500 }, (_, i) => `g.${i + 1}`);
    assert.deepEqual(await publisher.publish(items(subject, ids), 5_000), {
      acknowledged: 1_500,
      duplicates: 0,
    });
    assert.deepEqual(await publisher.publish(items(subject, ids.slice(0, 10)), 5_000), {
      acknowledged: 10,
      duplicates: 10,
    });
    assert.equal((await jsm.streams.info(names.stream)).state.messages, 1_500);
    publisher.close();
  });

  it("rejects with the stream's refusal only after every message of the batch was answered", async () => {
    const { jsm, names, subject } = await stream({ max_msgs: 3, discard: DiscardPolicy.New });
    const publisher = new JetStreamBatchPublisher(nc);
    await assert.rejects(
      publisher.publish(items(subject, ["a.1", "a.2", "a.3", "a.4", "a.5"]), 5_000),
      /JetStream refused the message: .*maximum messages/,
    );
    assert.equal((await jsm.streams.info(names.stream)).state.messages, 3);
  });

  it("refuses a subject no stream captures", async () => {
    const publisher = new JetStreamBatchPublisher(nc);
    await assert.rejects(
      publisher.publish(items(`nowhere.${uniqueNames("x").subjectPrefix}`, ["n.1"]), 5_000),
      /no JetStream stream captures the subject/,
    );
  });

  it("rejects a batch nobody answers once its timeout passes", async () => {
    const subject = `silent.${uniqueNames("silent").subjectPrefix}`;
    const listener = nc.subscribe(subject); // a responder that never answers: no 503, no ack
    const publisher = new JetStreamBatchPublisher(nc);
    await assert.rejects(
      publisher.publish(items(subject, ["s.1", "s.2"]), 200),
      /did not acknowledge 2 of 2/,
    );
    listener.unsubscribe();
  });

  it("fails the batches in flight when its connection closes, and refuses new ones", async () => {
    const own = await connect({ servers: NATS_URL, noAsyncTraces: true });
    const subject = `silent.${uniqueNames("closing").subjectPrefix}`;
    const listener = own.subscribe(subject);
    const publisher = new JetStreamBatchPublisher(own);
    const waiting = publisher.publish(items(subject, ["c.1"]), 60_000);
    await own.close();
    await assert.rejects(waiting, /connection closed/);
    await assert.rejects(publisher.publish(items(subject, ["c.2"]), 1_000), /connection closed/);
    listener.unsubscribe();
  });
});
