/**
 * A backfill body (`POST /v0/messages`, DESIGN 5.1) read in slices and checked by the backfill
 * parser's worker threads (backfill-parser.ts). An NDJSON body (one JSON value per non-blank line)
 * is cut into slices of lines on the hub's thread ({@link lineRanges}, a scan of its bytes) and each
 * slice's bytes go to a worker, so several workers read one body; a JSON array is one JSON text,
 * read whole by one worker ({@link arraySlices}). Each slice is checked with the ingester's own code
 * (check-message.ts), and the checked slice written in a compact form for the hub's thread —
 * numbers in typed arrays (moved, not copied), each repeated name sent once — which
 * {@link addSlice} turns back into the ingester's {@link CheckedPart}.
 */
import { VigilError } from "../../errors/catalog.js";
import { asEpochMs } from "../../ids.js";
import type { DataLimits } from "../../limits/data-limits.js";
import { jsonTextTooDeep } from "../../limits/json-depth.js";
import { limitError, limitReason } from "../../limits/limit-refusals.js";
import type { PublicV2Message } from "../../messages/types.js";
import { isCanonicalNumberText } from "../store/core/canonical-number.js";
import type { MessageKey } from "../store/store.js";
import {
  CheckedPart,
  type CheckedTextDelivery,
  checkInto,
  type MetricsRow,
  type Rejection,
  wellFormedJsonText,
} from "./check-message.js";
import { readTableLine } from "./table-line.js";

/** Deliveries read from a body, and how many entries (array elements, or lines blank or not) are left. */
export interface BodySlice {
  readonly deliveries: CheckedTextDelivery[];
  readonly left: number;
}

/** One character that `String.prototype.trim` removes (`\s`: JavaScript's whitespace and line ends). */
const WHITESPACE = /^\s$/u;

/**
 * Where the first character of `bytes[start, end)` that `String.prototype.trim` would keep begins
 * (`end` when there is none), reading the UTF-8 bytes as the decoded text would be read: ASCII
 * whitespace is skipped byte by byte, and a character of more than one byte is decoded on its own
 * (JavaScript's whitespace holds some, such as U+00A0 and U+FEFF). An invalid sequence decodes to
 * U+FFFD, which is no whitespace, as it would in the whole text.
 */
function firstNonSpace(bytes: Buffer, start: number, end: number): number {
  for (let i = start; i < end; ) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      if (b !== 0x20 && (b < 0x09 || b > 0x0d)) return i;
      i += 1;
      continue;
    }
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    if (!WHITESPACE.test(bytes.toString("utf8", i, Math.min(i + length, end)))) return i;
    i += length;
  }
  return end;
}

const bufferOf = (body: Uint8Array): Buffer => Buffer.from(body.buffer, body.byteOffset, body.byteLength);

/**
 * Whether a body is read as one JSON array: its text, trimmed at the start, begins with `[`.
 * Anything else is NDJSON: one JSON value per non-blank line.
 */
export function startsLikeArray(body: Uint8Array): boolean {
  const bytes = bufferOf(body);
  const first = firstNonSpace(bytes, 0, bytes.length);
  return first < bytes.length && bytes[first] === 0x5b;
}

/**
 * A slice of an NDJSON body: its bytes `[start, end)` hold `count` non-blank lines (and any blank
 * lines between them), and `left` lines (blank or not) follow it — exactly when they are at most
 * the `exactUpTo` that {@link lineRanges} was given, otherwise some number above it.
 */
export interface LineRange {
  readonly start: number;
  readonly end: number;
  readonly count: number;
  readonly left: number;
}

/**
 * The slices of `size` non-blank lines of an NDJSON body, as byte ranges, found on the hub's thread
 * without decoding the body: lines are split at each `\n` byte (never part of a longer UTF-8
 * character) and a line is blank when its text would trim to nothing. The lines are those of
 * `text.split("\n")` of the decoded body, without a blank last one (the usual final newline);
 * {@link lineDeliveries} parses each slice in the worker. The lines left after a slice are counted
 * ahead of it only up to `exactUpTo` + 1 (see {@link LineRange}), so each slice scans about its own
 * share of the body: a 256 MiB body's first slice no longer waits on the hub's thread for every
 * newline in it to be counted (13–42 ms; now under a millisecond).
 */
