/**
 * The one error catalog of vigil (STYLE 8). Every error an HTTP API answers has a stable `code`,
 * an HTTP status, a short `title` and a `body` template whose `{field}` placeholders are filled from
 * the error's fields. Every HTTP API answers them as `{status, title, body}` (DESIGN 3.2).
 * docs/errors.md lists every code; test/errors/catalog.test.ts fails if one is missing there.
 */

export interface ErrorSpec {
  readonly status: number;
  readonly title: string;
  /** What was wrong and how to fix it; `{name}` is replaced by the error's field `name`. */
  readonly body: string;
}

export const ERRORS = {
  // Generic HTTP (all APIs)
  NOT_FOUND: { status: 404, title: "Not found", body: "No resource at {path}." },
  METHOD_NOT_ALLOWED: {
    status: 405,
    title: "Method not allowed",
    body: "{method} is not allowed on {path}; allowed: {allow}.",
  },
  BODY_TOO_LARGE: {
    status: 413,
    title: "Request body too large",
    body: "The request body is larger than the limit of {limit} bytes.",
  },
  BAD_REQUEST: { status: 400, title: "Bad request", body: "{detail}" },
  LIMIT_EXCEEDED: {
    status: 400,
    title: "Limit exceeded",
    body: "{what}: {size}, more than limits.{limit} ({setting}) of the setup; send less or raise limits.{limit}.",
  },
  INTERNAL: {
    status: 500,
    title: "Internal error",
    body: "The server failed to handle the request; the error is logged with request id {requestId}.",
  },
  SERVICE_UNAVAILABLE: { status: 503, title: "Service unavailable", body: "{detail}" },

  // Probe ingest (DESIGN 3.2)
  NO_BODY: {
    status: 400,
    title: "Request has no body",
    body: "A PUT needs a body: {expected}.",
  },
  INVALID_DATAVIEW: {
    status: 400,
    title: "Unable to create or update dataview",
    body: "{detail}",
  },
  INVALID_ROW: { status: 400, title: "Unable to create or update row", body: "{detail}" },
  RESERVED_DATAVIEW: {
    status: 400,
    title: "Reserved dataview name",
    body: "The dataview name 'Streams Dataview' is reserved for the streams of a sampler; use another name.",
  },
  MANAGED_ENTITY_NOT_FOUND: {
    status: 404,
    title: "Managed entity not found",
    body: "Managed entity '{managedEntity}' is not in the setup of probe '{probe}'.",
  },
  SAMPLER_NOT_FOUND: {
    status: 404,
    title: "Sampler not found",
    body: "Managed entity '{managedEntity}' has no rest-api sampler '{sampler}'.",
  },
  DATAVIEW_NOT_FOUND: {
    status: 404,
    title: "Dataview not found",
    body: "Sampler '{sampler}' has no dataview '{dataview}'; create it with PUT on the dataview path first.",
  },
  ROW_NOT_FOUND: {
    status: 404,
    title: "Row not found",
    body: "Dataview '{dataview}' has no row '{row}'.",
  },
  STREAM_NOT_FOUND: {
    status: 404,
    title: "Stream not found",
    body: "Sampler '{sampler}' has no stream '{stream}'.",
  },
  AMBIGUOUS_SAMPLER: {
    status: 400,
    title: "Ambiguous sampler",
    body: "Managed entity '{managedEntity}' has several samplers named '{sampler}'; address one as {candidates}.",
  },
  ROW_LIMIT_REACHED: {
    status: 400,
    title: "Row limit reached",
    body: "Dataview '{dataview}' already holds {limit} rows, its row limit; delete a row or raise rowLimit.",
  },
  MEMORY_PROTECTION: {
    status: 503,
    title: "Memory protection",
    body: "The {service} uses {rssMb} MB, above its memory protection threshold of {thresholdMb} MB; retry later or raise memoryProtection.ratio.",
  },
  INGEST_BACKLOG: {
    status: 503,
    title: "Gateway backlog",
    body: "The probe holds {pending} changes ({bytes} bytes, estimated) its gateway has not taken yet, at its limit of {limit}; retry later.",
  },
  TOO_MANY_COLUMNS: {
    status: 400,
    title: "Too many columns",
    body: "Dataview '{dataview}' would have more than {limit} distinct columns, the limit (gateway.maxColumnsPerDataview); send fewer columns or raise the limit.",
  },
  CELL_TOO_LONG: {
    status: 400,
    title: "Cell too long",
    body: "{where}, column '{column}': {length} characters, more than the limit of {limit} (gateway.maxCellLength); send a shorter value or raise the limit.",
  },
  TOO_MANY_DATAVIEWS: {
    status: 400,
    title: "Too many dataviews",
    body: "Sampler '{sampler}' already holds {limit} dataviews, its limit; delete a dataview first.",
  },
  CLIENT_CERTIFICATE_REQUIRED: {
    status: 403,
    title: "Client certificate required",
    body: "Sampler '{sampler}' accepts only HTTPS requests with a client certificate signed by its client CA.",
  },

  // Gateway commands and items (DESIGN 4.2)
  INVALID_COMMAND: { status: 400, title: "Invalid command", body: "{field}: {detail}" },
  ITEM_NOT_FOUND: {
    status: 404,
    title: "Item not found",
    body: "{detail}; GET /v1/items lists the items below a target.",
  },
  COMMAND_NOT_APPLICABLE: { status: 409, title: "Command does not apply", body: "{detail}." },

  // Hub (DESIGN 5)
  UNAUTHORIZED: {
    status: 401,
    title: "Authorization failed",
    body: "A valid authorization token is needed: send 'Authorization: Bearer <token>' with a token from GET /token.",
  },
  LINK_UNAUTHORIZED: {
    status: 401,
    title: "Authorization failed",
    body: "The probe link needs the probe's link secret: send 'Authorization: Bearer <linkSecret>' on the upgrade (vigil probe --link-secret-file FILE, or VIGIL_LINK_SECRET).",
  },
  FORBIDDEN: {
    status: 403,
    title: "Forbidden",
    body: "This request needs the '{role}' role; the token of '{sub}' has {roles}. Ask for a key with that role (hub.security.appKeys[].roles).",
  },
  CLIENT_UNAUTHORIZED: {
    status: 401,
    title: "Authorization failed",
    body: "Client authentication failed: {detail}",
  },
  TOO_MANY_REQUESTS: {
    status: 429,
    title: "Too many requests",
    body: "{detail} Retry after {seconds} s.",
  },
  ENTITY_NOT_FOUND: { status: 404, title: "Entity not found", body: "No entity has id {id}." },
  INVALID_FILTER: {
    status: 400,
    title: "Invalid entity filter",
    body: "{detail}",
  },
  INVALID_QUERY: {
    status: 400,
    title: "Invalid metric query",
    body: "{field}: {detail}",
  },
  INVALID_MESSAGE: {
    status: 400,
    title: "Invalid message",
    body: "{detail}",
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Fields that fill an error's body template; extra fields are logged, never answered. */
export type ErrorFields = Readonly<Record<string, string | number | boolean | undefined>>;

function fill(template: string, fields: ErrorFields): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const value = fields[name];
    return value === undefined ? whole : String(value);
  });
}

/**
 * An error that knows how it is answered. Throw it anywhere below an HTTP handler; the central
 * error handler (src/http/error-handler.ts) turns it into `{status, title, body}`.
 */
export class VigilError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly body: string;
  readonly fields: ErrorFields;
  /** Extra response headers, e.g. `Allow` for 405 or `Retry-After` for 503. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    fields: ErrorFields = {},
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    const spec: ErrorSpec = ERRORS[code];
    const body = fill(spec.body, fields);
    super(`${spec.title}: ${body}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "VigilError";
    this.code = code;
    this.status = spec.status;
    this.title = spec.title;
    this.body = body;
    this.fields = fields;
    this.headers = options.headers ?? {};
  }
}

/** The error body every vigil HTTP API answers (DESIGN 3.2). */
export interface ErrorBody {
  status: number;
  title: string;
  body: string;
}

export function errorBody(error: VigilError): ErrorBody {
  return { status: error.status, title: error.title, body: error.body };
}
