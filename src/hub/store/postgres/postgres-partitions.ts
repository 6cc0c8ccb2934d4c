/**
 * Weekly partitions of the PostgreSQL samples (DESIGN 5.5: time-partitioned samples), created on
 * demand before a write puts samples into a week that has none: one of `samples` (the rows, by `ts_ms`)
 * and one of `sample_chunks` (by `chunk_start_ms`; an hour never spans two weeks) per week, made
 * and dropped together.
 *
 * A partition covers one ISO week in UTC, [Monday 00:00, next Monday 00:00) as epoch ms, and is
 * named after its week number counted from Monday 1969-12-29 (`samples_w2834`, `samples_wm5` for
 * week −5; `sample_chunks_w2834` for the chunks). Creation runs in its own short transaction on a pool connection, under an advisory lock
 * so two hubs creating one week do not race (`IF NOT EXISTS` alone can still fail on the catalog's
 * unique index when two sessions create the same table at once). `CREATE TABLE … PARTITION OF`
 * takes an exclusive lock on the parent; outside the ingest transaction it is held only for the
 * creation, and `lock_timeout` turns a wait on a stuck writer into an error the ingester retries.
 */
import type { Sql, TransactionSql } from "postgres";
import { closedSafe } from "./postgres-closed.js";
import { PARTITION_LOCK_KEY } from "./postgres-schema.js";

export const WEEK_MS = 7 * 86_400_000; // ms
/** Monday 1969-12-29 00:00 UTC, the start of week 0. */
const WEEK_ZERO_MS = -3 * 86_400_000; // ms
/** How long partition creation waits for the lock on a parent table before giving up (retried). */
export const PARTITION_LOCK_TIMEOUT = "10s";

/** The week number of an epoch-ms time. */
export const weekOf = (ms: number): number => Math.floor((ms - WEEK_ZERO_MS) / WEEK_MS);

/** The first epoch ms of a week number. */
export const weekStart = (week: number): number => WEEK_ZERO_MS + week * WEEK_MS;

/** The partition table name of a week number. */
export const partitionName = (week: number): string => (week < 0 ? `samples_wm${-week}` : `samples_w${week}`);

/** The chunk partition table name of a week number. */
export const chunkPartitionName = (week: number): string => `sample_chunks_${partitionName(week).slice(8)}`;

/** The week numbers of the partitions that exist (read from the catalog). */
export async function listPartitions(sql: Sql): Promise<Set<number>> {
  const rows = await sql<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'samples'::regclass`;
  const weeks = new Set<number>();
  for (const { name } of rows) {
    const m = /^samples_w(m?)(\d+)$/.exec(name);
    if (m !== null) weeks.add((m[1] === "m" ? -1 : 1) * Number(m[2]));
  }
  return weeks;
}

/**
 * Creates the partitions of `weeks` that do not exist, on `sql` (a pool, not the ingest
 * transaction's connection). Week numbers are integers the store computed, so the DDL text
 * holds no client data.
 */
export async function createPartitions(sql: Sql, weeks: readonly number[]): Promise<void> {
  if (weeks.length === 0) return;
  await sql.begin(
    closedSafe(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
      await createPartitionsInTransaction(tx, weeks);
    }),
  );
}

/**
 * Creates the partitions of `weeks` inside the caller's open transaction (which then holds the
 * advisory lock and the locks on the parents until it ends).
 */
export async function createPartitionsInTransaction(
  tx: TransactionSql,
  weeks: readonly number[],
): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${PARTITION_LOCK_KEY}::bigint)`;
  for (const week of [...weeks].sort((a, b) => a - b)) {
    if (!Number.isSafeInteger(week)) throw new Error(`internal: week ${week} is not an integer`);
    const from = weekStart(week);
    await tx.unsafe(
      `CREATE TABLE IF NOT EXISTS ${partitionName(week)} PARTITION OF samples
       FOR VALUES FROM (${from}) TO (${from + WEEK_MS})`,
    );
    await tx.unsafe(
      `CREATE TABLE IF NOT EXISTS ${chunkPartitionName(week)} PARTITION OF sample_chunks
       FOR VALUES FROM (${from}) TO (${from + WEEK_MS})`,
    );
  }
}