export function* lineRanges(
  body: Uint8Array,
  size: number,
  exactUpTo = Number.POSITIVE_INFINITY,
): Generator<LineRange> {
  const bytes = bufferOf(body);
  const lastNewline = bytes.lastIndexOf(0x0a);
  // The segment after the last newline is a line unless it is blank (then the text ended in one).
  const lastIsLine = firstNonSpace(bytes, lastNewline + 1, bytes.length) < bytes.length;
  // Newlines counted ahead: `ahead` of them lie after the current line's end, up to `scanned`.
  let scanned = -1;
  let ahead = 0;
  /** Lines after the line ending at `lineEnd` (a newline, or the body's end). */
  const linesAfter = (lineEnd: number): number => {
    if (lineEnd >= bytes.length) return 0;
    while (scanned < lastNewline && ahead <= exactUpTo) {
      scanned = bytes.indexOf(0x0a, scanned + 1);
      if (scanned > lineEnd) ahead += 1;
    }
    // The lines after the newline at `lineEnd`: one per newline after it, and the last segment.
    return ahead + (lastIsLine ? 1 : 0);
  };
  let start = 0;
  let end = 0;
  let count = 0;
  for (let from = 0; from <= bytes.length; ) {
    const newline = bytes.indexOf(0x0a, from);
    const lineEnd = newline === -1 ? bytes.length : newline;
    if (newline === -1 && !lastIsLine) break; // the blank last segment is no line
    if (lineEnd <= scanned) ahead -= 1; // this line's newline was counted ahead of an earlier line
    if (firstNonSpace(bytes, from, lineEnd) < lineEnd) {
      end = lineEnd;
      count += 1;
      if (count === size) {
        yield { start, end, count, left: linesAfter(lineEnd) };
        start = end + 1;
        count = 0;
      }
    }
    from = lineEnd + 1;
  }
  if (count > 0) yield { start, end, count, left: 0 };
}

/**
 * The deliveries of a slice's text (the bytes of a {@link LineRange}, decoded): one per non-blank
 * line (see {@link lineDelivery}).
 */
export function lineDeliveries(text: string, jsonDepth: number): CheckedTextDelivery[] {
  const deliveries: CheckedTextDelivery[] = [];
  for (const line of text.split("\n")) if (!isBlank(line)) deliveries.push(lineDelivery(line, jsonDepth));
  return deliveries;
}

/** Whether a line is blank: its text trims to nothing (a message line starts with `{`). */
const isBlank = (line: string): boolean => line.charCodeAt(0) !== 0x7b && line.trim() === "";

/**
 * The delivery of one non-blank line: a line that is not JSON is a delivery with its parse error,
 * and so is one nested deeper than `jsonDepth`, with the limit (it is not parsed); each delivery is
 * marked when its text proves its strings well-formed.
 */
function lineDelivery(line: string, jsonDepth: number): CheckedTextDelivery {
  if (jsonTextTooDeep(line, jsonDepth)) {
    return {
      id: undefined,
      message: undefined,
      parseError: limitReason(
        "jsonDepth",
        "the line nests arrays and objects",
        jsonDepth + 1,
        jsonDepth,
        "levels or more",
      ),
      limit: "jsonDepth",
    };
  }
  try {
    const message: unknown = JSON.parse(line);
    return { id: undefined, message, wellFormedText: wellFormedJsonText(line), text: line };
  } catch (error) {
    return { id: undefined, message: undefined, parseError: `not valid JSON: ${(error as Error).message}` };
  }
}

/**
 * The checked slice of a slice's text (the bytes of a {@link LineRange}, decoded), as
 * {@link checkSlice} makes of its {@link lineDeliveries}, with `left` entries after it: a line that
 * is a `table` or `headline` update as a gateway writes it is read by table-line.ts without
 * `JSON.parse` (with the same result); every other line is parsed and checked as a delivery.
 * `readTables` false parses every line (the tests compare the two).
 */
export function checkLines(text: string, left: number, limits: DataLimits, readTables = true): CheckedSlice {
  const part = new CheckedPart();
  for (const line of text.split("\n")) {
    if (isBlank(line)) continue;
    const start = part.cells.length;
    const read = readTables ? readTableLine(line, limits, part.cells) : undefined;
    if (read === undefined) {
      checkInto([lineDelivery(line, limits.jsonDepth)], part, limits);
      continue;
    }
    part.checked.push({ index: part.length, key: read.key, row: read.row, start, end: part.cells.length });
    part.length += 1;
  }
  return packSlice(part, left);
}

