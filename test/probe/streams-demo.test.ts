/**
 * The demo (`vigil up --demo`, DESIGN 1) pushes application log lines to the stream the built-in
 * setup's fkm sampler reads, so a new user sees a Streams Dataview and keyword matches. One push
 * of the generator against a real probe listening on a free port; the fkm sample runs on demand.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { sampleSetup } from "../../src/config/sample-setup.js";
import type { ProbeSetup } from "../../src/config/setup.js";
import { startDemo } from "../../src/demo/generator.js";
import { buildProbe } from "../../src/probe/app.js";
import { ManualScheduler } from "../../src/probe/fkm/sample-scheduler.js";
import { eventually, FakeGateway } from "../link/helpers.js";

const setup = sampleSetup();
const own: ProbeSetup = { ...(setup.probes[0] as ProbeSetup), restApiHttpPort: 0 };
const gateway = new FakeGateway({ ...setup, probes: [own] });
const scheduler = new ManualScheduler();
const probe = buildProbe({
  name: own.name,
  setup: own,
  link: gateway.connector,
  logger: pino({ level: "silent" }),
  scheduler,
});
let base = "";
before(async () => {
  base = (await probe.start()).http;
  await eventually(() => probe.linkStatus().state === "up", "the link to come up");
});
after(() => probe.stop(1000));

test("one demo push sends log lines to web-01's app-log, which the fkm sampler 'errors' scans", async () => {
  // A long interval: only the immediate first push runs before the stop.
  const stop = startDemo([{ probe: own, url: base }], pino({ level: "silent" }), 3_600_000);
  await stop();
  const response = await fetch(`${base}/v1/managedEntity/web-01/sampler/orders/stream/app-log`);
  assert.equal(response.status, 200);
  const counters = (await response.json()) as Record<string, number>;
  const received = counters.totalMessagesReceived ?? 0;
  assert.ok(received >= 1 && received <= 3, `received ${received}`);
  assert.equal(counters.currentBufferSize, received, "held for the fkm sampler until it samples");
  scheduler.advance(20_000);
  await eventually(
    () =>
      gateway.changes.some(
        (c) =>
          c.dataview.dataview === "errors" &&
          c.kind === "headlines" &&
          c.headlines.some(([name, value]) => name === "messagesScanned" && value === String(received)),
      ),
    "the fkm sampler to have scanned the demo's lines",
  );
});
