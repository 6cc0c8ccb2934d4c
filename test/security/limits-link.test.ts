/**
 * Attacks on the probe link's frame contents (DESIGN 5.4b, docs/security.md "Limits"): a forged
 * probe on a real gateway's in-process link sends names, cells, headlines and parameters beyond the
 * setup's limits, in its state and in changes. Each is a protocol error that closes the link
 * (PROTOCOL_ERROR naming the limit, close code 1002), counted at the gateway's /metrics; the
 * gateway publishes nothing of it and still takes the next link and answers HTTP.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway, type Gateway } from "../../src/gateway/app.js";
import { CLOSE_PROTOCOL_ERROR, LINK_PROTOCOL_VERSION } from "../../src/link/protocol.js";
import type { LinkClose } from "../../src/link/transport.js";
import { eventually, FakePublisher } from "../link/helpers.js";
import { refusals } from "./limits-helpers.js";

const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
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
const gateway: Gateway = buildGateway({ setup, publisher, logger: pino({ level: "silent" }) });
const base = await gateway.start(0);
after(() => gateway.stop(1000));

interface Peer {
  readonly frames: Record<string, unknown>[];
  closed: LinkClose | undefined;
  send(frame: unknown): void;
}

async function forgedProbe(): Promise<Peer> {
  const end = await gateway.connectInProcess().connect();
  const p: Peer = { frames: [], closed: undefined, send: (frame) => end.send(frame as object) };
  end.listen({
    frame: (value) => p.frames.push(value as Record<string, unknown>),
    close: (info) => {
      p.closed = info;
    },
  });
  return p;
}

const long = (bytes: number) => "x".repeat(bytes);
const address = { managedEntity: "me", sampler: "s", samplerType: "", dataview: "dv" };
const AT = 1_714_564_800_000;
const dataview = (over: Record<string, unknown>) => ({
  kind: "dataview",
  dataview: address,
  at: AT,
  plugin: "rest-api",
  columns: ["name", "v"],
  rows: [{ name: "r1", cells: ["r1", "1"] }],
  headlines: [["samplingStatus", "OK"]],
  ...over,
});
const row = (over: Record<string, unknown>) => ({
  kind: "row",
  dataview: address,
  at: AT,
  name: "r1",
  cells: ["r1", "1"],
  ...over,
});
const state = (item: unknown) => ({ type: "state", seq: 1, items: [item], last: true });

// One line per attack: the frames after hello, and the limit the gateway names.
const attacks: { name: string; limit: string; frames: unknown[] }[] = [
  {
    name: "a state cell of 65,537 bytes",
    limit: "cellBytes",
    frames: [state(dataview({ rows: [{ name: "r1", cells: ["r1", long(65_537)] }] }))],
  },
  {
    name: "a state column name of 2,000 bytes",
    limit: "nameBytes",
    frames: [state(dataview({ columns: ["name", long(2000)] }))],
  },
  {
    name: "a state row name of 1,100 bytes",
    limit: "nameBytes",
    frames: [state(dataview({ rows: [{ name: long(1100), cells: ["r1"] }] }))],
  },
  {
    name: "a state dataview name of 2,000 bytes",
    limit: "nameBytes",
    frames: [state(dataview({ dataview: { ...address, dataview: long(2000) } }))],
  },
  {
    name: "a headline name of 2,000 bytes",
    limit: "nameBytes",
    frames: [state(dataview({ headlines: [[long(2000), "1"]] }))],
  },
  {
    name: "a row change with a cell of 100,000 bytes",
    limit: "cellBytes",
    frames: [
      state(dataview({})),
      { type: "changes", seq: 2, changes: [row({ cells: ["r1", long(100_000)] })] },
    ],
  },
  {
    name: "a row change with a column name of 2,000 bytes",
    limit: "nameBytes",
    frames: [
      state(dataview({})),
      { type: "changes", seq: 2, changes: [row({ columns: ["name", long(2000)] })] },
    ],
  },
  {
    name: "a parameter of 5,000 bytes",
    limit: "attributeValueBytes",
    frames: [{ type: "parameters", seq: 1, parameters: { ...parameters, OS: long(5000) } }],
  },
];

describe("limits on the probe link's frames", () => {
  for (const attack of attacks) {
    test(`${attack.name}: the link closes naming limits.${attack.limit}, counted, nothing published`, async () => {
      const before = await refusals(base, "link", attack.limit);
      const published = publisher.messages.length;
      const p = await forgedProbe();
      p.send(hello);
      await eventually(() => p.frames.find((f) => f.type === "welcome"), "welcome");
      for (const frame of attack.frames) p.send(frame);
      const closed = await eventually(() => p.closed, "the link to close");
      assert.equal(closed.code, CLOSE_PROTOCOL_ERROR);
      const error = p.frames.find((f) => f.type === "error");
      assert.equal(error?.code, "PROTOCOL_ERROR");
      assert.match(String(error?.message), new RegExp(`limits\\.${attack.limit} \\(\\d+\\)`));
      assert.equal(await refusals(base, "link", attack.limit), before + 1);
      const leaked = publisher.messages.slice(published).filter((m) => JSON.stringify(m).length > 5000);
      assert.deepEqual(leaked, [], "nothing beyond a limit is published");
      assert.equal((await fetch(`${base}/v1/healthcheck`)).status, 200);
    });
  }

  test("the gateway still takes a link with data within the limits", async () => {
    const p = await forgedProbe();
    p.send(hello);
    await eventually(() => p.frames.find((f) => f.type === "welcome"), "welcome");
    p.send(state(dataview({ rows: [{ name: long(1024), cells: [long(1024), long(65_536)] }] })));
    await eventually(() => p.frames.find((f) => f.type === "ack"), "the state to be acknowledged");
    p.send({ type: "bye", reason: "test done" });
    await eventually(() => p.closed, "the link to close");
  });
});
