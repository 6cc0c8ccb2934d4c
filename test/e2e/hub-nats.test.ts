/**
 * `vigil hub --bus nats://…` as a real process on a real JetStream (DESIGN 5.5): a hub
 * killed with SIGKILL in the middle of a stream and started again stores every message exactly once
 * (what it had committed is skipped on redelivery, the rest arrives again); a message it cannot store
 * goes to the dead-letter file while the messages behind it become queryable.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { MessageIdSource } from "../../src/bus/envelope.js";
import { createNatsSink } from "../../src/gateway/publish/nats-sink.js";
import type { MessageOf } from "../../src/messages/types.js";
import { countSamples } from "../helpers/hub-query.js";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

const reachable = await natsReachable();
const MESSAGES = 60_000;
const T0 = Date.parse("2026-03-01T00:00:00.000Z");

function sample(i: number, value = String(i)): MessageOf<"table"> {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: new Date(T0 + i).toISOString(),
      target: {
        gateway: "GW1",
        probe: "p1",
        managedEntity: "me1",
        type: "",
        sampler: "s",
        dataview: "dv",
        row: "r",
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: "r", v: value },
    },
  };
}

describe("hub on NATS JetStream", { skip: needs(reachable ? false : NATS_SKIP) }, () => {
  const dir = tempDir("hub-nats");
  const names = uniqueNames("e2e");
  let admin: NatsAdmin | undefined;
  let hub: VigilProcess | undefined;
  let config = "";

  before(async () => {
    admin = await NatsAdmin.open();
    admin.track(names.stream);
    config = writeFile(
      dir.path,
      "setup.yaml",
      `gateway:
  name: GW1
  publish:
    - nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} }
hub:
  port: 0
  security: { enabled: false }
`,
    );
  });

  after(async () => {
    if (hub !== undefined) await hub.stop("SIGKILL");
    await admin?.cleanup();
    dir.remove();
  });

  const startHub = () =>
    startVigil(
      [
        "hub",
        "--config",
        config,
        "--bus",
        NATS_URL,
        "--data-dir",
        join(dir.path, "data"),
        "--host",
        "127.0.0.1",
      ],
      dir.path,
    );

  const stored = async (url: string): Promise<{ stored: number; duplicates: number }> => {
    const response = await fetch(`${url}/v1/status`);
    const status = (await response.json()) as { ingest: { stored: number; duplicates: number } };
    return status.ingest;
  };

  const count = (url: string): Promise<number> =>
    countSamples(url, {
      entity: "me1",
      include: "s/dv/{rowname}/v",
      from: "2026-03-01T00:00:00Z",
      to: "2026-03-02T00:00:00Z",
    });

  test("SIGKILL mid-stream, restart: every message stored exactly once", async () => {
    const sink = createNatsSink({ url: NATS_URL, ...names, logger: pino({ level: "silent" }) });
    const ids = new MessageIdSource("GW1");
    const all = ids.wrap(Array.from({ length: MESSAGES }, (_, i) => sample(i)));
    for (let i = 0; i < all.length; i += 2_000) await sink.publish(all.slice(i, i + 2_000));

    hub = startHub();
    const url = await hub.url("hub");
    await eventually(async () => ((await stored(url)).stored >= 2_000 ? true : undefined), 60_000);
    await hub.stop("SIGKILL");
    const before = (await hub.exited).signal;
    assert.equal(before, "SIGKILL");

    hub = startHub();
    const again = await hub.url("hub");
    // Unacknowledged messages come back after the consumer's ack wait (30 s).
    const total = await eventually(async () => {
      const n = await count(again);
      return n >= MESSAGES ? n : undefined;
    }, 90_000);
    assert.equal(total, MESSAGES, "each message once");
    const second = await stored(again);
    assert.ok(second.stored > 0, "the first hub was killed before it had stored everything");
    // Publishing the same messages again (a gateway retry) changes nothing.
    await sink.publish(all.slice(0, 100));
    await sink.close();
    assert.equal(await count(again), MESSAGES);
  });

  test("a message the hub cannot store is dead-lettered; the ones behind it are stored", async () => {
    assert.ok(hub !== undefined, "the hub of the first test runs");
    const url = await hub.url("hub");
    const sink = createNatsSink({ url: NATS_URL, ...names, logger: pino({ level: "silent" }) });
    const ids = new MessageIdSource("GW1");
    const poison = sample(MESSAGES, "bad \uD800 text");
    const batch = ids.wrap([poison, sample(MESSAGES + 1), sample(MESSAGES + 2)]);
    await sink.publish(batch);
    await sink.close();
    await eventually(async () => ((await count(url)) === MESSAGES + 2 ? true : undefined), 30_000);
    const file = join(dir.path, "data", "dead-letter.ndjson");
    assert.ok(existsSync(file), "dead-letter file written");
    const letters = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.equal(letters.length, 1);
    assert.equal(letters[0].id, batch[0]?.id);
    assert.match(letters[0].reason, /well-formed/);
  });
});
