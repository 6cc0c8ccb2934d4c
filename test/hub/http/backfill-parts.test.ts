/**
 * `POST /v0/messages` commits a body in parts: the next part is parsed and checked while
 * the store commits the previous one. Over a real in-memory DuckDB store, with parts of 3 messages:
 * rejections keep their index in the body, duplicates are found across parts, an outage in a later
 * part answers 503 and sending the body again stores every message once. Also the shortcuts the
 * backfill path takes: the lone-surrogate walk skipped only for text that cannot hold one, and the
 * digest of a message without an id unchanged; the body read as it arrives, chunked or of a given
 * length, with 413 past the limit; and at most two backfills admitted, before their bodies are read.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { type ClientRequest, request } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { MEMORY_CHECK_INTERVAL_MS } from "../../../src/config/defaults.js";
import { MemoryProtection } from "../../../src/http/memory-protection.js";
import { createHttpApp } from "../../../src/http/server.js";
import { registerMessageRoutes } from "../../../src/hub/http/messages-routes.js";
import { Ingester, messageKey, wellFormedJsonText } from "../../../src/hub/ingest/ingester.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import type { Store } from "../../../src/hub/store/store.js";
import { withOutageErrors } from "../../../src/hub/store/store-outage.js";
import type { PublicV2Message } from "../../../src/messages/types.js";

const logger = pino({ level: "silent" });
const T0 = Date.UTC(2026, 2, 1);

function table(row: string, value: string, at = T0): PublicV2Message {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: new Date(at).toISOString(),
      target: {
        gateway: "GW",
        probe: "p1",
        managedEntity: "me",
        type: "",
        sampler: "s",
        dataview: "dv",
        row,
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: row, v: value },
    },
  };
}

/** A store whose transaction number `failAt` (counted from 1) fails like a server that went away. */
function flaky(store: Store): { store: Store; failAt: (n: number) => void } {
  let countdown = 0;
  const outage = (): Error => Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
  return {
    store: withOutageErrors({
      ...store,
      transaction: (work) => {
        countdown -= 1;
        if (countdown === 0) return Promise.reject(outage());
        return store.transaction(work);
      },
    }),
    failAt: (n) => {
      countdown = n;
    },
  };
}

const apps: FastifyInstance[] = [];
after(async () => {
  for (const app of apps) await app.close();
});

async function backfillApp() {
  const base = await createDuckDbStore({ path: ":memory:" });
  await base.migrate();
  const { store, failAt } = flaky(base);
  const ingester = new Ingester(store, logger);
  const app = createHttpApp({ logger });
  await registerMessageRoutes(app, ingester, undefined, { partMessages: 3 });
  apps.push(app);
  const post = async (payload: string, contentType = "application/x-ndjson") => {
    const response = await app.inject({
      method: "POST",
      url: "/v0/messages",
      payload,
      headers: { "content-type": contentType },
    });
    return {
      status: response.statusCode,
      retryAfter: response.headers["retry-after"],
      body: response.json() as Record<string, unknown>,
    };
  };
  return { ingester, post, failAt };
}

// Seven lines, parts [0 1 2] [3 4 5] [6]: 1 is not JSON, 4 not public-v2, 6 repeats 0 (a later part).
const lines = [
  JSON.stringify(table("a", "1")),
  "{not json",
  JSON.stringify(table("b", "2")),
  JSON.stringify(table("c", "3")),
  JSON.stringify({ type: "table", operation: "update", data: {} }),
  JSON.stringify(table("d", "4")),
  JSON.stringify(table("a", "1")),
];

