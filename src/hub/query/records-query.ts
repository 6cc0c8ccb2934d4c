/**
 * `POST /v0/events/recordsQuery` (DESIGN 5.1): severity, snooze and user-assignment history of the
 * entities a filter selects, in the shape ITRS's Go client `cordial/pkg/gwhub` decodes — a map from
 * a string key (the entity id in decimal) to lists of `{entityId, timestamp, data: {severity,
 * active, value: {…strings}}, metric, type}`. docs/hub-api.md documents every field.
 *
 * The request's shape is a JSON Schema ({@link RECORDS_QUERY_SCHEMA}) checked with Ajv, the same
 * object the OpenAPI document would publish; what a schema cannot say (dates, zones, cell
 * references) is checked after it. Every error is a 400 naming the field.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import { VigilError } from "../../errors/catalog.js";
import type { EpochMs } from "../../ids.js";
import type { CellSelector, EventRecord, EventType } from "../store/store.js";
import { cellReference } from "./metric-names.js";
import { parseCellReference, parseDateTime } from "./metric-query.js";
import { asBadRequest, errorDetail, fieldPath, rangeFilterSchema } from "./metric-query-schema.js";
import { checkZone, formatInZoneMillis } from "./zone.js";

/** Events returned when `limit` is absent. */
export const DEFAULT_RECORDS_LIMIT = 1_000; // events
/** The largest `limit` a request may ask for. */
export const MAX_RECORDS_LIMIT = 10_000; // events
/** The most cell references in `metrics`. */
export const MAX_RECORDS_METRICS = 100; // cell references
/** The largest `skip`: beyond it a client should narrow the range instead. */
export const MAX_RECORDS_SKIP = 1_000_000; // events

const EVENT_TYPES: readonly EventType[] = ["severity", "snooze", "userassignment"];

/** JSON Schema (draft 2020-12) of the request body. */
export const RECORDS_QUERY_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["filter"],
  properties: {
    filter: rangeFilterSchema({}),
    events: {
      type: ["array", "null"],
      maxItems: EVENT_TYPES.length,
      items: { enum: [...EVENT_TYPES] },
      description: "Event types to return; absent, null or empty: all three.",
    },
    metrics: {
      type: ["array", "null"],
      maxItems: MAX_RECORDS_METRICS,
      items: { type: "string" },
      description:
        "Cell references (DESIGN 5.3, `{rowname}` allowed) whose events are returned; absent, null or empty: events at every level.",
    },
    zoneId: {
      type: "string",
      description:
        "Zone of the returned timestamps (IANA name, alias or fixed offset); absent or empty: UTC.",
    },
    skip: {
      type: "integer",
      minimum: 0,
      maximum: MAX_RECORDS_SKIP,
      description: "Records skipped first; default 0.",
    },
    limit: {
      type: "integer",
      minimum: 0,
      maximum: MAX_RECORDS_LIMIT,
      description: `Most records returned; absent or 0: ${DEFAULT_RECORDS_LIMIT}.`,
    },
  },
} as const;

/** JSON Schema of one returned record (the values of the response map are lists of these). */
export const EVENT_RECORD_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["entityId", "timestamp", "type", "metric", "data", "operation", "target"],
  properties: {
    entityId: { type: "integer" },
    timestamp: { type: "string" },
    type: { enum: [...EVENT_TYPES] },
    metric: { type: "string" },
    operation: { type: "string" },
    target: { type: "object", additionalProperties: true },
    data: {
      type: "object",
      additionalProperties: true,
      required: ["value"],
      properties: {
        severity: { type: "string" },
        active: { type: "boolean" },
        value: { type: "object", additionalProperties: { type: "string" } },
      },
    },
  },
} as const;

/** JSON Schema of the response: entity id (decimal string) → that entity's records, oldest first. */
export const RECORDS_RESPONSE_SCHEMA = {
  type: "object",
  propertyNames: { pattern: "^[1-9][0-9]*$" },
  additionalProperties: { type: "array", items: EVENT_RECORD_SCHEMA },
} as const;

export interface RecordsQuery {
  readonly entityFilter: string;
  readonly from: EpochMs;
  readonly to: EpochMs;
  /** Undefined: every type. */
  readonly types: readonly EventType[] | undefined;
  /** Undefined: every level. */
  readonly cells: readonly CellSelector[] | undefined;
  /** Undefined: timestamps in UTC as `toISOString()` writes them. */
  readonly zone: string | undefined;
  readonly skip: number;
  readonly limit: number;
}

