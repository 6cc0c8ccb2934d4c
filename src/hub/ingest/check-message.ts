/**
 * Checking deliveries before they wait for the store: what the ingester does to each
 * message that needs no store — schema, Unicode and time checks, the de-duplication key, and the
 * cells of a headline or table update — with no state and no I/O, so that the hub's thread does it
 * for published messages and the backfill parser's worker thread for a backfill body
 * (backfill-parser.ts), with the same code and the same results. The setup's `limits` are checked
 * here too (message-limits.ts): a message beyond one is rejected naming the limit.
 */
import { hash } from "node:crypto";
import type { Delivery } from "../../bus/bus.js";
import { parseMessageId } from "../../bus/envelope.js";
import { asEpochMs, type EpochMs } from "../../ids.js";
import type { DataLimits } from "../../limits/data-limits.js";
import type { LimitName } from "../../limits/limit-refusals.js";
import type { MetricsTarget, PublicV2Message } from "../../messages/types.js";
import { validateMessage } from "../../messages/validate.js";
import { isWellFormed } from "../../text/well-formed.js";
import { SampleCells } from "../store/sample-rows.js";
import type { EntityKey, MessageKey } from "../store/store.js";
import { isCanonicalJson } from "./canonical-json.js";
import { messageBeyondLimits } from "./message-limits.js";

