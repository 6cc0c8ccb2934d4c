/**
 * A DuckDB metric query cut into parts (duckdb-metrics.ts): DuckDB works on the next part while the
 * hub writes out the rows of this one. Preparing a statement answers on the hub's thread, so the
 * rows of a part are handed out only once the next part's statement is streaming: otherwise that
 * answer would wait behind the writing of the whole part. Watched on the real DuckDB connection,
 * its statements' `stream()` counted as they are called.
 */
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { DuckDBConnection, type DuckDBPreparedStatement } from "@duckdb/node-api";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import type { EntityKey, SampleInput } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";

const originalPrepare = DuckDBConnection.prototype.prepare;

afterEach(() => {
  DuckDBConnection.prototype.prepare = originalPrepare;
});

describe("a DuckDB metric query in parts", () => {
  it("hands out a part's rows only once the next part's statement is streaming", async () => {
    const store = await createDuckDbStore({ path: ":memory:", queryPartSamples: 40 });
    try {
      await store.migrate();
      const entity: EntityKey = { gateway: "gw", probe: "edge", managedEntity: "parts" };
      const at = Date.UTC(2024, 4, 1);
      // 30 one-minute buckets of 12 samples in two rows: 720 samples, parts of about 40.
      const samples: SampleInput[] = [];
      for (let minute = 0; minute < 30; minute++)
        for (let i = 0; i < 12; i++)
          for (const row of ["a", "b"]) {
            const value = (minute * 7 + i * 3) % 19;
            samples.push({
              entity,
              series: { sampler: "cpu", samplerType: "linux", dataview: "cpu", row, column: "util" },
              at: asEpochMs(at + minute * 60_000 + i * 5000),
              text: String(value),
              value,
            });
          }
      await store.ingest({ entities: [], samples });
      const entities = await store.listEntities({ includeDeleted: false });

      // The metric statements (those over `bucketed`) whose stream() has been called.
      let streaming = 0;
      DuckDBConnection.prototype.prepare = async function (
        this: DuckDBConnection,
        sql: string,
      ): Promise<DuckDBPreparedStatement> {
        const prepared = await originalPrepare.call(this, sql);
        if (sql.includes("bucketed")) {
          const stream = prepared.stream.bind(prepared);
          prepared.stream = () => {
            streaming += 1;
            return stream();
          };
        }
        return prepared;
      };

      const batches = await store.queryMetricBatches({
        entities,
        from: asEpochMs(at),
        to: asEpochMs(at + 30 * 60_000),
        zone: "UTC",
        bucket: { kind: "minutes", minutes: 1 },
        metrics: [
          {
            identifier: "m",
            include: [{ sampler: "cpu", samplerType: null, dataview: "cpu", row: null, column: "util" }],
          },
        ],
        aggregations: [
          { label: "avg", name: "svc.avg" },
          { label: "p95", name: "svc.percentile", p: "0.95" },
        ],
        grouping: ["rowname"],
        timeWindows: [],
      });
      const seenAtEachBatch: number[] = [];
      let rows = 0;
      for await (const batch of batches) {
        seenAtEachBatch.push(streaming);
        rows += batch.length;
      }
      assert.equal(rows, 60, "a row per bucket and row name");
      const parts = streaming;
      assert.ok(parts >= 8, `the query ran in parts (${parts} statements)`);
      // When the first part's rows come out, the second part's statement is already streaming.
      assert.ok(
        (seenAtEachBatch[0] ?? 0) >= 2,
        `statements streaming at the first batch: ${seenAtEachBatch[0]}`,
      );
      for (let k = 0; k < seenAtEachBatch.length; k++)
        assert.ok(
          (seenAtEachBatch[k] ?? 0) >= Math.min(parts, k + 2),
          `batch ${k}: ${seenAtEachBatch[k]} statements streaming`,
        );
    } finally {
      await store.close();
    }
  });
});
