/** The capped exponential back-off with jitter (src/flow/backoff.ts). No timers: delays are numbers. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Backoff, backoffDelay } from "../../src/flow/backoff.js";

describe("backoffDelay", () => {
  test("doubles from the first delay and stops at the cap", () => {
    const delays = [0, 1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, { initialMs: 100, maxMs: 5_000 }));
    assert.deepEqual(delays, [100, 200, 400, 800, 1_600, 3_200, 5_000]);
  });

  test("stays at the cap however many attempts failed", () => {
    assert.equal(backoffDelay(1_000, { initialMs: 250, maxMs: 10_000 }), 10_000);
    assert.equal(backoffDelay(Number.MAX_SAFE_INTEGER, { initialMs: 1, maxMs: 7 }), 7);
  });

  test("jitter takes up to its fraction off each delay", () => {
    const options = { initialMs: 100, maxMs: 5_000, jitter: 0.5 };
    assert.equal(backoffDelay(2, { ...options, random: () => 0 }), 400);
    assert.equal(backoffDelay(2, { ...options, random: () => 0.5 }), 300);
    assert.equal(backoffDelay(10, { ...options, random: () => 0.999 }), 5_000 * (1 - 0.5 * 0.999));
  });

  test("jitter stays within [0, delay] whatever the random source says", () => {
    for (const r of [0, 0.25, 0.75, 0.999_999]) {
      const d = backoffDelay(3, { initialMs: 100, maxMs: 5_000, jitter: 1, random: () => r });
      assert.ok(d > 0 && d <= 800, `delay ${d} for random ${r}`);
    }
    assert.equal(backoffDelay(3, { initialMs: 100, maxMs: 5_000, jitter: 5, random: () => 0.5 }), 400);
  });
});

describe("Backoff", () => {
  test("counts attempts and resets to the first delay", () => {
    const backoff = new Backoff({ initialMs: 250, maxMs: 1_000 });
    assert.deepEqual(
      [backoff.next(), backoff.next(), backoff.next(), backoff.next()],
      [250, 500, 1_000, 1_000],
    );
    assert.equal(backoff.attempts, 4);
    backoff.reset();
    assert.equal(backoff.attempts, 0);
    assert.equal(backoff.next(), 250);
  });

  test("waitLongest makes the next delay the cap, once, and the count goes on", () => {
    const backoff = new Backoff({ initialMs: 250, maxMs: 10_000 });
    backoff.next();
    backoff.waitLongest();
    assert.equal(backoff.next(), 10_000);
    assert.equal(backoff.next(), 1_000);
    assert.equal(backoff.attempts, 3);
  });

  test("a longest wait asked for before a reset still applies", () => {
    const backoff = new Backoff({ initialMs: 250, maxMs: 10_000 });
    backoff.waitLongest();
    backoff.reset();
    assert.equal(backoff.next(), 10_000);
    assert.equal(backoff.next(), 500);
  });
});
