/**
 * readBodyBuffer (src/http/body-buffer.ts): a body read into one buffer as it arrives gives the
 * bytes sent, however they are cut into chunks, with a Content-Length or without; and refuses as
 * Fastify's own reader does: 413 past the limit, 400 for a body shorter or longer than its length or
 * a stream that fails; and 503 when the buffer for a length cannot be allocated.
 */
import assert from "node:assert/strict";
import { PassThrough, Readable } from "node:stream";
import { describe, test } from "node:test";
import fc from "fast-check";
import { VigilError } from "../../src/errors/catalog.js";
import { readBodyBuffer } from "../../src/http/body-buffer.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";

/** What readBodyBuffer hands to `done` for `payload`. */
function read(payload: Readable, declared: string | undefined, limit: number) {
  return new Promise<{
    error: (Error & { code?: string; statusCode?: number }) | null;
    body: Buffer | undefined;
  }>((resolve) => {
    readBodyBuffer(payload, declared, limit, (error, body) => resolve({ error, body }));
  });
}

const chunked = (parts: Uint8Array[]): Readable => Readable.from(parts.map((p) => Buffer.from(p)));

describe("readBodyBuffer", () => {
  test("property: the bytes sent, whatever their chunks, with a Content-Length or without", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 12 }),
        fc.boolean(),
        async (parts, withLength) => {
          const sent = Buffer.concat(parts.map((p) => Buffer.from(p)));
          const { error, body } = await read(
            chunked(parts),
            withLength ? String(sent.length) : undefined,
            1 << 20,
          );
          assert.equal(error, null);
          assert.ok(body?.equals(sent));
        },
      ),
      fuzzBudget(200),
    );
  });

  test("a Content-Length over the limit is a 413 before anything is read or allocated", async () => {
    const payload = new PassThrough();
    const { error } = await read(payload, String(2 ** 40), 1000);
    assert.equal(error?.code, "FST_ERR_CTP_BODY_TOO_LARGE");
    assert.equal(error?.statusCode, 413);
    assert.equal(payload.listenerCount("data"), 0);
  });

  test("a body without a length that grows past the limit is a 413, and reading stops", async () => {
    const payload = new PassThrough();
    const answer = read(payload, undefined, 1000);
    payload.write(Buffer.alloc(600));
    payload.write(Buffer.alloc(600));
    const { error } = await answer;
    assert.equal(error?.code, "FST_ERR_CTP_BODY_TOO_LARGE");
    assert.equal(payload.listenerCount("data"), 0);
  });

  test("a body shorter or longer than its Content-Length is a 400", async () => {
    for (const [declared, parts] of [
      ["10", [Buffer.from("12345")]],
      ["4", [Buffer.from("123"), Buffer.from("45")]],
    ] as const) {
      const { error } = await read(Readable.from(parts), declared, 1000);
      assert.equal(error?.code, "FST_ERR_CTP_INVALID_CONTENT_LENGTH", declared);
      assert.equal(error?.statusCode, 400);
    }
  });

  test("a stream that fails is a 400 with its error", async () => {
    const payload = new PassThrough();
    const answer = read(payload, "100", 1000);
    payload.write(Buffer.from("abc"));
    payload.destroy(new Error("aborted"));
    const { error, body } = await answer;
    assert.equal(error?.message, "aborted");
    assert.equal(error?.statusCode, 400);
    assert.equal(body, undefined);
  });

  test("a Content-Length within the limit that cannot be allocated is a 503 with Retry-After", async () => {
    const { error } = await read(new PassThrough(), String(2 ** 52), Number.POSITIVE_INFINITY);
    assert.ok(error instanceof VigilError, String(error));
    assert.equal(error.code, "SERVICE_UNAVAILABLE");
    assert.equal(error.status, 503);
    assert.deepEqual(error.headers, { "Retry-After": "1" });
  });

  test("an empty body, with a length of 0 or none, is an empty buffer", async () => {
    for (const declared of ["0", undefined]) {
      const { error, body } = await read(Readable.from([]), declared, 1000);
      assert.equal(error, null);
      assert.equal(body?.length, 0);
    }
  });
});
