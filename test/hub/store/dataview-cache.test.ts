/**
 * The dataview cache both stores keep (src/hub/store/dataviews.ts) is bounded by bytes as well as
 * entries: fed past its byte bound with long names and many deleted rows, it stays under it and
 * keeps only states it was given.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyDataviews,
  type DataviewState,
  dataviewCacheBytes,
  dataviewStateBytes,
} from "../../../src/hub/store/dataviews.js";

const state = (id: number, deletedRows: number, nameLength: number): DataviewState => ({
  id,
  plugin: "rest-api",
  osType: "Linux",
  deleted: new Set(Array.from({ length: deletedRows }, (_, i) => `${"r".repeat(nameLength)}${i}`)),
});

test("a dataview cache fed past its byte bound stays under it and holds only what it was given", () => {
  const cache = new Map<string, DataviewState>();
  const maxBytes = 256 * 1024;
  const given = new Map<string, DataviewState>();
  for (let batch = 0; batch < 50; batch++) {
    const learnt = new Map<string, DataviewState>();
    for (let i = 0; i < 20; i++) {
      const key = `${"k".repeat(1024)}:${batch}:${i}`;
      const value = state(batch * 100 + i, 1 + (i % 5), 1024);
      learnt.set(key, value);
      given.set(key, value);
    }
    applyDataviews(cache, learnt, maxBytes);
    let held = 0;
    for (const [k, v] of cache) held += dataviewStateBytes(k, v);
    assert.equal(dataviewCacheBytes(cache), held, "the count is what the cache holds");
    assert.ok(held <= maxBytes, `holds ${held} bytes, more than ${maxBytes}`);
    for (const [k, v] of cache) assert.equal(v, given.get(k));
  }
  assert.ok(cache.size > 0, "it still holds something");
});

test("a replaced state is counted once, and one heavier than the bound is not kept", () => {
  const cache = new Map<string, DataviewState>();
  applyDataviews(cache, new Map([["a", state(1, 1, 10)]]), 10_000);
  applyDataviews(cache, new Map([["a", state(1, 3, 10)]]), 10_000);
  assert.equal(dataviewCacheBytes(cache), dataviewStateBytes("a", state(1, 3, 10)));
  applyDataviews(cache, new Map([["a", state(1, 200, 100)]]), 10_000);
  assert.equal(cache.has("a"), false);
  assert.equal(dataviewCacheBytes(cache), 0);
});