/** A cell value that is a plain decimal number (no blanks, units, hex or Infinity). */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * The numeric value of a published cell, or null when it is not a number. The usual cell, a text of
 * at most 15 digits with at most a leading `-` and one `.` between digits, is read without `Number`:
 * its digits as an integer over a power of ten, both exact doubles, so the one division rounds
 * correctly and gives the double `Number` reads (Clinger's fast path). Any other text is trimmed and
 * matched.
 */
export function numericValue(text: string): number | null {
  const length = text.length;
  let i = text.charCodeAt(0) === 0x2d ? 1 : 0;
  let digits = 0;
  let mantissa = 0;
  let point = -1;
  for (; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      mantissa = mantissa * 10 + (c - 0x30);
      digits += 1;
    } else if (c === 0x2e && point < 0 && digits > 0) point = i;
    else break;
  }
  if (i === length && digits > 0 && digits <= EXACT_DIGITS && point !== length - 1) {
    const value = mantissa / (POWERS_OF_TEN[point < 0 ? 0 : length - point - 1] as number);
    return text.charCodeAt(0) === 0x2d ? -value : value;
  }
  const trimmed = text.trim();
  if (!NUMBER.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : null;
}

/** Digits of an integer every double holds exactly with each one below it (< 2^53). */
const EXACT_DIGITS = 15;
/** 10^k for k ≤ 15: each an exact double. */
const POWERS_OF_TEN = Array.from({ length: EXACT_DIGITS + 1 }, (_, k) => 10 ** k);

/** The text that names an entity in the ingester's maps (names are data, never object keys). */
export const entityKeyText = (key: EntityKey): string =>
  JSON.stringify([key.gateway, key.probe, key.managedEntity]);

/**
 * A delivery whose JSON text is known to hold no lone surrogate and no `\u` escape (backfill knows
 * the text it parsed): every string parsed from such text is well-formed, so the check skips its
 * walk over the message's strings. Without the mark every string is checked.
 */
export interface CheckedTextDelivery extends Delivery {
  readonly wellFormedText?: boolean;
  /**
   * The JSON text the message was parsed from, when it had one of its own (an NDJSON line). With
   * `wellFormedText`, the digest of a message without an id is taken of it when it is canonical
   * (see {@link messageKey}).
   */
  readonly text?: string;
}

/** Whether every string JSON.parse makes of `text` is well-formed: only a `\u` escape can add a lone surrogate. */
export function wellFormedJsonText(text: string): boolean {
  return !text.includes("\\u") && isWellFormed(text);
}

/** One message rejected by the ingester: its index in the batch and why. */
export interface Rejection {
  readonly index: number;
  readonly reason: string;
  /** The limit of the setup's `limits` the message is beyond, when that is why. */
  readonly limit?: LimitName;
}

/**
 * What is stored of a headline or table update: the names of its row and its time (its cells are
 * a range of {@link CheckedPart.cells}). The ingester needs nothing else of the message, so the
 * backfill parser hands over this instead of the message.
 */
export interface MetricsRow {
  /** {@link entityKeyText} of the entity. */
  readonly entityText: string;
  readonly gateway: string;
  readonly probe: string;
  readonly managedEntity: string;
  /** `target.filter.osType`: the probe's OS type when the store holds no probe message's. */
  readonly osType: string;
  /** `target.filter.pluginName`: the sampler's plug-in, kept per dataview (DESIGN 5.1). */
  readonly pluginName: string;
  readonly sampler: string;
  readonly samplerType: string;
  readonly dataview: string;
  /** The row's name; "" for a headline. */
  readonly row: string;
  readonly at: EpochMs;
}

/** The {@link MetricsRow} of a table or headline message's `target` at `at`, its entity's key text given. */
export function metricsRow(
  target: Omit<MetricsTarget, "row"> & { readonly row?: string | undefined },
  entityText: string,
  at: EpochMs,
): MetricsRow {
  return {
    entityText,
    gateway: target.gateway,
    probe: target.probe,
    managedEntity: target.managedEntity,
    osType: target.filter.osType,
    pluginName: target.filter.pluginName,
    sampler: target.sampler,
    samplerType: target.type,
    dataview: target.dataview,
    row: target.row ?? "",
    at,
  };
}

/** A message that may be stored: a row of metrics, or any other message as it is. */
export type Checked = {
  readonly index: number;
  readonly key: MessageKey;
  /** The message's cells are `[start, end)` of {@link CheckedPart.cells} (none: equal). */
  readonly start: number;
  readonly end: number;
} & (
  | { readonly row: MetricsRow; readonly message?: undefined }
  | { readonly row?: undefined; readonly message: PublicV2Message }
);

/**
 * Deliveries checked before they wait for the store (see Ingester.ingest), with the cells of their
 * headline and table updates made; {@link checkInto} adds a slice at a time.
 */
export class CheckedPart {
  readonly checked: Checked[] = [];
  readonly rejected: Rejection[] = [];
  readonly cells = new SampleCells();
  /** Deliveries added so far: the index in the part of the next one. */
  length = 0;
}

/**
 * Checks every delivery into `part` (against `limits` too) and gives each storable one its
 * de-duplication key.
 */
export function checkInto(
  deliveries: readonly CheckedTextDelivery[],
  part: CheckedPart,
  limits: DataLimits,
): void {
  const { rejected, checked, cells } = part;
  const offset = part.length;
  part.length += deliveries.length;
  deliveries.forEach((delivery, i) => {
    const index = offset + i;
    const message = checkDelivery(delivery, limits);
    if (!("type" in message)) {
      rejected.push({ index, ...message });
      return;
    }
    // The line's text only when it holds no `\u` escape (`wellFormedText`), as isCanonicalJson needs.
    const key = messageKey(
      delivery.id,
      message,
      delivery.wellFormedText === true ? delivery.text : undefined,
    );
    const start = cells.length;
    if ((message.type === "table" || message.type === "headline") && message.operation !== "delete") {
      addCells(cells, message.data.row);
      const { target, sampleTime } = message.data;
      const row = metricsRow(
        target,
        entityKeyText(target),
        // The key of a message without an id has its time already (messageTime).
        key.kind === "hash" && key.at !== undefined ? asEpochMs(key.at) : asEpochMs(Date.parse(sampleTime)),
      );
      checked.push({ index, key, row, start, end: cells.length });
    } else checked.push({ index, key, message, start, end: start });
  });
}

/**
 * The cells of one headline or table message, in its order: three array entries each, no object
 * (allocation is what a loaded hub spends its time on). A blank cell is no sample and creates no
 * series (wide sparse dataviews).
 */
function addCells(cells: SampleCells, row: Readonly<Record<string, string>>): void {
  for (const column of Object.keys(row)) {
    const value = row[column] as string;
    if (value !== "") cells.cell(column, value, numericValue(value));
  }
}

/** The message when it may be stored, otherwise why not (and the limit, when that is why). */
function checkDelivery(
  delivery: CheckedTextDelivery,
  limits: DataLimits,
): PublicV2Message | { reason: string; limit?: LimitName } {
  if (delivery.limit !== undefined) return { reason: delivery.parseError ?? "", limit: delivery.limit };
  if (delivery.parseError !== undefined) return { reason: `not JSON: ${delivery.parseError}` };
  const result = validateMessage(delivery.message);
  if (!result.ok) return { reason: `not a public-v2 message: ${result.errors.join("; ")}` };
  const breach = messageBeyondLimits(result.message, limits);
  if (breach !== undefined) return breach;
  const bad = delivery.wellFormedText === true ? undefined : illFormedString(result.message);
  if (bad !== undefined)
    return { reason: `holds a string that is not well-formed Unicode (a lone surrogate) at ${bad}` };
  const time = unstorableTime(result.message);
  if (time !== undefined) return { reason: time };
  return result.message;
}

/**
 * Why the message's own time cannot be stored, if it cannot. RFC 3339 allows a leap second
 * (`…T23:59:60Z`) and the schema's date-time format accepts it, but stored times are UTC epoch
 * milliseconds, which have no 61st second. The message is rejected alone, with this reason, rather
 * than moved to another instant: values pass through as sent or not at all (see
 * docs/hub-api.md). Only this message is refused; the rest of its batch is stored.
 */
function unstorableTime(message: PublicV2Message): string | undefined {
  const [field, text] = ownTime(message);
  if (typeof text !== "string" || Number.isFinite(Date.parse(text))) return undefined;
  const leap = /T\d{2}:\d{2}:60/i.test(text);
  return leap
    ? `/data/${field}: '${text}' is a leap second, which vigil cannot store (times are UTC milliseconds); send 23:59:59.999 or the next second instead`
    : `/data/${field}: '${text}' is not a time vigil can store`;
}

/**
 * The JSON pointer of the first string (key or value) holding a lone surrogate, if any. The walk
 * makes no pointer text until it has found one: a message that passes (nearly every message) costs
 * one `isWellFormed` per string and nothing else.
 */
function illFormedString(value: unknown): string | undefined {
  return wellFormedDeep(value) ? undefined : illFormedAt(value, "");
}

/** Whether every string of `value`, keys included, at any depth, is well-formed. */
function wellFormedDeep(value: unknown): boolean {
  if (typeof value === "string") return isWellFormed(value);
  if (typeof value !== "object" || value === null) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!wellFormedDeep(value[i])) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!isWellFormed(key) || !wellFormedDeep(record[key])) return false;
  }
  return true;
}