describe("POST /v0/messages in parts", () => {
  test("rejections keep their index in the body and a repeat in a later part is a duplicate (NDJSON)", async () => {
    const { post, ingester } = await backfillApp();
    const { status, body } = await post(`${lines.join("\n")}\n`);
    assert.equal(status, 200);
    assert.equal(body.accepted, 5);
    assert.equal(body.duplicates, 1);
    const rejected = body.rejected as { index: number; error: string }[];
    assert.deepEqual(
      rejected.map((r) => r.index),
      [1, 4],
    );
    assert.match(rejected[0]?.error ?? "", /^not JSON: not valid JSON: /);
    assert.match(rejected[1]?.error ?? "", /^not a public-v2 message: /);
    assert.equal(ingester.counts.stored, 4);
  });

  test("a JSON array body is split into the same parts", async () => {
    const { post, ingester } = await backfillApp();
    const messages = lines.map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return "not a message";
      }
    });
    const { status, body } = await post(JSON.stringify(messages), "application/json");
    assert.equal(status, 200);
    assert.deepEqual([body.accepted, body.duplicates], [5, 1]);
    assert.deepEqual(
      (body.rejected as { index: number }[]).map((r) => r.index),
      [1, 4],
    );
    assert.equal(ingester.counts.stored, 4);
  });

  test("an outage in a later part answers 503; sending the body again stores every message once", async () => {
    const { post, failAt, ingester } = await backfillApp();
    const body = `${Array.from({ length: 8 }, (_, i) => JSON.stringify(table(`r${i}`, String(i)))).join("\n")}\n`;
    // Parts [0 1 2] [3 4 5] [6 7]: the first commits, the second fails (the third may be committed).
    failAt(2);
    const first = await post(body);
    assert.equal(first.status, 503);
    assert.equal(first.retryAfter, "1");
    assert.match(JSON.stringify(first.body), /store is unavailable \(ECONNREFUSED\)/);
    const before = ingester.counts.stored;
    assert.ok(before === 3 || before === 5, `stored ${before}`);
    const again = await post(body);
    assert.equal(again.status, 200);
    assert.deepEqual([again.body.accepted, again.body.duplicates, again.body.rejected], [8, before, []]);
    assert.equal(ingester.counts.stored, 8);
  });

  test("a lone surrogate sent as a \\u escape is still rejected", async () => {
    const { post } = await backfillApp();
    const line = JSON.stringify(table("a", "x")).replace('"v":"x"', '"v":"bad \\ud800 text"');
    const { status, body } = await post(`${JSON.stringify(table("b", "1"))}\n${line}\n`);
    assert.equal(status, 200);
    const rejected = body.rejected as { index: number; error: string }[];
    assert.equal(rejected[0]?.index, 1);
    assert.match(rejected[0]?.error ?? "", /lone surrogate\) at \/data\/row\/v/);
  });
});

describe("backfill shortcuts", () => {
  for (const [name, text, expected] of [
    ["plain text", '{"a":"x é ✓ 😀"}', true],
    ["a \\u escape of a surrogate", '{"a":"\\ud800"}', false],
    ["any \\u escape (not looked into)", '{"a":"\\u00e9"}', false],
    ["a lone surrogate in the text itself", '{"a":"\uD800"}', false],
  ] as const) {
    test(`wellFormedJsonText: ${name} → ${expected}`, () => {
      assert.equal(wellFormedJsonText(text), expected);
    });
  }

  test("the digest of a message without an id is the SHA-256 of its JSON text, as before, with its own time", () => {
    const message = table("a", "1.50", T0 + 1234);
    const expected = createHash("sha256").update(JSON.stringify(message)).digest("hex");
    assert.deepEqual(messageKey(undefined, message), { kind: "hash", hash: expected, at: T0 + 1234 });
    // Other messages' time is their timestamp.
    const probe: PublicV2Message = {
      type: "probe",
      operation: "update",
      data: {
        timestamp: "2026-01-01T00:00:02.500+01:00",
        target: { gateway: "GW", probe: "p1" },
        parameters: { osType: "Linux" },
      },
    };
    assert.deepEqual(messageKey(undefined, probe), {
      kind: "hash",
      hash: createHash("sha256").update(JSON.stringify(probe)).digest("hex"),
      at: Date.UTC(2025, 11, 31, 23, 0, 2, 500),
    });
    // An id of another form names the message alone: no time.
    const byId = createHash("sha256").update("id:not-a-gateway-id").digest("hex");
    assert.deepEqual(messageKey("not-a-gateway-id", message), { kind: "hash", hash: byId });
  });
});

