/**
 * The DuckDB store's storage format (docs/decisions.md): the time of a CHECKPOINT as an index
 * grows, in a file of the format the store creates (DUCKDB_STORAGE_VERSION) beside one of DuckDB's
 * default format (v0.10.2's, which rewrites every index at each checkpoint). Each run creates a file
 * with the store's schema, except that `message_digests` has a primary key (the store's has none:
 * here it is an index that grows with the data), claims DIGESTS message digests through the store's
 * own claim code (transactions of 2 000, as backfill parts), of the `sha` form (random: the form of
 * files in DuckDB's default format, which predate the `minute` form; bench/message-digests compares
 * the forms), and checkpoints after every tenth of them; it prints the checkpoint times at each
 * step, their ratio at the end, and the time of a claim per digest (with nothing else running). The
 * runs alternate A B A B for VIGIL_BENCH_ROUNDS rounds (default 2). Never fails on time.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { claimMessageKeys } from "../src/hub/store/duckdb/duckdb-claims.js";
import { DUCKDB_SCHEMA } from "../src/hub/store/duckdb/duckdb-schema.js";
import { DUCKDB_STORAGE_VERSION } from "../src/hub/store/duckdb/duckdb-settings.js";
import type { MessageKey } from "../src/hub/store/store.js";
import { median } from "./load.js";
import { benchRounds, SMOKE } from "./settings.js";

const ROUNDS = benchRounds(2);
const DIGESTS = SMOKE ? 200_000 : 1_000_000;
const PER_TRANSACTION = 2_000;
const STEPS = 10;
const BASELINE_VERSION = "v0.10.2"; // DuckDB's default

/** A run: checkpoint ms after each tenth of the digests, and µs per digest claimed (alone). */
interface Run {
  readonly checkpoints: number[];
  readonly claimUs: number;
}

/** Claims DIGESTS digests in a new file of `version`, checkpointing after each tenth. */
async function run(version: string, dir: string): Promise<Run> {
  const path = join(dir, `${version}-${Date.now()}.duckdb`);
  const instance = await DuckDBInstance.create(path, {
    threads: "2",
    storage_compatibility_version: version,
  });
  const connection = await instance.connect();
  try {
    for (const statement of DUCKDB_SCHEMA) {
      await connection.run(
        statement.includes("TABLE IF NOT EXISTS message_digests")
          ? "CREATE TABLE message_digests (digest HUGEINT PRIMARY KEY)"
          : statement,
      );
    }
    const times: number[] = [];
    let claiming = 0;
    let n = 0;
    for (let step = 0; step < STEPS; step += 1) {
      for (let t = 0; t < DIGESTS / STEPS / PER_TRANSACTION; t += 1) {
        const keys: MessageKey[] = [];
        for (let i = 0; i < PER_TRANSACTION; i += 1, n += 1)
          keys.push({ kind: "hash", hash: createHash("sha256").update(`${path}:${n}`).digest("hex") });
        const started = performance.now();
        await connection.run("BEGIN TRANSACTION");
        await claimMessageKeys(connection, keys, "sha", true);
        await connection.run("COMMIT");
        claiming += performance.now() - started;
      }
      const started = performance.now();
      await connection.run("CHECKPOINT");
      times.push(performance.now() - started);
    }
    return { checkpoints: times, claimUs: (claiming * 1000) / DIGESTS };
  } finally {
    connection.closeSync();
    instance.closeSync();
    rmSync(path, { force: true });
  }
}

const dir = mkdtempSync(join(tmpdir(), "vigil-bench-storage-"));
try {
  const subject: Run[] = [];
  const baseline: Run[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    subject.push(await run(DUCKDB_STORAGE_VERSION, dir));
    baseline.push(await run(BASELINE_VERSION, dir));
  }
  const step = (runs: Run[], i: number) => Math.round(median(runs.map((r) => r.checkpoints[i] as number)));
  const claim = (runs: Run[]) => Number(median(runs.map((r) => r.claimUs)).toFixed(2));
  const last = STEPS - 1;
  const a = step(subject, last);
  const b = step(baseline, last);
  console.log(
    JSON.stringify({
      bench: "duckdb-storage",
      rounds: ROUNDS,
      digests: DIGESTS,
      checkpoint_ms_by_tenth: {
        [DUCKDB_STORAGE_VERSION]: subject[0]?.checkpoints.map((_, i) => step(subject, i)),
        [BASELINE_VERSION]: baseline[0]?.checkpoints.map((_, i) => step(baseline, i)),
      },
      // A transaction of 2 000 hash keys claimed (insert and commit), per key, with nothing else running.
      claim_us_per_digest: { [DUCKDB_STORAGE_VERSION]: claim(subject), [BASELINE_VERSION]: claim(baseline) },
      table: [
        [
          `DuckDB CHECKPOINT ms at ${DIGESTS} message digests, storage ${DUCKDB_STORAGE_VERSION}`,
          a,
          `${b} storage ${BASELINE_VERSION}`,
          Number((a / b).toFixed(3)),
          "",
          "",
        ],
      ],
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
