/**
 * The resume point of `vigil replay` (DESIGN 1, resumable): a small JSON file beside the input,
 * `FILE.replay-offset`, holding the byte offset just past the last line the hub acknowledged, that
 * line's number, and the running counts (with the first rejected lines, so a resumed or repeated run
 * still reports them and still exits non-zero). It is replaced atomically (write a temporary file,
 * then rename), so a crash leaves the old state or the new one, never half of one.
 */
import { open, rename, stat, writeFile } from "node:fs/promises";
import { readOptionalText } from "../../fs/optional-file.js";

export const REPLAY_STATE_SUFFIX = ".replay-offset";
/** Rejected lines kept in the state file and listed in the summary; the count covers the rest. */
export const REPLAY_REJECTED_LIST_MAX = 100;

export interface RejectedLine {
  readonly line: number;
  readonly error: string;
}

export interface ReplayState {
  /** Byte offset just past the last acknowledged line (0, or just past a `\n`). */
  offset: number;
  /** Lines up to `offset` (the next line is `lines + 1`). */
  lines: number;
  /** Lines the hub accepted (new or already stored). */
  accepted: number;
  /** Of the accepted, those the hub had stored before. */
  duplicates: number;
  /** Lines the hub (or the replay, for lines it could not send) rejected. */
  rejected: number;
  /** The first REPLAY_REJECTED_LIST_MAX rejected lines. */
  rejectedLines: RejectedLine[];
}

export function emptyState(): ReplayState {
  return { offset: 0, lines: 0, accepted: 0, duplicates: 0, rejected: 0, rejectedLines: [] };
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The state saved for `input`, or undefined when there is none; a damaged file is an error. */
export async function readReplayState(input: string): Promise<ReplayState | undefined> {
  const path = input + REPLAY_STATE_SUFFIX;
  const text = await readOptionalText(path);
  if (text === undefined) return undefined;
  const damaged = new Error(`${path} is not a replay state file; remove it or use --restart`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw damaged;
  }
  const s = (parsed ?? {}) as Record<string, unknown>;
  const list = s.rejectedLines;
  if (
    !isCount(s.offset) ||
    !isCount(s.lines) ||
    !isCount(s.accepted) ||
    !isCount(s.duplicates) ||
    !isCount(s.rejected) ||
    !Array.isArray(list) ||
    !list.every(
      (r: unknown) =>
        typeof r === "object" &&
        r !== null &&
        isCount((r as RejectedLine).line) &&
        typeof (r as RejectedLine).error === "string",
    )
  ) {
    throw damaged;
  }
  return {
    offset: s.offset,
    lines: s.lines,
    accepted: s.accepted,
    duplicates: s.duplicates,
    rejected: s.rejected,
    rejectedLines: (list as RejectedLine[]).slice(0, REPLAY_REJECTED_LIST_MAX),
  };
}

/**
 * Checks that `offset` still fits `input`: just past a `\n`, or the end of the file. A file that was
 * replaced or cut since the state was written fails here rather than being resumed mid-line.
 */
export async function checkResumePoint(input: string, offset: number): Promise<void> {
  if (offset === 0) return;
  const hint = `${input} changed since ${input}${REPLAY_STATE_SUFFIX} was written; replay it whole with --restart`;
  const size = (await stat(input)).size;
  if (size < offset) throw new Error(hint);
  if (size === offset) return; // also the end of a last line without `\n`
  const handle = await open(input, "r");
  try {
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, offset - 1);
    if (byte[0] !== 0x0a) throw new Error(hint);
  } finally {
    await handle.close();
  }
}

/** Replaces the state of `input` atomically. */
export async function writeReplayState(input: string, state: ReplayState): Promise<void> {
  const path = input + REPLAY_STATE_SUFFIX;
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}
