import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RecencyCache } from "../../../src/hub/store/recency-cache.js";

describe("RecencyCache", () => {
  it("never holds more than its capacity", () => {
    for (const capacity of [1, 2, 3, 10, 101]) {
      const cache = new RecencyCache<number, number>(capacity);
      for (let i = 0; i < 1000; i++) {
        cache.set(i, i);
        cache.get(i % 7);
        assert.ok(cache.size <= capacity, `size ${cache.size} > ${capacity}`);
      }
    }
  });

  it("keeps an entry that is used while others come and go", () => {
    const cache = new RecencyCache<string, number>(10);
    cache.set("hot", 1);
    for (let i = 0; i < 1000; i++) {
      cache.set(`cold${i}`, i);
      assert.equal(cache.get("hot"), 1, `lost at ${i}`);
    }
  });

  it("forgets entries not used for a capacity's worth of insertions", () => {
    const cache = new RecencyCache<string, number>(10);
    cache.set("once", 1);
    for (let i = 0; i < 10; i++) cache.set(`other${i}`, i);
    assert.equal(cache.get("once"), undefined);
  });

  it("capacity 0 holds nothing", () => {
    const cache = new RecencyCache<string, number>(0);
    cache.set("a", 1);
    assert.equal(cache.get("a"), undefined);
    assert.equal(cache.size, 0);
  });

  it("refuses a negative or fractional capacity", () => {
    assert.throws(() => new RecencyCache(-1), RangeError);
    assert.throws(() => new RecencyCache(1.5), RangeError);
  });

  it("clear forgets everything", () => {
    const cache = new RecencyCache<string, number>(4);
    cache.set("a", 1);
    cache.clear();
    assert.equal(cache.get("a"), undefined);
  });
});
