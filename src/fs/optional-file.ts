/**
 * Reading a file that may not exist yet: state and key files that the first run creates. A
 * missing file is `undefined`; any other read error (permissions, a folder in its place) is thrown,
 * since treating it as "missing" would start from nothing and overwrite what is there.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";

const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === "ENOENT";

/** The UTF-8 text of `path`, or undefined when there is no such file. */
export async function readOptionalText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** {@link readOptionalText}, synchronously: for a read at start, before anything else runs. */
export function readOptionalTextSync(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
