/**
 * Validation of a metric query request (`POST /v0/metrics/query`, DESIGN 5.3 and the seed's
 * "Metric query request" table). The body arrives as `unknown` and leaves as a plan for the store,
 * or as INVALID_QUERY (400) naming the field path (`metrics[1].include[0]`) and why it is wrong:
 * "Every invalid request is a 400 that says which field is wrong and why".
 */

import { parseSamplerRef } from "../../config/sampler-ref.js";
import { VigilError } from "../../errors/catalog.js";
import { asEpochMs, type EpochMs } from "../../ids.js";
import type { BucketSpec, CellSelector, GroupKey, MetricQueryPlan, TimeWindow } from "../store/store.js";
import { parseAggregation } from "./aggregations.js";
import { parseBucketDuration } from "./duration.js";
import { checkZone } from "./zone.js";

/** A validated request: the store's plan without the entities, which the filter selects later. */
export type ParsedMetricQuery = Omit<MetricQueryPlan, "entities"> & {
  /** The entity filter as written; "" (also for a blank one) selects every entity. */
  readonly entityFilter: string;
  /**
   * What the response's `schema.bucketing` echoes: `duration` as written, or `count` as asked with
   * the `duration` each of its buckets spans ({@link bucketWidthText}).
   */
  readonly bucketing: { readonly duration: string } | { readonly count: number; readonly duration: string };
};

/** Size caps of one request, so that one query cannot occupy the store for long. */
export const METRIC_QUERY_LIMITS = {
  metrics: 100,
  includesPerMetric: 100,
  aggregations: 20,
  timeWindows: 20,
  /**
   * Buckets the range spans at the requested duration (100 000 one-minute buckets ≈ 69 days), and
   * the largest `bucketing.count`.
   */
  buckets: 100_000,
} as const;

const TOP_LEVEL = ["zoneId", "filter", "metrics", "aggregations", "bucketing", "grouping", "token"];
const IDENTIFIER = /^[A-Za-z0-9._-]+$/;
const MAX_IDENTIFIER_LENGTH = 256;
const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

type JsonObject = Readonly<Record<string, unknown>>;

function fail(field: string, detail: string): VigilError {
  return new VigilError("INVALID_QUERY", { field, detail });
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function rejectUnknownKeys(object: JsonObject, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) {
      throw fail(
        join(path, key),
        `unknown field; ${path === "" ? "the body" : path} has ${allowed.join(", ")}`,
      );
    }
  }
}

function objectAt(parent: JsonObject, key: string, path: string): JsonObject {
  const value = parent[key];
  if (value === undefined) throw fail(join(path, key), "required object is missing");
  if (!isObject(value)) throw fail(join(path, key), `must be an object, found ${describe(value)}`);
  return value;
}

function stringAt(parent: JsonObject, key: string, path: string): string {
  const value = parent[key];
  if (value === undefined) throw fail(join(path, key), "required string is missing");
  if (typeof value !== "string") throw fail(join(path, key), `must be a string, found ${describe(value)}`);
  return value;
}

/** A required array of 1..max elements. */
function arrayAt(parent: JsonObject, key: string, path: string, max: number): readonly unknown[] {
  const value = parent[key];
  const field = join(path, key);
  if (value === undefined) throw fail(field, "required array is missing");
  return checkArray(value, field, max);
}

function checkArray(value: unknown, field: string, max: number): readonly unknown[] {
  if (!Array.isArray(value)) throw fail(field, `must be an array, found ${describe(value)}`);
  if (value.length === 0) throw fail(field, "must not be empty");
  if (value.length > max) throw fail(field, `has ${value.length} elements; at most ${max} are allowed`);
  return value;
}

function stringElement(value: unknown, field: string): string {
  if (typeof value !== "string") throw fail(field, `must be a string, found ${describe(value)}`);
  return value;
}

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function daysInMonth(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0);
  return date.getUTCDate();
}

/**
 * Parses an ISO 8601 / RFC 3339 date-time that carries its offset (`Z` or `±HH:MM`), such as
 * `2026-03-29T01:30:00+01:00` or `2026-03-29T00:30Z`; seconds and up to 9 fraction digits are
 * optional. A date-time without an offset is rejected, since it names no instant. Sub-millisecond
 * fractions round up to the next millisecond, which keeps a half-open range `[from, to)` exact for
 * millisecond timestamps. Errors are INVALID_QUERY for `field`.
 */
