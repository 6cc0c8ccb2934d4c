/**
 * File permissions of the data dir (docs/security.md): it holds the token signing key,
 * the store's files and dead letters (message contents), so the folder is 0700 and every file in
 * it 0600, owner only. vigil creates them so; at start the hub looks through the folder and logs a
 * warning for anything looser (a folder copied with `cp -r`, a key restored from a backup), without
 * changing it: the operator may have a reason, and a warning names the fix.
 */
import type { Dirent } from "node:fs";
import { lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";

/** Mode of the data dir and of every folder in it. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of every file in the data dir. */
export const PRIVATE_FILE_MODE = 0o600;
/** Entries looked at, at most, so a huge folder cannot stall the start. */
const MAX_ENTRIES_CHECKED = 10_000; // files and folders
/** Warnings logged, at most; one more line says how many were left out. */
const MAX_WARNINGS = 20; // lines

/**
 * Creates `dir` and any missing parents with mode 0700 (an existing folder keeps its mode; the start
 * check warns if it is looser). Also narrows the process umask to 0077, so that files other
 * libraries create later (DuckDB's write-ahead log and spill files) are 0600 too.
 */
export async function preparePrivateDir(dir: string): Promise<void> {
  process.umask(process.umask(0o077) | 0o077);
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/**
 * The data dir and the folders and files in it (not following symbolic links) that group or
 * others may read, write or enter, each as a line naming the fix; at most 10 000 entries are
 * looked at. A missing data dir gives no lines.
 */
export async function looseModes(dataDir: string): Promise<string[]> {
  const found: string[] = [];
  let checked = 0;
  const visit = async (path: string): Promise<void> => {
    if (checked++ >= MAX_ENTRIES_CHECKED) return;
    let mode: number;
    let isDirectory: boolean;
    try {
      const stats = await lstat(path);
      if (stats.isSymbolicLink()) return;
      mode = stats.mode;
      isDirectory = stats.isDirectory();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return; // removed meanwhile
      throw error;
    }
    const wanted = isDirectory ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE;
    if ((mode & 0o077) !== 0) {
      found.push(`${path} is mode ${octal(mode)}, readable by other users; run chmod ${octal(wanted)} on it`);
    }
    if (!isDirectory) return;
    let entries: Dirent[];
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    for (const entry of entries) await visit(join(path, entry.name));
  };
  await visit(dataDir);
  return found;
}

/**
 * Logs through `warn` one line per entry of the data dir that is looser than 0700/0600 (at most 20
 * lines, then a count of the rest). Never throws for a permission problem: a folder it cannot read
 * is reported as such.
 */
export async function checkDataDirModes(dataDir: string, warn: (message: string) => void): Promise<void> {
  let lines: string[];
  try {
    lines = await looseModes(dataDir);
  } catch (error) {
    warn(
      `cannot check the modes of data dir ${dataDir}: ${error instanceof Error ? error.message : String(error)}`,
    );
    return;
  }
  for (const line of lines.slice(0, MAX_WARNINGS)) warn(line);
  if (lines.length > MAX_WARNINGS)
    warn(`${lines.length - MAX_WARNINGS} more entries of ${dataDir} are readable by other users`);
}