/**
 * A JSON array body's messages as deliveries, in slices of at most `size` (the array is one JSON
 * text, parsed whole). Throws INVALID_MESSAGE (400) when the text is not a JSON array, and
 * LIMIT_EXCEEDED (400) before parsing it when a message in it nests deeper than `jsonDepth` (the
 * array's own level is not counted: each message may nest as deep as an NDJSON line).
 */
export function* arraySlices(text: string, size: number, jsonDepth: number): Generator<BodySlice> {
  const trimmed = text.trimStart();
  if (jsonTextTooDeep(trimmed, jsonDepth + 1)) {
    throw limitError(
      "jsonDepth",
      "A message of the array nests arrays and objects",
      jsonDepth + 1,
      jsonDepth,
      "levels or more",
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch (error) {
    throw new VigilError("INVALID_MESSAGE", {
      detail: `The body starts like a JSON array but is not valid JSON (${(error as Error).message}).`,
    });
  }
  if (!Array.isArray(parsed))
    throw new VigilError("INVALID_MESSAGE", { detail: "The body must be a JSON array." });
  const wellFormedText = wellFormedJsonText(trimmed);
  for (let start = 0; start < parsed.length; start += size) {
    const deliveries = parsed
      .slice(start, start + size)
      .map((message) => ({ id: undefined, message, wellFormedText }));
    yield { deliveries, left: Math.max(0, parsed.length - start - size) };
  }
}

/** Ints per checked message in {@link CheckedSlice.items}. */
const ITEM_FIELDS = 14;
/** Field offsets in an item; the names are indexes into {@link CheckedSlice.names}, −1 for none. */
const F = {
  index: 0,
  start: 1,
  end: 2,
  /** Index into `others` when the message is not a row; −1 for a row. */
  other: 3,
  entityText: 4,
  gateway: 5,
  probe: 6,
  managedEntity: 7,
  osType: 8,
  sampler: 9,
  samplerType: 10,
  dataview: 11,
  row: 12,
  pluginName: 13,
} as const;

/**
 * A slice of a body, checked: what {@link CheckedPart} holds, with indexes counted from the
 * slice's first delivery and cells from its first cell. Structured-clone friendly.
 */
export interface CheckedSlice {
  /** Deliveries in the slice. */
  readonly count: number;
  /** Entries of the body after the slice. */
  readonly left: number;
  readonly rejected: Rejection[];
  /** Every name the slice's rows and cells use, once each. */
  readonly names: string[];
  /** ITEM_FIELDS ints per checked message, in body order. */
  readonly items: Int32Array;
  /** The time of each checked message that is a row (NaN for the others). */
  readonly times: Float64Array;
  /** The digest of each checked message (backfill messages have no id). */
  readonly digests: string[];
  /** The time of each digest's key (its message's own time; NaN for none). */
  readonly digestTimes: Float64Array;
  /** The checked messages that are not rows, as they are. */
  readonly others: PublicV2Message[];
  /** Per cell: its column (index into `names`), its number (NaN: none) and whether its text is left out. */
  readonly columns: Int32Array;
  readonly values: Float64Array;
  /**
   * 1 where the cell's text is the canonical text of its number (core/canonical-number.ts): not
   * sent, since the DuckDB store leaves it out and `SampleCells.text` writes it back.
   */
  readonly canonical: Uint8Array;
  /** The texts of the other cells, in order. */
  readonly texts: string[];
}

/** The buffers {@link CheckedSlice} holds, to move them rather than copy them to the other thread. */
export const sliceBuffers = (s: CheckedSlice): ArrayBuffer[] =>
  [s.items, s.times, s.digestTimes, s.columns, s.values, s.canonical].map((a) => a.buffer as ArrayBuffer);

/** Checks `slice` (check-message.ts, against `limits`) and writes the result as a {@link CheckedSlice}. */
export function checkSlice(slice: BodySlice, limits: DataLimits): CheckedSlice {
  const part = new CheckedPart();
  checkInto(slice.deliveries, part, limits);
  return packSlice(part, slice.left);
}

/** A checked part written as a {@link CheckedSlice} with `left` entries after it. */
function packSlice(part: CheckedPart, left: number): CheckedSlice {
  const names: string[] = [];
  const numbers = new Map<string, number>();
  const name = (text: string): number => {
    let n = numbers.get(text);
    if (n === undefined) {
      n = names.length;
      names.push(text);
      numbers.set(text, n);
    }
    return n;
  };
  const items = new Int32Array(part.checked.length * ITEM_FIELDS).fill(-1);
  const times = new Float64Array(part.checked.length).fill(Number.NaN);
  const digests: string[] = [];
  const digestTimes = new Float64Array(part.checked.length);
  const others: PublicV2Message[] = [];
  part.checked.forEach((item, i) => {
    if (item.key.kind !== "hash") throw new Error("a backfill message has no id");
    digests.push(item.key.hash);
    digestTimes[i] = item.key.at ?? Number.NaN;
    const at = i * ITEM_FIELDS;
    items[at + F.index] = item.index;
    items[at + F.start] = item.start;
    items[at + F.end] = item.end;
    if (item.row === undefined) {
      items[at + F.other] = others.length;
      others.push(item.message);
      return;
    }
    const r = item.row;
    times[i] = r.at;
    items[at + F.entityText] = name(r.entityText);
    items[at + F.gateway] = name(r.gateway);
    items[at + F.probe] = name(r.probe);
    items[at + F.managedEntity] = name(r.managedEntity);
    items[at + F.osType] = name(r.osType);
    items[at + F.sampler] = name(r.sampler);
    items[at + F.samplerType] = name(r.samplerType);
    items[at + F.dataview] = name(r.dataview);
    items[at + F.row] = name(r.row);
    items[at + F.pluginName] = name(r.pluginName);
  });
  const { cells } = part;
  const columns = new Int32Array(cells.length);
  const values = new Float64Array(cells.length);
  const canonical = new Uint8Array(cells.length);
  const texts: string[] = [];
  for (let c = 0; c < cells.length; c++) {
    columns[c] = name(cells.column(c));
    const value = cells.value(c);
    values[c] = value;
    const text = cells.text(c);
    if (isCanonicalNumberText(value, text)) canonical[c] = 1;
    else texts.push(text);
  }
  return {
    count: part.length,
    left,
    rejected: part.rejected,
    names,
    items,
    times,
    digests,
    digestTimes,
    others,
    columns,
    values,
    canonical,
    texts,
  };
}

/** Adds a {@link CheckedSlice} to `part`, as {@link checkInto} would have added its deliveries. */
export function addSlice(part: CheckedPart, slice: CheckedSlice): void {
  const offset = part.length;
  const cellOffset = part.cells.length;
  const { names, items, times, digests, digestTimes, others } = slice;
  const name = (n: number): string => names[n] as string;
  for (let i = 0; i < digests.length; i++) {
    const at = i * ITEM_FIELDS;
    const index = offset + (items[at + F.index] as number);
    const start = cellOffset + (items[at + F.start] as number);
    const end = cellOffset + (items[at + F.end] as number);
    const time = digestTimes[i] as number;
    const hash = digests[i] as string;
    const key: MessageKey = Number.isNaN(time) ? { kind: "hash", hash } : { kind: "hash", hash, at: time };
    const other = items[at + F.other] as number;
    if (other >= 0) {
      part.checked.push({ index, key, start, end, message: others[other] as PublicV2Message });
      continue;
    }
    const row: MetricsRow = {
      entityText: name(items[at + F.entityText] as number),
      gateway: name(items[at + F.gateway] as number),
      probe: name(items[at + F.probe] as number),
      managedEntity: name(items[at + F.managedEntity] as number),
      osType: name(items[at + F.osType] as number),
      pluginName: name(items[at + F.pluginName] as number),
      sampler: name(items[at + F.sampler] as number),
      samplerType: name(items[at + F.samplerType] as number),
      dataview: name(items[at + F.dataview] as number),
      row: name(items[at + F.row] as number),
      at: asEpochMs(times[i] as number),
    };
    part.checked.push({ index, key, start, end, row });
  }
  for (const r of slice.rejected) part.rejected.push({ ...r, index: offset + r.index });
  const { columns, values, canonical, texts } = slice;
  let t = 0;
  for (let c = 0; c < columns.length; c++) {
    const column = name(columns[c] as number);
    const value = values[c] as number;
    if (canonical[c] === 1) part.cells.canonicalCell(column, value);
    else part.cells.cell(column, texts[t++] as string, value);
  }
  part.length += slice.count;
}