const ajv = new Ajv2020({ allErrors: false, strict: true, useDefaults: false });
const validate = ajv.compile(RECORDS_QUERY_SCHEMA);

function fail(field: string, detail: string): VigilError {
  return new VigilError("BAD_REQUEST", { detail: `${field}: ${detail}` });
}

/**
 * Validates a recordsQuery body. Defaults: every entity, every event type, every level, UTC,
 * skip 0, limit {@link DEFAULT_RECORDS_LIMIT}. A Go client encodes unset fields as zero values
 * (`null` lists, `""` zone, `0` limit), so those mean "default" too. Errors are BAD_REQUEST whose body starts with the
 * field path (`filter.range.from: …`).
 */
export function parseRecordsQuery(body: unknown): RecordsQuery {
  if (!validate(body)) {
    const error = validate.errors?.[0];
    if (error === undefined) throw fail("body", "is not a valid request");
    throw fail(fieldPath(error), errorDetail(error));
  }
  const request = body as {
    filter: { entities?: string; range: { from: string; to: string } };
    events?: EventType[] | null;
    metrics?: string[] | null;
    zoneId?: string;
    skip?: number;
    limit?: number;
  };
  return asBadRequest(() => {
    const from = parseDateTime(request.filter.range.from, "filter.range.from");
    const to = parseDateTime(request.filter.range.to, "filter.range.to");
    if (to <= from) throw fail("filter.range", "'to' must be later than 'from'");
    const cells = request.metrics?.map((text, i) => parseCellReference(text, `metrics[${i}]`));
    return {
      entityFilter: request.filter.entities ?? "",
      from,
      to,
      types: request.events == null || request.events.length === 0 ? undefined : [...new Set(request.events)],
      cells: cells === undefined || cells.length === 0 ? undefined : cells,
      zone: request.zoneId === undefined || request.zoneId === "" ? undefined : checkZone(request.zoneId),
      skip: request.skip ?? 0,
      limit: request.limit === undefined || request.limit === 0 ? DEFAULT_RECORDS_LIMIT : request.limit,
    };
  });
}

/** The cell reference an event's target names, `""` when it names no cell or headline. */
export function targetMetric(target: EventRecord["target"]): string {
  if (target.sampler === undefined || target.dataview === undefined || target.column === undefined) return "";
  return cellReference({
    sampler: target.sampler,
    samplerType: target.type ?? "",
    dataview: target.dataview,
    row: target.row ?? "",
    column: target.column,
  });
}

/** Every member of a JSON object as a string (objects and arrays as their JSON text). */
function stringValues(object: unknown): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (typeof object !== "object" || object === null) return out;
  for (const [key, value] of Object.entries(object)) {
    if (value === undefined || value === null) continue;
    out[key] =
      typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value);
  }
  return out;
}

/** A time in `zone` to the millisecond with its offset, or UTC `toISOString()` without a zone. */
function timestampText(at: number, zone: string | undefined): string {
  if (zone === undefined) return new Date(at).toISOString();
  return formatInZoneMillis(at, zone);
}

/** One response record of a stored event (see docs/hub-api.md). */
export function eventRecordView(event: EventRecord & { entityId: number }, zone: string | undefined) {
  const payload = event.payload;
  const data: Record<string, unknown> = Object.create(null);
  for (const [key, value] of Object.entries(payload)) if (key !== "value") data[key] = value;
  // Severity: the cell's value at the change; snooze and userassignment: the whole payload.
  data.value = event.type === "severity" ? stringValues(payload.value) : stringValues(payload);
  return {
    entityId: event.entityId,
    timestamp: timestampText(event.at, zone),
    type: event.type,
    metric: targetMetric(event.target),
    operation: event.operation,
    target: event.target,
    data,
  };
}

/** Groups records by entity id (the decimal string key), keeping their order within each entity. */
export function recordsResponse(
  events: readonly EventRecord[],
  zone: string | undefined,
): Record<string, ReturnType<typeof eventRecordView>[]> {
  const out: Record<string, ReturnType<typeof eventRecordView>[]> = Object.create(null);
  for (const event of events) {
    if (event.entityId === null) continue;
    const key = String(event.entityId);
    const list = out[key] ?? [];
    list.push(eventRecordView({ ...event, entityId: event.entityId }, zone));
    out[key] = list;
  }
  return out;
}
