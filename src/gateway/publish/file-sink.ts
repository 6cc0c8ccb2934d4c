/**
 * The NDJSON file sink: one public-v2 message per line, appended (DESIGN 4.3: "The NDJSON sink
 * appends"). The file's folder is created when missing.
 */
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import type { PublicV2Message } from "../../messages/types.js";
import type { Sink } from "./sink.js";

export class FileSink implements Sink {
  readonly name: string;
  private readonly stream: WriteStream;
  private failure: Error | undefined;

  constructor(path: string) {
    this.name = `file:${path}`;
    mkdirSync(dirname(path), { recursive: true });
    this.stream = createWriteStream(path, { flags: "a" });
    this.stream.on("error", (error) => {
      this.failure = error;
    });
  }

  write(messages: readonly PublicV2Message[]): void {
    if (this.failure !== undefined) throw this.failure;
    let text = "";
    for (const message of messages) text += `${JSON.stringify(message)}\n`;
    this.stream.write(text);
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.stream.end((error?: Error | null) => (error ? reject(error) : resolve()));
    });
  }
}
