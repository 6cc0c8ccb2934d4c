/**
 * The benches' load client (bench/load.ts) against small `node:http` servers on 127.0.0.1: every
 * request is answered and counted once, statuses and failure bodies are kept, a server that closes
 * its connections is followed on new ones, and an answer the client does not read (chunked, no
 * Content-Length) counts as an error instead of being misread. Bounded by request count; nothing
 * is timed.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, test } from "node:test";
import { type LoadPlan, load } from "../../bench/load.js";

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const servers: ReturnType<typeof createServer>[] = [];
after(() => {
  for (const server of servers) server.closeAllConnections();
  for (const server of servers) server.close();
});

/** A server answering each request through `handler` once its body has been read. */
async function serve(handler: Handler): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handler(req, Buffer.concat(chunks).toString("utf8"), res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Answers `text` with its Content-Length, as Fastify does. */
function answer(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  const body = Buffer.from(text);
  res.writeHead(status, { "content-type": "application/json", "content-length": body.length, ...headers });
  res.end(body);
}

const plan = (base: string): LoadPlan => ({
  base,
  method: "PUT",
  requests: [
    { path: "/a?x=1", body: Buffer.from('{"n":1}') },
    { path: "/b", body: Buffer.from('{"n":"ü"}') },
  ],
});
const options = { seconds: 30, concurrency: 4, maxRequests: 200 };

describe("load()", () => {
  test("sends every request of the plan in turn, each with its body, and counts the answers", async () => {
    const seen = new Map<string, number>();
    const base = await serve((req, body, res) => {
      const key = `${req.method} ${req.url} ${req.headers["content-type"]} ${body}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      answer(res, 200, "{}");
    });
    const result = await load(plan(base), options);
    assert.equal(result.requests, 200);
    assert.equal(result.ok, 200);
    assert.equal(result.failures, 0);
    assert.deepEqual(result.statuses, { "200": 200 });
    assert.deepEqual([...seen].sort(), [
      ['PUT /a?x=1 application/json {"n":1}', 100],
      ['PUT /b application/json {"n":"ü"}', 100],
    ]);
    assert.ok(result.latencyMs.max > 0);
  });

  test("keeps the statuses and the bodies of refusals, digits blanked", async () => {
    let n = 0;
    const base = await serve((_req, _body, res) => {
      n += 1;
      if (n % 4 === 0) answer(res, 503, `{"title":"Backlog","detail":"${n} changes, limit 20000"}`);
      else answer(res, 200, "{}");
    });
    const result = await load(plan(base), options);
    assert.deepEqual(result.statuses, { "200": 150, "503": 50 });
    assert.equal(result.ok, 150);
    assert.equal(result.failures, 50);
    assert.deepEqual(result.failureBodies, { '{"title":"Backlog","detail":"N changes, limit N"}': 50 });
  });

  test("follows a server that closes each connection after its answer", async () => {
    const base = await serve((_req, _body, res) => answer(res, 200, "{}", { connection: "close" }));
    const result = await load(plan(base), options);
    assert.deepEqual(result.statuses, { "200": 200 });
  });

  test("counts an answer without a Content-Length as an error, and goes on with the next request", async () => {
    let n = 0;
    const base = await serve((_req, _body, res) => {
      n += 1;
      if (n % 2 === 0) answer(res, 200, "{}");
      else {
        res.writeHead(200, { "content-type": "application/json" }); // chunked
        res.end("{}");
      }
    });
    const result = await load(plan(base), options);
    assert.equal(result.requests, 200);
    assert.equal(result.ok, 100);
    assert.deepEqual(result.statuses, { "200": 100, error: 100 });
  });

  test("counts a connection the server drops mid-answer as an error", async () => {
    let n = 0;
    const base = await serve((_req, _body, res) => {
      n += 1;
      if (n % 5 === 0) res.socket?.destroy();
      else answer(res, 200, "{}");
    });
    const result = await load(plan(base), options);
    assert.equal(result.requests, 200);
    assert.deepEqual(result.statuses, { "200": 160, error: 40 });
  });

  test("refuses any target but 127.0.0.1", async () => {
    await assert.rejects(load(plan("http://localhost:1"), options), /127\.0\.0\.1/);
  });
});