export function parseDateTime(text: string, field: string): EpochMs {
  const match = DATE_TIME.exec(text);
  if (match === null) {
    const hint = /^\d{4}-\d{2}-\d{2}[Tt][\d:.]+$/.test(text) ? " (this one has no offset)" : "";
    throw fail(
      field,
      `'${text}' is not an ISO 8601 date-time with an offset, such as 2026-03-29T00:00:00Z ` +
        `or 2026-03-29T01:00:00+01:00${hint}`,
    );
  }
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, oh, om] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s ?? "0");
  const offsetHours = Number(oh ?? "0");
  const offsetMinute = Number(om ?? "0");
  const bad = (what: string): VigilError => fail(field, `'${text}' has an invalid ${what}`);
  if (month < 1 || month > 12) throw bad("month");
  if (day < 1 || day > daysInMonth(year, month)) throw bad("day of the month");
  if (hour > 23) throw bad("hour");
  if (minute > 59) throw bad("minute");
  if (second > 59) throw bad("second (leap seconds are not accepted)");
  if (offsetHours > 23 || offsetMinute > 59) throw bad("offset");
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const digits = (fraction ?? "").padEnd(9, "0");
  const millis = Number(digits.slice(0, 3)) + (/[1-9]/.test(digits.slice(3)) ? 1 : 0);
  const offset = zulu === undefined ? (offsetHours * 60 + offsetMinute) * (sign === "-" ? -1 : 1) : 0;
  return asEpochMs(date.getTime() + millis - offset * MINUTE_MS);
}

/** Decodes the percent-escapes of one segment (`%2F` → `/`). */
function decodeSegment(raw: string, field: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw fail(field, `the ${what} segment '${raw}' has a malformed percent-escape; write '%' as %25`);
  }
}

/**
 * Parses a cell reference `<sampler>/<dataview>/<row>/<column>` (DESIGN 5.3) into a selector. The
 * text splits on `/` into exactly four segments, each then percent-decoded (`%2F` is a `/` inside a
 * name; `%7B` a literal `{`). The sampler may be `name(type)`: type "" (`name()`) selects samplers
 * without a type, and a plain name selects any type (`samplerType: null`). The row `{rowname}` is
 * the wildcard (`row: null`), an empty row addresses a headline (`row: ""`). `{`, `}` and `*` are
 * wildcards and allowed only as the exact row segment `{rowname}`. Errors are INVALID_QUERY for
 * `field`.
 */
export function parseCellReference(text: string, field: string): CellSelector {
  const segments = text.split("/");
  if (segments.length !== 4) {
    throw fail(
      field,
      `'${text}' has ${segments.length} segments; a cell reference is <sampler>/<dataview>/<row>/<column> ` +
        "(an empty row for a headline; escape '/' inside a name as %2F)",
    );
  }
  const [samplerRaw = "", dataviewRaw = "", rowRaw = "", columnRaw = ""] = segments;
  const names = ["sampler", "dataview", "row", "column"] as const;
  for (const [i, raw] of [samplerRaw, dataviewRaw, rowRaw, columnRaw].entries()) {
    if (names[i] === "row" && raw === "{rowname}") continue;
    if (/[{}*]/.test(raw)) {
      throw fail(
        field,
        `the ${names[i]} segment '${raw}' holds a wildcard; wildcards are allowed only in the row segment, ` +
          "as exactly {rowname} (escape a literal { } as %7B %7D)",
      );
    }
  }
  // Strict: a `(` or `)` in the name part must be escaped, so `a(b)(c)` is refused, not read as `a(b)`.
  const ref = parseSamplerRef(samplerRaw, "strict");
  if (ref === null) {
    throw fail(
      field,
      `the sampler segment '${samplerRaw}' must be a name or name(type); escape ( ) in a name as %28 %29`,
    );
  }
  const sampler = decodeSegment(ref.name, field, "sampler");
  const samplerType = ref.type === null ? null : decodeSegment(ref.type, field, "sampler type");
  const dataview = decodeSegment(dataviewRaw, field, "dataview");
  const row = rowRaw === "{rowname}" ? null : decodeSegment(rowRaw, field, "row");
  const column = decodeSegment(columnRaw, field, "column");
  if (sampler === "") throw fail(field, `'${text}' has an empty sampler name`);
  if (dataview === "") throw fail(field, `'${text}' has an empty dataview name`);
  if (column === "") throw fail(field, `'${text}' has an empty column (or headline) name`);
  return { sampler, samplerType, dataview, row, column };
}

