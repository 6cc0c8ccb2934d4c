/**
 * `vigil replay FILE.ndjson --hub URL [--restart]` (DESIGN 1): backfills published messages — one
 * public-v2 message per line, as the gateway's NDJSON file target writes them — into a hub through
 * `POST /v0/messages` (DESIGN 5.1), in batches of at most REPLAY_BATCH_LINES lines and
 * REPLAY_BATCH_BYTES bytes, streamed from the file (it is never read whole).
 *
 * Resumable: after each batch the hub acknowledged (a 200 means committed, DESIGN 1), the byte offset
 * past it goes to `FILE.replay-offset`; the next run starts there unless `--restart`. Replaying a
 * line twice stores nothing twice: the hub de-duplicates messages. A batch the hub cannot take now
 * (503, 429, unreachable, timed out) is sent again after `Retry-After` or a back-off, at most
 * REPLAY_ATTEMPTS times; any other hub error stops the replay (exit 1), resumable.
 *
 * Exit status: 0 when every line was stored (or already was), REPLAY_EXIT_REJECTED (2) when the
 * hub rejected any line (the summary lists line numbers and reasons), 1 when the replay stopped.
 * Blank lines are skipped. Lines the replay cannot send are rejected by it: longer than
 * REPLAY_MAX_LINE_BYTES, not UTF-8, or a JSON array (the hub would read a body starting with `[` as
 * one JSON array, not as NDJSON).
 */
import { stat } from "node:fs/promises";
import type { Command } from "commander";
import { addConnectionOptions, type ConnectionFlags, clientFrom } from "../client/connection-options.js";
import { type HubClient, HubError } from "../client/hub-client.js";
import { ndjsonLines } from "../client/ndjson-lines.js";
import { Progress } from "../client/progress.js";
import {
  checkResumePoint,
  emptyState,
  REPLAY_REJECTED_LIST_MAX,
  REPLAY_STATE_SUFFIX,
  type RejectedLine,
  type ReplayState,
  readReplayState,
  writeReplayState,
} from "../client/replay-state.js";

// 10,000 lines make several of the hub's backfill parts (they grow from 1,000 to 5,000 messages), so
// the hub parses the next while it commits one; batches of 1,000 were one part each and ~30 % slower
// (docs/decisions.md).
export const REPLAY_BATCH_LINES = 10_000;
export const REPLAY_BATCH_BYTES = 8 * 1024 * 1024; // 8 MiB per request
export const REPLAY_MAX_LINE_BYTES = 16 * 1024 * 1024; // 16 MiB: a longer line is rejected unread
export const REPLAY_ATTEMPTS = 6; // per batch, for 503, 429 and an unreachable hub
const REPLAY_BACKOFF_MAX_MS = 30_000; // 30 s
const REPLAY_WAIT_MAX_MS = 60_000; // 60 s: a longer Retry-After is shortened
export const REPLAY_EXIT_REJECTED = 2;

export interface ReplayOptions {
  readonly file: string;
  /** Ignore the saved offset and replay from the first line. */
  readonly restart?: boolean;
  /** Where progress goes; `tty` draws a bar redrawn in place, within `columns` when given. */
  readonly progress: {
    readonly tty: boolean;
    readonly write: (text: string) => void;
    readonly columns?: number;
  };
  /** Milliseconds, for the progress rate; default Date.now. */
  readonly now?: () => number;
  /** Waits between attempts; default a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly batchLines?: number;
  readonly batchBytes?: number;
  readonly maxLineBytes?: number;
}

export interface ReplayResult {
  /** Counts over every run since the last `--restart` (what the state file holds). */
  readonly state: ReplayState;
  /** The line this run resumed after (0: from the start). */
  readonly resumedAfter: number;
}

interface Batch {
  /** Lines to send, with their line numbers. */
  readonly sent: { readonly line: number; readonly text: string }[];
  bytes: number;
  /** Lines the replay rejects itself. */
  readonly local: RejectedLine[];
  /** Lines read in all (blank and rejected ones too). */
  lines: number;
  /** Offset past the last line read, and its number. */
  end: number;
  last: number;
}

const newBatch = (state: ReplayState): Batch => ({
  sent: [],
  bytes: 0,
  local: [],
  lines: 0,
  end: state.offset,
  last: state.lines,
});

/** Reads the hub's `{accepted, duplicates, rejected: [{index, error}]}` for a batch of `count`. */
function parseBackfillAnswer(
  text: string,
  count: number,
): { accepted: number; duplicates: number; rejected: { index: number; error: string }[] } {
  const parsed: unknown = JSON.parse(text);
  const answer = (parsed ?? {}) as Record<string, unknown>;
  const rejected = answer.rejected;
  const valid =
    typeof answer.accepted === "number" &&
    Array.isArray(rejected) &&
    rejected.every((r: unknown) => {
      const { index, error } = (r ?? {}) as Record<string, unknown>;
      return (
        Number.isSafeInteger(index) &&
        (index as number) >= 0 &&
        (index as number) < count &&
        typeof error === "string"
      );
    }) &&
    answer.accepted + rejected.length === count;
  if (!valid) throw new Error("the hub's answer to POST /v0/messages does not match the batch sent");
  return {
    accepted: answer.accepted as number,
    duplicates: typeof answer.duplicates === "number" ? answer.duplicates : 0,
    rejected: rejected as { index: number; error: string }[],
  };
}

const RETRYABLE = new Set([0, 429, 503]);

