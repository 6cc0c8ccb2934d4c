/**
 * The hub's dead-letter file (DESIGN 1, 5.5): a message the hub cannot store (not JSON, not
 * public-v2, refused by the store) is appended here with the reason, counted, and logged, and
 * ingestion goes on behind it. One JSON object per line:
 * `{"at": "<ISO time>", "reason": "…", "id": "<envelope id>" | null, "message": <as received>}`.
 * Lines are flushed to disk before the batch is acknowledged, so a crash cannot lose them; a write
 * that fails (disk full) is cut back and rejects, and the batch comes again.
 * The file is readable by its owner only.
 */
import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "pino";

export interface DeadLetter {
  readonly reason: string;
  readonly id: string | undefined;
  readonly message: unknown;
}

export class DeadLetterFile {
  private written = 0;
  private tail: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly logger: Logger,
  ) {}

  /** Messages dead-lettered since start. */
  get count(): number {
    return this.written;
  }

  /** Appends the letters and flushes them to disk; rejects when the file cannot be written. */
  append(letters: readonly DeadLetter[]): Promise<void> {
    if (letters.length === 0) return Promise.resolve();
    const run = this.tail.then(() => this.write(letters));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async write(letters: readonly DeadLetter[]): Promise<void> {
    const at = new Date().toISOString();
    let text = "";
    for (const letter of letters) {
      text += `${JSON.stringify({ at, reason: letter.reason, id: letter.id ?? null, message: letter.message })}\n`;
    }
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const handle = await open(this.path, "a", 0o600);
    try {
      const size = (await handle.stat()).size;
      try {
        await handle.appendFile(text, "utf8");
        await handle.datasync();
      } catch (error) {
        // A write that failed part-way (disk full) must leave no half line behind: cut the file
        // back, so the batch's retry appends its letters whole, once (as the NDJSON target does).
        await handle.truncate(size).catch(() => undefined);
        throw error;
      }
    } finally {
      await handle.close();
    }
    this.written += letters.length;
    const first = letters[0] as DeadLetter;
    this.logger.warn(
      { count: letters.length, total: this.written, file: this.path, id: first.id, reason: first.reason },
      "messages dead-lettered",
    );
  }
}