/** {@link illFormedString}'s pointer, for a value known to hold an ill-formed string. */
function illFormedAt(value: unknown, path: string): string | undefined {
  if (typeof value === "string") return isWellFormed(value) ? undefined : path || "/";
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const at = `${path}/${key}`;
    if (!isWellFormed(key)) return at;
    const found = illFormedAt(inner, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The de-duplication key of a message: its gateway id, or a digest when it has none of that form:
 * the SHA-256 of `JSON.stringify(message)`, with the message's own time (its `sampleTime` or
 * `timestamp`), which a store may lead the digest with (message-digest.ts). `text`, the JSON text
 * the message was parsed from (holding no `\u` escape), is hashed as it is when it is that very text
 * (canonical-json.ts). An id of another form is hashed without a time: the id alone names the
 * message.
 */
export function messageKey(id: string | undefined, message: PublicV2Message, text?: string): MessageKey {
  if (id !== undefined) {
    const parsed = parseMessageId(id);
    if (parsed !== undefined) return { kind: "seq", origin: parsed.origin, seq: parsed.seq };
    return { kind: "hash", hash: hash("sha256", `id:${id}`, "hex") };
  }
  const json = text !== undefined && isCanonicalJson(text, message) ? text : JSON.stringify(message);
  // One-shot `crypto.hash` (Node ≥ 20.12): the same digest as a Hash object, at a third of its cost.
  const digest = hash("sha256", json, "hex");
  const at = messageTime(message);
  return at === undefined ? { kind: "hash", hash: digest } : { kind: "hash", hash: digest, at };
}

/** Which field holds a message's own time (`sampleTime`, else `timestamp`), and what it holds. */
function ownTime(message: PublicV2Message): [field: string, text: unknown] {
  const data = message.data as { timestamp?: unknown; sampleTime?: unknown };
  return typeof data.sampleTime === "string"
    ? ["sampleTime", data.sampleTime]
    : ["timestamp", data.timestamp];
}

/** A message's own time (`sampleTime`, else `timestamp`) in epoch milliseconds, if it has one. */
export function messageTime(message: PublicV2Message): EpochMs | undefined {
  const [, text] = ownTime(message);
  if (typeof text !== "string") return undefined;
  const at = Date.parse(text);
  return Number.isFinite(at) ? asEpochMs(at) : undefined;
}
