import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SerialQueue } from "../../../src/hub/store/serial-queue.js";

describe("SerialQueue", () => {
  it("runs tasks one after another and says when it has one", async () => {
    const queue = new SerialQueue();
    assert.equal(queue.busy, false);
    const order: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = queue.run(async () => {
      await held;
      order.push("first");
    });
    const second = queue.run(async () => {
      order.push("second");
      throw new Error("second fails");
    });
    const third = queue.run(async () => order.push("third"));
    assert.equal(queue.busy, true);
    release();
    await first;
    await assert.rejects(second, /second fails/);
    await third;
    await queue.idle();
    assert.deepEqual(order, ["first", "second", "third"]);
    assert.equal(queue.busy, false, "a failed task does not leave the queue busy");
  });
});