function sameSelector(a: CellSelector, b: CellSelector): boolean {
  return (
    a.sampler === b.sampler &&
    a.samplerType === b.samplerType &&
    a.dataview === b.dataview &&
    a.row === b.row &&
    a.column === b.column
  );
}

function parseMetrics(body: JsonObject): MetricQueryPlan["metrics"] {
  const elements = arrayAt(body, "metrics", "", METRIC_QUERY_LIMITS.metrics);
  const seen = new Map<string, number>();
  return elements.map((element, i) => {
    const path = `metrics[${i}]`;
    if (!isObject(element)) throw fail(path, `must be an object, found ${describe(element)}`);
    rejectUnknownKeys(element, ["identifier", "include"], path);
    const identifier = stringAt(element, "identifier", path);
    const idField = `${path}.identifier`;
    if (!IDENTIFIER.test(identifier)) {
      throw fail(
        idField,
        `'${identifier}' may hold only letters, digits, hyphens, dots and underscores, at least one`,
      );
    }
    // A plain object key `__proto__` would set the response object's prototype instead of a field.
    if (identifier === "__proto__") throw fail(idField, "'__proto__' is reserved; choose another identifier");
    if (identifier.length > MAX_IDENTIFIER_LENGTH) {
      throw fail(idField, `is longer than ${MAX_IDENTIFIER_LENGTH} characters`);
    }
    const first = seen.get(identifier);
    if (first !== undefined)
      throw fail(idField, `'${identifier}' is already the identifier of metrics[${first}]`);
    seen.set(identifier, i);
    const includes = arrayAt(element, "include", path, METRIC_QUERY_LIMITS.includesPerMetric);
    const include: CellSelector[] = [];
    for (const [j, raw] of includes.entries()) {
      const field = `${path}.include[${j}]`;
      const selector = parseCellReference(stringElement(raw, field), field);
      const twin = include.findIndex((other) => sameSelector(other, selector));
      if (twin >= 0) throw fail(field, `selects the same cells as ${path}.include[${twin}]`);
      include.push(selector);
    }
    return { identifier, include };
  });
}

function parseAggregations(body: JsonObject): MetricQueryPlan["aggregations"] {
  const elements = arrayAt(body, "aggregations", "", METRIC_QUERY_LIMITS.aggregations);
  const labels = new Map<string, number>();
  return elements.map((element, i) => {
    const aggregation = parseAggregation(stringElement(element, `aggregations[${i}]`), i);
    const first = labels.get(aggregation.label);
    if (first !== undefined)
      throw fail(`aggregations[${i}]`, `'${aggregation.label}' repeats aggregations[${first}]`);
    labels.set(aggregation.label, i);
    return aggregation;
  });
}

function parseGrouping(body: JsonObject): GroupKey[] {
  const value = body.grouping;
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw fail("grouping", `must be an array, found ${describe(value)}`);
  const keys: GroupKey[] = [];
  const seen = new Map<string, number>();
  for (const [i, element] of value.entries()) {
    const field = `grouping[${i}]`;
    const text = stringElement(element, field);
    let key: GroupKey;
    // data[].group has one `attribute` field, so at most one entity:<attribute> grouping.
    let slot: string;
    if (text === "rowname" || text === "entity") {
      key = text;
      slot = text;
    } else if (text.startsWith("entity:") && text.length > "entity:".length) {
      key = { attribute: text.slice("entity:".length) };
      slot = "entity:<attribute>";
    } else {
      throw fail(field, `'${text}' is not a grouping; use rowname, entity or entity:<attribute>`);
    }
    const first = seen.get(slot);
    if (first !== undefined) {
      throw fail(
        field,
        slot === "entity:<attribute>"
          ? `only one entity:<attribute> grouping is allowed; grouping[${first}] is one`
          : `'${text}' repeats grouping[${first}]`,
      );
    }
    seen.set(slot, i);
    keys.push(key);
  }
  return keys;
}

const TIME_OF_DAY = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

