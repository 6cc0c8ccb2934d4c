/**
 * The nesting depth of untrusted JSON, measured on its bytes before it is parsed into objects
 * (docs/security.md, "Limits"): `JSON.parse` of a deeply nested text builds the whole tree (and a
 * deep one can exhaust the stack of whatever walks it next), so every body and frame is scanned
 * first and refused past the limit. A text with at most `limit` opening brackets in all (counted
 * with the native `indexOf`, strings included) cannot nest deeper and needs no scan — most texts,
 * such as every public-v2 message (at a fifth of the parse's cost, measured on table messages).
 * Otherwise the scan skips strings with `indexOf`; it does not validate the JSON — the parse that
 * follows does.
 */

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_ARRAY = 0x5b; // [
const OPEN_OBJECT = 0x7b; // {
const CLOSE_ARRAY = 0x5d; // ]
const CLOSE_OBJECT = 0x7d; // }

/**
 * True when the JSON text in `bytes` (UTF-8) nests arrays and objects more than `limit` deep
 * (`[]` is depth 1, `[[]]` depth 2). Text that is not JSON gives some answer; the parse that
 * follows refuses it.
 */
export function jsonTooDeep(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  const length = bytes.length;
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, length);
  if (atMostOpeners(buffer, limit)) return false;
  for (let i = 0; i < length; i++) {
    const byte = buffer[i];
    if (byte === QUOTE) {
      i = stringEnd(buffer, i + 1);
      continue;
    }
    if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      depth += 1;
      if (depth > limit) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (depth > 0) depth -= 1;
    }
  }
  return false;
}

/** The same check on a JSON text already decoded (a WebSocket text message, a string body). */
export function jsonTextTooDeep(text: string, limit: number): boolean {
  let depth = 0;
  const length = text.length;
  if (atMostOpeners(text, limit)) return false;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      i = textStringEnd(text, i + 1);
      continue;
    }
    if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      depth += 1;
      if (depth > limit) return true;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      if (depth > 0) depth -= 1;
    }
  }
  return false;
}

/** Whether `text` holds at most `limit` opening brackets (`[` and `{`, inside strings too). */
function atMostOpeners(text: Buffer | string, limit: number): boolean {
  if (typeof text === "string") return textCount(text, "[", limit) + textCount(text, "{", limit) <= limit;
  return byteCount(text, OPEN_ARRAY, limit) + byteCount(text, OPEN_OBJECT, limit) <= limit;
}

/** How often `what` occurs in `text`, counted up to `limit` + 1. */
function textCount(text: string, what: string, limit: number): number {
  let count = 0;
  for (let at = text.indexOf(what); at !== -1 && count <= limit; at = text.indexOf(what, at + 1)) count += 1;
  return count;
}

/** How often the byte `what` occurs in `bytes`, counted up to `limit` + 1. */
function byteCount(bytes: Buffer, what: number, limit: number): number {
  let count = 0;
  for (let at = bytes.indexOf(what); at !== -1 && count <= limit; at = bytes.indexOf(what, at + 1))
    count += 1;
  return count;
}

/** Index of the quote that closes the string whose text starts at `from` (or the end). */
function stringEnd(buffer: Buffer, from: number): number {
  let at = from;
  for (;;) {
    const quote = buffer.indexOf(QUOTE, at);
    if (quote < 0) return buffer.length;
    let backslashes = 0;
    while (quote - 1 - backslashes >= from && buffer[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

function textStringEnd(text: string, from: number): number {
  let at = from;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (quote - 1 - backslashes >= from && text.charCodeAt(quote - 1 - backslashes) === BACKSLASH)
      backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}
