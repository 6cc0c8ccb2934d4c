/**
 * The store URL (DESIGN 5.5): a DuckDB URL takes DuckDB's `memory_limit` as its one parameter, and
 * anything else in its query is refused naming what is accepted, before a file is opened.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { openStore } from "../../../src/hub/store/open-store.js";

describe("openStore with a DuckDB URL", () => {
  const dir = mkdtempSync(join(tmpdir(), "vigil-open-store-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("?memory_limit=SIZE opens the file named before the query", async () => {
    const store = await openStore("duckdb:limited.duckdb?memory_limit=64MB", dir);
    try {
      await store.migrate();
      await store.ping();
    } finally {
      await store.close();
    }
    assert.ok(existsSync(join(dir, "limited.duckdb")));
    assert.ok(!existsSync(join(dir, "limited.duckdb?memory_limit=64MB")));
  });

  const refused: [name: string, url: string, message: RegExp][] = [
    [
      "another parameter",
      "duckdb:x.duckdb?threads=4",
      /unknown DuckDB store parameter "threads": the only one is memory_limit/,
    ],
    [
      "a limit that is not a size",
      "duckdb:x.duckdb?memory_limit=lots",
      /memory_limit "lots" is not a size; write it as e\.g\. 256MB/,
    ],
    ["an empty limit", "duckdb:x.duckdb?memory_limit=", /memory_limit "" is not a size/],
  ];
  for (const [name, url, message] of refused) {
    test(`refuses ${name}`, async () => {
      await assert.rejects(openStore(url, dir), message);
      assert.ok(!existsSync(join(dir, "x.duckdb")), "nothing was opened");
    });
  }
});
