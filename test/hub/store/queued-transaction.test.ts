import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { QueuedTransaction } from "../../../src/hub/store/queued-transaction.js";
import { StoreDataError } from "../../../src/hub/store/store.js";

/** A transaction whose calls are plain tasks, to watch what runs. */
class Tasks extends QueuedTransaction {
  readonly ran: string[] = [];

  call(name: string, fail?: Error): Promise<string> {
    return this.run(async () => {
      this.ran.push(name);
      if (fail !== undefined) throw fail;
      return name;
    });
  }
}

describe("QueuedTransaction", () => {
  it("runs nothing after a failure: the calls behind it fail with that error", async () => {
    const tx = new Tasks();
    const broken = new Error("BEGIN failed");
    const first = tx.call("begin", broken);
    const second = tx.call("claim");
    const third = tx.call("write");
    await assert.rejects(first, (e) => e === broken);
    await assert.rejects(second, (e) => e === broken);
    await assert.rejects(third, (e) => e === broken);
    await tx.finish();
    assert.deepEqual(tx.ran, ["begin"]);
    assert.equal(tx.failure?.error, broken);
  });

  it("goes on after a StoreDataError, which leaves the transaction clean", async () => {
    const tx = new Tasks();
    await assert.rejects(tx.call("refused", new StoreDataError("a bad cell")), StoreDataError);
    assert.equal(await tx.call("next"), "next");
    await tx.finish();
    assert.deepEqual(tx.ran, ["refused", "next"]);
    assert.equal(tx.failure, undefined);
  });

  it("refuses calls after the end", async () => {
    const tx = new Tasks();
    await tx.finish();
    await assert.rejects(tx.call("late"), /already ended/);
    assert.deepEqual(tx.ran, []);
  });
});
