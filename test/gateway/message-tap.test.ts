/**
 * The message tap's bounds over real sockets: a client limit (503 beyond), a stream
 * opened with a token ends with a final `event: end` when the token expires, and a client that falls
 * behind gets a final event saying why before it is let go.
 */
import assert from "node:assert/strict";
import { type IncomingMessage, request } from "node:http";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import type { TableMessage } from "../../src/messages/types.js";
import { eventually, FakePublisher } from "../link/helpers.js";

const logger = pino({ level: "silent" });
const setup = parseSetup("gateway: { name: GW, port: 0 }");
const publisher = new FakePublisher();
// Tokens "short" expire 300 ms after they are checked; "long" in an hour.
const expiries: Record<string, number> = {
  short: 300,
  long: 3_600_000,
  revocable: 3_600_000,
  reader: 3_600_000,
};
// Tokens the hub no longer accepts (their key was removed), and tokens that lost `read`.
const revoked = new Set<string>();
const demoted = new Set<string>();
const gateway = buildGateway({
  setup,
  publisher,
  logger,
  tapMaxBufferedBytes: 64 * 1024,
  tapMaxClients: 2,
  tokenRecheckMs: 20,
  verifyToken: async (token) => {
    const life = expiries[token];
    if (life === undefined || revoked.has(token)) throw new Error("unknown token");
    return { sub: "tap", roles: demoted.has(token) ? ["write"] : ["read"], expiresAt: Date.now() + life };
  },
});
const url = await gateway.start(0);
/** With security on, the gateway's status needs a token too (DESIGN 5.4a). */
const AS_TAP = { headers: { authorization: "Bearer long" } };
after(() => gateway.stop(1000));

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

/** Opens the tap; resolves once its first line arrived. */
function openTap(token: string): Promise<{ res: IncomingMessage; text: () => string; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/messages`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      const ended = new Promise<void>((done) => res.on("close", () => done()));
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.once("data", () => resolve({ res, text: () => text, ended }));
      if (res.statusCode !== 200) res.resume();
    });
    req.on("error", reject);
    req.end();
  });
}

describe("message tap bounds", () => {
  test("a stream ends with a final event when its token expires", async () => {
    const tap = await openTap("short");
    await tap.ended;
    assert.match(tap.text(), /event: end\ndata: \{"reason":"the access token expired/);
  });

  test("a stream ends with a final event when its key is removed, or loses read", async () => {
    const tap = await openTap("revocable");
    const reader = await openTap("reader");
    revoked.add("revocable");
    demoted.add("reader");
    await tap.ended;
    await reader.ended;
    assert.match(tap.text(), /event: end\ndata: \{"reason":"the access token is no longer accepted"\}/);
    assert.match(
      reader.text(),
      /event: end\ndata: \{"reason":"the access token no longer has the read role"\}/,
    );
  });

  test("at most tapMaxClients clients at once; one more gets 503 in the error shape", async () => {
    const a = await openTap("long");
    const b = await openTap("long");
    try {
      const third = await fetch(`${url}/v1/messages`, { headers: { authorization: "Bearer long" } });
      assert.equal(third.status, 503);
      const body = (await third.json()) as { status: number; title: string; body: string };
      assert.equal(body.status, 503);
      assert.match(body.body, /at most 2 clients/);
    } finally {
      a.res.destroy();
      b.res.destroy();
    }
  });

  test("a client that falls behind gets a final event saying why before it is let go", async () => {
    await eventually(async () => {
      const status = (await (await fetch(`${url}/v1/status`, AS_TAP)).json()) as { tap: { clients: number } };
      return status.tap.clients === 0;
    }, "the earlier clients to be gone");
    const tap = await openTap("long");
    tap.res.pause(); // read nothing for now
    let sent = 0;
    await eventually(async () => {
      for (let i = 0; i < 200; i += 1) publisher.publish([table(sent++)]);
      const status = (await (await fetch(`${url}/v1/status`, AS_TAP)).json()) as { tap: { dropped: number } };
      return status.tap.dropped >= 1;
    }, "the slow client to be let go");
    tap.res.resume(); // within the grace period: the buffered messages, then the final event
    await tap.ended;
    assert.match(tap.text(), /event: end\ndata: \{"reason":"the client read too slowly/);
  });
});
