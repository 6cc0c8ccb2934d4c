/**
 * The JSON Schema of a metric query body (DESIGN 5.3): the shape — which fields, of which JSON
 * types — checked with Ajv before `parseMetricQuery` checks the meaning (zones, dates, cell
 * references, limits). It is the schema `GET /v0/openapi.json` publishes for the request, so the
 * document and the validator cannot drift apart. It is no stricter than the parser: fields the
 * parser takes as null (`grouping`, `filter.timeWindows`, `on`) may be null here too.
 */
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import { VigilError } from "../../errors/catalog.js";
import { METRIC_QUERY_LIMITS } from "./metric-query.js";

const stringList = (maxItems: number, description: string) => ({
  type: "array",
  maxItems,
  items: { type: "string" },
  description,
});

/**
 * The `filter` of a query body: `range` (`[from, to)` as ISO 8601 date-times with offsets), an
 * optional `entities` filter (DESIGN 5.2), and `more` properties of the endpoint's own.
 */
export function rangeFilterSchema<P extends Record<string, unknown>>(more: P) {
  return {
    type: "object",
    additionalProperties: false,
    required: ["range"],
    properties: {
      entities: {
        type: "string",
        description: "Entity filter (DESIGN 5.2); blank or absent selects every entity.",
      },
      range: {
        type: "object",
        additionalProperties: false,
        required: ["from", "to"],
        properties: {
          from: { type: "string", description: "ISO 8601 date-time with an offset; inclusive." },
          to: { type: "string", description: "ISO 8601 date-time with an offset; exclusive." },
        },
      },
      ...more,
    },
  } as const;
}

/** JSON Schema (draft 2020-12) of `POST /v0/metrics/query` and `/v1alpha/metrics/query`. */
export const METRIC_QUERY_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["filter", "metrics", "aggregations", "bucketing"],
  properties: {
    zoneId: {
      type: "string",
      description:
        "IANA zone, alias or fixed offset that buckets align to and labels are written in; absent or empty: UTC.",
    },
    filter: rangeFilterSchema({
      timeWindows: {
        type: ["array", "null"],
        maxItems: METRIC_QUERY_LIMITS.timeWindows,
        items: {
          type: "object",
          additionalProperties: false,
          required: ["from", "to"],
          properties: {
            from: { type: "string", description: "Local time HH:MM[:SS], inclusive." },
            to: {
              type: "string",
              description: "Local time HH:MM[:SS], exclusive; before from: overnight.",
            },
            on: { type: ["array", "null"], maxItems: 7, items: { type: "string" } },
          },
        },
      },
    }),
    metrics: {
      type: "array",
      maxItems: METRIC_QUERY_LIMITS.metrics,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["identifier", "include"],
        properties: {
          identifier: { type: "string", description: "[A-Za-z0-9._-]+, unique in the request." },
          include: stringList(
            METRIC_QUERY_LIMITS.includesPerMetric,
            "Cell references; {rowname} in the row.",
          ),
        },
      },
    },
    aggregations: stringList(METRIC_QUERY_LIMITS.aggregations, "Names from GET /v0/metrics/aggregations."),
    bucketing: {
      type: "object",
      additionalProperties: false,
      description: "Exactly one of duration (zone-aligned buckets) or count (equal buckets of the range).",
      // With additionalProperties false: exactly one of duration and count.
      minProperties: 1,
      maxProperties: 1,
      properties: {
        duration: {
          type: "string",
          description:
            "ISO 8601 duration: PT1M, PT5M, PT15M, PT1H, PT3H, PT12H, P1D, P1W, P1M or any PTnM/PTnH that divides a day.",
        },
        count: {
          type: "integer",
          minimum: 1,
          maximum: METRIC_QUERY_LIMITS.buckets,
          description:
            "Cuts [from, to) into this many equal buckets from `from` (not zone-aligned); at most the range's length in milliseconds.",
        },
      },
    },
    grouping: {
      type: ["array", "null"],
      items: { type: "string" },
      description: "rowname, entity and/or entity:<attribute>, each at most once.",
    },
    token: {
      type: ["string", "null"],
      description: "Accepted and not used: the Authorization header authenticates.",
    },
  },
} as const;

const ajv = new Ajv2020({ allErrors: false, strict: true });
const validate = ajv.compile(METRIC_QUERY_SCHEMA);

/** The field path of an Ajv error in the parser's notation (`metrics[1].include[0]`). */
export function fieldPath(error: ErrorObject): string {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join("")
    .replace(/^\./, "");
  const params = error.params as { additionalProperty?: unknown; missingProperty?: unknown };
  const child =
    error.keyword === "additionalProperties"
      ? String(params.additionalProperty)
      : error.keyword === "required"
        ? String(params.missingProperty)
        : undefined;
  if (child !== undefined) return path === "" ? child : `${path}.${child}`;
  return path === "" ? "body" : path;
}

/** What an Ajv error says, in words a client can act on. */
export function errorDetail(error: ErrorObject): string {
  // bucketing is the one object with a property count: exactly one of duration and count.
  if (error.keyword === "minProperties") return "is empty; give duration or count";
  if (error.keyword === "maxProperties") {
    return "has more than one field; give only duration or only count, not both";
  }
  if (error.keyword === "additionalProperties") return "is not a field of this request";
  if (error.keyword === "required") return "is required";
  if (error.keyword === "enum") {
    const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  return error.message ?? error.keyword;
}

/** Checks the shape of a metric query body; INVALID_QUERY (400) naming the field when it is wrong. */
export function checkMetricQueryShape(body: unknown): void {
  if (validate(body)) return;
  const error = validate.errors?.[0];
  if (error === undefined) throw new VigilError("INVALID_QUERY", { field: "body", detail: "is not valid" });
  throw new VigilError("INVALID_QUERY", { field: fieldPath(error), detail: errorDetail(error) });
}

/**
 * Runs `work` and re-raises a metric-query field error (INVALID_QUERY) as a plain 400: for the
 * routes that parse query fields (dates, zones, cell references) outside a metric query body.
 */
export function asBadRequest<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof VigilError && error.code === "INVALID_QUERY") {
      throw new VigilError("BAD_REQUEST", { detail: error.body }, { cause: error });
    }
    throw error;
  }
}
