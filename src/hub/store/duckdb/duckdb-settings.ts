/**
 * DuckDB's `memory_limit` and `threads`, sized from the machine the hub runs on: the
 * memory limit is DUCKDB_MEMORY_SHARE of the memory the process may use — the machine's, or its
 * cgroup's limit when that is lower (a container) — within DUCKDB_MEMORY_LIMIT_MIN_MIB and
 * DUCKDB_MEMORY_LIMIT_MAX_MIB; threads are the CPUs the process may run on
 * (`os.availableParallelism()`, which honours CPU affinity). DuckDB's own defaults would take 80 % of
 * the machine's memory and every hardware thread, whatever the container allows.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import {
  DUCKDB_MEMORY_LIMIT_MAX_MIB,
  DUCKDB_MEMORY_LIMIT_MIN_MIB,
  DUCKDB_MEMORY_SHARE,
} from "../../../config/defaults.js";

const MIB = 1024 * 1024;

/**
 * The storage format of a data file the store creates (DuckDB's `storage_compatibility_version`;
 * a file keeps the format it was created with). DuckDB's default is v0.10.2's, in which a checkpoint
 * rewrites every index in an older layout, so each checkpoint takes longer as the indexes grow (an
 * index of 400 000 keys: 4-5 times the time of v1.2.0's, and growing). From v1.2.0 on, only DuckDB
 * 1.2 or later opens the file.
 */
export const DUCKDB_STORAGE_VERSION = "v1.2.0";

/**
 * Whether DuckDB's storage version `version` (as a file's `storage_version` tag gives it, e.g.
 * "v1.0.0+") is older than `than` (e.g. "v1.2.0"). A version it cannot read is not called older.
 */
export function olderFormat(version: string, than: string): boolean {
  const parts = (v: string) => /^v(\d+)\.(\d+)\.(\d+)\+?$/.exec(v)?.slice(1).map(Number);
  const a = parts(version);
  const b = parts(than);
  if (a === undefined || b === undefined) return false;
  for (let i = 0; i < 3; i++)
    if ((a[i] as number) !== (b[i] as number)) return (a[i] as number) < (b[i] as number);
  return false;
}

export interface DuckDbMachineSettings {
  /** DuckDB's `memory_limit`, e.g. "384MB" (DuckDB reads MB as MiB). */
  readonly memoryLimit: string;
  readonly threads: number;
}

/** The cgroup (v2, then v1) memory limit of this process in bytes; undefined when none is set. */
export function cgroupMemoryLimit(
  read: (path: string) => string = (p) => readFileSync(p, "utf8"),
): number | undefined {
  for (const path of ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]) {
    try {
      const text = read(path).trim();
      if (!/^\d+$/.test(text)) continue; // "max": no limit
      const bytes = Number(text);
      // cgroup v1 reports "no limit" as a huge number near 2^63.
      if (Number.isSafeInteger(bytes) && bytes > 0) return bytes;
    } catch {
      // Not there (no cgroup file system, or another version): look at the next.
    }
  }
  return undefined;
}

/** The settings for a process that may use `memoryBytes` and `cpus` (defaults: this machine). */
export function duckDbMachineSettings(
  memoryBytes: number = Math.min(totalmem(), cgroupMemoryLimit() ?? Number.POSITIVE_INFINITY),
  cpus: number = availableParallelism(),
): DuckDbMachineSettings {
  const mib = Math.floor((memoryBytes * DUCKDB_MEMORY_SHARE) / MIB);
  const limit = Math.min(DUCKDB_MEMORY_LIMIT_MAX_MIB, Math.max(DUCKDB_MEMORY_LIMIT_MIN_MIB, mib));
  return { memoryLimit: `${limit}MB`, threads: Math.max(1, Math.floor(cpus)) };
}
