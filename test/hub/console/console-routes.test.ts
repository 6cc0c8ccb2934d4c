/**
 * The hub's console routes in-process: the page and its assets with their caching and
 * security headers, the answer without a build, `/console/config.json`, and the gateway relay's
 * refusals (no gateway known, gateway not answering, no token with security on) and its relaying
 * to a real gateway-like server on a socket.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { VigilError } from "../../../src/errors/catalog.js";
import { createHttpApp } from "../../../src/http/server.js";
import { registerConsole } from "../../../src/hub/console/console-routes.js";
import { tempDir } from "../../helpers/vigil-process.js";

const logger = pino({ level: "silent" });

async function consoleApp(options: Parameters<typeof registerConsole>[1]) {
  const app = createHttpApp({ logger });
  await registerConsole(app, options);
  await app.ready();
  return app;
}

describe("console routes", () => {
  const dir = tempDir("console-routes");
  const built = join(dir.path, "built");
  /** A stand-in gateway on a real socket: echoes what it received. */
  let gateway: Server;
  let gatewayUrl: string;
  const received: { method: string; url: string; authorization?: string; body: string }[] = [];

  before(async () => {
    mkdirSync(join(built, "assets"), { recursive: true });
    writeFileSync(join(built, "index.html"), "<!doctype html><title>vigil console</title>");
    writeFileSync(join(built, "assets", "console-ABC123.js"), "console.log(1)");
    gateway = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        received.push({
          method: request.method ?? "",
          url: request.url ?? "",
          ...(request.headers.authorization === undefined
            ? {}
            : { authorization: request.headers.authorization }),
          body,
        });
        const status = request.url?.startsWith("/v1/commands/unsnooze") ? 409 : 200;
        response.writeHead(status, { "content-type": "application/json" });
        response.end(
          JSON.stringify(
            status === 200 ? { item: { ok: true } } : { status, title: "Command does not apply", body: "x." },
          ),
        );
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => gateway.close(resolve));
    dir.remove();
  });

  test("the page: no-cache with an ETag, a 304 when unchanged, the security policy, 405 for POST", async () => {
    const app = await consoleApp({ security: false, gatewayUrl: () => undefined, dir: built });
    const page = await app.inject({ url: "/" });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers["content-type"] as string, /^text\/html/);
    assert.equal(page.headers["cache-control"], "no-cache");
    assert.match(page.headers["content-security-policy"] as string, /default-src 'none'.*connect-src 'self'/);
    assert.equal(page.headers["x-content-type-options"], "nosniff");
    const etag = page.headers.etag as string;
    const again = await app.inject({ url: "/", headers: { "if-none-match": etag } });
    assert.equal(again.statusCode, 304);
    const post = await app.inject({ method: "POST", url: "/" });
    assert.equal(post.statusCode, 405);
    assert.equal(post.json().title, "Method not allowed");
    await app.close();
  });

  test("assets: cached for a year, immutable; an unknown one is the API's 404", async () => {
    const app = await consoleApp({ security: false, gatewayUrl: () => undefined, dir: built });
    const asset = await app.inject({ url: "/assets/console-ABC123.js" });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.body, "console.log(1)");
    assert.equal(asset.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.match(asset.headers["content-security-policy"] as string, /script-src 'self'/);
    const missing = await app.inject({ url: "/assets/console-OLD.js" });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(Object.keys(missing.json()).sort(), ["body", "status", "title"]);
    const outside = await app.inject({ url: "/assets/../index.html" });
    assert.notEqual(outside.statusCode, 200);
    await app.close();
  });

  test("without a build, / is a 503 naming the command that builds the console", async () => {
    const app = await consoleApp({
      security: false,
      gatewayUrl: () => undefined,
      dir: join(dir.path, "none"),
    });
    const page = await app.inject({ url: "/" });
    assert.equal(page.statusCode, 503);
    assert.match(page.json().body, /npm run build/);
    await app.close();
  });

  test("config.json says whether security is on", async () => {
    for (const security of [false, true]) {
      const app = await consoleApp({ security, gatewayUrl: () => undefined, dir: built });
      const config = await app.inject({ url: "/console/config.json" });
      assert.deepEqual(config.json(), { security });
      assert.equal(config.headers["cache-control"], "no-store");
      await app.close();
    }
  });

  test("the relay: no gateway known, and a gateway that does not answer, are 503s that say so", async () => {
    const unknown = await consoleApp({ security: false, gatewayUrl: () => undefined, dir: built });
    const a = await unknown.inject({ url: "/console/gateway/v1/items?gateway=G" });
    assert.equal(a.statusCode, 503);
    assert.match(a.json().body, /--gateway URL/);
    await unknown.close();
    // A port nothing listens on: the gateway's listener, closed.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const dead = await consoleApp({ security: false, gatewayUrl: () => deadUrl, dir: built });
    const b = await dead.inject({
      method: "POST",
      url: "/console/gateway/v1/commands/snooze",
      payload: { target: {} },
    });
    assert.equal(b.statusCode, 503);
    assert.match(b.json().body, new RegExp(`The gateway at ${deadUrl} did not answer`));
    await dead.close();
  });

  test("the relay forwards the five paths, body, query and token, and the gateway's answer as is", async () => {
    const app = await consoleApp({ security: false, gatewayUrl: () => gatewayUrl, dir: built });
    received.length = 0;
    const snooze = await app.inject({
      method: "POST",
      url: "/console/gateway/v1/commands/snooze",
      headers: { authorization: "Bearer abc", cookie: "secret=1", "x-other": "no" },
      payload: { target: { gateway: "G" }, user: "ann" },
    });
    assert.equal(snooze.statusCode, 200);
    assert.deepEqual(snooze.json(), { item: { ok: true } });
    const conflict = await app.inject({
      method: "POST",
      url: "/console/gateway/v1/commands/unsnooze",
      headers: { authorization: "Basic ZGVtbzpzZWNyZXQ=" }, // never forwarded
      payload: {},
    });
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json().title, "Command does not apply");
    const items = await app.inject({ url: "/console/gateway/v1/items?gateway=G&type=" });
    assert.equal(items.statusCode, 200);
    assert.deepEqual(
      received.map((r) => [r.method, r.url, r.authorization, r.body]),
      [
        ["POST", "/v1/commands/snooze", "Bearer abc", '{"target":{"gateway":"G"},"user":"ann"}'],
        ["POST", "/v1/commands/unsnooze", undefined, "{}"],
        ["GET", "/v1/items?gateway=G&type=", undefined, ""],
      ],
    );
    const plain = await app.inject({
      method: "POST",
      url: "/console/gateway/v1/commands/snooze",
      headers: { "content-type": "text/plain" },
      payload: '{"target":{"gateway":"G"},"user":"mallory"}',
    });
    assert.equal(plain.statusCode, 400, "a cross-site text/plain POST is refused");
    assert.equal(received.length, 3, "and never relayed");
    const other = await app.inject({ url: "/console/gateway/v1/messages" });
    assert.equal(other.statusCode, 404, "only the command API is relayed");
    await app.close();
  });

  test("with security on, the relay refuses a request without a valid token before relaying", async () => {
    const verify = async (token: string) => {
      if (token !== "good") throw new VigilError("UNAUTHORIZED", {});
      return { sub: "ann", roles: ["read", "operate"] as const, expiresAt: Date.now() + 60_000 };
    };
    const app = await consoleApp({ security: true, gatewayUrl: () => gatewayUrl, verify, dir: built });
    received.length = 0;
    const none = await app.inject({ url: "/console/gateway/v1/items?gateway=G" });
    assert.equal(none.statusCode, 401);
    assert.match(none.headers["www-authenticate"] as string, /^Bearer/);
    const bad = await app.inject({
      url: "/console/gateway/v1/items?gateway=G",
      headers: { authorization: "Bearer bad" },
    });
    assert.equal(bad.statusCode, 401);
    assert.equal(received.length, 0, "nothing reached the gateway");
    const good = await app.inject({
      url: "/console/gateway/v1/items?gateway=G",
      headers: { authorization: "Bearer good" },
    });
    assert.equal(good.statusCode, 200);
    assert.equal(received.length, 1);
    // The page itself stays open.
    assert.equal((await app.inject({ url: "/" })).statusCode, 200);
    await app.close();
  });
});
