/**
 * `GET /v0/openapi.json`: an OpenAPI 3.1 document of the whole hub API. Request bodies
 * are the JSON Schemas that validate them (metric-query-schema.ts, records-query.ts), imported,
 * not copied; response bodies are the schemas below, which test/hub/http/openapi.test.ts checks
 * real responses of every endpoint against. Query parameters are described from one table
 * ({@link PARAMETERS}); their values are checked by query-params.ts. Each operation lists every
 * status it answers ({@link STATUSES}); test/hub/http/openapi-statuses.test.ts provokes each one
 * against real hubs and fails on a status a route answers that its operation does not list, or one
 * listed that it cannot provoke. Every other method on a documented path is a 405 with `Allow`.
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
      properties: {
        name: {
          type: "string",
          description: "A cell reference with {rowname}; headlines have an empty row.",
        },
        type: { type: "string", description: "float64 (or the schema's type) once numeric, else string." },
        unit: { type: "string", description: "The setup schema's unit, else none." },
        mappings: {
          type: "array",
          description: "With includeMappings=true (DESIGN 5.1): where the metric lives in Geneos terms.",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["legacyPath", "dataviewId", "isDeleted"],
            properties: {
              legacyPath: {
                type: "string",
                description:
                  'The Geneos XPath of the cell, e.g. /geneos/gateway[(@name="GW1")]/…/rows/row[(@name="{rowname}")]/cell[(@column="latency")].',
              },
              dataviewId: { type: "integer", description: "The hub's stable id of the dataview." },
              isDeleted: { type: "boolean", description: "Whether that dataview is deleted." },
            },
          },
        },
      },
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
            additionalProperties: false,
            required: ["duration"],
            properties: {
              duration: {
                type: "string",
                description:
                  "The duration asked; with count, each bucket's width (ISO 8601, e.g. PT7M30S; to the nanosecond, rounded down).",
              },
              count: {
                type: "integer",
                minimum: 1,
                description: "The count asked, when buckets were counted.",
              },
            },
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
  includeMappings: {
    in: "query",
    description:
      "Add to each metric `mappings: [{legacyPath, dataviewId, isDeleted}]`: the Geneos XPath of the cell, the hub's id of its dataview and whether that dataview is deleted (DESIGN 5.1); default false.",
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

/** The error statuses of the hub API with what each means; every one answers the Error body. */
export const STATUSES = {
  "400": "Invalid request: the body names the parameter or field and why.",
  "401": "No valid bearer token (security enabled; WWW-Authenticate: Bearer).",
  "403": "The token lacks the role this endpoint needs (security enabled).",
  "404": "No entity has this id.",
  "413": "The request body is larger than the endpoint's limit.",
  "429":
    "Too many token requests from this address, or failed authentications of this client id (Retry-After).",
  "503": "The store cannot answer now (Retry-After); retry.",
} as const;

type Status = keyof typeof STATUSES;

function errorResponses(statuses: readonly Status[], descriptions: Partial<Record<Status, string>> = {}) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: descriptions[status] ?? STATUSES[status], ...json(ref("Error")) },
    ]),
  );
}

/** Security (401, 403) and the store (503): what every protected route reading the store answers. */
const READS_STORE: readonly Status[] = ["401", "403", "503"];
/** A protected route that needs no store. */
const PROTECTED: readonly Status[] = ["401", "403"];

function get(
  summary: string,
  response: ResponseSchemaName,
  params: readonly ParameterName[],
  statuses: readonly Status[],
) {
  return {
    get: {
      summary,
      parameters: parameters(params),
      responses: { "200": { description: "OK", ...json(ref(response)) }, ...errorResponses(statuses) },
    },
  };
}

function post(summary: string, body: object, response: ResponseSchemaName, statuses: readonly Status[]) {
  return {
    post: {
      summary,
      requestBody: { required: true, ...json(body) },
      responses: { "200": { description: "OK", ...json(ref(response)) }, ...errorResponses(statuses) },
    },
  };
}

const metricQuery = post("Aggregate metrics (DESIGN 5.3).", METRIC_QUERY_SCHEMA, "MetricQueryResponse", [
  "400",
  "413",
  ...READS_STORE,
]);

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
      "400": {
        description:
          "RFC 6749 error: invalid_request (a body too large included), invalid_grant, unsupported_grant_type.",
        ...json(ref("OAuth2Error")),
      },
      "401": { description: "RFC 6749 error: invalid_client.", ...json(ref("OAuth2Error")) },
      "429": {
        description: "RFC 6749 error temporarily_unavailable: the rate limits or a lockout (Retry-After).",
        ...json(ref("OAuth2Error")),
      },
      "503": {
        description: "RFC 6749 error temporarily_unavailable: too many secret checks waiting (Retry-After).",
        ...json(ref("OAuth2Error")),
      },
    },
  },
};