function parseTimeOfDay(window: JsonObject, key: string, path: string): number {
  const text = stringAt(window, key, path);
  const match = TIME_OF_DAY.exec(text);
  const hours = Number(match?.[1]);
  const minutes = Number(match?.[2]);
  const seconds = Number(match?.[3] ?? "0");
  if (match === null || hours > 23 || minutes > 59 || seconds > 59) {
    throw fail(
      join(path, key),
      `'${text}' is not a local time of day HH:MM or HH:MM:SS from 00:00 to 23:59:59`,
    );
  }
  return hours * 3600 + minutes * 60 + seconds;
}

function parseTimeWindows(filter: JsonObject): TimeWindow[] {
  const value = filter.timeWindows;
  if (value === undefined || value === null) return [];
  const windows = checkArray(value, "filter.timeWindows", METRIC_QUERY_LIMITS.timeWindows);
  return windows.map((element, i) => {
    const path = `filter.timeWindows[${i}]`;
    if (!isObject(element)) throw fail(path, `must be an object, found ${describe(element)}`);
    rejectUnknownKeys(element, ["from", "to", "on"], path);
    const fromSecond = parseTimeOfDay(element, "from", path);
    const toSecond = parseTimeOfDay(element, "to", path);
    if (fromSecond === toSecond) {
      throw fail(path, "from equals to, an empty window; omit timeWindows to count the whole day");
    }
    if (element.on === undefined || element.on === null) return { fromSecond, toSecond };
    const on = checkArray(element.on, `${path}.on`, WEEKDAYS.length);
    const days: number[] = [];
    for (const [j, day] of on.entries()) {
      const field = `${path}.on[${j}]`;
      const number = WEEKDAYS.indexOf(stringElement(day, field).toLowerCase()) + 1;
      if (number === 0) throw fail(field, `'${String(day)}' is not a weekday; use ${WEEKDAYS.join(", ")}`);
      if (days.includes(number)) throw fail(field, `'${String(day)}' is listed twice`);
      days.push(number);
    }
    return { fromSecond, toSecond, days: days.sort((a, b) => a - b) };
  });
}

/** An upper bound of the buckets in [from, to): the shortest length of one bucket, plus partial ends. */
function bucketCount(from: number, to: number, bucket: BucketSpec): number {
  if (bucket.kind === "count") return bucket.count;
  const shortest = {
    minutes: bucket.kind === "minutes" ? bucket.minutes * MINUTE_MS : 0,
    day: DAY_MS - 3_600_000,
    week: 7 * DAY_MS - 3_600_000,
    month: 28 * DAY_MS - 3_600_000,
  }[bucket.kind];
  return Math.ceil((to - from) / shortest) + 1;
}

/**
 * The width of one of `count` equal buckets of `widthMs` milliseconds as an ISO 8601 duration in
 * the form Java's `Duration.toString()` writes (hours, minutes and seconds, no days: `PT7M30S`,
 * `PT36H`, `PT0.25S`), exact to the nanosecond and rounded down below it (1 s in 3 buckets is
 * `PT0.333333333S`).
 */
export function bucketWidthText(widthMs: number, count: number): string {
  const nanos = (BigInt(widthMs) * 1_000_000n) / BigInt(count);
  const hours = nanos / 3_600_000_000_000n;
  const minutes = (nanos / 60_000_000_000n) % 60n;
  const seconds = (nanos / 1_000_000_000n) % 60n;
  const fraction = nanos % 1_000_000_000n;
  let text = "PT";
  if (hours > 0n) text += `${hours}H`;
  if (minutes > 0n) text += `${minutes}M`;
  if (seconds > 0n || fraction > 0n || text === "PT") {
    const digits = fraction === 0n ? "" : `.${String(fraction).padStart(9, "0").replace(/0+$/, "")}`;
    text += `${seconds}${digits}S`;
  }
  return text;
}

/**
 * `bucketing` (DESIGN 5.3): `duration` or `count`, exactly one. `count` is a whole number from 1
 * to METRIC_QUERY_LIMITS.buckets and at most the range's length in milliseconds (no bucket
 * narrower than a millisecond, the samples' resolution).
 */
