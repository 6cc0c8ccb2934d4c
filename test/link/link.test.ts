/**
 * The probe link end to end, the same scenarios over both transports (in-process and WebSocket on
 * a real socket, port 0): hello/welcome, changes and acks, a lost link (heartbeats) → ConState
 * Down, reconnect → snapshots for what did not change and create/update/delete for what did; the
 * credit window (a publisher that is not ready stops the probe, whose ingest answers 503); live
 * setup updates; a clean stop.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { LinkSecret } from "../../src/config/link-secret.js";
import { parseSetup } from "../../src/config/load-setup.js";
import type { DeploymentSetup } from "../../src/config/setup.js";
import { buildGateway, type Gateway, type GatewayLinkTuning } from "../../src/gateway/app.js";
import type { LinkConnector } from "../../src/link/transport.js";
import { webSocketConnector } from "../../src/link/websocket.js";
import type { ProbeMessage } from "../../src/messages/types.js";
import { buildProbe, type Probe, type ProbeLinkTuning } from "../../src/probe/app.js";
import { eventually, FakePublisher, P1_SECRET, silenceable, summary } from "./helpers.js";

const logger = pino({ level: "silent" });

const SETUP_TEXT = `
gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    linkSecret: ${P1_SECRET}
    managedEntities:
      - name: me1
        attributes: { Env: prod }
        samplers:
          - { name: s1, plugin: rest-api }
      - { name: me2, samplers: [] }
`;
const setup = parseSetup(SETUP_TEXT);

interface Transport {
  readonly name: string;
  connector(gateway: Gateway): Promise<LinkConnector>;
}

const transports: Transport[] = [
  { name: "in-process", connector: async (gateway) => gateway.connectInProcess() },
  {
    name: "WebSocket",
    connector: async (gateway) =>
      webSocketConnector(await gateway.start(0), { secret: new LinkSecret(P1_SECRET) }),
  },
];

interface System {
  readonly gateway: Gateway;
  readonly publisher: FakePublisher;
  readonly probe: Probe;
  readonly url: string;
  readonly connector: ReturnType<typeof silenceable>;
  call(
    method: "GET" | "PUT" | "DELETE",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }>;
  idle(): boolean;
}

const running: (() => Promise<void>)[] = [];
after(async () => {
  for (const stop of running.reverse()) await stop();
});

async function system(
  transport: Transport,
  options: {
    setup?: DeploymentSetup;
    gatewayTuning?: GatewayLinkTuning;
    probeTuning?: ProbeLinkTuning;
    probeName?: string;
    withSetup?: boolean;
  } = {},
): Promise<System> {
  const theSetup = options.setup ?? setup;
  const publisher = new FakePublisher();
  const gateway = buildGateway({
    setup: theSetup,
    publisher,
    logger,
    ...(options.gatewayTuning ? { linkTuning: options.gatewayTuning } : {}),
  });
  running.push(() => gateway.stop(1000));
  const connector = silenceable(await transport.connector(gateway));
  const name = options.probeName ?? "p1";
  const probeSetup = theSetup.probes.find((p) => p.name === name) ?? {
    ...(theSetup.probes[0] as NonNullable<(typeof theSetup.probes)[0]>),
    name,
  };
  const probe = buildProbe({
    name,
    link: connector,
    logger,
    ...(options.withSetup === false ? {} : { setup: probeSetup }),
    linkTuning: { reconnectMinMs: 10, reconnectMaxMs: 50, ...options.probeTuning },
  });
  running.push(() => probe.stop(1000));
  const { http: url } = await probe.start();
  return {
    gateway,
    publisher,
    probe,
    url,
    connector,
    async call(method, path, body) {
      const response = await probe.http.inject({
        method,
        url: path,
        ...(body === undefined ? {} : { payload: typeof body === "string" ? body : JSON.stringify(body) }),
      });
      return {
        status: response.statusCode,
        headers: response.headers,
        body: response.json() as Record<string, unknown>,
      };
    },
    idle() {
      const status = probe.linkStatus();
      return status.state === "up" && status.outgoing === 0 && status.inFlightBatches === 0;
    },
  };
}

const DV = "/v1/managedEntity/me1/sampler/s1/dataview/dv";
const ANNOUNCE = ["probe:create", "managedEntity:create", "managedEntity:create"];

/** The messages `action` causes, once the link is idle again. */
async function messagesOf(s: System, action: () => Promise<unknown>): Promise<string[]> {
  await eventually(() => s.idle(), "an idle link");
  const from = s.publisher.messages.length;
  await action();
  await eventually(() => s.idle(), "an idle link");
  return s.publisher.since(from);
}

