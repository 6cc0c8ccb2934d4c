/**
 * Test helpers for the PostgreSQL store (DESIGN 5.5): tests talk to the real server on
 * 127.0.0.1:5432 (user postgres, trust auth; scripts/services.sh starts it), each test file in a
 * throwaway database `vigil_test_<random>` dropped in `after()`. Within it, {@link PgTestDatabase.freshUrl}
 * gives each case an empty schema of its own (a URL whose `search_path` names it), which is much
 * faster than a database per case. A file skips with {@link PG_SKIP} when the server is not reachable.
 */
import { randomBytes } from "node:crypto";
import postgres from "postgres";

export const PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";
/** The reason a PostgreSQL test file skips. */
export const PG_SKIP =
  "PostgreSQL not reachable on 127.0.0.1:5432 as user postgres: run scripts/services.sh start";

/** Whether PostgreSQL answers on {@link PG_ADMIN_URL} (within 2 s). */
export async function postgresReachable(): Promise<boolean> {
  const sql = postgres(PG_ADMIN_URL, { max: 1, connect_timeout: 2, onnotice: () => undefined });
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

/** A database of the test's own; `drop()` removes it (call it from `after()`). */
export class PgTestDatabase {
  private schemas = 0;

  private constructor(
    readonly name: string,
    readonly url: string,
    /** A pool on the test database, for checks the test makes itself. */
    readonly sql: postgres.Sql,
  ) {}

  /** `options`: more of `CREATE DATABASE` (a test's own, e.g. a locale), written as SQL. */
  static async create(label = "store", options = ""): Promise<PgTestDatabase> {
    const name = `vigil_test_${label}_${randomBytes(6).toString("hex")}`;
    const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => undefined });
    try {
      await admin.unsafe(`CREATE DATABASE ${name} ${options}`);
    } finally {
      await admin.end();
    }
    const url = `postgres://postgres@127.0.0.1:5432/${name}`;
    return new PgTestDatabase(name, url, postgres(url, { max: 2, onnotice: () => undefined }));
  }

  /** The URL of a new, empty schema in this database (its own `search_path`). */
  async freshUrl(): Promise<string> {
    this.schemas += 1;
    const schema = `case_${this.schemas}`;
    await this.sql.unsafe(`CREATE SCHEMA ${schema}`);
    return `${this.url}?search_path=${schema}`;
  }

  /** Closes the helper's pool and drops the database, ending any connection a test left open. */
  async drop(): Promise<void> {
    await this.sql.end({ timeout: 1 }).catch(() => undefined);
    const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => undefined });
    try {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  }
}
