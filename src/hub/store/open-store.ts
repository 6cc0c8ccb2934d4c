/**
 * Picks the store implementation from the hub's store URL (DESIGN 5.5).
 */
import { isAbsolute, join, resolve } from "node:path";
import { createDuckDbStore } from "./duckdb/duckdb-store.js";
import { createPostgresStore } from "./postgres/postgres-store.js";
import type { Store } from "./store.js";
import { withOutageErrors } from "./store-outage.js";

/** The DuckDB file used when the URL names no path. */
export const DEFAULT_DUCKDB_FILE = "vigil.duckdb";

/** Tuning common to every store; each absent option takes its default. */
export interface OpenStoreOptions {
  /** Most series one entity may have (default `DEFAULT_MAX_SERIES_PER_ENTITY`, 100 000). */
  readonly maxSeriesPerEntity?: number;
  /** Entries of the series-id cache (default `SERIES_CACHE_ENTRIES`, 200 000). */
  readonly seriesCacheEntries?: number;
  /** DuckDB's `memory_limit`, e.g. "512MB" (default "1GB"); other stores ignore it. */
  readonly memoryLimit?: string;
}

/**
 * Opens the store named by `url`: `duckdb:PATH` is a DuckDB file (a relative PATH is resolved
 * against `dataDir`; `duckdb:`, `duckdb` or an empty URL mean `<dataDir>/vigil.duckdb`;
 * `duckdb::memory:` keeps everything in memory); `postgres://…` and `postgresql://…` name a
 * PostgreSQL database (the scale-out store; connection parameters such as `?sslmode=require` go in
 * the URL). `options` are passed to the store (defaults above; `memoryLimit` is DuckDB's only).
 * The returned store is not migrated yet: call `migrate()` first. Its outages (server down, disk
 * full) reject with a 503 `SERVICE_UNAVAILABLE` (store-outage.ts).
 */
export async function openStore(
  url: string,
  dataDir: string,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const trimmed = url.trim();
  if (trimmed === "" || trimmed === "duckdb" || trimmed.startsWith("duckdb:")) {
    const path = trimmed.startsWith("duckdb:") ? trimmed.slice("duckdb:".length) : "";
    return withOutageErrors(await createDuckDbStore({ ...options, path: duckDbPath(path, dataDir) }));
  }
  if (/^postgres(?:ql)?:\/\//i.test(trimmed)) {
    const { memoryLimit: _duckDbOnly, ...common } = options;
    return withOutageErrors(await createPostgresStore({ ...common, url: trimmed }));
  }
  // Only the scheme is echoed: a URL may carry a password.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1] ?? "(none)";
  throw new Error(`unknown store URL scheme "${scheme}": use duckdb:PATH or postgres://…`);
}

function duckDbPath(path: string, dataDir: string): string {
  if (path === "") return join(dataDir, DEFAULT_DUCKDB_FILE);
  if (path === ":memory:") return path;
  return isAbsolute(path) ? path : resolve(dataDir, path);
}
