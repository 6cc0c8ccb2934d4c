/**
 * `GET /v0/openapi.json`: an OpenAPI 3.1 document of the whole hub API. Request bodies
 * are the JSON Schemas that validate them (metric-query-schema.ts, records-query.ts), imported,
 * not copied; response bodies are the schemas below, which test/hub/http/openapi.test.ts checks
 * real responses of every endpoint against. Query parameters are described from one table
 * ({@link PARAMETERS}); their values are checked by query-params.ts.
 */

import { METRIC_QUERY_SCHEMA } from "../query/metric-query-schema.js";
import { RECORDS_QUERY_SCHEMA, RECORDS_RESPONSE_SCHEMA } from "../query/records-query.js";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const stringMap = { type: "object", additionalProperties: { type: "string" } } as const;
const stringArray = { type: "array", items: { type: "string" } } as const;

/** Response body schemas, by component name. */
export const RESPONSE_SCHEMAS = {
  Error: {
    type: "object",
    additionalProperties: false,
    required: ["status", "title", "body"],
    properties: {
      status: { type: "integer", minimum: 400, maximum: 599 },
      title: { type: "string" },
      body: { type: "string" },
    },
  },
  Ping: {
    type: "object",
    required: ["status"],
    properties: { status: { const: "OK" } },
  },
  Entity: {
    type: "object",
    additionalProperties: false,
    required: ["id", "attributes", "isDeleted"],
    properties: {
      id: { type: "integer", minimum: 1 },
      attributes: stringMap,
      isDeleted: { type: "boolean" },
    },
  },
  Entities: { type: "array", items: ref("Entity") },
  EntitySummary: {
    type: "array",
    items: {
      type: "object",
      additionalProperties: false,
      required: ["attributes", "count", "sampleEntityCount", "counts"],
      properties: {
        attributes: stringMap,
        count: { type: "integer", minimum: 0 },
        sampleEntityCount: { type: "integer", minimum: 0 },
        counts: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["states", "count", "sampleEntities"],
            properties: {
              states: {
                type: "object",
                additionalProperties: false,
                required: ["severity"],
                properties: { severity: { type: "string" } },
              },
              count: { type: "integer", minimum: 1 },
              sampleEntities: { type: "array", items: { type: "integer" } },
            },
          },
        },
      },
    },
  },
  Attributes: {
    type: "array",
    items: {
      type: "object",
      additionalProperties: false,
      required: ["name", "valueCount"],
      properties: { name: { type: "string" }, valueCount: { type: "integer", minimum: 0 } },
    },
  },
  Strings: stringArray,
  Metrics: {
    type: "array",
    items: {
      type: "object",
      additionalProperties: false,
      required: ["name", "type", "unit"],
      properties: { name: { type: "string" }, type: { type: "string" }, unit: { type: "string" } },
    },
  },
  MetricData: {
    type: "object",
    additionalProperties: false,
    required: ["totalCount", "values"],
    properties: {
      totalCount: { type: "integer", minimum: 0 },
      values: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: false,
          required: ["timestamp", "value"],
          properties: { timestamp: { type: "string" }, value: { type: "string" } },
        },
      },
    },
  },
  MetricQueryResponse: {
    type: "object",
    additionalProperties: false,
    required: ["schema", "data"],
    properties: {
      schema: {
        type: "object",
        additionalProperties: false,
        required: ["bucketing", "grouping", "metrics"],
        properties: {
          bucketing: {
            type: "object",
            required: ["duration"],
            properties: { duration: { type: "string" } },
          },
          grouping: stringArray,
          metrics: {
            type: "object",
            additionalProperties: {
              type: "object",
              additionalProperties: {
                type: "object",
                required: ["type", "unit"],
                properties: { type: { enum: ["float64", "int64"] }, unit: { type: "string" } },
              },
            },
          },
        },
      },
      data: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: false,
          required: ["bucket", "group", "metrics"],
          properties: {
            bucket: { type: "string" },
            group: {
              type: "object",
              additionalProperties: false,
              properties: {
                rowname: { type: "string" },
                entity: { type: "integer" },
                attribute: { type: "string" },
              },
            },
            metrics: {
              type: "object",
              additionalProperties: { type: "object", additionalProperties: { type: ["number", "null"] } },
            },
          },
        },
      },
    },
  },
  Aggregations: {
    type: "object",
    additionalProperties: {
      type: "object",
      additionalProperties: false,
      required: ["parameters", "description"],
      properties: {
        parameters: { type: "array", items: stringMap },
        description: { type: "string" },
      },
    },
  },
  EventRecords: RECORDS_RESPONSE_SCHEMA,
  BackfillResult: {
    type: "object",
    additionalProperties: false,
    required: ["accepted", "duplicates", "rejected"],
    properties: {
      accepted: { type: "integer", minimum: 0 },
      duplicates: { type: "integer", minimum: 0 },
      rejected: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: false,
          required: ["index", "error"],
          properties: { index: { type: "integer", minimum: 0 }, error: { type: "string" } },
        },
      },
    },
  },
  Status: { type: "object" },
  Grant: {
    type: "object",
    required: ["sub", "roles", "expires"],
    properties: {
      sub: { type: "string" },
      roles: { type: "array", items: { enum: ["read", "write", "operate"] }, uniqueItems: true },
      expires: { type: "integer", description: "Epoch seconds." },
    },
    additionalProperties: false,
  },
  Token: {
    type: "object",
    required: ["access_token", "token_type", "refresh_token", "expires"],
    properties: {
      access_token: { type: "string" },
      token_type: { const: "Bearer" },
      refresh_token: { type: "string" },
      expires: { type: "integer", description: "Epoch seconds." },
      state: { type: "string", description: "Echoed by /authorize." },
    },
  },
  OAuth2Token: {
    type: "object",
    required: ["access_token", "token_type", "expires_in"],
    properties: {
      access_token: { type: "string" },
      token_type: { const: "Bearer" },
      expires_in: { type: "integer" },
      refresh_token: { type: "string" },
    },
  },
  OAuth2Error: {
    type: "object",
    required: ["error"],
    properties: { error: { type: "string" }, error_description: { type: "string" } },
  },
  Jwks: {
    type: "object",
    required: ["keys"],
    properties: { keys: { type: "array", items: { type: "object" } } },
  },
  OpenApi: {
    type: "object",
    required: ["openapi", "paths"],
    properties: { openapi: { const: "3.1.0" }, paths: { type: "object" } },
  },
} as const;