/** A backfill app listening on 127.0.0.1, and how many POSTs have reached its hooks so far. */
async function listening(options: { bodyLimit?: number; memory?: MemoryProtection } = {}) {
  const store = await createDuckDbStore({ path: ":memory:" });
  await store.migrate();
  const app = createHttpApp({ logger });
  let arrived = 0;
  // Runs just before the route's own admission, in the same turn.
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.method === "POST") arrived += 1;
    done();
  });
  const limit = options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit };
  await registerMessageRoutes(app, new Ingester(store, logger), options.memory, limit);
  apps.push(app);
  await app.listen({ port: 0, host: "127.0.0.1" });
  return { port: (app.server.address() as AddressInfo).port, store, arrived: () => arrived };
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: Record<string, unknown>;
}

/** A POST to `/v0/messages`, with that Content-Length when `length` is given (chunked otherwise). */
function post(port: number, length?: number): { req: ClientRequest; answer: Promise<Answer> } {
  const headers: Record<string, string> = { "content-type": "application/x-ndjson" };
  if (length !== undefined) headers["content-length"] = String(length);
  const req = request({ host: "127.0.0.1", port, method: "POST", path: "/v0/messages", headers });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        text += d;
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: res.headers["retry-after"],
          body: JSON.parse(text) as Record<string, unknown>,
        }),
      );
    });
    req.on("error", reject);
  });
  answer.catch(() => undefined); // a request destroyed on purpose
  return { req, answer };
}

/** Waits until `condition` holds, polling, for at most `ms`. */
async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("POST /v0/messages reads its body as it arrives (src/http/body-buffer.ts)", () => {
  const LIMIT = 4096;

  /** POSTs `chunks` one write each; with `length`, that Content-Length instead of chunked encoding. */
  function send(port: number, chunks: Buffer[], length?: number): Promise<Answer> {
    const { req, answer } = post(port, length);
    if (chunks.length === 0) req.flushHeaders();
    else {
      for (const chunk of chunks) req.write(chunk);
      req.end();
    }
    return answer;
  }

  test("a chunked body, cut inside lines and inside a character, is stored as sent", async () => {
    const { port, store } = await listening({ bodyLimit: LIMIT });
    const text = [table("é-row", "1"), table("b", "2.50")].map((m) => JSON.stringify(m)).join("\n");
    const bytes = Buffer.from(text);
    const cut = bytes.indexOf(Buffer.from("é")) + 1; // between the two bytes of é
    const answer = await send(port, [bytes.subarray(0, 7), bytes.subarray(7, cut), bytes.subarray(cut)]);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, { accepted: 2, duplicates: 0, rejected: [] });
    const [entity] = await store.listEntities({ includeDeleted: false });
    assert.ok(entity !== undefined);
    const rows = new Set((await store.listSeries(entity.id)).map((s) => s.series.row));
    assert.deepEqual([...rows].sort(), ["b", "é-row"]);
  });

  test("a body of exactly its Content-Length, in many writes, is stored", async () => {
    const { port } = await listening({ bodyLimit: LIMIT });
    const bytes = Buffer.from(`${JSON.stringify(table("a", "7"))}\n`);
    const parts = Array.from({ length: Math.ceil(bytes.length / 10) }, (_, i) =>
      bytes.subarray(i * 10, i * 10 + 10),
    );
    const answer = await send(port, parts, bytes.length);
    assert.deepEqual(answer.body, { accepted: 1, duplicates: 0, rejected: [] });
  });

  test("a Content-Length over the limit is a 413 with the error body, answered before the body is sent", async () => {
    const { port } = await listening({ bodyLimit: LIMIT });
    const answer = await send(port, [], LIMIT + 1);
    assert.equal(answer.status, 413);
    assert.deepEqual(Object.keys(answer.body).sort(), ["body", "status", "title"]);
    assert.equal(answer.body.status, 413);
  });

  test("a chunked body that grows past the limit is a 413 with the error body", async () => {
    const { port } = await listening({ bodyLimit: LIMIT });
    const line = Buffer.from(`${JSON.stringify(table("a", "7"))}\n`);
    const chunks = Array.from({ length: Math.ceil((LIMIT * 2) / line.length) }, () => line);
    const answer = await send(port, chunks);
    assert.equal(answer.status, 413);
    assert.equal(answer.body.status, 413);
  });
});

