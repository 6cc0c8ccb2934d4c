/**
 * Attacks on the probe link's transport and session bounds (DESIGN 5.4b), by a rogue WebSocket
 * client holding a valid secret against a real gateway: a link that never says hello is closed
 * (4002) and its log line rate-limited; links that have not said hello are capped (503); a message
 * over `limits.linkFrameBytes` closes the link (1009), fragmented or not, also when its fragments
 * never finish; a frame nested deeper than `limits.jsonDepth` closes it (4001) before it is
 * parsed; `parameters` frames count against the credit like every batch, so a flood never
 * reaches the publisher past the window.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { MIN_LINK_FRAME_BYTES } from "../../src/config/defaults.js";
import { LinkSecret } from "../../src/config/link-secret.js";
import { DEFAULT_DATA_LIMITS } from "../../src/limits/data-limits.js";
import { CLOSE_HELLO_TIMEOUT, CLOSE_TOO_BIG, CLOSE_TOO_DEEP } from "../../src/link/protocol.js";
import { webSocketConnector } from "../../src/link/websocket.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually } from "../link/helpers.js";
import {
  hello,
  opened,
  P1_SECRET,
  P2_SECRET,
  PARAMETERS,
  refusalCount,
  refused,
  SETUP_TEXT,
  startGateway,
  type TestGateway,
} from "./link-helpers.js";

const HELLO_TIMEOUT_MS = 200; // ms: the tests wait for the close, whatever the duration
const MAX_UNAUTHENTICATED = 4;

describe("links that do not say hello", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      linkTuning: { helloTimeoutMs: HELLO_TIMEOUT_MS, maxUnauthenticated: MAX_UNAUTHENTICATED },
    });
  });
  after(() => gw.stop());

  test("a link silent after its upgrade is closed with 4002, once logged for many", async () => {
    const closes = [];
    for (let i = 0; i < 5; i += 1) {
      const link = await opened(gw.url, P1_SECRET);
      closes.push((await link.closed).code);
    }
    assert.deepEqual(closes, Array(5).fill(CLOSE_HELLO_TIMEOUT));
    await eventually(() => gw.gateway.links().length === 0, "the sessions to go");
    assert.equal(await refusalCount(gw.url, "hello_timeout"), 5);
    const lines = gw.logs.filter((l) => l.msg === "probe link closed: no hello in time");
    assert.equal(lines.length, 1);
  });

  test("links that have not said hello are capped; one more is a 503 with Retry-After", async () => {
    const gw2 = await startGateway({
      linkTuning: { helloTimeoutMs: 60_000, maxUnauthenticated: MAX_UNAUTHENTICATED },
    });
    try {
      const silent = [];
      for (let i = 0; i < MAX_UNAUTHENTICATED; i += 1)
        silent.push(await opened(gw2.url, i % 2 === 0 ? P1_SECRET : P2_SECRET));
      const busy = await refused(gw2.url, P1_SECRET === undefined ? {} : { secret: P1_SECRET });
      assert.equal(busy.status, 503);
      assert.equal(busy.headers["retry-after"], "1");
      assert.deepEqual(Object.keys(JSON.parse(busy.body) as object).sort(), ["body", "status", "title"]);
      // Unauthenticated upgrades never take a slot: each is a 401 and its socket is closed.
      for (let i = 0; i < 50; i += 1) assert.equal((await refused(gw2.url)).status, 401);
      assert.equal(gw2.gateway.links().length, MAX_UNAUTHENTICATED);
      // A link that says hello frees its slot for the next one.
      silent[0]?.send(hello("p1"));
      await silent[0]?.frame("welcome");
      const next = await opened(gw2.url, P2_SECRET);
      next.socket.terminate();
      assert.equal(await refusalCount(gw2.url, "busy"), 1);
      for (const link of silent) link.socket.terminate();
    } finally {
      await gw2.stop();
    }
  });
});

describe("frames a link may not send", () => {
  const SMALL_FRAME = MIN_LINK_FRAME_BYTES; // 1.5 MiB, the smallest limits.linkFrameBytes
  let gw: TestGateway;
  let small: TestGateway;
  before(async () => {
    gw = await startGateway({ linkTuning: { creditBatches: 2 } });
    small = await startGateway({
      setupText: `${SETUP_TEXT}limits: { linkFrameBytes: ${SMALL_FRAME} }\n`,
      linkTuning: { helloTimeoutMs: 60_000 },
    });
  });
  after(async () => {
    await gw.stop();
    await small.stop();
  });

  test("a frame over the default 8 MiB closes the link with 1009", async () => {
    const link = await opened(gw.url, P1_SECRET);
    link.send({ ...hello("p1"), padding: "x".repeat(DEFAULT_DATA_LIMITS.linkFrameBytes) });
    assert.equal((await link.closed).code, CLOSE_TOO_BIG);
    assert.equal(gw.publisher.messages.length, 0);
    await eventually(async () => (await refusalCount(gw.url, "frame_too_large")) === 1, "the count");
  });

  test("fragments are counted together: unfinished fragments past limits.linkFrameBytes close the link", async () => {
    const link = await opened(small.url, P1_SECRET);
    const chunk = "y".repeat(512 * 1024);
    // A text message in fragments that never ends (no fin): 4 × 512 KiB > 1.5 MiB.
    for (let i = 0; i < 4; i += 1) link.socket.send(chunk, { fin: false });
    assert.equal((await link.closed).code, CLOSE_TOO_BIG);
  });

  test("unfinished fragments under the limit do not hold the link past the hello deadline", async () => {
    const gw3 = await startGateway({ linkTuning: { helloTimeoutMs: HELLO_TIMEOUT_MS } });
    try {
      const link = await opened(gw3.url, P1_SECRET);
      link.socket.send(`{"type":"hello","padding":"${"z".repeat(1024)}`, { fin: false });
      assert.equal((await link.closed).code, CLOSE_HELLO_TIMEOUT);
    } finally {
      await gw3.stop();
    }
  });

  test("a frame nested deeper than limits.jsonDepth closes the link with 4001 before it is parsed", async () => {
    const link = await opened(gw.url, P1_SECRET);
    const depth = DEFAULT_DATA_LIMITS.jsonDepth + 1;
    link.socket.send(`${"[".repeat(depth)}${"]".repeat(depth)}`);
    assert.equal((await link.closed).code, CLOSE_TOO_DEEP);
    // Deeper still inside a hello: the same.
    const again = await opened(gw.url, P1_SECRET);
    const helloText = JSON.stringify(hello("p1"));
    again.socket.send(`${helloText.slice(0, -1)},"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    assert.equal((await again.closed).code, CLOSE_TOO_DEEP);
  });

  test("a flood of parameters frames stops at the credit window", async () => {
    gw.publisher.setReady(false); // acknowledgements wait: the credit is not returned
    try {
      const link = await opened(gw.url, P1_SECRET);
      link.send(hello("p1"));
      const welcome = await link.frame("welcome");
      const credit = welcome.credit as number;
      const before = gw.publisher.messages.filter((m) => m.type === "probe").length;
      for (let seq = 1; seq <= 1000; seq += 1) {
        link.send({ type: "parameters", seq, parameters: { ...PARAMETERS, Port: String(seq) } });
      }
      const { code } = await link.closed;
      assert.equal(code, 1002);
      assert.equal((link.frames.find((f) => f.type === "error") as { code: string }).code, "PROTOCOL_ERROR");
      const published = gw.publisher.messages.filter((m) => m.type === "probe").length - before;
      // The hello's probe message, one per credited parameters frame, and the Down of the lost link.
      assert.ok(published <= credit + 2, `${published} probe messages for a credit of ${credit}`);
    } finally {
      gw.publisher.setReady(true);
    }
  });
});

describe("a probe whose frame the gateway refuses as too large", () => {
  // The probe refuses at ingest what would not fit a frame; a frame can still be too large when the
  // gateway comes back with a lower limits.linkFrameBytes while the probe holds data taken under
  // the old one (its state is sent again on the new link).
  test("logs it and retries after its longest back-off, not at once", async () => {
    const wide = `${SETUP_TEXT.replace("gateway: { name: GW-SEC, port: 0 }", "gateway: { name: GW-SEC, port: 0, maxCellLength: 100000 }")}`;
    let gw = await startGateway({ setupText: wide });
    const port = Number(new URL(gw.url).port);
    const lines: string[] = [];
    const probe = buildProbe({
      name: "p1",
      link: webSocketConnector(gw.url, { secret: new LinkSecret(P1_SECRET) }),
      logger: pino({ level: "info" }, { write: (line: string) => void lines.push(line) }),
      linkTuning: { reconnectMinMs: 10, reconnectMaxMs: 600_000 },
    });
    try {
      const { http } = await probe.start();
      await eventually(() => gw.gateway.links().find((l) => l.state === "up"), "the link");
      // One row of 40 cells of 50,000 bytes: 2 MB, within the default 8 MiB frame.
      const row = Object.fromEntries([
        ["name", "r1"],
        ...Array.from({ length: 40 }, (_, i) => [`c${i}`, "x".repeat(50_000)]),
      ]);
      const put = await fetch(`${http}/v1/managedEntity/me1/sampler/s1/dataview/big`, {
        method: "PUT",
        body: JSON.stringify([row]),
      });
      assert.equal(put.status, 200);
      await eventually(() => gw.publisher.messages.find((m) => m.type === "table"), "the row at the gateway");
      await gw.stop();
      gw = await startGateway({
        setupText: `${wide}limits: { linkFrameBytes: ${MIN_LINK_FRAME_BYTES} }\n`,
        port,
      });
      const refused = await eventually(
        () =>
          lines
            .map((l) => JSON.parse(l) as Record<string, unknown>)
            .find((l) => l.code === CLOSE_TOO_BIG && l.level === 50),
        "the probe's error line",
      );
      assert.match(String(refused.msg), /too large or too deep/);
      // The retry waits for the longest back-off (10 min here): no third connection meanwhile.
      assert.equal(probe.linkStatus().connections, 2);
      assert.equal(probe.linkStatus().state, "down");
    } finally {
      await probe.stop(100);
      await gw.stop();
    }
  });
});
