/**
 * The gateway's link server holds acknowledgements while its own memory is above the protection
 * threshold (DESIGN 3.5, 1 "Hand-offs"), so probes slow down instead of the gateway growing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { Hierarchy } from "../../src/gateway/hierarchy.js";
import { LinkServer } from "../../src/gateway/link-server.js";
import { MemoryProtection } from "../../src/http/memory-protection.js";
import { inProcessPair } from "../../src/link/in-process.js";
import { LINK_PROTOCOL_VERSION } from "../../src/link/protocol.js";
import { eventually, FakePublisher } from "../link/helpers.js";

const setup = parseSetup(`
gateway: { name: GW, memoryProtection: { limitMb: 100, ratio: 0.5 } }
probes:
  - { name: p1, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
`);
const MB = 1024 * 1024;

test("acknowledgements wait while the gateway is over its memory threshold", async () => {
  let rss = 80 * MB; // above 100 MB × 0.5
  const memory = new MemoryProtection(
    "gateway",
    () => setup.gateway.memoryProtection,
    () => rss,
  );
  const publisher = new FakePublisher();
  const server = new LinkServer({
    setup: () => setup,
    model: new Hierarchy(setup.gateway, setup.probes),
    publisher,
    memory,
    logger: pino({ level: "silent" }),
  });
  const pair = inProcessPair();
  const received: { type: string; seq?: number }[] = [];
  pair.probe.listen({ frame: (f) => received.push(f as { type: string }), close: () => {} });
  server.accept(pair.gateway, { kind: "in-process" });
  pair.probe.send({
    type: "hello",
    version: LINK_PROTOCOL_VERSION,
    probe: "p1",
    parameters: { osType: "Linux", HostName: "h", Port: "1", OS: "Linux", Version: "0" },
    coalesced: 0,
    resumed: false,
  });
  await eventually(() => received.some((f) => f.type === "welcome"), "welcome");
  pair.probe.send({ type: "state", seq: 1, items: [], last: true });
  // The batch is applied and published at once; only its acknowledgement waits.
  await eventually(() => publisher.messages.length === 2, "the probe announced");
  await eventually(() => server.status()[0]?.waiting === true, "the ack to wait");
  assert.equal(
    received.some((f) => f.type === "ack"),
    false,
  );
  rss = 10 * MB;
  await eventually(() => received.find((f) => f.type === "ack"), "the ack");
  assert.equal(server.status()[0]?.unacknowledged, 0);
  await server.close(100);
});
