/**
 * A request that reaches an app while it closes gets the API error body (a 503), not Fastify's own
 * `{error, message, statusCode}` (every error the framework raises has the documented
 * body). Deterministic, without timers: a first request is held in its handler; once close has
 * begun, a second request is sent on the same keep-alive socket, and the first is released only
 * when the second's answer is being sent.
 */
import assert from "node:assert/strict";
import { type AddressInfo, connect, type Socket } from "node:net";
import { test } from "node:test";
import { pino } from "pino";
import { createHttpApp } from "../../../src/http/server.js";

test("a request routed while the app closes is a 503 with the error body", async () => {
  const app = createHttpApp({ logger: pino({ level: "silent" }) });
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered: () => void = () => undefined;
  const inHandler = new Promise<void>((resolve) => {
    entered = resolve;
  });
  app.get("/slow", async () => {
    entered();
    await held;
    return { ok: true };
  });
  let client: Socket | undefined;
  // Registered after the error handling's own preClose hook, so it runs once closing is set.
  app.addHook("preClose", (done) => {
    client?.write("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    done();
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    if (reply.statusCode === 503) release();
    return payload;
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;

  const socket = connect(port, "127.0.0.1");
  client = socket;
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    text += chunk;
  });
  const ended = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  socket.write("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  await inHandler;
  await Promise.all([app.close(), ended]);

  const [first, second] = text.split(/(?=HTTP\/1\.1 )/);
  assert.match(first ?? "", /^HTTP\/1\.1 200 /);
  assert.match(second ?? "", /^HTTP\/1\.1 503 /);
  const body = JSON.parse((second ?? "").slice((second ?? "").indexOf("\r\n\r\n") + 4)) as Record<
    string,
    unknown
  >;
  assert.deepEqual(body, {
    status: 503,
    title: "Service unavailable",
    body: "The server is shutting down; retry later.",
  });
});
