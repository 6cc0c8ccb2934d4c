/**
 * DuckDB's cache of the table blocks a write leaves, kept small. DuckDB keeps every block of a
 * table it has written or read in its buffer pool until `memory_limit` presses, and evicts only when
 * an allocation needs the room or `memory_limit` is set (its only two triggers). The pool is sized
 * for the queries' working memory (duckdb-settings.ts: up to 384 MiB), so a hub that backfills
 * keeps every block it writes: at 8.6 M samples (bench/peers.bench.ts, 100 rows) the cache rose to
 * 69 MiB during the backfill, most of the hub's growth after its start.
 *
 * So after each commit, at most once per DUCKDB_BLOCK_CACHE_CHECK_MS, the store reads the cache's
 * size (`duckdb_memory()`), and when it is above DUCKDB_BLOCK_CACHE_MIB sets `memory_limit` to the
 * memory in use less the excess, which evicts the least recently used blocks down to it, then sets
 * the limit back at once (about 1 ms in all). Evicting a block of the file only drops it: a later
 * read takes it from the file again (from the system's page cache, as a rule). Only writes trim:
 * the blocks a query reads stay for the next query until a write trims them, since the peers day's
 * query with its blocks read from the file again took 5-25 % longer (bench/peers.bench.ts,
 * alternating runs); while writes come in, a query that reads more than the blocks kept pays that.
 *
 * For the moment between the two settings, a statement that needed more memory than is in use
 * could fail, so a trim runs only while no other statement of the instance can run: the writer's
 * task runs it, and the other connections' queues are idle and then held until the limit is back
 * (`DuckDbStore.trimBlockCache`). When they are not idle, the trim waits for a later commit.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { DUCKDB_BLOCK_CACHE_CHECK_MS, DUCKDB_BLOCK_CACHE_MIB } from "../../../config/defaults.js";

const MIB = 1024 * 1024;

/** The cached table blocks and all the memory DuckDB's buffer pool holds, in bytes. */
export const BLOCK_CACHE_SQL = `SELECT coalesce(sum(memory_usage_bytes) FILTER (WHERE tag = 'BASE_TABLE'), 0)::BIGINT,
    coalesce(sum(memory_usage_bytes), 0)::BIGINT
  FROM duckdb_memory()`;

/** DuckDB's `memory_limit` of `bytes`, in whole KiB (at least one). */
export function memoryLimitSql(bytes: number): string {
  return `SET memory_limit = '${Math.max(1, Math.ceil(bytes / 1024))}KiB'`;
}

/**
 * When to look at the cache, and the trim itself. `memoryLimit` is the store's own setting (e.g.
 * "384MB"), set back after each trim.
 */
export class BlockCache {
  private lastCheck = Number.NEGATIVE_INFINITY;
  /** Trims run so far. */
  trims = 0;

  constructor(
    private readonly memoryLimit: string,
    private readonly keepBytes: number = DUCKDB_BLOCK_CACHE_MIB * MIB,
    private readonly checkMs: number = DUCKDB_BLOCK_CACHE_CHECK_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether a check is due; taking it starts the next interval. */
  takeCheck(): boolean {
    const t = this.now();
    if (t - this.lastCheck < this.checkMs) return false;
    this.lastCheck = t;
    return true;
  }

  /** The cache's size and the pool's, read on `connection`. */
  async read(connection: DuckDBConnection): Promise<{ cached: number; used: number }> {
    const [row] = (await connection.runAndReadAll(BLOCK_CACHE_SQL)).getRows();
    return { cached: Number(row?.[0] ?? 0), used: Number(row?.[1] ?? 0) };
  }

  /** Whether a cache of `cached` bytes is worth a trim. */
  over(cached: number): boolean {
    return cached > this.keepBytes;
  }

  /**
   * Evicts the cache down to the bytes kept, on `connection`, with nothing else running on the
   * instance; `memory_limit` is back at the store's setting when this settles, or it rejects with
   * the error of setting it back (the caller treats the instance as lost).
   */
  async trim(connection: DuckDBConnection, cached: number, used: number): Promise<void> {
    this.trims += 1;
    try {
      await connection.run(memoryLimitSql(used - (cached - this.keepBytes)));
    } catch {
      // "Could not free up enough memory for the new limit": DuckDB evicted what it could (blocks
      // pinned by a statement's result stay) and kept the limit; or the statement after the new
      // limit had no room. Either way the limit is set back below.
    }
    await connection.run(`SET memory_limit = '${this.memoryLimit.replaceAll("'", "''")}'`);
  }
}
