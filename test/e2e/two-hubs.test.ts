/**
 * The scale-out topology of DESIGN 5.5 on one machine: two `vigil hub` processes share
 * one durable JetStream consumer and one PostgreSQL database. One is killed with SIGKILL in the
 * middle of the stream; the other takes over what it left unacknowledged, every message is stored
 * exactly once (counted in the database itself), and both hubs answer a query identically once the
 * killed one is back.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { MessageIdSource } from "../../src/bus/envelope.js";
import { createNatsSink } from "../../src/gateway/publish/nats-sink.js";
import type { MessageOf } from "../../src/messages/types.js";
import { countSamples } from "../helpers/hub-query.js";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../helpers/nats.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../helpers/postgres.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

const natsUp = await natsReachable();
const pgUp = await postgresReachable();
const MESSAGES = 30_000;
const T0 = Date.parse("2026-03-01T00:00:00.000Z");

function sample(i: number): MessageOf<"table"> {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: new Date(T0 + i).toISOString(),
      target: {
        gateway: "GW1",
        probe: "p1",
        managedEntity: `me${i % 4}`,
        type: "",
        sampler: "s",
        dataview: "dv",
        row: "r",
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: "r", v: String(i) },
    },
  };
}

const skip = !natsUp ? NATS_SKIP : !pgUp ? PG_SKIP : false;

describe("two hubs on one JetStream consumer and one PostgreSQL database", { skip }, () => {
  const dir = tempDir("two-hubs");
  const names = uniqueNames("twohubs");
  let admin: NatsAdmin | undefined;
  let db: PgTestDatabase | undefined;
  const hubs: VigilProcess[] = [];
  let config = "";

  before(async () => {
    admin = await NatsAdmin.open();
    admin.track(names.stream);
    db = await PgTestDatabase.create("twohubs");
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
    for (const hub of hubs) await hub.stop("SIGKILL").catch(() => undefined);
    await admin?.cleanup();
    await db?.drop();
    dir.remove();
  });

  const startHub = (name: string): VigilProcess => {
    const hub = startVigil(
      [
        "hub",
        "--config",
        config,
        "--bus",
        NATS_URL,
        "--store",
        db?.url ?? "",
        "--data-dir",
        join(dir.path, name),
        "--host",
        "127.0.0.1",
      ],
      dir.path,
    );
    hubs.push(hub);
    return hub;
  };
  const stored = async (url: string): Promise<number> => {
    const status = (await (await fetch(`${url}/v1/status`)).json()) as { ingest: { stored: number } };
    return status.ingest.stored;
  };
  /** Samples in the database itself, whichever hub wrote them. */
  const rowsInDatabase = async (): Promise<number> => {
    const rows = await (db as PgTestDatabase).sql<
      { n: string }[]
    >`SELECT count(*)::text AS n FROM stored_samples`;
    return Number(rows[0]?.n);
  };
  const countAll = async (url: string): Promise<number> => {
    let total = 0;
    for (let e = 0; e < 4; e += 1) {
      total += await countSamples(url, {
        entity: `me${e}`,
        include: "s/dv/{rowname}/v",
        from: "2026-03-01T00:00:00Z",
        to: "2026-03-02T00:00:00Z",
      });
    }
    return total;
  };

  test("SIGKILL of one hub mid-stream: the other takes over and every message is stored once", async () => {
    const sink = createNatsSink({ url: NATS_URL, ...names, logger: pino({ level: "silent" }) });
    const all = new MessageIdSource("GW1").wrap(Array.from({ length: MESSAGES }, (_, i) => sample(i)));
    for (let i = 0; i < all.length; i += 2_000) await sink.publish(all.slice(i, i + 2_000));

    const a = startHub("a");
    const b = startHub("b");
    const [urlA, urlB] = await Promise.all([a.url("hub"), b.url("hub")]);
    // Both take part, then `a` dies with whatever it holds unacknowledged.
    await eventually(async () => ((await stored(urlA)) >= 1_000 ? true : undefined), 60_000);
    await a.stop("SIGKILL");
    assert.equal((await a.exited).signal, "SIGKILL");

    // `b` gets the rest, and `a`'s unacknowledged messages after the consumer's ack wait (30 s).
    const total = await eventually(async () => {
      const n = await countAll(urlB);
      return n >= MESSAGES ? n : undefined;
    }, 120_000);
    assert.equal(total, MESSAGES);
    // Two samples a message: the row-name column and `v`.
    assert.equal(await rowsInDatabase(), 2 * MESSAGES, "each message stored once in the database");
    assert.ok((await stored(urlB)) > 0, "the second hub stored part of the stream");

    // The killed hub comes back and answers exactly as the other one.
    const again = startHub("a2");
    const urlA2 = await again.url("hub");
    assert.equal(await countAll(urlA2), MESSAGES);
    const entities = async (url: string) => (await (await fetch(`${url}/v0/entities`)).json()) as unknown[];
    assert.deepEqual(await entities(urlA2), await entities(urlB));

    // A gateway retry of already stored messages changes nothing.
    await sink.publish(all.slice(0, 500));
    await sink.close();
    await eventually(async () => ((await countAll(urlB)) === MESSAGES ? true : undefined), 30_000);
    assert.equal(await rowsInDatabase(), 2 * MESSAGES);
  });
});
