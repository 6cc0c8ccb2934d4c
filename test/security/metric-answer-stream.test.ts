/**
 * A metric answer is written as it is made (src/hub/query/metric-response.ts): a client that reads
 * part of a large answer and goes away costs the hub nothing after it, and a store whose rows come
 * out of the answer's order gets a cut response, never an answer with a bucket and group in two
 * places. Over a real socket, against a real in-memory DuckDB store.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { pieceElements } from "../../src/hub/query/metric-response.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import { allRows, type MetricQueryRow, type SampleInput, type Store } from "../../src/hub/store/store.js";
import { asEpochMs } from "../../src/ids.js";

const T0 = Date.UTC(2026, 2, 1);
const ROWS = 40;
const BUCKETS = 60; // 5-minute buckets: 2 400 elements, several pieces
const setup = parseSetup("gateway: { name: GW }\nhub: { security: { enabled: false } }\n");

const QUERY = JSON.stringify({
  zoneId: "UTC",
  filter: {
    entities: "",
    range: { from: new Date(T0).toISOString(), to: new Date(T0 + BUCKETS * 300_000).toISOString() },
  },
  metrics: [{ identifier: "m", include: ["cpu/cores/{rowname}/util"] }],
  aggregations: ["svc.count", "svc.avg", "svc.percentile(0.95)"],
  bucketing: { duration: "PT5M" },
  grouping: ["rowname"],
});

/** POSTs the query; `stopAfter` bytes of the answer read, then the socket destroyed. */
function ask(
  url: string,
  stopAfter = Number.POSITIVE_INFINITY,
): Promise<{ status: number; text: string; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v0/metrics/query`,
      { method: "POST", headers: { "content-type": "application/json" } },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          bytes += chunk.length;
          if (bytes >= stopAfter) {
            req.destroy();
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), complete: false });
          }
        });
        // `complete`: the whole message arrived (a response cut by the server is not).
        res.on("error", () => undefined);
        res.on("close", () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            complete: res.complete,
          }),
        );
      },
    );
    req.on("error", (error) => (stopAfter === Number.POSITIVE_INFINITY ? reject(error) : undefined));
    req.end(QUERY);
  });
}

/** `store` with some of its methods replaced (the others bound to it). */
function replacing(store: Store, overrides: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof Store];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A hub on `store`, listening on 127.0.0.1. */
async function startHub(store: Store, dataDir: string): Promise<{ hub: Hub; url: string }> {
  const hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  await hub.ingester.init();
  return { hub, url: await hub.start(0, "127.0.0.1") };
}

describe("metric answers written as they are made", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "vigil-answer-stream-"));
  let store: Store;

  before(async () => {
    store = await createDuckDbStore({ path: ":memory:" });
    await store.migrate();
    const samples: SampleInput[] = [];
    for (let b = 0; b < BUCKETS; b++) {
      for (let r = 0; r < ROWS; r++) {
        for (const s of [0, 100_000]) {
          const value = (b * 7 + r * 13 + s) % 97;
          samples.push({
            entity: { gateway: "GW", probe: "p1", managedEntity: "host" },
            series: { sampler: "cpu", samplerType: "", dataview: "cores", row: `r${r}`, column: "util" },
            at: asEpochMs(T0 + b * 300_000 + s),
            text: String(value),
            value,
          });
        }
      }
    }
    await store.ingest({ entities: [], samples });
  });
  after(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("a client gone after the first bytes leaves the hub answering the next whole", async () => {
    // A wrapper the hub's stop does not close: the store outlives each hub of this file.
    const { hub, url } = await startHub(replacing(store, { close: async () => undefined }), dataDir);
    try {
      const whole = await ask(url);
      assert.equal(whole.status, 200);
      const answer = JSON.parse(whole.text) as { data: { metrics: { m: { "svc.count": number } } }[] };
      assert.equal(answer.data.length, ROWS * BUCKETS);
      // One identifier, three aggregations (QUERY).
      assert.ok(answer.data.length > 2 * pieceElements(1, 3), "the answer is written in several pieces");
      assert.ok(answer.data.every((e) => e.metrics.m["svc.count"] === 2));
      for (let i = 0; i < 5; i++) {
        const cut = await ask(url, 1_000);
        assert.equal(cut.status, 200);
        assert.equal(cut.complete, false);
      }
      const again = await ask(url);
      assert.equal(again.status, 200);
      assert.equal(again.text, whole.text);
    } finally {
      await hub.stop();
    }
  });

  test("rows out of the answer's order cut the response instead of answering a group twice", async () => {
    // The store's rows reversed: every bucket after the one before it.
    const reversed = replacing(store, {
      close: async () => undefined,
      queryMetricBatches: async (plan) => {
        const rows: MetricQueryRow[] = await allRows(await store.queryMetricBatches(plan));
        return [rows.reverse()];
      },
    });
    const { hub, url } = await startHub(reversed, dataDir);
    try {
      const answered = await ask(url);
      assert.equal(answered.status, 200, "the status went out before the rows were read");
      assert.equal(answered.complete, false, "the response is cut");
      assert.throws(() => JSON.parse(answered.text));
    } finally {
      await hub.stop();
    }
  });
});