function parseBucketing(
  body: JsonObject,
  from: number,
  to: number,
): { readonly bucket: BucketSpec; readonly echo: ParsedMetricQuery["bucketing"] } {
  const bucketing = objectAt(body, "bucketing", "");
  rejectUnknownKeys(bucketing, ["duration", "count"], "bucketing");
  const hasDuration = bucketing.duration !== undefined;
  const hasCount = bucketing.count !== undefined;
  if (hasDuration && hasCount) {
    throw fail("bucketing", "has both duration and count; give one of them");
  }
  if (!hasCount) {
    if (!hasDuration) {
      throw fail(
        "bucketing",
        "needs duration (an ISO 8601 duration such as PT5M) or count (a number of buckets)",
      );
    }
    const duration = stringAt(bucketing, "duration", "bucketing");
    return { bucket: parseBucketDuration(duration), echo: { duration } };
  }
  const count = bucketing.count;
  const max = METRIC_QUERY_LIMITS.buckets;
  if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count > max) {
    throw fail(
      "bucketing.count",
      `must be a whole number from 1 to ${max}, found ${typeof count === "number" ? count : describe(count)}`,
    );
  }
  if (count > to - from) {
    throw fail(
      "bucketing.count",
      `${count} buckets of a range of ${to - from} ms would be narrower than a millisecond; ` +
        "ask for fewer buckets or a longer range",
    );
  }
  return {
    bucket: { kind: "count", count },
    echo: { count, duration: bucketWidthText(to - from, count) },
  };
}

/**
 * Validates a metric query body (DESIGN 5.3) and returns the plan for the store without its
 * entities, plus the entity filter and what `schema.bucketing` echoes. Every violation is
 * INVALID_QUERY (400) naming the field path and the reason. Decisions: unknown fields are rejected
 * at every level, except a string `token` at the top level, which is accepted and ignored (the seed
 * says that with single sign-on a token may travel in the body; the bearer header is what
 * authenticates); optional fields (`grouping`, `filter.timeWindows`, `on`) may be null; a blank or
 * absent `filter.entities` becomes "" and selects every entity; an absent or empty `zoneId` is UTC;
 * `bucketing` has `duration` or `count`, not both; includes of one metric must differ; sizes are
 * capped by METRIC_QUERY_LIMITS, the range included (at most 100 000 buckets).
 */
export function parseMetricQuery(body: unknown): ParsedMetricQuery {
  if (!isObject(body)) throw fail("body", `must be a JSON object, found ${describe(body)}`);
  rejectUnknownKeys(body, TOP_LEVEL, "");
  if (body.token !== undefined && body.token !== null && typeof body.token !== "string") {
    throw fail("token", `must be a string, found ${describe(body.token)}`);
  }
  // A Go client (cordial's gwhub) leaves out an empty zoneId and an empty filter.entities
  // (`omitempty`): absent, they mean UTC and every entity, as in the records query.
  const zoneText = body.zoneId === undefined ? "" : stringAt(body, "zoneId", "");
  const zone = zoneText === "" ? "UTC" : checkZone(zoneText);
  const filter = objectAt(body, "filter", "");
  rejectUnknownKeys(filter, ["entities", "range", "timeWindows"], "filter");
  const entities = filter.entities === undefined ? "" : stringAt(filter, "entities", "filter");
  const range = objectAt(filter, "range", "filter");
  rejectUnknownKeys(range, ["from", "to"], "filter.range");
  const from = parseDateTime(stringAt(range, "from", "filter.range"), "filter.range.from");
  const to = parseDateTime(stringAt(range, "to", "filter.range"), "filter.range.to");
  if (from >= to) {
    throw fail("filter.range", "from must be before to; the range is [from, to), to excluded");
  }
  const timeWindows = parseTimeWindows(filter);
  const metrics = parseMetrics(body);
  const aggregations = parseAggregations(body);
  const { bucket, echo } = parseBucketing(body, from, to);
  const buckets = bucketCount(from, to, bucket);
  if (buckets > METRIC_QUERY_LIMITS.buckets) {
    throw fail(
      "filter.range",
      `the range spans about ${buckets} buckets of ${echo.duration}; at most ${METRIC_QUERY_LIMITS.buckets} ` +
        "are allowed: narrow the range or use a longer bucketing.duration",
    );
  }
  const grouping = parseGrouping(body);
  return {
    entityFilter: entities.trim() === "" ? "" : entities,
    from,
    to,
    zone,
    bucket,
    bucketing: echo,
    metrics,
    aggregations,
    grouping,
    timeWindows,
  };
}