const conState = (message: unknown) => (message as ProbeMessage).data.parameters.ConState;

for (const transport of transports) {
  describe(`probe link over ${transport.name}`, () => {
    test("changes, acks, a lost link, and a reconnect that publishes only the differences", async () => {
      // Heartbeats every 500 ms: a dead link is noticed after 1.5 s of silence, and a loaded CI
      // machine's pauses (a few hundred ms) do not pass for one.
      const s = await system(transport, { gatewayTuning: { heartbeatMs: 500 } });
      await eventually(() => s.publisher.messages.length >= 3, "the probe to be announced");
      assert.deepEqual(s.publisher.since(0), ANNOUNCE);
      assert.equal(conState(s.publisher.messages[0]), "Up");

      assert.deepEqual(
        await messagesOf(s, () =>
          s.call("PUT", DV, [
            { n: "a", v: 1 },
            { n: "b", v: 2 },
            { n: "b", v: 3 },
          ]),
        ),
        ["headline:create", "table:create:a", "table:create:b", "table:create:b_duplicate1"],
      );
      assert.deepEqual(await messagesOf(s, () => s.call("PUT", `${DV}/row/a`, { v: 5 })), ["table:update:a"]);
      assert.deepEqual(await messagesOf(s, () => s.call("DELETE", `${DV}/row/b`)), [
        "table:update:b",
        "table:delete:b_duplicate1",
        "headline:update",
      ]);
      const [link] = s.gateway.links();
      assert.equal(link?.probe, "p1");
      assert.equal(link?.state, "up");
      assert.equal(link?.unacknowledged, 0);

      // The network goes dead: both sides notice within 3 heartbeats. Changes made meanwhile stay
      // in the probe's memory and reach the gateway as its state when the link is back.
      s.connector.silence();
      const from = s.publisher.messages.length;
      assert.equal((await s.call("PUT", `${DV}/row/a`, { v: 9 })).status, 200);
      assert.equal((await s.call("PUT", `${DV}/row/c`, { v: 7 })).status, 200);
      assert.equal(
        (await s.call("PUT", "/v1/managedEntity/me1/sampler/s1/dataview/same", [{ n: "x" }])).status,
        200,
      );
      await eventually(() => s.publisher.since(from).includes("probe:update"), "ConState Down");
      const down = s.publisher.messages.slice(from).find((m) => m.type === "probe");
      assert.equal(conState(down), "Down");
      await eventually(() => s.publisher.since(from).includes("probe:snapshot") && s.idle(), "the reconnect");
      assert.deepEqual(s.publisher.since(from), [
        "probe:update",
        "probe:snapshot",
        "managedEntity:snapshot",
        "managedEntity:snapshot",
        "headline:update",
        "table:update:a",
        "table:snapshot:b",
        "table:create:c",
        "headline:create",
        "table:create:x",
      ]);
      assert.equal(conState(s.publisher.messages.find((m, i) => i > from && m.type === "probe")), "Up");
      // row a + (row c, headlines) + dataview `same`: 4 changes coalesced into the state.
      assert.equal(s.probe.linkStatus().coalesced, 4);
      await eventually(
        () => s.gateway.links()[0]?.coalesced === 4,
        "the gateway to show the coalesced count",
      );

      // A second, unchanged reconnect is all snapshots.
      const again = s.publisher.messages.length;
      s.connector.silence();
      await eventually(
        () => s.publisher.since(again).includes("probe:snapshot") && s.idle(),
        "the second reconnect",
      );
      assert.deepEqual(s.publisher.since(again), [
        "probe:update",
        "probe:snapshot",
        "managedEntity:snapshot",
        "managedEntity:snapshot",
        "headline:snapshot",
        "table:snapshot:a",
        "table:snapshot:b",
        "table:snapshot:c",
        "headline:snapshot",
        "table:snapshot:x",
      ]);

      // A clean stop: every change acknowledged, then `bye` → ConState Down.
      const last = s.publisher.messages.length;
      assert.equal((await s.call("PUT", `${DV}/row/a`, { v: 10 })).status, 200);
      await s.probe.stop(5000);
      assert.deepEqual(s.publisher.since(last), ["table:update:a", "probe:update"]);
      assert.equal(conState(s.publisher.messages.findLast((m) => m.type === "probe")), "Down");
    });

    test("credit window: a publisher that is not ready stops the probe, whose ingest then answers 503", async () => {
      const s = await system(transport, {
        gatewayTuning: { creditBatches: 2 },
        probeTuning: { maxOutgoingChanges: 10 },
      });
      await messagesOf(s, () => s.call("PUT", DV, [{ n: "a", v: 0 }]));
      s.publisher.setReady(false);
      const from = s.publisher.messages.length;
      let accepted = 0;
      let refused: Awaited<ReturnType<System["call"]>> | undefined;
      for (let i = 1; i <= 100 && refused === undefined; i += 1) {
        const r = await s.call("PUT", `${DV}/row/a`, { v: i });
        if (r.status === 200) accepted += 1;
        else refused = r;
        // Let the link send what it can (a batch per turn) before the next request.
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.ok(refused !== undefined, "ingest never refused");
      assert.equal(refused.status, 503);
      assert.equal(refused.headers["retry-after"], "1");
      assert.equal(refused.body.title, "Gateway backlog");
      assert.match(
        String(refused.body.body),
        /at its limit of 10 changes;/,
        "the 503 names the bound that tripped",
      );
      const status = s.probe.linkStatus();
      assert.equal(status.inFlightBatches, 2, "at most the credit window is unacknowledged");
      assert.equal(status.outgoing, 10, "the outgoing buffer stops at its bound");
      assert.equal(accepted, 12);
      // Only the two batches inside the window reached the publisher.
      await eventually(() => s.publisher.messages.length === from + 2, "the window's messages");
      const [link] = s.gateway.links();
      assert.equal(link?.unacknowledged, 2);
      assert.equal(link?.waiting, true);

      s.publisher.setReady(true);
      await eventually(() => s.idle(), "the backlog to drain");
      const updates = s.publisher.messages.slice(from);
      assert.deepEqual(
        updates.map(summary),
        Array.from({ length: accepted }, () => "table:update:a"),
      );
      assert.deepEqual(
        updates.map((m) => (m.data as { row: Record<string, string> }).row.v),
        Array.from({ length: accepted }, (_, i) => String(i + 1)),
      );
      assert.equal((await s.call("PUT", `${DV}/row/a`, { v: 99 })).status, 200);
    });

    test("a 503 from the byte bound of the outgoing buffer names bytes, not the count", async () => {
      const s = await system(transport, {
        gatewayTuning: { creditBatches: 1 },
        probeTuning: { maxOutgoingChanges: 1000, maxOutgoingBytes: 4096 },
      });
      await messagesOf(s, () => s.call("PUT", DV, [{ n: "a", v: 0 }]));
      s.publisher.setReady(false);
      const rows = Array.from({ length: 50 }, (_, i) => ({ n: `r${i}`, v: "x".repeat(40) }));
      let refused: Awaited<ReturnType<System["call"]>> | undefined;
      for (let i = 1; i <= 100 && refused === undefined; i += 1) {
        const r = await s.call(
          "PUT",
          DV,
          rows.map((row) => ({ ...row, v: `${row.v}${i}` })),
        );
        if (r.status !== 200) refused = r;
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.ok(refused !== undefined, "ingest never refused");
      assert.equal(refused.status, 503);
      assert.match(String(refused.body.body), /at its limit of 4096 bytes \(estimated\);/);
      assert.ok(s.probe.linkStatus().outgoing < 1000, "the count's bound was not the one reached");
      s.publisher.setReady(true);
      await eventually(() => s.idle(), "the backlog to drain");
    });

    test("requests wait for room, far more than eight at once, and are taken in turn when it returns", async () => {
      const s = await system(transport, {
        gatewayTuning: { creditBatches: 1 },
        probeTuning: { maxOutgoingChanges: 2, backlogWaitMs: 60_000 },
      });
      await messagesOf(s, () => s.call("PUT", DV, [{ n: "a", v: 0 }]));
      s.publisher.setReady(false);
      const from = s.publisher.messages.length;
      // Fill the window and the outgoing buffer (its bound: 2 changes).
      let filled = 0;
      while (s.probe.linkStatus().outgoing < 2) {
        filled += 1;
        assert.equal((await s.call("PUT", `${DV}/row/a`, { v: filled })).status, 200);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const waitedBefore = s.probe.linkStatus().waitedRequests;
      const waiting = Array.from({ length: 40 }, (_, i) => s.call("PUT", `${DV}/row/a`, { v: 1000 + i }));
      await eventually(() => s.probe.linkStatus().waitingRequests === 40, "every request to wait");
      assert.equal(s.probe.linkStatus().outgoing, 2, "nobody passed the bound while waiting");

      s.publisher.setReady(true);
      const answers = await Promise.all(waiting);
      assert.deepEqual(
        answers.map((a) => a.status),
        answers.map(() => 200),
        "every waiting request was taken",
      );
      await eventually(() => s.idle(), "the backlog to drain");
      assert.equal(s.probe.linkStatus().waitingRequests, 0);
      assert.equal(s.probe.linkStatus().waitingBytes, 0);
      assert.equal(s.probe.linkStatus().waitedRequests - waitedBefore, 40, "each wait counted once");
      // Every accepted value is a sample: each PUT is published once, none coalesced.
      const values = s.publisher.messages
        .slice(from)
        .map((m) => Number((m.data as { row: Record<string, string> }).row.v));
      assert.equal(values.length, filled + 40);
      assert.deepEqual(
        [...values].sort((x, y) => x - y),
        [
          ...Array.from({ length: filled }, (_, i) => i + 1),
          ...Array.from({ length: 40 }, (_, i) => 1000 + i),
        ],
      );
    });

    test("a live setup update reaches the probe: a new sampler is addressable, a removed one's data goes", async () => {
      const s = await system(transport);
      await messagesOf(s, () => s.call("PUT", DV, [{ n: "a", v: 1 }]));
      const NEW = "/v1/managedEntity/me1/sampler/s2/dataview/dv";
      assert.equal((await s.call("PUT", NEW, [{ n: "a" }])).status, 404);
      const next = parseSetup(
        SETUP_TEXT.replace("- { name: s1, plugin: rest-api }", "- { name: s2, plugin: rest-api }"),
      );
      const from = s.publisher.messages.length;
      s.gateway.updateSetup(next);
      await eventually(
        async () => (await s.call("PUT", NEW, [{ n: "b" }])).status === 200,
        "the new sampler",
      );
      await eventually(() => s.idle() && s.publisher.since(from).includes("table:create:b"), "the new data");
      assert.deepEqual(s.publisher.since(from), [
        "table:delete:a",
        "headline:delete",
        "headline:create",
        "table:create:b",
      ]);
      assert.equal((await s.call("PUT", DV, [{ n: "a" }])).status, 404);
    });

    test("__proto__ and constructor columns travel end to end as data", async () => {
      const s = await system(transport);
      const from = s.publisher.messages.length;
      await messagesOf(s, () => s.call("PUT", DV, '[{"n":"a","__proto__":"p","constructor":"c"}]'));
      await messagesOf(s, () => s.call("PUT", `${DV}/row/a`, '{"__proto__":"p2"}'));
      const tables = s.publisher.messages.slice(from).filter((m) => m.type === "table");
      assert.deepEqual(
        tables.map((m) => JSON.stringify(m.data.row)),
        ['{"n":"a","__proto__":"p","constructor":"c"}', '{"n":"a","__proto__":"p2","constructor":""}'],
      );
    });

    test("a probe started without a setup waits for the gateway's and listens on its port", async () => {
      const s = await system(transport, { withSetup: false });
      assert.match(s.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      await eventually(() => s.idle(), "the link");
      const probes = s.publisher.messages.filter((m) => m.type === "probe") as ProbeMessage[];
      assert.deepEqual(probes.map(summary), ["probe:create"]);
      assert.equal(probes[0]?.data.parameters.Port, new URL(s.url).port);
      assert.equal((await s.call("PUT", DV, [{ n: "a" }])).status, 200);
    });

    test("a probe the setup does not name is refused and keeps retrying", async () => {
      const s = await system(transport, { probeName: "ghost" });
      await eventually(() => s.probe.linkStatus().connections >= 3, "several attempts");
      assert.deepEqual(s.publisher.since(0), []);
      assert.ok(s.gateway.links().every((link) => link.state === "handshake"));
    });
  });
}
