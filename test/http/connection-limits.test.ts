/**
 * Slow and greedy clients against a real server built by createHttpApp, with small
 * limits so the test is quick: a slowloris client that never finishes its headers is cut off while
 * another client keeps getting answers; connections beyond the per-address cap are closed at once
 * and counted; an idle keep-alive connection is closed. Nothing asserts a duration: each check waits
 * for an event (a close, an answer), bounded by the test runner's timeout.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { resource } from "../../src/http/routes.js";
import { createHttpApp, listen } from "../../src/http/server.js";

const silent = pino({ level: "silent" });

function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once("error", reject);
  });
}

const closed = (socket: Socket): Promise<void> =>
  new Promise((resolve) => {
    if (socket.destroyed) resolve();
    else socket.once("close", () => resolve());
  });

async function ping(url: string): Promise<number> {
  const answer = await fetch(`${url}/ping`);
  await answer.arrayBuffer();
  return answer.status;
}

describe("HTTP connection limits", () => {
  let app: FastifyInstance;
  let url: string;

  before(async () => {
    app = createHttpApp({
      logger: silent,
      limits: {
        headersTimeoutMs: 300,
        requestTimeoutMs: 600,
        timeoutCheckMs: 50,
        keepAliveTimeoutMs: 200,
        maxConnectionsPerClient: 8,
      },
    });
    resource(app, "/ping", { GET: async () => ({ ok: true }) });
    url = await listen(app, 0, "127.0.0.1");
  });
  after(async () => {
    await app?.close();
  });

  test("a client that never finishes its headers is cut off; another is still served meanwhile", async () => {
    const slow = await open(url);
    slow.write("GET /ping HTTP/1.1\r\nHost: x\r\n");
    const drip = setInterval(() => {
      if (!slow.destroyed) slow.write("X-Slow: 1\r\n");
    }, 40);
    try {
      assert.equal(await ping(url), 200);
      await closed(slow);
      assert.equal(slow.destroyed, true);
    } finally {
      clearInterval(drip);
      slow.destroy();
    }
  });

  test("connections beyond the per-address cap are closed at once; the ones held keep working", async () => {
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 8; i += 1) held.push(await open(url));
      const extra = await open(url);
      await closed(extra);
      // A held connection still gets an answer.
      const socket = held[0] as Socket;
      const answer = new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (chunk) => {
          text += chunk.toString();
          if (text.includes("\r\n\r\n")) resolve(text);
        });
      });
      socket.write("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.match(await answer, /^HTTP\/1\.1 200/);
    } finally {
      for (const socket of held) socket.destroy();
    }
    // Once the server has seen them close, the address may connect again.
    let status: number | string = "not tried";
    for (let attempt = 0; attempt < 400 && status !== 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      status = await ping(url).catch((error: Error) => error.message);
    }
    assert.equal(status, 200);
  });

  test("an idle keep-alive connection is closed by the server", async () => {
    const socket = await open(url);
    socket.write("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((resolve) => socket.once("data", resolve));
    await closed(socket);
    assert.equal(socket.destroyed, true);
  });
});