/** Posts one batch, again after a wait while the hub is busy or unreachable. */
async function postBatch(client: HubClient, body: string, sleep: (ms: number) => Promise<void>) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await client.request("POST", "/v0/messages", {
        text: body,
        contentType: "application/x-ndjson",
      });
    } catch (error) {
      if (!(error instanceof HubError) || !RETRYABLE.has(error.status) || attempt >= REPLAY_ATTEMPTS)
        throw error;
      const backoff = Math.min(REPLAY_BACKOFF_MAX_MS, 1000 * 2 ** (attempt - 1));
      const asked = error.retryAfterSeconds === undefined ? backoff : error.retryAfterSeconds * 1000;
      await sleep(Math.min(asked, REPLAY_WAIT_MAX_MS));
    }
  }
}

/**
 * Replays `options.file` into the hub of `client` from the saved offset (or the start with
 * `restart`), saving the offset after every acknowledged batch. Throws when the replay stops; the
 * saved offset then still marks the last acknowledged batch.
 */
export async function replayFile(client: HubClient, options: ReplayOptions): Promise<ReplayResult> {
  const { file } = options;
  const batchLines = options.batchLines ?? REPLAY_BATCH_LINES;
  const batchBytes = options.batchBytes ?? REPLAY_BATCH_BYTES;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const size = (await stat(file)).size;
  const state = (options.restart === true ? undefined : await readReplayState(file)) ?? emptyState();
  await checkResumePoint(file, state.offset);
  const resumedAfter = state.lines;
  const progress = new Progress({
    totalBytes: size - state.offset,
    tty: options.progress.tty,
    write: options.progress.write,
    ...(options.progress.columns === undefined ? {} : { columns: options.progress.columns }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });

  const flush = async (batch: Batch): Promise<void> => {
    const rejected = [...batch.local];
    if (batch.sent.length > 0) {
      const body = `${batch.sent.map((s) => s.text).join("\n")}\n`;
      const answer = parseBackfillAnswer((await postBatch(client, body, sleep)).text, batch.sent.length);
      state.accepted += answer.accepted;
      state.duplicates += answer.duplicates;
      for (const r of answer.rejected)
        rejected.push({ line: batch.sent[r.index]?.line ?? 0, error: r.error });
    }
    rejected.sort((a, b) => a.line - b.line);
    state.rejected += rejected.length;
    for (const r of rejected) {
      if (state.rejectedLines.length < REPLAY_REJECTED_LIST_MAX) state.rejectedLines.push(r);
    }
    const advancedBytes = batch.end - state.offset;
    state.offset = batch.end;
    state.lines = batch.last;
    await writeReplayState(file, state);
    progress.advance(advancedBytes, batch.lines);
  };

  let batch = newBatch(state);
  try {
    for await (const item of ndjsonLines(
      file,
      state.offset,
      state.lines + 1,
      options.maxLineBytes ?? REPLAY_MAX_LINE_BYTES,
    )) {
      batch.lines += 1;
      batch.end = item.end;
      batch.last = item.line;
      if (item.kind === "invalid") {
        batch.local.push({ line: item.line, error: item.reason });
      } else if (item.text.trim() === "") {
        // blank: skipped, as the hub skips it
      } else if (item.text.trimStart().startsWith("[")) {
        batch.local.push({
          line: item.line,
          error: "a JSON array; NDJSON holds one message (an object) per line",
        });
      } else {
        batch.sent.push({ line: item.line, text: item.text });
        batch.bytes += Buffer.byteLength(item.text) + 1;
      }
      if (batch.sent.length >= batchLines || batch.bytes >= batchBytes || batch.local.length >= batchLines) {
        await flush(batch);
        batch = newBatch(state);
      }
    }
    if (batch.lines > 0) await flush(batch);
  } catch (error) {
    progress.finish();
    const where =
      state.lines === 0
        ? "nothing was acknowledged yet"
        : `lines 1–${state.lines} are done; the same command resumes after line ${state.lines}`;
    throw new Error(`${(error as Error).message} (${where})`, { cause: error });
  }
  progress.finish();
  return { state, resumedAfter };
}

/** The summary a replay prints: counts, then the rejected lines with their reasons. */
export function replaySummary(file: string, result: ReplayResult): string {
  const { state, resumedAfter } = result;
  const stored = state.accepted - state.duplicates;
  const lines = [
    `${file}: ${state.lines} lines; ${stored} messages stored, ${state.duplicates} already stored, ` +
      `${state.rejected} lines rejected` +
      (resumedAfter > 0 ? ` (resumed after line ${resumedAfter}; counts include earlier runs)` : ""),
  ];
  if (state.rejected > 0) {
    lines.push("rejected lines:");
    for (const r of state.rejectedLines) lines.push(`  line ${r.line}: ${r.error}`);
    const unlisted = state.rejected - state.rejectedLines.length;
    if (unlisted > 0)
      lines.push(`  … and ${unlisted} more (the first ${REPLAY_REJECTED_LIST_MAX} are listed)`);
  }
  return lines.join("\n");
}

/** Adds `replay FILE.ndjson [--restart]` with the hub connection options. */
export function registerReplay(program: Command): void {
  const command = program
    .command("replay")
    .description("backfill published messages from an NDJSON file into a hub (resumable)")
    .argument("<file>", "NDJSON, one public-v2 message per line (the gateway's file target)")
    .option("--restart", `replay from the first line, ignoring FILE${REPLAY_STATE_SUFFIX}`);
  addConnectionOptions(command).action(
    async (file: string, options: ConnectionFlags & { restart?: boolean }) => {
      const result = await replayFile(clientFrom(options), {
        file,
        restart: options.restart === true,
        progress: {
          tty: process.stderr.isTTY === true,
          write: (text) => process.stderr.write(text),
          ...(process.stderr.columns === undefined ? {} : { columns: process.stderr.columns }),
        },
      });
      process.stdout.write(`${replaySummary(file, result)}\n`);
      if (result.state.rejected > 0) process.exitCode = REPLAY_EXIT_REJECTED;
    },
  );
}
