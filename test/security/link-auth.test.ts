/**
 * Attacks on the probe link's authentication (DESIGN 5.4b), by a rogue WebSocket client against a
 * real gateway: no secret, a wrong one, the secret of a probe without one, and an unknown probe all
 * get the same 401 before the upgrade (no oracle of probe names), counted and logged at most once a
 * minute; another probe's secret cannot speak for p1 (NOT_THIS_PROBE, the same answer for a name
 * that does not exist); a takeover attempt never displaces the real p1 nor publishes anything; a
 * probe configured but not running cannot be taken over; the secret never shows in `welcome`,
 * `/v1/status`, `/metrics` or the log.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { LinkSecret } from "../../src/config/link-secret.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { webSocketConnector } from "../../src/link/websocket.js";
import type { ProbeMessage } from "../../src/messages/types.js";
import { buildProbe, type Probe } from "../../src/probe/app.js";
import { eventually } from "../link/helpers.js";
import {
  hello,
  opened,
  P1_SECRET,
  P2_SECRET,
  P4_SECRET,
  refusalCount,
  refused,
  SETUP_TEXT,
  startGateway,
  type TestGateway,
} from "./link-helpers.js";

const NO_PROBE_SECRET = "a-secret-of-no-probe-at-all-000000";

describe("probe link authentication", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.stop());

  test("no secret, a wrong one, a malformed header: the same 401 {status,title,body}, before the upgrade", async () => {
    const answers = [
      await refused(gw.url),
      await refused(gw.url, { secret: NO_PROBE_SECRET }),
      await refused(gw.url, { authorization: `Basic ${Buffer.from(`p1:${P1_SECRET}`).toString("base64")}` }),
      await refused(gw.url, { secret: `${P1_SECRET}x` }),
    ];
    for (const answer of answers) {
      assert.equal(answer.status, 401);
      assert.equal(answer.headers["www-authenticate"], "Bearer");
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ["body", "status", "title"]);
      assert.equal(body.status, 401);
      assert.equal(answer.body, answers[0]?.body);
    }
    assert.equal(gw.gateway.links().length, 0);
    assert.ok((await refusalCount(gw.url, "missing_secret")) >= 2);
    assert.ok((await refusalCount(gw.url, "wrong_secret")) >= 2);
  });

  test("an unknown probe name and a probe without linkSecret get the 401 a wrong secret gets", async () => {
    // The name is not even asked for before the secret: whatever a client would say in hello,
    // the answer depends on the secret only. p3 is in the setup without a secret: no link at all.
    const wrong = await refused(gw.url, { secret: NO_PROBE_SECRET });
    for (const attempt of ["p3", "ghost", "p1"]) {
      const answer = await refused(gw.url, { secret: `${attempt}-guessing-a-secret-0000` });
      assert.deepEqual([answer.status, answer.body], [wrong.status, wrong.body]);
    }
  });

  test("401s are logged at most once a minute, with the count", async () => {
    const before = gw.logs.filter((l) =>
      String(l.msg).startsWith("probe link refused: no valid link secret"),
    ).length;
    for (let i = 0; i < 20; i += 1) await refused(gw.url, { secret: NO_PROBE_SECRET });
    const lines = gw.logs.filter((l) => String(l.msg).startsWith("probe link refused: no valid link secret"));
    assert.ok(lines.length - before <= 1, `${lines.length - before} lines for 20 refusals`);
    assert.ok(lines.length >= 1);
  });

  test("another probe's secret cannot speak for p1, nor reveal whether a name exists", async () => {
    const answers: unknown[] = [];
    for (const name of ["p1", "ghost"]) {
      const link = await opened(gw.url, P2_SECRET);
      link.send(hello(name));
      const error = await link.frame("error");
      const { code } = await link.closed;
      assert.equal(code, 1008);
      answers.push([error.code, error.message]);
    }
    assert.deepEqual(answers[0], answers[1]);
    assert.equal((answers[0] as string[])[0], "NOT_THIS_PROBE");
    assert.equal(gw.publisher.messages.length, 0, "nothing published");
    assert.equal(await refusalCount(gw.url, "not_this_probe"), 2);
  });

  test("a probe's own secret links it, and welcome carries only its own part of the setup, no secret", async () => {
    const link = await opened(gw.url, P4_SECRET);
    link.send(hello("p4"));
    const welcome = await link.frame("welcome");
    const text = JSON.stringify(welcome);
    assert.equal((welcome.setup as { name: string }).name, "p4");
    for (const secret of [P1_SECRET, P2_SECRET, P4_SECRET]) assert.ok(!text.includes(secret));
    assert.ok(!text.includes("linkSecret"));
    for (const other of ["p1", "p2", "p3", "me1"])
      assert.ok(!text.includes(`"${other}"`), `welcome names ${other}`);
    link.send({ type: "bye", reason: "test done" });
    await link.closed;
  });
});

describe("a reload that changes a probe's secret", () => {
  test("ends that probe's link; the old secret is refused from then on, the new one links", async () => {
    const gw = await startGateway();
    try {
      const link = await opened(gw.url, P1_SECRET);
      link.send(hello("p1"));
      await link.frame("welcome");
      const renewed = "p1-renewed-link-secret-00000000";
      gw.gateway.updateSetup(
        parseSetup(SETUP_TEXT.replace(`linkSecret: ${P1_SECRET}`, `linkSecret: ${renewed}`)),
      );
      assert.equal((await link.frame("error")).code, "SECRET_CHANGED");
      assert.equal((await link.closed).code, 1008);
      assert.equal((await refused(gw.url, { secret: P1_SECRET })).status, 401);
      const again = await opened(gw.url, renewed);
      again.send(hello("p1"));
      await again.frame("welcome");
      again.socket.terminate();
    } finally {
      await gw.stop();
    }
  });
});

describe("a takeover attempt while the real probe is linked", () => {
  let gw: TestGateway;
  let probe: Probe;
  before(async () => {
    gw = await startGateway();
    probe = buildProbe({
      name: "p1",
      link: webSocketConnector(gw.url, { secret: new LinkSecret(P1_SECRET) }),
      logger: pino({ level: "silent" }),
      linkTuning: { reconnectMinMs: 10, reconnectMaxMs: 50 },
    });
    await probe.start();
    await eventually(() => gw.gateway.links().find((l) => l.probe === "p1" && l.state === "up"), "p1 up");
  });
  after(async () => {
    await probe.stop(1000);
    await gw.stop();
  });

  test("the real probe is never displaced and nothing forged is published", async () => {
    const linked = gw.gateway.links().find((l) => l.probe === "p1");
    const published = gw.publisher.messages.length;
    // Without a secret, with a wrong one: refused before the upgrade.
    assert.equal((await refused(gw.url)).status, 401);
    assert.equal((await refused(gw.url, { secret: NO_PROBE_SECRET })).status, 401);
    // With p2's secret, saying it is p1, with forged parameters and a state that deletes everything.
    const link = await opened(gw.url, P2_SECRET);
    link.send(hello("p1"));
    link.send({ type: "state", seq: 1, items: [], last: true });
    link.send({ type: "parameters", seq: 2, parameters: { ...(hello("p1").parameters as object) } });
    await link.closed;
    const now = gw.gateway.links().filter((l) => l.probe === "p1");
    assert.equal(now.length, 1);
    assert.equal(now[0]?.connectedAt, linked?.connectedAt, "the real link is the same one");
    assert.equal(now[0]?.state, "up");
    assert.equal(probe.linkStatus().connections, 1, "the real probe never reconnected");
    const forged = gw.publisher.messages
      .slice(published)
      .filter((m) => m.type === "probe" || m.operation === "delete");
    assert.deepEqual(forged, []);
    const hostNames = gw.publisher.messages
      .filter((m): m is ProbeMessage => m.type === "probe")
      .map((m) => m.data.parameters.HostName);
    assert.ok(!hostNames.includes("evil-host"));
  });

  test("a probe configured but not running cannot be taken over without its secret", async () => {
    for (const secret of [undefined, NO_PROBE_SECRET]) {
      assert.equal((await refused(gw.url, secret === undefined ? {} : { secret })).status, 401);
    }
    for (const secret of [P1_SECRET, P2_SECRET]) {
      const link = await opened(gw.url, secret);
      link.send(hello("p4"));
      assert.equal((await link.frame("error")).code, "NOT_THIS_PROBE");
      await link.closed;
    }
    assert.equal(gw.gateway.links().filter((l) => l.probe === "p4").length, 0);
    const p4 = gw.publisher.messages.filter(
      (m) => m.type === "probe" && (m as ProbeMessage).data.target.probe === "p4",
    );
    assert.deepEqual(p4, []);
    // The real p1 still holds its link.
    assert.equal(probe.linkStatus().connections, 1);
  });

  test("no secret shows in /v1/status, /metrics or the log", async () => {
    const status = await (await fetch(`${gw.url}/v1/status`)).text();
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    for (const text of [status, metrics, gw.logText()]) {
      for (const secret of [P1_SECRET, P2_SECRET, P4_SECRET, NO_PROBE_SECRET])
        assert.ok(!text.includes(secret));
    }
  });
});
