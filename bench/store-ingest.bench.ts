/**
 * Hub store ingest throughput: `Store.ingest()` on embedded DuckDB (entity and series resolution,
 * one transaction per batch, DataChunk appender), against a baseline run beside it: DuckDB's
 * appender writing the same number of rows into a bare table, which is the floor of what the
 * database itself can take. Prints samples per second and the ratio, and the rate when each batch
 * also claims one message id per sample in the same transaction (the hub ingester's path).
 * The three run in turn for VIGIL_BENCH_ROUNDS rounds (default 3); the medians are compared.
 */
import {
  DOUBLE,
  DuckDBDataChunk,
  DuckDBInstance,
  DuckDBTimestampTZValue,
  INTEGER,
  TIMESTAMPTZ,
  VARCHAR,
} from "@duckdb/node-api";
import { createDuckDbStore } from "../src/hub/store/duckdb/duckdb-store.js";
import { SampleRowsBuilder } from "../src/hub/store/sample-rows.js";
import { asEpochMs } from "../src/ids.js";
import { median } from "./load.js";
import { benchRounds, SMOKE } from "./settings.js";

const SAMPLES = SMOKE ? 200_000 : 1_000_000; // a smoke run (VIGIL_BENCH_SECONDS) writes fewer
const BATCH = 5_000; // samples per ingest call (the in-process bus delivers up to 5 000 messages)
const SERIES = 2_000;
const ROUNDS = benchRounds(3); // A B pairs

const entity = { gateway: "GW", probe: "p1", managedEntity: "me" };
const t0 = Date.UTC(2026, 0, 1);

/** One batch in columns, as the ingester hands samples to the store: one row of one cell each. */
function batch(start: number): SampleRowsBuilder {
  const out = new SampleRowsBuilder();
  for (let k = 0; k < BATCH; k++) {
    const i = start + k;
    const value = (i % 997) * 0.5;
    out.cell("latency", String(value), value);
    out.endRow(
      entity,
      { sampler: "s", samplerType: "", dataview: "dv", row: `r${i % SERIES}` },
      asEpochMs(t0 + i),
    );
  }
  return out;
}

async function baseline(): Promise<number> {
  const instance = await DuckDBInstance.create(":memory:", { memory_limit: "1GB" });
  const c = await instance.connect();
  await c.run("CREATE TABLE samples (series_id INTEGER, ts TIMESTAMPTZ, value DOUBLE, text VARCHAR)");
  const types = [INTEGER, TIMESTAMPTZ, DOUBLE, VARCHAR];
  const started = performance.now();
  for (let start = 0; start < SAMPLES; start += BATCH) {
    const { rows, cells } = batch(start);
    const appender = await c.createAppender("samples");
    for (let s = 0; s < rows.length; s += 2048) {
      const slice = rows.slice(s, s + 2048);
      const chunk = DuckDBDataChunk.create(types, slice.length);
      chunk.setColumnValues(
        0,
        slice.map((_, k) => (start + s + k) % SERIES),
      );
      chunk.setColumnValues(
        1,
        slice.map((r) => new DuckDBTimestampTZValue(BigInt(r.at) * 1000n)),
      );
      chunk.setColumnValues(
        2,
        slice.map((r) => cells.value(r.start)),
      );
      chunk.setColumnValues(
        3,
        slice.map((r) => cells.text(r.start)),
      );
      appender.appendDataChunk(chunk);
    }
    appender.closeSync();
  }
  const seconds = (performance.now() - started) / 1000;
  c.closeSync();
  return SAMPLES / seconds;
}

async function store(): Promise<number> {
  const s = await createDuckDbStore({ path: ":memory:" });
  await s.migrate();
  const started = performance.now();
  for (let start = 0; start < SAMPLES; start += BATCH)
    await s.ingest({ entities: [], samples: [], rows: batch(start) });
  const seconds = (performance.now() - started) / 1000;
  await s.close();
  return SAMPLES / seconds;
}

/** The hub ingester's path: one transaction per batch that claims one message id per sample, then writes. */
async function storeWithClaims(): Promise<number> {
  const s = await createDuckDbStore({ path: ":memory:" });
  await s.migrate();
  const started = performance.now();
  for (let start = 0; start < SAMPLES; start += BATCH) {
    const rows = batch(start);
    await s.transaction(async (tx) => {
      await tx.claim(
        Array.from({ length: rows.cells.length }, (_, k) => ({
          kind: "seq",
          origin: "bench",
          seq: start + k + 1,
        })),
      );
      await tx.write({ entities: [], samples: [], rows });
    });
  }
  const seconds = (performance.now() - started) / 1000;
  await s.close();
  return SAMPLES / seconds;
}

// A B A B …: the baseline and both subjects in turn, each on a fresh in-memory database; medians.
const runs = { baseline: [] as number[], store: [] as number[], claims: [] as number[] };
for (let round = 0; round < ROUNDS; round += 1) {
  runs.baseline.push(await baseline());
  runs.store.push(await store());
  runs.claims.push(await storeWithClaims());
}
const base = median(runs.baseline);
const ours = median(runs.store);
const claimed = median(runs.claims);
console.log(
  JSON.stringify({
    bench: "store-ingest",
    samples: SAMPLES,
    batch: BATCH,
    rounds: ROUNDS,
    baseline_duckdb_appender_rows_per_s: Math.round(base),
    vigil_duckdb_store_samples_per_s: Math.round(ours),
    ratio_vs_baseline: Number((ours / base).toFixed(3)),
    vigil_duckdb_store_with_claims_samples_per_s: Math.round(claimed),
    rounds_samples_per_s: {
      baseline: runs.baseline.map(Math.round),
      store: runs.store.map(Math.round),
      with_claims: runs.claims.map(Math.round),
    },
  }),
);
