import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import {
  NATIVE_BYTES_PER_VALUE,
  NATIVE_COLLECT_WITHIN_ANSWER,
  NativeResultMemory,
} from "../../../src/hub/store/duckdb/duckdb-native-memory.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import type { SampleInput } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { fullCollection, idleCollection } from "../../../src/memory/full-collection.js";

const MIB = 1024 * 1024;

/** A NativeResultMemory whose collections are counted, with a fixed live heap. */
function counted(heapBytes: number, minBytes = 32 * MIB) {
  const calls = { n: 0 };
  const memory = new NativeResultMemory(
    () => {
      calls.n += 1;
    },
    () => heapBytes,
    minBytes,
  );
  return { memory, calls };
}

/** Values whose counted bytes are `bytes`. */
const valuesOf = (bytes: number) => Math.ceil(bytes / NATIVE_BYTES_PER_VALUE);

describe("native result memory", () => {
  it("collects once an answer has been read when its results passed the bar, and counts again from zero", async () => {
    const { memory, calls } = counted(10 * MIB);
    memory.release(valuesOf(20 * MIB));
    memory.release(valuesOf(13 * MIB));
    assert.equal(calls.n, 0, "not within the answer below four times the bar");
    memory.answered();
    assert.equal(calls.n, 0, "on the next turn of the event loop, not inside the read");
    await nextTurn();
    assert.equal(calls.n, 1);
    assert.equal(memory.collections, 1);
    memory.release(valuesOf(31 * MIB));
    memory.answered();
    await nextTurn();
    assert.equal(calls.n, 1, "the count starts again after a collection");
  });

  it("does not collect below the least bytes or below the live heap", async () => {
    const small = counted(10 * MIB);
    small.memory.release(valuesOf(31 * MIB));
    small.memory.answered();
    await nextTurn();
    assert.equal(small.calls.n, 0);

    const bigHeap = counted(100 * MIB);
    bigHeap.memory.release(valuesOf(90 * MIB));
    bigHeap.memory.answered();
    await nextTurn();
    assert.equal(bigHeap.calls.n, 0, "90 MiB of results against a live heap of 100 MB");
    bigHeap.memory.release(valuesOf(20 * MIB));
    bigHeap.memory.answered();
    await nextTurn();
    assert.equal(bigHeap.calls.n, 1);
  });

  it("collects within a long answer once its results pass four times the bar, once per turn", async () => {
    const { memory, calls } = counted(10 * MIB);
    const bar = NATIVE_COLLECT_WITHIN_ANSWER * 32 * MIB;
    memory.release(valuesOf(bar - MIB));
    await nextTurn();
    assert.equal(calls.n, 0);
    memory.release(valuesOf(2 * MIB));
    memory.release(valuesOf(bar));
    memory.answered();
    await nextTurn();
    assert.equal(calls.n, 1, "one collection asked for, however often the bar is passed before it runs");
  });

  it("without a collection counts nothing and asks for none", async () => {
    const memory = new NativeResultMemory(null, () => 0, 1);
    memory.release(1_000_000);
    memory.answered();
    await nextTurn();
    assert.equal(memory.collections, 0);
  });

  it("the DuckDB store counts its metric answers' values", async () => {
    const calls = { n: 0 };
    // A bar of one byte: any answer read asks for a collection.
    const nativeResultMemory = new NativeResultMemory(
      () => {
        calls.n += 1;
      },
      () => 0,
      1,
    );
    const store = await createDuckDbStore({ path: ":memory:", nativeResultMemory });
    try {
      await store.migrate();
      const entity = { gateway: "gw", probe: "p", managedEntity: "me" };
      const at = Date.UTC(2024, 4, 1);
      const samples = Array.from(
        { length: 20 },
        (_, i): SampleInput => ({
          entity,
          series: { sampler: "cpu", samplerType: "linux", dataview: "cpu", row: "r", column: "util" },
          at: asEpochMs(at + i * 1000),
          text: String(i),
          value: i,
        }),
      );
      await store.ingest({ entities: [], samples });
      const rows = await store.queryMetrics({
        entities: await store.listEntities({ includeDeleted: false }),
        from: asEpochMs(at),
        to: asEpochMs(at + 60_000),
        zone: "UTC",
        bucket: { kind: "minutes", minutes: 1 },
        metrics: [
          {
            identifier: "m",
            include: [{ sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" }],
          },
        ],
        aggregations: [{ label: "n", name: "svc.count" }],
        grouping: [],
        timeWindows: [],
      });
      assert.equal(rows.length, 1);
      await nextTurn();
      assert.equal(calls.n, 1);
    } finally {
      await store.close();
    }
  });
});

describe("full collection", () => {
  it("collects this thread's heap without making gc a global", async () => {
    const before = typeof (globalThis as { gc?: unknown }).gc;
    const collect = fullCollection();
    assert.ok(collect !== undefined);
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, before);
    const ref = (() => new WeakRef({ garbage: new Array(1000).fill(1) }))();
    // A WeakRef's target is kept until the job that made it ends.
    await nextTurn();
    collect();
    assert.equal(ref.deref(), undefined);
  });

  it("idle collection runs once after the wait, however often it was touched, and stop cancels it", async () => {
    let calls = 0;
    let ran: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      ran = resolve;
    });
    const idle = idleCollection(() => {
      calls += 1;
      ran();
    }, 5);
    // The wait's timer does not hold the event loop open (a worker with nothing to do may end).
    const open = setInterval(() => undefined, 1000);
    idle.touch();
    idle.touch();
    idle.touch();
    await done;
    await sleep(30);
    assert.equal(calls, 1);

    const stopped = idleCollection(() => {
      calls += 1;
    }, 5);
    stopped.touch();
    stopped.stop();
    await sleep(30);
    clearInterval(open);
    assert.equal(calls, 1);
  });
});
