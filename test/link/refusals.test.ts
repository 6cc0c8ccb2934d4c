/**
 * What the gateway refuses on a probe link, over both transports: another protocol version, a
 * probe the setup does not name, frames that break the protocol (each closes that link with a
 * logged reason and never harms the gateway); and the probe's side of a version mismatch.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { WebSocket } from "ws";
import { LinkSecret } from "../../src/config/link-secret.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway, type Gateway } from "../../src/gateway/app.js";
import { inProcessConnector } from "../../src/link/in-process.js";
import { LINK_PROTOCOL_VERSION } from "../../src/link/protocol.js";
import type { LinkClose, LinkConnector } from "../../src/link/transport.js";
import { gatewayLinkUrl, webSocketConnector } from "../../src/link/websocket.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually, FakePublisher, P1_SECRET } from "./helpers.js";

const logger = pino({ level: "silent" });
const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - { name: p1, linkSecret: ${P1_SECRET}, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
`);
const parameters = { osType: "Linux", HostName: "h", Port: "1", OS: "Linux 6", Version: "0.1.0" };
const hello = {
  type: "hello",
  version: LINK_PROTOCOL_VERSION,
  probe: "p1",
  parameters,
  coalesced: 0,
  resumed: false,
};

const publisher = new FakePublisher();
const gateway: Gateway = buildGateway({ setup, publisher, logger });
const gatewayUrl = await gateway.start(0);
after(() => gateway.stop(1000));

interface Peer {
  readonly frames: Record<string, unknown>[];
  closed: LinkClose | undefined;
  send(frame: unknown): void;
}

const transports: { name: string; connector: () => LinkConnector }[] = [
  { name: "in-process", connector: () => gateway.connectInProcess() },
  {
    name: "WebSocket",
    connector: () => webSocketConnector(gatewayUrl, { secret: new LinkSecret(P1_SECRET) }),
  },
];

async function peer(connector: LinkConnector): Promise<Peer> {
  const end = await connector.connect();
  const p: Peer = {
    frames: [],
    closed: undefined,
    send: (frame) => end.send(frame as object),
  };
  end.listen({
    frame: (value) => p.frames.push(value as Record<string, unknown>),
    close: (info) => {
      p.closed = info;
    },
  });
  return p;
}

// [name, frames sent, the error code the gateway answers]
const cases: [string, unknown[], string][] = [
  ["another protocol version", [{ ...hello, version: 99, futureField: true }], "VERSION_MISMATCH"],
  ["a frame before hello", [{ type: "heartbeat" }], "PROTOCOL_ERROR"],
  ["a malformed hello", [{ type: "hello" }], "PROTOCOL_ERROR"],
  ["changes before the state", [hello, { type: "changes", seq: 1, changes: [] }], "PROTOCOL_ERROR"],
  ["a batch out of sequence", [hello, { type: "state", seq: 2, items: [], last: true }], "PROTOCOL_ERROR"],
  ["an unknown frame type", [hello, { type: "gossip" }], "PROTOCOL_ERROR"],
  ["a second hello", [hello, hello], "PROTOCOL_ERROR"],
];

for (const transport of transports) {
  describe(`gateway refusals over ${transport.name}`, () => {
    // Over a WebSocket the link speaks for the probe whose secret it presented: a hello naming any
    // other probe, in the setup or not, is NOT_THIS_PROBE (no oracle of probe names).
    const ghost = transport.name === "in-process" ? "UNKNOWN_PROBE" : "NOT_THIS_PROBE";
    for (const [name, frames, code] of [
      ...cases,
      ["a probe the setup does not name", [{ ...hello, probe: "ghost" }], ghost] as const,
    ]) {
      test(`${name} → error ${code} and the link closes`, async () => {
        const p = await peer(transport.connector());
        for (const frame of frames) p.send(frame);
        await eventually(() => p.closed, "the link to close");
        const error = p.frames.find((f) => f.type === "error");
        assert.equal(error?.code, code, JSON.stringify(p.frames));
        assert.equal(typeof error?.message, "string");
        assert.equal(p.closed?.local, false);
      });
    }

    test("the gateway still serves links after refusals", async () => {
      const p = await peer(transport.connector());
      p.send(hello);
      await eventually(() => p.frames.find((f) => f.type === "welcome"), "welcome");
      p.send({ type: "bye", reason: "test done" });
      await eventually(() => p.closed, "the link to close");
    });
  });
}

describe("gateway refusals over WebSocket: bytes that are not frames", () => {
  const raw = async (send: (socket: WebSocket) => void) => {
    const socket = new WebSocket(gatewayLinkUrl(gatewayUrl), {
      headers: { authorization: `Bearer ${P1_SECRET}` },
    });
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    send(socket);
    return closed;
  };

  test("text that is not JSON closes with 1007", async () => {
    const { code, reason } = await raw((socket) => socket.send("{not json"));
    assert.equal(code, 1007);
    assert.match(reason, /not JSON/);
  });

  test("a binary frame closes with 1003", async () => {
    const { code } = await raw((socket) => socket.send(Buffer.from([1, 2, 3])));
    assert.equal(code, 1003);
  });

  test("an upgrade on another path is refused", async () => {
    const socket = new WebSocket(`${gatewayLinkUrl(gatewayUrl).replace("/v1/probe-link", "/v1/other")}`);
    const error = await new Promise<Error>((resolve) => socket.once("error", resolve));
    assert.match(error.message, /404/);
  });
});

describe("the probe's side of a refusal", () => {
  test("a welcome of another version is logged and retried later, never applied", async () => {
    let connections = 0;
    const connector = inProcessConnector((end) => {
      connections += 1;
      end.listen({
        frame: (value) => {
          if ((value as { type?: string }).type === "hello") {
            end.send({ type: "welcome", version: LINK_PROTOCOL_VERSION + 1, somethingNew: {} });
          }
        },
        close: () => {},
      });
    });
    const probe = buildProbe({
      name: "p1",
      link: connector,
      setup: setup.probes[0]!,
      logger,
      linkTuning: { reconnectMinMs: 5, reconnectMaxMs: 20 },
    });
    await probe.start();
    await eventually(() => connections >= 3, "retries");
    assert.notEqual(probe.linkStatus().state, "up");
    await probe.stop(100);
  });

  test("a gateway that never answers is retried with back-off", async () => {
    let attempts = 0;
    const probe = buildProbe({
      name: "p1",
      link: {
        description: "nowhere",
        connect: async () => {
          attempts += 1;
          throw new Error("connection refused");
        },
      },
      setup: setup.probes[0]!,
      logger,
      linkTuning: { reconnectMinMs: 1, reconnectMaxMs: 4 },
    });
    await probe.start();
    await eventually(() => attempts >= 5, "attempts");
    const r = await probe.http.inject({
      method: "PUT",
      url: "/v1/managedEntity/me/sampler/s/dataview/d",
      payload: "[]",
    });
    assert.equal(r.statusCode, 200, "the probe accepts data while its gateway is away");
    assert.equal(probe.linkStatus().coalesced, 1);
    await probe.stop(50);
  });
});
