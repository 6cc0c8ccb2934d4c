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
 * `duckdb::memory:` keeps everything in memory; `?memory_limit=256MB` after the path sets DuckDB's
 * `memory_limit`, overriding `options.memoryLimit`); `postgres://…` and `postgresql://…` name a
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
    const [path, query] = splitDuckDbUrl(
      trimmed.startsWith("duckdb:") ? trimmed.slice("duckdb:".length) : "",
    );
    const memoryLimit = duckDbMemoryLimit(query) ?? options.memoryLimit;
    return withOutageErrors(
      await createDuckDbStore({
        ...options,
        path: duckDbPath(path, dataDir),
        ...(memoryLimit === undefined ? {} : { memoryLimit }),
      }),
    );
  }
  if (/^postgres(?:ql)?:\/\//i.test(trimmed)) {
    const { memoryLimit: _duckDbOnly, ...common } = options;
    return withOutageErrors(await createPostgresStore({ ...common, url: trimmed }));
  }
  // Only the scheme is echoed: a URL may carry a password.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1] ?? "(none)";
  throw new Error(`unknown store URL scheme "${scheme}": use duckdb:PATH or postgres://…`);
}

/** A DuckDB URL's path and its query (after the first `?`, "" when none). */
function splitDuckDbUrl(rest: string): [string, string] {
  const at = rest.indexOf("?");
  return at < 0 ? [rest, ""] : [rest.slice(0, at), rest.slice(at + 1)];
}

/**
 * The `memory_limit` parameter of a DuckDB URL's query (the only one it takes), e.g. `256MB` or
 * `1GB`; anything else is refused naming what is accepted, before DuckDB opens anything.
 */
function duckDbMemoryLimit(query: string): string | undefined {
  if (query === "") return undefined;
  const params = new URLSearchParams(query);
  for (const name of params.keys()) {
    if (name !== "memory_limit")
      throw new Error(
        `unknown DuckDB store parameter "${name}": the only one is memory_limit (e.g. ?memory_limit=256MB)`,
      );
  }
  const limit = params.get("memory_limit") ?? "";
  if (!/^\d+(?:\.\d+)?\s*(?:KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(limit))
    throw new Error(`DuckDB memory_limit "${limit}" is not a size; write it as e.g. 256MB or 1GB`);
  return limit;
}

function duckDbPath(path: string, dataDir: string): string {
  if (path === "") return join(dataDir, DEFAULT_DUCKDB_FILE);
  if (path === ":memory:") return path;
  return isAbsolute(path) ? path : resolve(dataDir, path);
}
