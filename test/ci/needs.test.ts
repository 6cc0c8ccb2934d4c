/**
 * A test that needs a service skips with its reason when run by hand without it, and fails when
 * CI=true (scripts/services.sh provides every service there).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { needs } from "../helpers/needs.js";

test("no reason runs the test; a reason skips by hand and throws with CI=true", () => {
  const before = process.env.CI;
  try {
    delete process.env.CI;
    assert.equal(needs(false), false);
    assert.equal(needs(undefined), false);
    assert.equal(needs("NATS not reachable"), "NATS not reachable");
    process.env.CI = "true";
    assert.equal(needs(false), false);
    assert.throws(() => needs("NATS not reachable"), /CI=true, and this test cannot run: NATS not reachable/);
  } finally {
    if (before === undefined) delete process.env.CI;
    else process.env.CI = before;
  }
});
