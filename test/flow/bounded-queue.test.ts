/**
 * The bounded queue (src/flow/bounded-queue.ts): bounds by count and bytes, batches from the head,
 * waiters for room. No wall-clock assertions: waiters are resolved by the queue's events, and the
 * one timeout is observed only as having fired.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BoundedQueue } from "../../src/flow/bounded-queue.js";

/** Whether `promise` has settled after the pending microtasks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe("BoundedQueue", () => {
  test("has room below its count bound, and never refuses an item past it", () => {
    const queue = new BoundedQueue<number>({ maxItems: 3 });
    queue.pushAll([1, 2]);
    assert.equal(queue.hasRoom, true);
    queue.push(3);
    assert.equal(queue.hasRoom, false);
    queue.push(4);
    assert.equal(queue.length, 4);
    assert.equal(queue.capacity, 3);
  });

  test("has room below its byte bound", () => {
    const queue = new BoundedQueue<string>({ maxItems: 100, maxBytes: 10 });
    queue.push("a", 6);
    assert.equal(queue.hasRoom, true);
    queue.push("b", 4);
    assert.equal(queue.bytes, 10);
    assert.equal(queue.hasRoom, false);
    queue.take(1);
    assert.equal(queue.bytes, 4);
    assert.equal(queue.hasRoom, true);
  });

  test("says which bound it is at, the count's before the bytes'", () => {
    const queue = new BoundedQueue<string>({ maxItems: 2, maxBytes: 10 });
    assert.equal(queue.boundReached, undefined);
    queue.push("a", 12);
    assert.deepEqual(queue.boundReached, { bound: "bytes", limit: 10 });
    queue.push("b", 1);
    assert.deepEqual(queue.boundReached, { bound: "items", limit: 2 });
    queue.take(2);
    assert.equal(queue.boundReached, undefined);
  });

  test("takes batches in order, by count and by target bytes, the first item whatever its size", () => {
    const queue = new BoundedQueue<string>({ maxItems: 100 });
    for (const [item, bytes] of [
      ["a", 50],
      ["b", 50],
      ["c", 50],
      ["d", 500],
      ["e", 1],
    ] as const) {
      queue.push(item, bytes);
    }
    assert.deepEqual(queue.take(2), ["a", "b"]);
    assert.deepEqual(queue.take(10, 40), ["c"]);
    assert.deepEqual(queue.take(10, 40), ["d"]);
    assert.deepEqual(queue.take(10, 40), ["e"]);
    assert.deepEqual(queue.take(10), []);
    assert.equal(queue.bytes, 0);
  });

  test("keeps order across its compaction of taken items", () => {
    const queue = new BoundedQueue<number>({ maxItems: 1_000_000 });
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 50; round += 1) {
      for (let i = 0; i < 997; i += 1) queue.push(next++, 1);
      for (const item of queue.take(700)) assert.equal(item, expected++);
    }
    for (const item of queue.take(Number.MAX_SAFE_INTEGER)) assert.equal(item, expected++);
    assert.equal(expected, next);
    assert.equal(queue.length, 0);
    assert.equal(queue.bytes, 0);
  });

  test("counts the items its consumer holds against the bound", () => {
    let held = 0;
    const queue = new BoundedQueue<number>({ maxItems: 4, held: () => held });
    queue.pushAll([1, 2, 3]);
    held = queue.take(2).length;
    assert.equal(queue.size, 3);
    queue.push(4);
    assert.equal(queue.hasRoom, false);
    held = 0;
    assert.equal(queue.hasRoom, true);
  });

  test("a waiter for room wakes at the notify after a take made room", async () => {
    const queue = new BoundedQueue<number>({ maxItems: 2 });
    queue.pushAll([1, 2]);
    const room = queue.whenRoom();
    assert.equal(queue.waiting, 1);
    assert.equal(await settled(room), false);
    queue.take(1);
    assert.equal(await settled(room), false);
    queue.notify();
    assert.equal(await settled(room), true);
    assert.equal(queue.waiting, 0);
  });

  test("a waiter for room wakes after the queue is cleared, and clear says how many it dropped", async () => {
    const queue = new BoundedQueue<number>({ maxItems: 2, maxBytes: 100 });
    queue.push(1, 10);
    queue.push(2, 10);
    const room = queue.whenRoom();
    assert.equal(queue.clear(), 2);
    assert.equal(queue.bytes, 0);
    queue.notify();
    assert.equal(await settled(room), true);
  });

  test("a waiter whose room depends on held items wakes on notify, not before", async () => {
    let held = 2;
    const queue = new BoundedQueue<number>({ maxItems: 2, held: () => held });
    const room = queue.whenRoom();
    queue.notify();
    assert.equal(await settled(room), false);
    held = 1;
    queue.notify();
    assert.equal(await settled(room), true);
  });

  test("a waiter with a timeout resolves at the timeout without room", async () => {
    const queue = new BoundedQueue<number>({ maxItems: 1 });
    queue.push(1);
    await queue.whenRoom(1);
    assert.equal(queue.hasRoom, false);
    assert.equal(queue.waiting, 0);
  });

  test("close wakes every waiter and answers later ones at once", async () => {
    const queue = new BoundedQueue<number>({ maxItems: 1 });
    queue.push(1);
    const first = queue.whenRoom();
    const second = queue.whenRoom(60_000);
    queue.close();
    assert.equal(await settled(first), true);
    assert.equal(await settled(second), true);
    assert.equal(await settled(queue.whenRoom()), true);
    assert.equal(queue.waiting, 0);
  });

  test("with room, whenRoom resolves at once", async () => {
    const queue = new BoundedQueue<number>({ maxItems: 1 });
    assert.equal(await settled(queue.whenRoom()), true);
  });
});