/** The token endpoints' refusals (docs/security.md): 401, 429 past the limits, 503 when checks queue up. */
const TOKEN_STATUSES = errorResponses(["401", "429", "503"], {
  "401": "The credentials are missing or wrong (WWW-Authenticate names the schemes).",
  "503": "Too many secret checks are waiting (Retry-After); retry shortly.",
});

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
        summary: "Ready: 200 when the store answers, 503 with the reason when it cannot.",
        security: [],
        parameters: [],
        responses: {
          "200": { description: "OK", ...json(ref("Ping")) },
          ...errorResponses(["503"], { "503": "The store cannot answer (Retry-After)." }),
        },
      },
    },
    "/v0/openapi.json": get("This document.", "OpenApi", [], PROTECTED),
    "/v0/entities": get(
      "Entities a filter selects.",
      "Entities",
      ["filter", "includeDeleted"],
      ["400", ...READS_STORE],
    ),
    "/v0/entities/summary": get(
      "Entities grouped by attributes, counted by severity.",
      "EntitySummary",
      ["filter", "includeDeleted", "groupBy", "nrSamples"],
      ["400", ...READS_STORE],
    ),
    "/v0/entities/attributes": get(
      "Attribute names of the entities a filter selects, with their number of values.",
      "Attributes",
      ["filter", "includeDeleted"],
      ["400", ...READS_STORE],
    ),
    "/v0/entities/attributes/{name}": get(
      "Values of one attribute on the entities a filter selects, sorted by code point.",
      "Strings",
      ["name", "filter", "includeDeleted"],
      ["400", ...READS_STORE],
    ),
    "/v0/entities/metrics": get(
      "Metrics of the entities a filter selects.",
      "Metrics",
      ["filter", "plugin", "includeNonNumeric", "includeDeleted", "includeMappings"],
      ["400", ...READS_STORE],
    ),
    "/v0/entities/metrics/rows": get(
      "Row names of a path on the entities a filter selects.",
      "Strings",
      ["filter", "includeDeleted", "rowsPath", "updatedSince"],
      ["400", ...READS_STORE],
    ),
    "/v0/entities/{id}": get("One entity.", "Entity", ["id"], ["400", "404", ...READS_STORE]),
    "/v0/entities/{id}/metrics": get(
      "Metrics of one entity.",
      "Metrics",
      ["id", "plugin", "includeNonNumeric", "includeMappings"],
      ["400", "404", ...READS_STORE],
    ),
    "/v0/entities/{id}/metrics/rows": get(
      "Row names of a path on one entity.",
      "Strings",
      ["id", "rowsPath", "updatedSince"],
      ["400", "404", ...READS_STORE],
    ),
    "/v0/entities/{id}/metrics/data": get(
      "Raw values of one cell, values as strings.",
      "MetricData",
      ["id", "path", "from", "to", "skip", "limit"],
      ["400", "404", ...READS_STORE],
    ),
    "/v0/metrics/query": metricQuery,
    "/v1alpha/metrics/query": metricQuery,
    "/v0/metrics/aggregations": get("The aggregations of the metric query.", "Aggregations", [], PROTECTED),
    "/v0/events/recordsQuery": post(
      "Severity, snooze and user-assignment history; a map from entity id to records.",
      RECORDS_QUERY_SCHEMA,
      "EventRecords",
      ["400", "413", ...READS_STORE],
    ),
    "/v0/messages": {
      post: {
        summary: "Backfill: a JSON array or NDJSON of public-v2 messages (role write).",
        requestBody: {
          required: true,
          content: {
            "application/json": { schema: { type: "array" } },
            "application/x-ndjson": { schema: { type: "string" } },
          },
        },
        responses: {
          "200": { description: "OK", ...json(ref("BackfillResult")) },
          ...errorResponses(["400", "401", "403", "413", "503"], {
            "503":
              "The store cannot take the messages now, the hub is over its memory threshold, or too many backfills run (Retry-After); retry.",
          }),
        },
      },
    },
    "/v1/status": get("Store, ingest and consumer counters (role read).", "Status", [], PROTECTED),
    "/v1/whoami": {
      get: {
        summary: "What the bearer token grants now: its subject, current roles and expiry (no role needed).",
        parameters: [],
        responses: { "200": { description: "OK", ...json(ref("Grant")) }, ...errorResponses(["401"]) },
      },
    },
    "/metrics": {
      get: {
        summary: "Self-metrics in the Prometheus text format 0.0.4 (docs/operations.md, Metrics).",
        parameters: [],
        responses: {
          "200": { description: "OK", content: { "text/plain": { schema: { type: "string" } } } },
          ...errorResponses(PROTECTED),
        },
      },
    },
    "/token": {
      get: {
        summary: "A token for HTTP Basic (application key) or Negotiate (Kerberos) credentials.",
        security: [],
        parameters: [],
        responses: { "200": { description: "OK", ...json(ref("Token")) }, ...TOKEN_STATUSES },
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
        responses: {
          "200": { description: "OK", ...json(ref("Token")) },
          ...errorResponses(["400"], {
            "400": "response_type is not token, a parameter is repeated, or client_id is not the Basic user.",
          }),
          ...TOKEN_STATUSES,
        },
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
