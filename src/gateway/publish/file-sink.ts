/**
 * The NDJSON file target: one public-v2 message per line, appended (DESIGN 2 `file:`, 4.3 "The
 * NDJSON sink appends"). A batch is acknowledged once its lines are written and flushed to disk
 * (`fdatasync`). When a write fails part-way (disk full), the file is cut back to the end of the
 * last whole batch before the batch is tried again, so a retry never leaves half a line behind.
 * The file and its folder are created when missing, readable by their owner only. Batches are
 * written one after another, in the order offered: the publisher keeps two in flight, and two
 * writes at once would each open the file and cut back what the other had just written.
 */

import type { FileHandle } from "node:fs/promises";
import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import type { Envelope } from "../../bus/envelope.js";
import type { Sink } from "./sink.js";

const FILE_MODE = 0o600; // owner read/write only
const DIR_MODE = 0o700;

export class FileSink implements Sink {
  readonly name: string;
  private handle: FileHandle | undefined;
  /** Size of the file after the last batch that was written whole; -1 until opened. */
  private goodSize = -1;
  /** The write in progress: the next batch waits for it. */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly path: string) {
    this.name = `file:${path}`;
  }

  publish(batch: readonly Envelope[]): Promise<void> {
    const write = this.writing.then(() => this.write(batch));
    this.writing = write.catch(() => undefined);
    return write;
  }

  private async write(batch: readonly Envelope[]): Promise<void> {
    const handle = await this.open();
    let text = "";
    for (const envelope of batch) text += `${JSON.stringify(envelope.message)}\n`;
    try {
      await handle.appendFile(text, "utf8");
      await handle.datasync();
      this.goodSize += Buffer.byteLength(text, "utf8");
    } catch (error) {
      // Cut back any partial write; if even that fails, reopen next time and cut it back then.
      await handle.truncate(this.goodSize).catch(() => this.reset());
      throw error;
    }
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }

  private async open(): Promise<FileHandle> {
    if (this.handle !== undefined) return this.handle;
    await mkdir(dirname(this.path), { recursive: true, mode: DIR_MODE });
    const handle = await open(this.path, "a", FILE_MODE);
    try {
      const size = (await handle.stat()).size;
      // Reopened after a failed cut-back: what lies past the last whole batch is a partial write.
      if (this.goodSize >= 0 && size > this.goodSize) await handle.truncate(this.goodSize);
      else this.goodSize = size;
    } catch (error) {
      await handle.close();
      throw error;
    }
    this.handle = handle;
    return handle;
  }

  private reset(): void {
    const handle = this.handle;
    this.handle = undefined;
    void handle?.close().catch(() => undefined);
  }
}