export type ResponseSchemaName = keyof typeof RESPONSE_SCHEMAS;

interface Parameter {
  readonly in: "query" | "path";
  readonly description: string;
  readonly schema: object;
  readonly required?: boolean;
  /** Repeated once per value (`groupBy=a&groupBy=b`). */
  readonly repeated?: boolean;
}

const TRUE_FALSE = { type: "string", enum: ["true", "false"] } as const;
const DATE_TIME = { type: "string", description: "ISO 8601 date-time with an offset." } as const;

/** Every parameter of the hub API, by name. Given more than once (unless repeated): 400. */
export const PARAMETERS = {
  id: {
    in: "path",
    required: true,
    description: "Entity id, 1 … 2147483647.",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  name: { in: "path", required: true, description: "Attribute name.", schema: { type: "string" } },
  filter: {
    in: "query",
    description: "Entity filter (DESIGN 5.2); absent or blank: every entity.",
    schema: { type: "string" },
  },
  includeDeleted: {
    in: "query",
    description: "Include deleted entities; default false.",
    schema: TRUE_FALSE,
  },
  groupBy: {
    in: "query",
    repeated: true,
    description: "An attribute to group by; repeat for several (at most 16).",
    schema: { type: "string", minLength: 1 },
  },
  nrSamples: {
    in: "query",
    description: "Most ids in each sampleEntities list; default 10, at most 1000.",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  plugin: {
    in: "query",
    description: "Only metrics of samplers of this plug-in (as the setup file names it: rest-api, fkm).",
    schema: { type: "string" },
  },
  includeNonNumeric: {
    in: "query",
    description: "Include metrics that have no numeric value; default false.",
    schema: TRUE_FALSE,
  },
  path: {
    in: "query",
    required: true,
    description: "A cell reference (DESIGN 5.3).",
    schema: { type: "string" },
  },
  rowsPath: {
    in: "query",
    required: true,
    description: "<sampler>/<dataview>/{rowname}/<column>, or <sampler>/<dataview> for every column.",
    schema: { type: "string" },
  },
  updatedSince: {
    in: "query",
    description: "Only rows with a sample at or after this time.",
    schema: DATE_TIME,
  },
  from: { in: "query", description: "Inclusive start of the time range.", schema: DATE_TIME },
  to: { in: "query", description: "Exclusive end of the time range.", schema: DATE_TIME },
  skip: {
    in: "query",
    description: "Values skipped first; default 0.",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  limit: {
    in: "query",
    description: "Most values returned; absent or 0: 1000, at most 10000.",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
} as const satisfies Record<string, Parameter>;

type ParameterName = keyof typeof PARAMETERS;

function parameters(names: readonly ParameterName[]): object[] {
  return names.map((key) => {
    const p: Parameter = PARAMETERS[key];
    const name = key === "rowsPath" ? "path" : key;
    return {
      name,
      in: p.in,
      description: p.description,
      required: p.required === true,
      schema: p.schema,
      ...(p.repeated === true ? { style: "form", explode: true } : {}),
    };
  });
}

const json = (schema: object) => ({ content: { "application/json": { schema } } });
const errors = {
  "400": { description: "Invalid request.", ...json(ref("Error")) },
  "401": { description: "No valid token (security enabled).", ...json(ref("Error")) },
  "403": {
    description: "The token lacks the role this endpoint needs (security enabled).",
    ...json(ref("Error")),
  },
};

function get(summary: string, response: ResponseSchemaName, params: readonly ParameterName[] = []) {
  return {
    get: {
      summary,
      parameters: parameters(params),
      responses: { "200": { description: "OK", ...json(ref(response)) }, ...errors },
    },
  };
}

function post(summary: string, body: object, response: ResponseSchemaName) {
  return {
    post: {
      summary,
      requestBody: { required: true, ...json(body) },
      responses: { "200": { description: "OK", ...json(ref(response)) }, ...errors },
    },
  };
}

const metricQuery = post("Aggregate metrics (DESIGN 5.3).", METRIC_QUERY_SCHEMA, "MetricQueryResponse");

const oauth2 = {
  post: {
    summary: "OAuth 2.0 token endpoint (RFC 6749); errors are RFC 6749 bodies.",
    security: [],
    requestBody: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: { type: "object" } } },
    },
    responses: {
      "200": { description: "OK", ...json(ref("OAuth2Token")) },
      "400": { description: "RFC 6749 error.", ...json(ref("OAuth2Error")) },
      "401": { description: "RFC 6749 error.", ...json(ref("OAuth2Error")) },
    },
  },
};

/** The document, built once. */
export const HUB_OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "vigil hub query API",
    version: "0",
    description:
      "Entities, metrics and events stored by the hub (DESIGN 5). Errors are {status, title, body}.",
  },
  jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
  components: {
    schemas: RESPONSE_SCHEMAS,
    securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
  },
  security: [{ bearer: [] }],
  paths: {
    "/v0/ping": {
      get: {
        ...get("Ready: 200 when the store answers, 503 with the reason when it cannot.", "Ping").get,
        security: [],
        responses: {
          "200": { description: "OK", ...json(ref("Ping")) },
          "503": { description: "The store cannot answer (Retry-After).", ...json(ref("Error")) },
        },
      },
    },
    "/v0/openapi.json": get("This document.", "OpenApi"),
    "/v0/entities": get("Entities a filter selects.", "Entities", ["filter", "includeDeleted"]),
    "/v0/entities/summary": get("Entities grouped by attributes, counted by severity.", "EntitySummary", [
      "filter",
      "includeDeleted",
      "groupBy",
      "nrSamples",
    ]),
    "/v0/entities/attributes": get("Attribute names with their number of values.", "Attributes", [
      "includeDeleted",
    ]),
    "/v0/entities/attributes/{name}": get("Values of one attribute, sorted by code point.", "Strings", [
      "name",
      "includeDeleted",
    ]),
    "/v0/entities/metrics": get("Metrics of the entities a filter selects.", "Metrics", [
      "filter",
      "plugin",
      "includeNonNumeric",
      "includeDeleted",
    ]),
    "/v0/entities/metrics/rows": get("Row names of a path on the entities a filter selects.", "Strings", [
      "filter",
      "includeDeleted",
      "rowsPath",
      "updatedSince",
    ]),
    "/v0/entities/{id}": get("One entity.", "Entity", ["id"]),
    "/v0/entities/{id}/metrics": get("Metrics of one entity.", "Metrics", [
      "id",
      "plugin",
      "includeNonNumeric",
    ]),
    "/v0/entities/{id}/metrics/rows": get("Row names of a path on one entity.", "Strings", [
      "id",
      "rowsPath",
      "updatedSince",
    ]),
    "/v0/entities/{id}/metrics/data": get("Raw values of one cell, values as strings.", "MetricData", [
      "id",
      "path",
      "from",
      "to",
      "skip",
      "limit",
    ]),
    "/v0/metrics/query": metricQuery,
    "/v1alpha/metrics/query": metricQuery,
    "/v0/metrics/aggregations": get("The aggregations of the metric query.", "Aggregations"),
    "/v0/events/recordsQuery": post(
      "Severity, snooze and user-assignment history; a map from entity id to records.",
      RECORDS_QUERY_SCHEMA,
      "EventRecords",
    ),
    "/v0/messages": {
      post: {
        summary: "Backfill: a JSON array or NDJSON of public-v2 messages.",
        requestBody: {
          required: true,
          content: {
            "application/json": { schema: { type: "array" } },
            "application/x-ndjson": { schema: { type: "string" } },
          },
        },
        responses: { "200": { description: "OK", ...json(ref("BackfillResult")) }, ...errors },
      },
    },
    "/v1/status": get("Store, ingest and consumer counters (role read).", "Status"),
    "/v1/whoami": {
      get: {
        summary: "What the bearer token grants now: its subject, current roles and expiry (no role needed).",
        responses: { "200": { description: "OK", ...json(ref("Grant")) }, "401": errors["401"] },
      },
    },
    "/metrics": {
      get: {
        summary: "Self-metrics in the Prometheus text format 0.0.4 (docs/operations.md, Metrics).",
        responses: {
          "200": { description: "OK", content: { "text/plain": { schema: { type: "string" } } } },
          "401": errors["401"],
          "403": errors["403"],
        },
      },
    },
    "/token": {
      get: {
        summary: "A token for HTTP Basic (application key) or Negotiate (Kerberos) credentials.",
        security: [],
        responses: { "200": { description: "OK", ...json(ref("Token")) }, "401": errors["401"] },
      },
    },
    "/authorize": {
      get: {
        summary: "A token, echoing state.",
        security: [],
        parameters: [
          { name: "response_type", in: "query", required: true, schema: { const: "token" } },
          { name: "client_id", in: "query", required: true, schema: { type: "string" } },
          { name: "state", in: "query", required: false, schema: { type: "string" } },
        ],
        responses: { "200": { description: "OK", ...json(ref("Token")) }, "401": errors["401"] },
      },
    },
    "/oauth2/token": oauth2,
    "/v0/oauth2/token": oauth2,
    "/.well-known/jwks.json": {
      get: {
        summary: "The public key tokens are signed with.",
        security: [],
        responses: { "200": { description: "OK", ...json(ref("Jwks")) } },
      },
    },
  },
} as const;
