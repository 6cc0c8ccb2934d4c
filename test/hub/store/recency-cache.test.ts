import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RECENCY_CACHE_BYTES } from "../../../src/config/defaults.js";
import { estimateBytes, RecencyCache } from "../../../src/hub/store/recency-cache.js";

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

  it("fed names of 1 KiB past its byte bound, stays under it and answers correctly", () => {
    const maxBytes = 64 * 1024;
    const cache = new RecencyCache<string, Map<string, number>>(1_000_000, (v) => v.size, { max: maxBytes });
    const name = (i: number): string => `${String(i).padStart(8, "0")}${"n".repeat(1016)}`;
    const value = (i: number): Map<string, number> => new Map([[`column-${"c".repeat(1000)}-${i}`, i]]);
    for (let i = 0; i < 2_000; i++) {
      cache.set(name(i), value(i));
      assert.ok(cache.bytes <= maxBytes, `bytes ${cache.bytes} > ${maxBytes} after ${i + 1} entries`);
      // The entry just set is held, with its own value.
      assert.equal(cache.get(name(i))?.get(`column-${"c".repeat(1000)}-${i}`), i);
      // Any other lookup finds its own value or nothing.
      const other = cache.get(name(i >> 1));
      if (other !== undefined) assert.deepEqual([...other.values()], [i >> 1]);
    }
    // Far fewer entries than the count bound allowed: the bytes bounded it.
    assert.ok(cache.size < 64, `size ${cache.size}`);
    assert.ok(cache.size > 0);
  });

  it("counts the bytes of what it holds, not of what it replaced", () => {
    const cache = new RecencyCache<string, string>(100, undefined, { max: 1_000_000 });
    cache.set("k", "x".repeat(1000));
    const once = cache.bytes;
    for (let i = 0; i < 10; i++) cache.set("k", "x".repeat(1000));
    assert.equal(cache.bytes, once);
    assert.equal(cache.get("k"), "x".repeat(1000));
  });

  it("keeps no entry heavier than half its byte bound, and forgets the key's older value", () => {
    const cache = new RecencyCache<string, string>(100, undefined, { max: 4096, of: (_k, v) => v.length });
    cache.set("big", "small");
    assert.equal(cache.get("big"), "small");
    cache.set("big", "y".repeat(2049));
    assert.equal(cache.get("big"), undefined);
    assert.equal(cache.bytes <= 4096, true);
    cache.set("ok", "y".repeat(2048));
    assert.equal(cache.get("ok")?.length, 2048);
  });

  it("still bounds the count (or weight) when the bytes are far from their bound", () => {
    const cache = new RecencyCache<number, number>(10, undefined, { max: 1 << 30 });
    for (let i = 0; i < 100; i++) cache.set(i, i);
    assert.ok(cache.size <= 10);
  });

  it("a byte bound of 0 holds nothing; a negative one is refused", () => {
    const cache = new RecencyCache<string, number>(10, undefined, { max: 0 });
    cache.set("a", 1);
    assert.equal(cache.get("a"), undefined);
    assert.throws(() => new RecencyCache(10, undefined, { max: -1 }), RangeError);
  });

  it("is bounded by RECENCY_CACHE_BYTES unless told otherwise", () => {
    assert.equal(new RecencyCache<string, number>(10).maxBytes, RECENCY_CACHE_BYTES);
  });

  it("estimates strings by their length and walks maps, objects and arrays", () => {
    assert.ok(estimateBytes("x".repeat(1024)) >= 2048);
    const names = new Map([
      ["a".repeat(1024), 1],
      ["b".repeat(1024), 2],
    ]);
    assert.ok(estimateBytes(names) >= 4096);
    // A client-sent name is data: `__proto__` is an ordinary attribute name.
    const attributes: Record<string, string> = Object.fromEntries([["__proto__", "v".repeat(4096)]]);
    assert.ok(estimateBytes(attributes) >= 8192);
    assert.ok(estimateBytes([["z".repeat(100)]]) >= 200);
  });
});
