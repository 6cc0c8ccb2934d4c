/**
 * How the central error handler (src/http/error-handler.ts) logs what it answers: a 503 (the client
 * is asked to retry: back-pressure, memory protection, a store outage) as one warning with the
 * detail and its cause and no stack; any other 5xx as an error with the whole error; a 4xx as info.
 * The answers themselves are the documented error bodies either way.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import { pino } from "pino";
import { VigilError } from "../../src/errors/catalog.js";
import { installErrorHandling } from "../../src/http/error-handler.js";

async function appLogging() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  const app = Fastify({
    loggerInstance: pino({ level: "info" }, sink) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
  });
  installErrorHandling(app);
  app.get("/busy", () => {
    throw new VigilError(
      "INGEST_BACKLOG",
      { pending: 10, bytes: 4096, limit: "10 changes" },
      { headers: { "Retry-After": "1" }, cause: new Error("link credit spent") },
    );
  });
  app.get("/broken", () => {
    throw new Error("a bug");
  });
  app.get("/bad", () => {
    throw new VigilError("BAD_REQUEST", { detail: "no" });
  });
  await app.ready();
  return { app, lines };
}

describe("error logging", () => {
  test("a 503 is one warning with what the client was told and why, without a stack", async () => {
    const { app, lines } = await appLogging();
    const response = await app.inject({ url: "/busy" });
    assert.equal(response.statusCode, 503);
    assert.equal(response.headers["retry-after"], "1");
    const body = response.json() as { status: number; title: string; body: string };
    assert.equal(body.status, 503);
    const logged = lines.filter((l) => l.msg === "request refused for now");
    assert.equal(logged.length, 1);
    const line = logged[0] as Record<string, unknown>;
    assert.equal(line.level, 40);
    assert.equal(line.code, "INGEST_BACKLOG");
    assert.equal(line.detail, body.body);
    assert.equal(line.cause, "link credit spent");
    assert.equal(line.err, undefined);
    assert.doesNotMatch(JSON.stringify(line), /at .*\.[jt]s:\d+/);
    assert.equal(lines.filter((l) => (l.level as number) >= 50).length, 0);
    await app.close();
  });

  test("another 5xx is an error with the whole error; a 4xx is info", async () => {
    const { app, lines } = await appLogging();
    const broken = await app.inject({ url: "/broken" });
    assert.equal(broken.statusCode, 500);
    assert.doesNotMatch(broken.body, /a bug/);
    const failed = lines.find((l) => l.msg === "request failed") as {
      level: number;
      err: { message: string; stack: string };
    };
    assert.equal(failed.level, 50);
    assert.equal(failed.err.message, "a bug");
    assert.match(failed.err.stack, /error-logging\.test\.ts/);
    assert.equal((await app.inject({ url: "/bad" })).statusCode, 400);
    const rejected = lines.find((l) => l.msg === "request rejected") as { level: number };
    assert.equal(rejected.level, 30);
    await app.close();
  });
});