describe("POST /v0/messages admits at most MAX_CONCURRENT_BACKFILLS bodies, before reading them", () => {
  const line = Buffer.from(`${JSON.stringify(table("a", "7"))}\n`);

  /** NDJSON of `n` messages of row `row`, each its own. */
  const lines = (row: string, n: number): Buffer =>
    Buffer.from(Array.from({ length: n }, (_, i) => `${JSON.stringify(table(row, String(i)))}\n`).join(""));

  /**
   * A POST of `bytes` whose first `sent` bytes are written now (with `length`, that Content-Length
   * instead: the body is never sent whole).
   */
  function open(port: number, bytes: Buffer, sent: number, length = bytes.length) {
    const { req, answer } = post(port, length);
    if (sent > 0) req.write(bytes.subarray(0, sent));
    else req.flushHeaders();
    return { req, answer, finish: () => req.end(bytes.subarray(sent)) };
  }

  /** Polls until a new POST of one line is admitted (a place was freed) or `tries` run out. */
  async function admittedSoon(port: number, tries = 500): Promise<Answer> {
    for (let i = 0; ; i++) {
      const { answer, finish } = open(port, line, 0);
      finish();
      const got = await answer;
      if (got.status !== 503 || i >= tries) return got;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  test("a third backfill is a 503 with Retry-After while two bodies are being read; they are then stored", async () => {
    const { port, arrived } = await listening();
    const first = open(port, lines("first", 3), 10);
    const second = open(port, lines("second", 3), 10);
    await until(() => arrived() === 2); // both admitted, their bodies not complete
    const third = open(port, line, 0, 1_000_000); // headers only: refused before its body is sent
    const refused = await third.answer;
    assert.equal(refused.status, 503);
    assert.equal(refused.retryAfter, "1");
    assert.match(String(refused.body.body), /2 backfills are running/);
    third.req.destroy();
    first.finish();
    second.finish();
    assert.deepEqual((await first.answer).body, { accepted: 3, duplicates: 0, rejected: [] });
    assert.deepEqual((await second.answer).body, { accepted: 3, duplicates: 0, rejected: [] });
    assert.equal((await admittedSoon(port)).status, 200);
  });

  test("clients that go away while sending free their places", async () => {
    const { port, arrived } = await listening();
    const gone = [open(port, lines("a", 3), 10), open(port, lines("b", 3), 10)];
    await until(() => arrived() === 2);
    const meanwhile = open(port, line, 0);
    meanwhile.finish();
    assert.equal((await meanwhile.answer).status, 503);
    for (const g of gone) g.req.destroy();
    const after = await admittedSoon(port);
    assert.equal(after.status, 200, JSON.stringify(after.body));
  });

  test("a hub over its memory threshold refuses a backfill before reading its body", async () => {
    let rss = 900 * 1024 * 1024;
    const memory = new MemoryProtection(
      "hub",
      () => ({ limitMb: 1000, ratio: 0.5 }),
      () => rss,
    );
    const { port } = await listening({ memory });
    const refused = await open(port, line, 0, 1_000_000).answer;
    assert.equal(refused.status, 503);
    assert.equal(refused.retryAfter, "1");
    rss = 100 * 1024 * 1024;
    await new Promise((r) => setTimeout(r, MEMORY_CHECK_INTERVAL_MS + 10)); // the RSS is read again
    assert.equal((await admittedSoon(port)).status, 200);
  });
});
