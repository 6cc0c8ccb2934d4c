/**
 * The gateway's own HTTP API: `/v1/status` shows the probe links and the publisher, and the live
 * message tap (`GET /v1/messages`, server-sent events) drops a client that reads too slowly
 * instead of buffering for it (a real socket: the socket buffer is what matters).
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { LINK_CREDIT_BATCHES } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import type { TableMessage } from "../../src/messages/types.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually, FakePublisher } from "../link/helpers.js";

const logger = pino({ level: "silent" });
const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
`);
const publisher = new FakePublisher();
const TAP_LIMIT = 64 * 1024; // bytes
const gateway = buildGateway({ setup, publisher, logger, tapMaxBufferedBytes: TAP_LIMIT });
const url = await gateway.start(0);
const probe = buildProbe({ name: "p1", link: gateway.connectInProcess(), setup: setup.probes[0]!, logger });
await probe.start();
after(async () => {
  await probe.stop(1000);
  await gateway.stop(1000);
});

const table = (i: number): TableMessage => ({
  type: "table",
  operation: "update",
  data: {
    sampleTime: new Date(0).toISOString(),
    target: {
      gateway: "GW",
      probe: "p1",
      managedEntity: "me",
      type: "",
      sampler: "s",
      dataview: "dv",
      row: "r",
      filter: { osType: "Linux", pluginName: "rest-api" },
    },
    row: { n: "r", v: String(i), pad: "x".repeat(512) },
  },
});

describe("gateway HTTP", () => {
  test("/v1/status shows the links and the publisher", async () => {
    await eventually(() => gateway.links()[0]?.state === "up", "the link");
    const response = await fetch(`${url}/v1/status`);
    assert.equal(response.status, 200);
    const status = (await response.json()) as Record<string, unknown>;
    assert.equal(status.gateway, "GW");
    const links = status.links as Record<string, unknown>[];
    assert.equal(links.length, 1);
    assert.equal(links[0]?.probe, "p1");
    assert.equal(links[0]?.remote, "in-process");
    assert.equal(links[0]?.credit, LINK_CREDIT_BATCHES);
    assert.equal(links[0]?.coalesced, 0);
    assert.deepEqual(status.publisher, publisher.status());
  });

  test("the message tap streams published messages as server-sent events", async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(`${url}/v1/messages`, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
          if (text.includes("event: table")) {
            resolve(text);
            req.destroy();
          }
        });
        // Publish once the tap is subscribed (its comment line arrived).
        res.once("data", () => publisher.publish([table(1)]));
      });
      req.on("error", reject);
      req.end();
    });
    assert.match(body, /id: fake\.\d+\nevent: table\ndata: \{"type":"table"/);
  });

  test("a tap client that does not read is dropped, not buffered for", async () => {
    const before = await (await fetch(`${url}/v1/status`)).json();
    const droppedBefore = (before as { tap: { dropped: number } }).tap.dropped;
    let closed = false;
    let response: import("node:http").IncomingMessage | undefined;
    await new Promise<void>((resolve, reject) => {
      const req = request(`${url}/v1/messages`, (res) => {
        response = res;
        res.once("data", () => {
          res.pause(); // from now on, read nothing
          resolve();
        });
        res.on("close", () => {
          closed = true;
        });
      });
      req.on("error", () => {});
      req.on("socket", (socket) => socket.on("error", reject));
      req.end();
    });
    let sent = 0;
    await eventually(async () => {
      // The kernel's socket buffers take some before the gateway's own buffer grows.
      for (let i = 0; i < 200; i += 1) publisher.publish([table(sent++)]);
      const status = (await (await fetch(`${url}/v1/status`)).json()) as {
        tap: { dropped: number; clients: number };
      };
      return status.tap.dropped === droppedBefore + 1 && sent > 0;
    }, "the slow client to be dropped");
    // Let go: what was buffered, then a final event; the connection closes once that is read.
    response?.resume();
    await eventually(() => closed, "the slow client's connection to close");
  });

  test("the link path refuses a plain GET", async () => {
    const response = await fetch(`${url}/v1/probe-link`);
    assert.equal(response.status, 404);
  });
});
