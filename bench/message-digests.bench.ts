/**
 * The form of message digests (src/hub/store/message-digest.ts, docs/decisions.md): the
 * time of a claim per digest as a store's digest index grows, for digests led by the message's
 * minute (the `minute` form a new store takes) beside the first 128 bits of the SHA-256 (the `sha`
 * form of a store that held digests before it could record a form). Each run creates a new DuckDB
 * file (the store's schema and storage format) or a throwaway PostgreSQL database (the
 * `message_digests` table of the store's migrations), and claims digests through the store's own
 * claim code in transactions as a backfill's parts (DuckDB: the optimistic claim, 2 000 per
 * transaction; PostgreSQL: 5 000), each message a second after the one before, as in a backfill of a
 * time-ordered file. It prints the claim µs per digest of each tenth, and the ratio of the last
 * tenths. DuckDB grows to 4·10^6 digests, PostgreSQL to 2·10^6 (a tenth of that in a smoke run);
 * `VIGIL_BENCH_DIGESTS` sets both. The runs alternate A B A B for VIGIL_BENCH_ROUNDS rounds
 * (default 2); PostgreSQL is skipped, with a line saying why, when unreachable. Never fails on time.
 */
import { hash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import postgres from "postgres";
import { claimMessageKeys as claimDuckDb } from "../src/hub/store/duckdb/duckdb-claims.js";
import { DUCKDB_SCHEMA } from "../src/hub/store/duckdb/duckdb-schema.js";
import { DUCKDB_STORAGE_VERSION } from "../src/hub/store/duckdb/duckdb-settings.js";
import type { DigestForm } from "../src/hub/store/message-digest.js";
import { claimMessageKeys as claimPostgres } from "../src/hub/store/postgres/postgres-claims.js";
import type { MessageKey } from "../src/hub/store/store.js";
import { median } from "./load.js";
import { PG_UNREACHABLE, withBenchDatabase } from "./pg-database.js";
import { benchRounds, SMOKE } from "./settings.js";

const ROUNDS = benchRounds(2);
const STEPS = 10;
const T0 = Date.UTC(2025, 0, 1);
const FORMS: readonly DigestForm[] = ["minute", "sha"];

/** The digests a store grows to: VIGIL_BENCH_DIGESTS or `fallback`, rounded to whole transactions per tenth. */
function digestsFor(fallback: number, perTransaction: number): number {
  const asked = Number(process.env.VIGIL_BENCH_DIGESTS ?? (SMOKE ? fallback / 10 : fallback));
  if (!Number.isFinite(asked) || asked <= 0) throw new Error("VIGIL_BENCH_DIGESTS must be a positive number");
  const unit = STEPS * perTransaction;
  return Math.max(1, Math.round(asked / unit)) * unit;
}

/** A store's claim of `keys` of `form`, in one transaction of its own. */
type Claim = (keys: MessageKey[], form: DigestForm) => Promise<void>;

interface Subject {
  readonly store: string;
  readonly digests: number;
  readonly perTransaction: number;
  /** Runs `work` with a claim on a new, empty digest table; undefined when the store is unreachable. */
  readonly withTable: (work: (claim: Claim) => Promise<number[]>) => Promise<number[] | undefined>;
}

/** Claims `digests` digests of `form`; the claim µs per digest of each tenth. */
async function run(subject: Subject, form: DigestForm, claim: Claim): Promise<number[]> {
  const tenths: number[] = [];
  let n = 0;
  const perTenth = subject.digests / STEPS;
  for (let step = 0; step < STEPS; step += 1) {
    let ms = 0;
    for (let t = 0; t < perTenth / subject.perTransaction; t += 1) {
      const keys: MessageKey[] = [];
      for (let i = 0; i < subject.perTransaction; i += 1, n += 1)
        keys.push({ kind: "hash", hash: hash("sha256", `${form}:${n}`, "hex"), at: T0 + n * 1000 });
      const started = performance.now();
      await claim(keys, form);
      ms += performance.now() - started;
    }
    tenths.push((ms * 1000) / perTenth);
  }
  return tenths;
}

const dir = mkdtempSync(join(tmpdir(), "vigil-bench-digests-"));

const duckdb: Subject = {
  store: "duckdb",
  digests: digestsFor(4_000_000, 2_000),
  perTransaction: 2_000,
  withTable: async (work) => {
    const path = join(dir, `digests-${Date.now()}.duckdb`);
    const instance = await DuckDBInstance.create(path, {
      threads: "2",
      storage_compatibility_version: DUCKDB_STORAGE_VERSION,
    });
    const connection = await instance.connect();
    try {
      for (const statement of DUCKDB_SCHEMA) await connection.run(statement);
      return await work(async (keys, form) => {
        await connection.run("BEGIN TRANSACTION");
        await claimDuckDb(connection, keys, form, true);
        await connection.run("COMMIT");
      });
    } finally {
      connection.closeSync();
      instance.closeSync();
      rmSync(path, { force: true });
    }
  },
};

const pg: Subject = {
  store: "postgres",
  digests: digestsFor(2_000_000, 5_000),
  perTransaction: 5_000,
  withTable: (work) =>
    withBenchDatabase(async (url) => {
      const sql = postgres(url, { max: 1, onnotice: () => undefined });
      try {
        await sql`CREATE TABLE message_digests (digest uuid PRIMARY KEY)`;
        return await work(async (keys, form) => {
          await sql.begin((tx) => claimPostgres(tx, keys, form));
        });
      } finally {
        await sql.end();
      }
    }),
};

try {
  for (const subject of [duckdb, pg]) {
    const runs = new Map<DigestForm, number[][]>(FORMS.map((form) => [form, []]));
    let skipped = false;
    for (let round = 0; round < ROUNDS && !skipped; round += 1) {
      for (const form of FORMS) {
        const tenths = await subject.withTable((claim) => run(subject, form, claim));
        if (tenths === undefined) skipped = true;
        else runs.get(form)?.push(tenths);
      }
    }
    if (skipped) {
      console.log(
        JSON.stringify({ bench: "message-digests", store: subject.store, skipped: PG_UNREACHABLE }),
      );
      continue;
    }
    const byTenth = (form: DigestForm): number[] =>
      Array.from({ length: STEPS }, (_, i) =>
        Number(median((runs.get(form) ?? []).map((r) => r[i] as number)).toFixed(2)),
      );
    const minute = byTenth("minute");
    const sha = byTenth("sha");
    const last = (tenths: number[]): number => tenths[STEPS - 1] as number;
    console.log(
      JSON.stringify({
        bench: "message-digests",
        store: subject.store,
        rounds: ROUNDS,
        digests: subject.digests,
        per_transaction: subject.perTransaction,
        claim_us_per_digest_by_tenth: { minute, sha },
        table: [
          [
            `${subject.store} claim µs per digest, last tenth of ${subject.digests}, led by the minute`,
            last(minute),
            `${last(sha)} first 128 bits of the SHA-256`,
            Number((last(minute) / last(sha)).toFixed(3)),
            "",
            "",
          ],
        ],
      }),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
