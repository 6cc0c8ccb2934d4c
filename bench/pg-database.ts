/**
 * A throwaway PostgreSQL database for a bench: created on 127.0.0.1:5432 (user postgres, trust
 * auth; scripts/services.sh starts the server), dropped after whatever the bench did. The server is
 * the tests' (test/helpers/postgres.ts).
 */
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { PG_ADMIN_URL, postgresReachable } from "../test/helpers/postgres.js";

/** Why a bench's PostgreSQL part did not run. */
export const PG_UNREACHABLE = "PostgreSQL not reachable on 127.0.0.1:5432";

/**
 * Runs `work` with the URL of a new database `vigil_bench_<random>` and drops the database after;
 * undefined, without calling `work`, when PostgreSQL does not answer within 2 s.
 */
export async function withBenchDatabase<T>(work: (url: string) => Promise<T>): Promise<T | undefined> {
  if (!(await postgresReachable())) return undefined;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => undefined });
  const name = `vigil_bench_${randomBytes(5).toString("hex")}`;
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    return await work(`postgres://postgres@127.0.0.1:5432/${name}`);
  } finally {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end({ timeout: 5 });
  }
}
