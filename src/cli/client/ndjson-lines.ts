/**
 * Streams the lines of an NDJSON file from a byte offset, with each line's number and the byte
 * offset just past it, so a replay can record exactly how far it got (the file is never read whole).
 * A line longer than `maxLineBytes` is not held: it is skipped to its end and reported as too long.
 * Lines are decoded as strict UTF-8: a line that is not is reported rather than sent with U+FFFD in
 * place of its bytes (values pass through exactly as written). A last line without `\n` counts.
 */
import { createReadStream } from "node:fs";

/** One line of the file, keyed on `kind`. */
export type NdjsonLine =
  | { readonly kind: "text"; readonly line: number; readonly end: number; readonly text: string }
  | { readonly kind: "invalid"; readonly line: number; readonly end: number; readonly reason: string };

const NEWLINE = 0x0a;
const READ_CHUNK_BYTES = 64 * 1024; // 64 KiB

/**
 * The lines from byte `start` (which must be 0 or just past a `\n`); the first is numbered
 * `firstLine` (1-based).
 */
export async function* ndjsonLines(
  path: string,
  start: number,
  firstLine: number,
  maxLineBytes: number,
): AsyncGenerator<NdjsonLine> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let parts: Buffer[] = [];
  let held = 0;
  let tooLong = false;
  let offset = start; // of the next byte to read
  let line = firstLine;

  const finish = (end: number): NdjsonLine => {
    const number = line;
    line += 1;
    if (tooLong) {
      tooLong = false;
      return { kind: "invalid", line: number, end, reason: `line longer than ${maxLineBytes} bytes` };
    }
    const bytes = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
    parts = [];
    held = 0;
    try {
      return { kind: "text", line: number, end, text: decoder.decode(bytes) };
    } catch {
      return { kind: "invalid", line: number, end, reason: "not valid UTF-8" };
    }
  };

  const stream = createReadStream(path, { start, highWaterMark: READ_CHUNK_BYTES });
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let from = 0;
    while (from < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, from);
      const until = newline < 0 ? chunk.length : newline;
      if (!tooLong) {
        if (held + (until - from) > maxLineBytes) {
          tooLong = true;
          parts = [];
          held = 0;
        } else {
          parts.push(chunk.subarray(from, until));
          held += until - from;
        }
      }
      if (newline < 0) break;
      yield finish(offset + newline + 1);
      from = newline + 1;
    }
    offset += chunk.length;
  }
  if (held > 0 || tooLong) yield finish(offset);
}
