/**
 * Keys and roles change without a restart (DESIGN 5.4a), on a real `vigil up` process: once the
 * setup file loses a key (a change of the file, or SIGHUP), that key gets no token, its refresh
 * token is refused, and its access tokens are refused by the hub and, within 10 s, by the gateway
 * (which asks the hub what a token grants, cached for at most 5 s). A key whose roles shrank is
 * held to its new roles with the tokens it already has.
 */
import assert from "node:assert/strict";
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually, startVigil, tempDir, type VigilProcess } from "../helpers/vigil-process.js";

/** The longest a removed key's tokens may keep working anywhere (DESIGN 5.4a, docs/security.md). */
const REVOCATION_BOUND_MS = 10_000;
const GATEWAY = "GW-REVOKE";

const setup = (keys: string) => `gateway: { name: ${GATEWAY}, port: 0 }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
hub:
  port: 0
  security:
    enabled: true
    appKeys:
${keys}`;
const OPS = `      - { clientId: ops, clientSecret: "ops-secret", roles: [read, operate] }\n`;
const DOOMED = `      - { clientId: doomed, clientSecret: "doomed-secret", roles: [read, write, operate] }\n`;
const LOADER = (roles: string) =>
  `      - { clientId: loader, clientSecret: "loader-secret", roles: [${roles}] }\n`;

const basic = (id: string) => `Basic ${Buffer.from(`${id}:${id}-secret`).toString("base64")}`;

describe("a removed key stops working without a restart", () => {
  const dir = tempDir("roles-revoke");
  let vigil: VigilProcess;
  let config = "";
  let target = "";
  let versions = 0;
  /**
   * The setup path is a symbolic link into another folder: replacing the link (as an editor
   * replaces a file by a rename) is a change the watch sees; writing the file it points to is not
   * (watch-setup.ts), so only SIGHUP applies that.
   */
  const replaceSetup = (text: string): void => {
    target = join(dir.path, "real", `setup-${versions++}.yaml`);
    writeFileSync(target, text);
    const next = join(dir.path, `link-${versions}.tmp`);
    symlinkSync(target, next);
    renameSync(next, config);
  };
  let hub = "";
  let gateway = "";

  before(async () => {
    mkdirSync(join(dir.path, "real"));
    config = join(dir.path, "setup.yaml");
    replaceSetup(setup(OPS + DOOMED + LOADER("read, write")));
    vigil = startVigil(["up", "--config", config, "--data-dir", join(dir.path, "data")], dir.path);
    hub = await vigil.url("hub");
    gateway = await vigil.url("gateway");
  });
  after(async () => {
    await vigil?.stop("SIGKILL");
    dir.remove();
  });

  /** A client_credentials grant: the access and refresh tokens. */
  async function grant(id: string): Promise<{ access: string; refresh: string }> {
    const response = await fetch(`${hub}/oauth2/token`, {
      method: "POST",
      headers: { authorization: basic(id), "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    });
    assert.equal(response.status, 200, id);
    const body = (await response.json()) as { access_token: string; refresh_token: string };
    return { access: body.access_token, refresh: body.refresh_token };
  }

  const status = async (url: string, token: string, init: RequestInit = {}) => {
    const response = await fetch(url, {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${token}` },
    });
    await response.arrayBuffer();
    return response.status;
  };
  const hubRead = (token: string) => status(`${hub}/v0/entities`, token);
  const gatewayRead = (token: string) => status(`${gateway}/v1/items?gateway=${GATEWAY}`, token);
  const snooze = (token: string, command: "snooze" | "unsnooze") =>
    status(`${gateway}/v1/commands/${command}`, token, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ target: { gateway: GATEWAY }, user: "ann" }),
    });
  /** Polls until `check` gives `wanted`, for at most the revocation bound. */
  const becomes = (wanted: number, check: () => Promise<number>) =>
    eventually(async () => ((await check()) === wanted ? true : undefined), REVOCATION_BOUND_MS);

  test("a key removed from the file: no token, no refresh, its tokens refused by the hub and the gateway", async () => {
    const doomed = await grant("doomed");
    const loader = await grant("loader");
    // Both servers accept the tokens first (the gateway now holds the hub's answer in its cache).
    assert.equal(await hubRead(doomed.access), 200);
    assert.equal(await gatewayRead(doomed.access), 200);
    assert.equal(await snooze(doomed.access, "snooze"), 200);
    assert.equal(await hubRead(loader.access), 200);

    replaceSetup(setup(OPS + LOADER("write")));
    await becomes(401, () => hubRead(doomed.access));
    await becomes(401, () => gatewayRead(doomed.access));
    assert.equal(await snooze(doomed.access, "unsnooze"), 401);
    const token = await fetch(`${hub}/token`, { headers: { authorization: basic("doomed") } });
    assert.equal(token.status, 401);
    const refreshed = await fetch(`${hub}/oauth2/token`, {
      method: "POST",
      headers: { authorization: basic("doomed"), "content-type": "application/x-www-form-urlencoded" },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(doomed.refresh)}`,
    });
    assert.ok([400, 401].includes(refreshed.status), String(refreshed.status));
    // The loader kept its key with fewer roles: its old token is held to them.
    assert.equal(await hubRead(loader.access), 403);
    const backfill = await status(`${hub}/v0/messages`, loader.access, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "[]",
    });
    assert.notEqual(backfill, 403);
    assert.notEqual(backfill, 401);
    // Someone with operate releases the snooze the removed key left.
    const ops = await grant("ops");
    assert.equal(await snooze(ops.access, "unsnooze"), 200);
    // The key comes back (same id, same secret): its old refresh and access tokens stay dead; a
    // new grant works.
    replaceSetup(setup(OPS + LOADER("write") + DOOMED));
    await becomes(
      200,
      async () => (await fetch(`${hub}/token`, { headers: { authorization: basic("doomed") } })).status,
    );
    const again = await fetch(`${hub}/oauth2/token`, {
      method: "POST",
      headers: { authorization: basic("doomed"), "content-type": "application/x-www-form-urlencoded" },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(doomed.refresh)}`,
    });
    assert.equal(again.status, 400);
    assert.equal(((await again.json()) as { error: string }).error, "invalid_grant");
    assert.equal(await hubRead(doomed.access), 401);
    assert.equal(await gatewayRead(doomed.access), 401);
    assert.equal(await hubRead((await grant("doomed")).access), 200);
  });

  test("SIGHUP applies a removal too", async () => {
    const ops = await grant("ops");
    assert.equal(await gatewayRead(ops.access), 200);
    // The file the link points to changes in place: no watch sees it, SIGHUP applies it.
    writeFileSync(target, setup(LOADER("write")));
    vigil.child.kill("SIGHUP");
    await becomes(401, () => hubRead(ops.access));
    await becomes(401, () => gatewayRead(ops.access));
    assert.equal(await snooze(ops.access, "snooze"), 401);
    assert.equal(vigil.child.exitCode, null, "SIGHUP reloads, it does not stop vigil");
  });
});
