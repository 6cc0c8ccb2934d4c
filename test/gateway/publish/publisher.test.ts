/**
 * The publisher (DESIGN 1, 4.3): ids and topics, schema check, independent targets with
 * back-pressure, the NDJSON target's durability and recovery, the in-process bus's acknowledgement.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import type { Delivery } from "../../../src/bus/bus.js";
import { type Envelope, MessageIdSource, parseMessageId } from "../../../src/bus/envelope.js";
import { MemoryBus } from "../../../src/bus/memory-bus.js";
import { FileSink } from "../../../src/gateway/publish/file-sink.js";
import { MemorySink } from "../../../src/gateway/publish/memory-sink.js";
import { Publisher } from "../../../src/gateway/publish/publisher.js";
import type { Sink } from "../../../src/gateway/publish/sink.js";
import type { PublicV2Message } from "../../../src/messages/types.js";

const logger = pino({ level: "silent" });
const dir = mkdtempSync(join(tmpdir(), "vigil-publisher-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const probe = (n: number): PublicV2Message => ({
  type: "probe",
  operation: "update",
  data: {
    timestamp: "2026-01-01T00:00:00.000Z",
    target: { gateway: "GW", probe: `p${n}` },
    parameters: { osType: "Linux" },
  },
});
const headline: PublicV2Message = {
  type: "headline",
  operation: "create",
  data: {
    sampleTime: "2026-01-01T00:00:00.000Z",
    target: {
      gateway: "GW",
      probe: "p",
      managedEntity: "me",
      type: "",
      sampler: "s",
      dataview: "d",
      filter: { osType: "Linux", pluginName: "rest-api" },
    },
    row: { totalRows: "0" },
  },
};

class RecordingSink implements Sink {
  readonly batches: Envelope[][] = [];
  stalled: (() => void)[] = [];
  stall = false;
  constructor(readonly name: string) {}
  publish(batch: readonly Envelope[]): Promise<void> {
    this.batches.push([...batch]);
    if (!this.stall) return Promise.resolve();
    return new Promise((resolve) => this.stalled.push(resolve));
  }
  async close(): Promise<void> {}
}

async function until(condition: () => boolean, limit = 20_000): Promise<void> {
  for (let i = 0; i < limit; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error("condition not reached");
}

describe("message ids", () => {
  test("count up within a run, differ between runs, and parse back", () => {
    const a = new MessageIdSource("GW 1");
    const b = new MessageIdSource("GW 1");
    assert.notEqual(a.origin, b.origin, "a restarted gateway never reuses ids");
    const [first, second] = a.wrap([probe(1), headline]);
    assert.equal(first?.id, `${a.origin}.1`);
    assert.equal(second?.id, `${a.origin}.2`);
    assert.equal(first?.topic, "entities");
    assert.equal(second?.topic, "metrics");
    assert.deepEqual(parseMessageId(second?.id ?? ""), { origin: a.origin, seq: 2 });
    for (const bad of ["", "x", "x.0", "x.01", ".5", "x.1e3", "x.-1", "x.99999999999999999"]) {
      assert.equal(parseMessageId(bad), undefined, bad);
    }
  });
});

describe("Publisher", () => {
  test("gives every target every valid message in order; an invalid one is counted, never sent", async () => {
    const a = new RecordingSink("a");
    const b = new RecordingSink("b");
    const publisher = new Publisher({ gateway: "GW", sinks: [a, b], logger });
    const tapped: Envelope[] = [];
    const unsubscribe = publisher.subscribe((e) => tapped.push(e));
    const invalid = { ...probe(9), operation: "bogus" } as unknown as PublicV2Message;
    publisher.publish([probe(1), invalid, headline]);
    unsubscribe();
    publisher.publish([probe(2)]);
    await until(() => a.batches.flat().length === 3 && b.batches.flat().length === 3);
    assert.deepEqual(
      a.batches.flat().map((e) => e.message),
      [probe(1), headline, probe(2)],
    );
    assert.deepEqual(
      a.batches.flat().map((e) => e.id),
      b.batches.flat().map((e) => e.id),
    );
    assert.equal(tapped.length, 2);
    const status = publisher.status();
    assert.equal(status.published, 3);
    assert.equal(status.invalid, 1);
    await publisher.close(1_000);
  });

  test("a stalled target fills up and makes the publisher not ready; the other keeps going", async () => {
    const slow = new RecordingSink("slow");
    slow.stall = true;
    const fast = new RecordingSink("fast");
    const publisher = new Publisher({
      gateway: "GW",
      sinks: [slow, fast],
      logger,
      bufferMessages: 10,
      windowBatches: 1,
    });
    for (let i = 0; i < 10; i++) publisher.publish([probe(i)]);
    assert.equal(publisher.ready, false);
    await until(() => fast.batches.flat().length === 10);
    let ready = false;
    const waiting = publisher.whenReady().then(() => {
      ready = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ready, false);
    slow.stall = false;
    for (const release of slow.stalled.splice(0)) release();
    await waiting;
    assert.equal(publisher.ready, true);
    await publisher.close(1_000);
    assert.equal(slow.batches.flat().length, 10);
  });

  test("an NDJSON target that cannot write retries without failing the others, then recovers", async () => {
    const blocker = join(dir, "not-a-folder");
    writeFileSync(blocker, "");
    const path = join(blocker, "messages.ndjson"); // its folder is a file: every write fails
    const file = new FileSink(path);
    const other = new RecordingSink("other");
    const publisher = new Publisher({
      gateway: "GW",
      sinks: [file, other],
      logger,
      retryInitialMs: 1,
      retryMaxMs: 5,
    });
    publisher.publish([probe(1), probe(2)]);
    await until(() => other.batches.flat().length === 2);
    await until(() => publisher.status().sinks[0]?.state === "failing");
    // The operator fixes the folder; the retried batch lands once, whole.
    rmSync(blocker);
    mkdirSync(blocker);
    await until(() => publisher.status().sinks[0]?.state === "ok");
    publisher.publish([probe(3)]);
    await publisher.close(5_000);
    const lines = readFileSync(path, "utf8").trim().split("\n");
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      [probe(1), probe(2), probe(3)],
    );
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  test("an NDJSON target given two batches at once, on a file that holds lines, appends both in order", async () => {
    const path = join(dir, "concurrent.ndjson");
    writeFileSync(path, `${JSON.stringify(probe(0))}\n`);
    const ids = new MessageIdSource("GW");
    const file = new FileSink(path);
    // Both before the file is open: each write must not cut back what the other wrote.
    await Promise.all([file.publish(ids.wrap([probe(1)])), file.publish(ids.wrap([probe(2), probe(3)]))]);
    await file.close();
    const lines = readFileSync(path, "utf8").trim().split("\n");
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      [probe(0), probe(1), probe(2), probe(3)],
    );
  });
});

describe("MemoryBus", () => {
  test("a publish resolves once the consumer committed it and rejects when the consumer fails", async () => {
    const bus = new MemoryBus(logger);
    const sink = new MemorySink(bus);
    const seen: Delivery[][] = [];
    let fail = true;
    const ids = new MessageIdSource("GW");
    const early = sink.publish(ids.wrap([probe(1)])); // waits for the consumer to start
    await bus.start(async (batch) => {
      seen.push([...batch]);
      if (fail) {
        fail = false;
        throw new Error("store down");
      }
    });
    await assert.rejects(early, /store down/);
    assert.equal(bus.status().state, "retrying");
    await sink.publish(ids.wrap([probe(2)]));
    assert.equal(bus.status().state, "ok");
    assert.equal(seen.length, 2);
    await bus.stop(100);
    await assert.rejects(sink.publish(ids.wrap([probe(3)])), /stopped/);
  });

  test("refuses more than its bound of waiting batches instead of queuing", async () => {
    const bus = new MemoryBus(logger, 2);
    const ids = new MessageIdSource("GW");
    const a = bus.publish(ids.wrap([probe(1)]));
    const b = bus.publish(ids.wrap([probe(2)]));
    await assert.rejects(bus.publish(ids.wrap([probe(3)])), /holds 2 batches/);
    await bus.start(async () => {});
    await Promise.all([a, b]);
    await bus.stop(100);
  });
});
