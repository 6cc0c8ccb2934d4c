/**
 * A stream passes its messages on byte for byte (DESIGN 3.4, seed B rule 8): through a real socket
 * and the probe's own HTTP stack (its raw-body parser, the stream routes), what a consumer takes is
 * exactly what was PUT: binary, empty, 1 MiB, a UTF-8 BOM, bytes that are not UTF-8, and random
 * bodies (fast-check). Also the StreamBuffer's bookkeeping with several consumers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import type { ProbeSetup } from "../../src/config/setup.js";
import { createHttpApp, listen } from "../../src/http/server.js";
import type { Change } from "../../src/link/protocol.js";
import { DEFAULT_PROBE_LIMITS } from "../../src/probe/app.js";
import { ManualScheduler } from "../../src/probe/fkm/sample-scheduler.js";
import { SamplerRegistry } from "../../src/probe/sampler-registry.js";
import { ProbeStreams } from "../../src/probe/streams/probe-streams.js";
import { StreamBuffer } from "../../src/probe/streams/stream-buffer.js";
import { registerStreamRoutes } from "../../src/probe/streams/stream-routes.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api, bufferSize: 100 }
`).probes[0] as ProbeSetup;

const registry = new SamplerRegistry(setup);
const submitted: Change[] = [];
const streams = new ProbeStreams({
  registry,
  setup,
  submit: (changes) => submitted.push(...changes),
  limits: () => DEFAULT_PROBE_LIMITS,
  logger: pino({ level: "silent" }),
  scheduler: new ManualScheduler(),
});
const sampler = registry.resolve("me1", "s1");
const reader = {};
streams.addConsumer(sampler, "bytes", reader);

let app: FastifyInstance;
let base = "";
before(async () => {
  app = createHttpApp({ logger: pino({ level: "silent" }) });
  // The probe's body handling (src/probe/app.ts): every body raw, whatever the Content-Type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
  registerStreamRoutes(app, {
    registry,
    streams,
    checkNames: () => undefined,
    ingest: (handler) => async (request, reply) => handler(request, reply),
  });
  base = await listen(app, 0, "127.0.0.1");
});
after(() => app.close());

async function roundTrip(body: Uint8Array, contentType?: string): Promise<Buffer> {
  const response = await fetch(`${base}/v1/managedEntity/me1/sampler/s1/stream/bytes`, {
    method: "PUT",
    body,
    ...(contentType === undefined ? {} : { headers: { "content-type": contentType } }),
  });
  assert.equal(response.status, 200, await response.text());
  const taken = streams.take(sampler, "bytes", reader);
  assert.equal(taken.length, 1);
  return (taken[0] as { body: Buffer }).body;
}

describe("byte-exact stream round trips over a real socket", () => {
  const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
  const mib = Uint8Array.from({ length: 1024 * 1024 }, (_, i) => (i * 7919 + (i >> 8)) & 0xff);
  const cases: [string, Uint8Array, string | undefined][] = [
    ["every byte value, no Content-Type", everyByte, undefined],
    ["every byte value as application/json", everyByte, "application/json"],
    ["an empty body", new Uint8Array(0), "text/plain"],
    ["1 MiB of binary", mib, "application/octet-stream"],
    ["a UTF-8 BOM and CRLF", Buffer.from("\uFEFFline one\r\nline two\r\n"), "text/plain; charset=utf-8"],
    ["bytes that are not UTF-8", Uint8Array.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80]), "text/plain"],
  ];
  for (const [what, body, contentType] of cases) {
    test(what, async () => {
      const got = await roundTrip(body, contentType);
      assert.ok(got.equals(body), `${what}: ${got.length} bytes back for ${body.length}`);
    });
  }

  test("random bodies come back unchanged (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), async (body) => {
        const got = await roundTrip(body, "application/octet-stream");
        return got.equals(body);
      }),
      { numRuns: 60 },
    );
  });
});

describe("StreamBuffer", () => {
  const message = (n: number) => ({ body: Buffer.from(String(n)), at: n });
  const bodies = (list: { body: Buffer }[]) => list.map((m) => m.body.toString());

  test("without a consumer every message is counted and purged at once, none lost", () => {
    const buffer = new StreamBuffer("s", 2);
    for (let i = 0; i < 5; i += 1) buffer.push(message(i));
    assert.deepEqual(buffer.counters(), {
      name: "s",
      currentBufferSize: 0,
      maxBufferSize: 2,
      totalMessagesReceived: 5,
      totalMessagesLost: 0,
    });
  });

  test("full: the oldest is dropped and counted lost", () => {
    const buffer = new StreamBuffer<object>("s", 2);
    const c = {};
    buffer.addConsumer(c);
    for (let i = 0; i < 5; i += 1) buffer.push(message(i));
    assert.equal(buffer.counters().totalMessagesLost, 3);
    assert.deepEqual(bodies(buffer.take(c)), ["3", "4"]);
    assert.equal(buffer.size, 0);
  });

  test("two consumers each see every message; a message leaves once both took it", () => {
    const buffer = new StreamBuffer<object>("s", 10);
    const a = {};
    const b = {};
    buffer.addConsumer(a);
    buffer.addConsumer(b);
    buffer.push(message(1));
    buffer.push(message(2));
    assert.deepEqual(bodies(buffer.take(a)), ["1", "2"]);
    assert.equal(buffer.size, 2);
    buffer.push(message(3));
    assert.deepEqual(bodies(buffer.take(b)), ["1", "2", "3"]);
    assert.equal(buffer.size, 1);
    assert.deepEqual(bodies(buffer.take(a)), ["3"]);
    assert.equal(buffer.size, 0);
  });

  test("a consumer that goes releases what only it waited for; the last one gone empties the buffer", () => {
    const buffer = new StreamBuffer<object>("s", 10);
    const a = {};
    const b = {};
    buffer.addConsumer(a);
    buffer.addConsumer(b);
    buffer.push(message(1));
    buffer.take(a);
    buffer.removeConsumer(b);
    assert.equal(buffer.size, 0);
    buffer.push(message(2));
    buffer.removeConsumer(a);
    assert.equal(buffer.size, 0);
    assert.equal(buffer.counters().totalMessagesLost, 0);
  });

  test("shrinking drops the oldest and counts them lost; a long run keeps the counters exact", () => {
    const buffer = new StreamBuffer<object>("s", 1000);
    const c = {};
    buffer.addConsumer(c);
    for (let i = 0; i < 10_000; i += 1) {
      buffer.push(message(i));
      if (i % 3000 === 2999) buffer.take(c);
    }
    assert.equal(buffer.size, 1000);
    buffer.resize(10);
    assert.deepEqual(
      bodies(buffer.take(c)),
      Array.from({ length: 10 }, (_, i) => String(9990 + i)),
    );
    const counters = buffer.counters();
    assert.equal(counters.totalMessagesReceived, 10_000);
    // Each of the 3 runs of 3000 pushes between takes overflows 1000 by 2000; the last 1000 fit;
    // the shrink then loses 990.
    assert.equal(counters.totalMessagesLost, 3 * 2000 + 990);
  });
});
