/**
 * What a store cannot hold, found before anything is written (DESIGN 1: "a message the hub cannot
 * store goes to a dead-letter file with the reason; it never stops the messages behind it"). Each
 * check throws {@link StoreDataError}, which the ingester dead-letters instead of retrying.
 *
 * Text with a lone UTF-16 surrogate is the case that matters: JavaScript strings may hold one, UTF-8
 * cannot. DuckDB's node binding silently turns it into U+FFFD (the stored text would differ from the
 * published one), and its JSON type refuses the `\ud800` escape that `JSON.stringify` writes for it
 * mid-transaction, which aborts the whole transaction. PostgreSQL refuses both.
 */

import { DEFAULT_MAX_SERIES_PER_ENTITY, SERIES_CACHE_ENTRIES } from "../../config/defaults.js";
import { loneSurrogateAt } from "../../text/well-formed.js";
import type { EntityKey, EventInput, MessageKey, SampleRows, SeriesKey } from "./store.js";
import { StoreDataError } from "./store.js";

/** The largest |epoch ms| a JavaScript Date holds (ECMA-262 21.4.1.22); stores hold more. */
const MAX_EPOCH_MS = 8.64e15;

/** Refuses text that is not well-formed Unicode (a lone surrogate); `what` names the field in the message. */
export function checkText(what: string, text: string): void {
  const index = loneSurrogateAt(text);
  if (index !== undefined) {
    throw new StoreDataError(
      `${what} holds a lone UTF-16 surrogate at offset ${index}: not Unicode text, which the store cannot hold`,
    );
  }
}

/** Refuses a timestamp that is not a whole number of milliseconds within a Date's range. */
export function checkTime(what: string, ms: number): void {
  if (!Number.isInteger(ms) || Math.abs(ms) > MAX_EPOCH_MS) {
    throw new StoreDataError(`${what} ${ms} is not a whole epoch-millisecond time within ±${MAX_EPOCH_MS}`);
  }
}

/** Checks the three names of an entity key. */
export function checkEntityKey(key: EntityKey): void {
  checkText("gateway name", key.gateway);
  checkText("probe name", key.probe);
  checkText("managed entity name", key.managedEntity);
}

/** Checks attribute names and values. */
export function checkAttributes(attributes: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(attributes)) {
    checkText("attribute name", name);
    checkText(`attribute ${JSON.stringify(name)}`, value);
  }
}

/** Checks the names of a series (cell or headline). */
export function checkSeriesKey(key: SeriesKey): void {
  checkText("sampler name", key.sampler);
  checkText("sampler type", key.samplerType);
  checkText("dataview name", key.dataview);
  checkText("row name", key.row);
  checkText("column name", key.column);
}

/** Checks an event's time, target, entity and every string in its payload. */
export function checkEvent(event: EventInput): void {
  checkTime("event timestamp", event.at);
  if (event.entity !== null) checkEntityKey(event.entity);
  for (const [name, value] of Object.entries(event.target)) {
    if (typeof value === "string") checkText(`target ${name}`, value);
  }
  checkJson("event target filter", event.target.filter ?? null, 0);
  checkJson("event payload", event.payload, 0);
}

/**
 * Checks a message key of a claim: a seq is a positive safe integer, text is well-formed, a hash
 * key's time is a storable time.
 */
export function checkMessageKey(key: MessageKey): void {
  if (key.kind === "hash") {
    checkText("message hash", key.hash);
    if (key.at !== undefined) checkTime("message time", key.at);
    return;
  }
  checkText("message origin", key.origin);
  if (!Number.isSafeInteger(key.seq) || key.seq < 1) {
    throw new StoreDataError(`message seq ${key.seq} is not a positive integer`);
  }
}

/** Deepest JSON nesting checked; a parsed message is far shallower (its parser bounds it). */
const MAX_JSON_DEPTH = 64;

/** Walks a JSON value: strings (keys too) must be well-formed, numbers finite, nesting bounded. */
function checkJson(what: string, value: unknown, depth: number): void {
  if (depth > MAX_JSON_DEPTH) throw new StoreDataError(`${what} nests deeper than ${MAX_JSON_DEPTH}`);
  if (typeof value === "string") checkText(what, value);
  else if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new StoreDataError(`${what} holds ${value}, which JSON cannot`);
  } else if (Array.isArray(value)) {
    for (const item of value) checkJson(what, item, depth + 1);
  } else if (typeof value === "object" && value !== null) {
    for (const [name, item] of Object.entries(value)) {
      checkText(`${what} key`, name);
      checkJson(what, item, depth + 1);
    }
  } else if (typeof value === "bigint" || typeof value === "function" || typeof value === "symbol") {
    // (undefined is fine: JSON.stringify leaves the member out, which is what it means.)
    throw new StoreDataError(`${what} holds a ${typeof value}, which JSON cannot`);
  }
}

/** The series limits of a store's options with their defaults, checked (a programming error throws). */
export function seriesLimits(options: {
  readonly maxSeriesPerEntity?: number;
  readonly seriesCacheEntries?: number;
}): {
  maxSeriesPerEntity: number;
  seriesCacheEntries: number;
} {
  const maxSeriesPerEntity = options.maxSeriesPerEntity ?? DEFAULT_MAX_SERIES_PER_ENTITY;
  const seriesCacheEntries = options.seriesCacheEntries ?? SERIES_CACHE_ENTRIES;
  if (!Number.isSafeInteger(maxSeriesPerEntity) || maxSeriesPerEntity < 1) {
    throw new RangeError(`maxSeriesPerEntity must be a positive integer, got ${maxSeriesPerEntity}`);
  }
  if (!Number.isSafeInteger(seriesCacheEntries) || seriesCacheEntries < 0) {
    throw new RangeError(`seriesCacheEntries must be a non-negative integer, got ${seriesCacheEntries}`);
  }
  return { maxSeriesPerEntity, seriesCacheEntries };
}

/**
 * Calls `check` with every name and text the rows hold, `what` naming it: the entity's names once
 * per run of rows with one key object, each row's sampler, sampler type, dataview and row name, and
 * each of its cells' column name and text (only the cells the rows name: a row set may share its
 * cell columns with cells it skips).
 */
export function eachRowText({ rows, cells }: SampleRows, check: (what: string, text: string) => void): void {
  let lastEntity: EntityKey | undefined;
  for (const r of rows) {
    if (r.entity !== lastEntity) {
      check("gateway name", r.entity.gateway);
      check("probe name", r.entity.probe);
      check("managed entity name", r.entity.managedEntity);
      lastEntity = r.entity;
    }
    check("sampler name", r.sampler);
    check("sampler type", r.samplerType);
    check("dataview name", r.dataview);
    check("row name", r.row);
    for (let c = r.start; c < r.end; c++) {
      check("column name", cells.column(c));
      // A text left out is a number's canonical text: digits, a sign and a point.
      const text = cells.ownText(c);
      if (text !== undefined) check("sample text", text);
    }
  }
}
