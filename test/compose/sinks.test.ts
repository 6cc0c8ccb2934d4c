/**
 * Publish targets from the setup (DESIGN 2 `gateway.publish`): `vigil up` always feeds its hub
 * through the in-process bus; a standalone gateway refuses `memory` with the fix instead of
 * ignoring it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { MemoryBus } from "../../src/bus/memory-bus.js";
import { createSinks } from "../../src/compose/sinks.js";

const logger = pino({ level: "silent" });

describe("createSinks", () => {
  test("vigil up: the in-process bus first, then the file target; `memory` is not doubled", async () => {
    const sinks = createSinks([{ kind: "memory" }, { kind: "file", path: "out.ndjson" }], {
      dataDir: "/tmp/vigil-sinks",
      memoryBus: new MemoryBus(logger),
      logger,
    });
    assert.deepEqual(
      sinks.map((s) => s.name),
      ["memory", "file:/tmp/vigil-sinks/out.ndjson"],
    );
    for (const sink of sinks) await sink.close();
  });

  test("a standalone gateway refuses a memory target and names the fix", () => {
    assert.throws(
      () => createSinks([{ kind: "memory" }], { dataDir: "/tmp", logger }),
      /standalone gateway cannot reach a hub that way: publish to `nats/,
    );
  });
});
