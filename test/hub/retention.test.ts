/**
 * Retention (`hub.retentionDays`): off by default (backfilled history is kept); when set,
 * the hub removes older samples and events at start and on its interval, counted on /v1/status,
 * and a failed run is reported and tried again rather than stopping anything.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub } from "../../src/hub/app.js";
import { Retention } from "../../src/hub/retention.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import type { IngestBatch, Store } from "../../src/hub/store/store.js";
import { asEpochMs } from "../../src/ids.js";
import { eventually } from "../link/helpers.js";

const silent = pino({ level: "silent" });
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 23, 12);
const entity = { gateway: "GW", probe: "p1", managedEntity: "web-01" };
const series = { sampler: "orders", samplerType: "", dataview: "queue", row: "r1", column: "queued" };

function batch(daysAgo: readonly number[]): IngestBatch {
  return {
    entities: [{ key: entity, attributes: {}, deleted: false, at: asEpochMs(NOW - 100 * DAY) }],
    samples: daysAgo.map((d, i) => ({
      entity,
      series,
      at: asEpochMs(NOW - d * DAY),
      text: String(i),
      value: i,
    })),
  };
}

async function storeWith(daysAgo: readonly number[]): Promise<Store> {
  const store = await createDuckDbStore({ path: ":memory:" });
  await store.migrate();
  await store.ingest(batch(daysAgo));
  return store;
}

describe("retention", () => {
  test("removes what is older than the maximum age, counts it, and keeps the rest", async () => {
    const store = await storeWith([40, 31, 29, 1]);
    try {
      const retention = new Retention(store, 30, silent, () => NOW);
      await retention.runOnce();
      assert.deepEqual(
        { ...retention.status() },
        { days: 30, runs: 1, samplesRemoved: 2, eventsRemoved: 0, lastError: undefined },
      );
      await retention.runOnce();
      assert.equal(retention.status().samplesRemoved, 2);
    } finally {
      await store.close();
    }
  });

  test("0 days is off: start() runs nothing", async () => {
    const store = await storeWith([4000]);
    try {
      const retention = new Retention(store, 0, silent, () => NOW);
      retention.start();
      await retention.stop();
      assert.equal(retention.status().runs, 0);
    } finally {
      await store.close();
    }
  });

  test("a failed run is reported and the next one tries again", async () => {
    const store = await storeWith([40]);
    let fail = true;
    const flaky = Object.create(store) as Store;
    flaky.deleteBefore = (cutoff) =>
      fail ? Promise.reject(new Error("disk busy")) : store.deleteBefore(cutoff);
    try {
      const retention = new Retention(flaky, 30, silent, () => NOW);
      await retention.runOnce();
      assert.equal(retention.status().lastError, "disk busy");
      fail = false;
      await retention.runOnce();
      assert.equal(retention.status().lastError, undefined);
      assert.equal(retention.status().samplesRemoved, 1);
    } finally {
      await store.close();
    }
  });

  test("a hub with hub.retentionDays removes old data at start and shows it on /v1/status", async () => {
    const store = await storeWith([3650, 1]);
    const setup = parseSetup(
      "gateway: { name: GW }\nhub: { retentionDays: 30, security: { enabled: false } }",
    );
    const dataDir = mkdtempSync(join(tmpdir(), "vigil-retention-"));
    const hub = await buildHub({ setup, store, logger: silent, dataDir });
    const url = await hub.start(0, "127.0.0.1");
    try {
      const status = await eventually(async () => {
        const s = (await (await fetch(`${url}/v1/status`)).json()) as {
          retention: { days: number; runs: number; samplesRemoved: number };
        };
        return s.retention.runs >= 1 ? s.retention : undefined;
      }, "the first retention run");
      assert.equal(status.days, 30);
      assert.equal(status.samplesRemoved, 1);
    } finally {
      await hub.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
