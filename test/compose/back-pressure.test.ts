/**
 * Back-pressure from the store to the probe (DESIGN 1 "Hand-offs"): with the hub's commit
 * stalled, the in-process bus holds the gateway's batches, the gateway's target buffer fills, the
 * gateway stops acknowledging probe changes, the probe's outgoing buffer fills, and its ingest
 * endpoints answer 503 with Retry-After; every buffer on the way stays within its bound, however
 * long clients keep pushing. Once the store answers again, everything accepted is committed and the
 * probe takes PUTs again.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import type { Delivery } from "../../src/bus/bus.js";
import { MemoryBus } from "../../src/bus/memory-bus.js";
import { startGatewayService } from "../../src/compose/gateway-service.js";
import { startProbeService } from "../../src/compose/probe-service.js";
import {
  LINK_BATCH_CHANGES,
  LINK_CREDIT_BATCHES,
  PROBE_OUTGOING_CHANGES,
  SINK_BUFFER_MESSAGES,
} from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { tempDir } from "../helpers/vigil-process.js";

const logger = pino({ level: "silent" });
const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }]
hub: { security: { enabled: false } }
`);

const rows = Array.from({ length: 200 }, (_, i) => ({ name: `r${i}`, a: String(i), b: String(i * 2) }));
const body = JSON.stringify(rows);

describe("a stalled store slows the probe down instead of growing memory", () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test("PUTs answer 503 with Retry-After; buffers stay bounded; all accepted data lands once released", async () => {
    const bus = new MemoryBus(logger);
    let release: () => void = () => {};
    const stalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    let committedRows = 0;
    await bus.start(async (batch) => {
      await stalled; // the store does not answer
      committedRows += batch.filter(isTable).length;
    });
    const dir = tempDir("back-pressure");
    cleanups.push(async () => dir.remove());
    const gateway = await startGatewayService({
      setup,
      dataDir: dir.path,
      host: "127.0.0.1",
      memoryBus: bus,
      logger,
    });
    cleanups.push(() => gateway.stop(2_000));
    const probe = await startProbeService({
      name: "p1",
      link: gateway.gateway.connectInProcess(),
      setup,
      logger,
    });
    cleanups.push(() => probe.stop(2_000));
    const url = `${probe.urls["probe:p1"]}/v1/managedEntity/me/sampler/s/dataview/dv`;

    let accepted = 0;
    let refused: { retryAfter: string | null; body: { status: number; title: string } } | undefined;
    for (let i = 0; i < 20_000 && refused === undefined; i++) {
      const response = await fetch(url, { method: "PUT", body });
      if (response.status === 200) {
        accepted += 1;
        await response.arrayBuffer();
      } else if (response.status === 503) {
        refused = {
          retryAfter: response.headers.get("retry-after"),
          body: (await response.json()) as { status: number; title: string },
        };
      } else assert.fail(`unexpected ${response.status}: ${await response.text()}`);
    }
    assert.ok(refused !== undefined, "the probe answered 503 before 20,000 PUTs");
    assert.equal(refused.retryAfter, "1");
    assert.equal(refused.body.status, 503);

    // Pushing on changes nothing: refused, and no buffer grows.
    const targetBuffered = async () => {
      const status = (await (await fetch(`${gateway.urls.gateway}/v1/status`)).json()) as {
        publisher: { sinks: { buffered: number; capacity: number }[] };
      };
      return status.publisher.sinks[0]?.buffered ?? -1;
    };
    const bufferedBefore = await targetBuffered();
    const outgoingBefore = probe.probe.linkStatus().outgoing;
    const publisherBefore = gateway.gateway.links()[0];
    for (let i = 0; i < 200; i++) {
      const response = await fetch(url, { method: "PUT", body });
      assert.equal(response.status, 503);
      await response.arrayBuffer();
    }
    const buffered = await targetBuffered();
    assert.equal(buffered, bufferedBefore, "the target buffer did not grow");
    // Its bound: capacity, plus what the probe's credit window may carry past it (the gateway applies
    // a batch on receipt and holds back only the acknowledgement).
    const bound = SINK_BUFFER_MESSAGES + LINK_CREDIT_BATCHES * LINK_BATCH_CHANGES * 201;
    assert.ok(
      buffered >= SINK_BUFFER_MESSAGES && buffered <= bound,
      `target buffer ${buffered} within ${bound}`,
    );
    assert.equal(probe.probe.linkStatus().outgoing, outgoingBefore, "the probe buffer did not grow");
    assert.ok(
      (gateway.gateway.links()[0]?.unacknowledged ?? 0) <= (publisherBefore?.unacknowledged ?? 0) + 1,
      "the gateway took no more changes",
    );
    const outgoing = probe.probe.linkStatus().outgoing;
    assert.ok(
      outgoing > 0 && outgoing <= PROBE_OUTGOING_CHANGES,
      `probe buffer ${outgoing} within its bound`,
    );

    // The store answers again: everything accepted is committed, and the probe takes PUTs again.
    release();
    const expected = accepted * rows.length; // a table message per row of each accepted PUT
    for (let i = 0; i < 6_000 && committedRows < expected; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(committedRows, expected, "every row of every accepted PUT, once");
    let again = 503;
    for (let i = 0; i < 500 && again === 503; i++) {
      const response = await fetch(url, { method: "PUT", body });
      again = response.status;
      await response.arrayBuffer();
      if (again === 503) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(again, 200);
  });
});

function isTable(delivery: Delivery): boolean {
  return (delivery.message as { type?: string }).type === "table";
}
