/** The credit window (src/flow/credit-window.ts): cumulative acks, batches settling in any order. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CreditWindow } from "../../src/flow/credit-window.js";

describe("CreditWindow", () => {
  test("has credit until `credit` batches are in flight; no credit before it is set", () => {
    const window = new CreditWindow();
    assert.equal(window.hasCredit, false);
    window.setCredit(2);
    assert.equal(window.credit, 2);
    assert.equal(window.open(3), 1);
    assert.equal(window.hasCredit, true);
    assert.equal(window.open(4), 2);
    assert.equal(window.hasCredit, false);
    assert.equal(window.batches, 2);
    assert.equal(window.units, 7);
  });

  test("a cumulative ack ends every batch up to its sequence number", () => {
    const window = new CreditWindow(4);
    for (const units of [1, 2, 3, 4]) window.open(units);
    assert.equal(window.ackThrough(3), 3);
    assert.equal(window.batches, 1);
    assert.equal(window.units, 4);
    assert.equal(window.ackThrough(4), 1);
    assert.equal(window.batches, 0);
    assert.equal(window.units, 0);
  });

  test("an ack of a batch not in flight is refused and changes nothing", () => {
    const window = new CreditWindow(4);
    assert.equal(window.ackThrough(1), -1);
    window.open(1);
    window.open(1);
    assert.equal(window.ackThrough(3), -1);
    assert.equal(window.ackThrough(1), 1);
    assert.equal(window.ackThrough(1), -1);
    assert.equal(window.batches, 1);
  });

  test("batches settle in any order", () => {
    const window = new CreditWindow(3);
    const a = window.open(10);
    const b = window.open(20);
    const c = window.open(30);
    window.settle(b);
    assert.equal(window.units, 40);
    assert.equal(window.hasCredit, true);
    window.settle(b);
    assert.equal(window.units, 40);
    window.settle(c);
    window.settle(a);
    assert.equal(window.batches, 0);
    assert.equal(window.units, 0);
  });

  test("clear forgets the batches in flight and gives back their units; numbering goes on", () => {
    const window = new CreditWindow(2);
    window.open(5);
    window.open(6);
    assert.equal(window.clear(), 11);
    assert.equal(window.batches, 0);
    assert.equal(window.hasCredit, true);
    assert.equal(window.open(1), 3);
  });
});
