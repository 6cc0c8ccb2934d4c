/**
 * Security on, end to end (DESIGN 5.4): the hub's query API and the gateway's message tap both need
 * a token the hub issued for an application key; the gateway verifies it against the hub's JWKS.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

describe("vigil up with security enabled", () => {
  const dir = tempDir("security");
  let vigil: VigilProcess;
  let hub: string;
  let gateway: string;

  before(async () => {
    const config = writeFile(
      dir.path,
      "setup.yaml",
      `
gateway: { name: GW, port: 0 }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
hub: { port: 0, security: { enabled: true, appKeys: [{ clientId: app, clientSecret: "pa55 word" }] } }
`,
    );
    vigil = startVigil(["up", "--config", config, "--data-dir", join(dir.path, "data")], dir.path);
    hub = await vigil.url("hub");
    gateway = await vigil.url("gateway");
  });
  after(async () => {
    await vigil.stop();
    dir.remove();
  });

  async function token(): Promise<string> {
    const response = await fetch(`${hub}/token`, {
      headers: { authorization: `Basic ${Buffer.from("app:pa55 word").toString("base64")}` },
    });
    assert.equal(response.status, 200);
    return ((await response.json()) as { access_token: string }).access_token;
  }

  test("the query API refuses a request without a token with the seed's 401", async () => {
    const response = await fetch(`${hub}/v0/entities`);
    assert.equal(response.status, 401);
    const body = (await response.json()) as { title: string; body: string };
    assert.equal(body.title, "Authorization failed");
    assert.match(body.body, /valid authorization token is needed/);
  });

  test("the message tap refuses a missing or forged token", async () => {
    assert.equal((await fetch(`${gateway}/v1/messages`)).status, 401);
    const forged = await fetch(`${gateway}/v1/messages`, {
      headers: { authorization: "Bearer e30.e30.AAAA" },
    });
    assert.equal(forged.status, 401);
    assert.match(forged.headers.get("www-authenticate") ?? "", /invalid_token/);
  });

  test("a hub-issued token opens both the query API and the message tap", async () => {
    const bearer = { authorization: `Bearer ${await token()}` };
    assert.equal((await fetch(`${hub}/v0/entities`, { headers: bearer })).status, 200);
    const controller = new AbortController();
    const tap = await fetch(`${gateway}/v1/messages`, { headers: bearer, signal: controller.signal });
    assert.equal(tap.status, 200);
    assert.equal(tap.headers.get("content-type"), "text/event-stream");
    controller.abort();
  });
});
