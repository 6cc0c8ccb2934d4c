/**
 * JSON Schema (draft 2020-12) of the YAML setup file (DESIGN 2). Unknown keys are errors at every
 * level (`additionalProperties: false`). `default` values are annotations for editors and docs:
 * `build-setup.ts` fills the defaults itself, from `defaults.ts`. What a JSON Schema cannot say
 * (duplicate names, cross-references, regex syntax, port clashes, well-formed Unicode) is checked in
 * `setup-cross-checks.ts`.
 *
 * Samplers and publish sinks are discriminated with `if`/`then` rather than `oneOf`, so that a
 * validator reports the errors of the one branch that applies instead of every branch's.
 */

import { DEFAULT_ROLES, ROLES } from "../auth/roles.js";
import { DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import {
  DEFAULT_BUFFER_SIZE,
  DEFAULT_COLUMN_TYPE,
  DEFAULT_COLUMN_UNIT,
  DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
  DEFAULT_ENTITY_CACHE_MB,
  DEFAULT_FKM_SAMPLE_INTERVAL,
  DEFAULT_GATEWAY_PORT,
  DEFAULT_HUB_PORT,
  DEFAULT_MAX_CELL_LENGTH,
  DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
  DEFAULT_MAX_ENTITIES,
  DEFAULT_MAX_SERIES_PER_ENTITY,
  DEFAULT_MEMORY_LIMIT_MB,
  DEFAULT_MEMORY_RATIO,
  DEFAULT_NATS_STREAM,
  DEFAULT_NATS_SUBJECT_PREFIX,
  DEFAULT_PROBE_HOSTNAME,
  DEFAULT_REST_API_HTTP_PORT,
  DEFAULT_REST_API_HTTPS_PORT,
  DEFAULT_RETENTION_DAYS,
  DEFAULT_ROW_LIMIT,
  DEFAULT_RULE_TARGET_WILDCARD,
  DEFAULT_SECURITY_ENABLED,
  DEFAULT_TOKEN_LIFETIME,
  DEFAULT_VERIFY_CLIENT_CERTIFICATE,
  MIN_LINK_FRAME_BYTES,
} from "./defaults.js";

export const PLUGINS = ["rest-api", "fkm"] as const;
export const RULE_OPERATORS = ["=", "!=", ">", ">=", "<", "<=", "contains", "matches"] as const;
/** Same values as `SEVERITIES` in messages/types.ts, repeated so the schema stays a plain literal. */
export const SETUP_SEVERITIES = ["UNDEFINED", "OK", "WARNING", "CRITICAL", "UNKNOWN"] as const;
export const COLUMN_TYPES = ["float64", "int64", "string"] as const;

/** 0 asks the operating system for a free port (tests use it). */
const port = (defaultPort: number) =>
  ({ type: "integer", minimum: 0, maximum: 65535, default: defaultPort }) as const;
const name = { type: "string", minLength: 1 } as const;
/** Sampler names and types: parentheses would clash with the `name(type)` addressing (DESIGN 3.1). */
const samplerName = {
  type: "string",
  minLength: 1,
  pattern: "^[^()]+$",
  description: "a sampler name without parentheses",
} as const;
const samplerType = {
  type: "string",
  pattern: "^[^()]*$",
  default: "",
  description: "a sampler type without parentheses",
} as const;
const filePath = { type: "string" } as const;
/** Memory protection (DESIGN 3.5) of a probe, the gateway or the hub: the same keys and defaults. */
const memoryProtection = {
  type: "object",
  properties: {
    limitMb: { type: "integer", minimum: 1, default: DEFAULT_MEMORY_LIMIT_MB },
    ratio: { type: "number", exclusiveMinimum: 0, maximum: 1, default: DEFAULT_MEMORY_RATIO },
  },
  additionalProperties: false,
} as const;

const restApiSampler = {
  type: "object",
  properties: {
    name: samplerName,
    type: samplerType,
    plugin: { const: "rest-api" },
    bufferSize: { type: "integer", minimum: 1, default: DEFAULT_BUFFER_SIZE },
    rowLimit: { type: "integer", minimum: 1, default: DEFAULT_ROW_LIMIT },
    verifyClientCertificate: { type: "boolean", default: DEFAULT_VERIFY_CLIENT_CERTIFICATE },
    clientCaCertificate: {
      type: "object",
      properties: { enabled: { type: "boolean", default: false }, path: filePath },
      additionalProperties: false,
    },
    schema: {
      type: "object",
      properties: {
        columns: {
          type: "object",
          propertyNames: { minLength: 1 },
          additionalProperties: {
            type: "object",
            properties: {
              type: { enum: COLUMN_TYPES, default: DEFAULT_COLUMN_TYPE },
              unit: { type: "string", minLength: 1, default: DEFAULT_COLUMN_UNIT },
            },
            additionalProperties: false,
          },
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

const fkmSampler = {
  type: "object",
  required: ["source", "keywords"],
  properties: {
    name: samplerName,
    type: samplerType,
    plugin: { const: "fkm" },
    sampleInterval: {
      type: "number",
      exclusiveMinimum: 0,
      default: DEFAULT_FKM_SAMPLE_INTERVAL,
      description: "seconds between two samples",
    },
    source: {
      type: "object",
      required: ["sampler", "stream"],
      properties: { sampler: name, stream: name },
      additionalProperties: false,
    },
    keywords: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["pattern", "severity"],
        properties: {
          pattern: { type: "string", minLength: 1, description: "an RE2 regular expression" },
          severity: { enum: SETUP_SEVERITIES },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

const sampler = {
  type: "object",
  required: ["name", "plugin"],
  properties: { plugin: { enum: PLUGINS } },
  allOf: [
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword; the object is never awaited
    { if: { properties: { plugin: { const: "rest-api" } }, required: ["plugin"] }, then: restApiSampler },
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword; the object is never awaited
    { if: { properties: { plugin: { const: "fkm" } }, required: ["plugin"] }, then: fkmSampler },
  ],
} as const;

const managedEntity = {
  type: "object",
  required: ["name"],
  properties: {
    name,
    attributes: {
      type: "object",
      propertyNames: { minLength: 1 },
      additionalProperties: { type: "string" },
      default: {},
    },
    samplers: { type: "array", items: sampler, default: [] },
  },
  additionalProperties: false,
} as const;

const probe = {
  type: "object",
  required: ["name"],
  properties: {
    name,
    hostname: { type: "string", minLength: 1, default: DEFAULT_PROBE_HOSTNAME },
    restApiHttpPort: port(DEFAULT_REST_API_HTTP_PORT),
    restApiHttpsPort: port(DEFAULT_REST_API_HTTPS_PORT),
    memoryProtection,
    linkSecret: {
      type: "string",
      description: "the secret the probe presents on the probe link (at least 16 characters)",
    },
    linkSecretFile: { ...filePath, description: "a file (mode 0600) holding the probe's link secret" },
    managedEntities: { type: "array", items: managedEntity, default: [] },
  },
  additionalProperties: false,
} as const;

const natsSink = {
  type: "object",
  required: ["url"],
  properties: {
    url: {
      type: "string",
      pattern: "^(nats|tls)://\\S+$",
      description: "a NATS server URL such as nats://127.0.0.1:4222",
    },
    stream: {
      type: "string",
      pattern: "^[A-Za-z0-9_-]+$",
      default: DEFAULT_NATS_STREAM,
      description: "a JetStream stream name (letters, digits, _ and -)",
    },
    subjectPrefix: {
      type: "string",
      pattern: "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$",
      default: DEFAULT_NATS_SUBJECT_PREFIX,
      description: "dot-separated subject tokens of letters, digits, _ and -",
    },
  },
  additionalProperties: false,
} as const;

const publishSink = {
  if: { type: "string" },
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword; the object is never awaited
  then: { const: "memory" },
  else: {
    type: "object",
    minProperties: 1,
    maxProperties: 1,
    properties: { file: { type: "string", minLength: 1 }, nats: natsSink },
    additionalProperties: false,
    description: "memory, {file: PATH} or {nats: {url, stream, subjectPrefix}}",
  },
} as const;

/** HTTPS for the gateway or the hub: both files set, that server serves HTTPS only. */
const tls = {
  type: "object",
  properties: { certificate: filePath, key: filePath },
  additionalProperties: false,
} as const;

const gateway = {
  type: "object",
  required: ["name"],
  properties: {
    name,
    port: port(DEFAULT_GATEWAY_PORT),
    customDataviewMaxRows: { type: "integer", minimum: 0, default: DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS },
    maxColumnsPerDataview: {
      type: "integer",
      minimum: 1,
      default: DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
      description: "distinct columns per dataview",
    },
    maxCellLength: {
      type: "integer",
      minimum: 1,
      default: DEFAULT_MAX_CELL_LENGTH,
      description: "UTF-16 code units per cell",
    },
    memoryProtection,
    publish: { type: "array", items: publishSink, default: ["memory"] },
    tls,
  },
  additionalProperties: false,
} as const;

const targetField = { type: "string", minLength: 1, default: DEFAULT_RULE_TARGET_WILDCARD } as const;

const rule = {
  type: "object",
  required: ["name", "target", "when", "severity"],
  properties: {
    name,
    target: {
      type: "object",
      properties: {
        managedEntity: targetField,
        sampler: targetField,
        dataview: targetField,
        row: { type: "string", minLength: 1 },
        column: { type: "string", minLength: 1 },
        headline: { type: "string", minLength: 1 },
      },
      additionalProperties: false,
    },
    when: {
      type: "object",
      required: ["operator", "value"],
      properties: { operator: { enum: RULE_OPERATORS }, value: { type: ["string", "number"] } },
      additionalProperties: false,
    },
    severity: { enum: SETUP_SEVERITIES },
  },
  additionalProperties: false,
} as const;

/** Roles of an application key or of Kerberos principals (DESIGN 5.4a); duplicates are a cross-check. */
const roles = {
  type: "array",
  minItems: 1,
  items: { enum: ROLES },
  default: DEFAULT_ROLES,
  description: "roles: read, write, operate",
} as const;
const hub = {
  type: "object",
  properties: {
    port: port(DEFAULT_HUB_PORT),
    maxSeriesPerEntity: {
      type: "integer",
      minimum: 1,
      default: DEFAULT_MAX_SERIES_PER_ENTITY,
      description: "series per entity",
    },
    maxEntities: {
      type: "integer",
      minimum: 1,
      default: DEFAULT_MAX_ENTITIES,
      description: "entities (and probes) the hub holds",
    },
    entityCacheMb: {
      type: "integer",
      minimum: 0,
      default: DEFAULT_ENTITY_CACHE_MB,
      description: "MiB of entities the hub keeps in memory for entity requests (0: none)",
    },
    retentionDays: {
      type: "integer",
      minimum: 0,
      maximum: 36_500,
      default: DEFAULT_RETENTION_DAYS,
      description: "days (0 keeps everything)",
    },
    memoryProtection,
    tls,
    security: {
      type: "object",
      properties: {
        enabled: { type: "boolean", default: DEFAULT_SECURITY_ENABLED },
        tokenLifetime: {
          type: "integer",
          minimum: 1,
          default: DEFAULT_TOKEN_LIFETIME,
          description: "seconds",
        },
        appKeys: {
          type: "array",
          items: {
            type: "object",
            required: ["clientId", "clientSecret"],
            properties: { clientId: name, clientSecret: name, roles },
            additionalProperties: false,
          },
          default: [],
        },
        kerberos: {
          type: "object",
          properties: {
            enabled: { type: "boolean", default: false },
            keytab: filePath,
            servicePrincipal: { type: "string" },
          },
          additionalProperties: false,
        },
        kerberosRoles: roles,
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

const limit = (defaultValue: number, description: string) =>
  ({ type: "integer", minimum: 1, maximum: 2 ** 31 - 1, default: defaultValue, description }) as const;

/** What may enter from the network, the same at every entry point (docs/security.md, "Limits"). */
const limits = {
  type: "object",
  properties: {
    nameBytes: limit(
      DEFAULT_DATA_LIMITS.nameBytes,
      "bytes of a name (entity, sampler, dataview, row, column, …)",
    ),
    attributeValueBytes: limit(DEFAULT_DATA_LIMITS.attributeValueBytes, "bytes of an attribute value"),
    attributesPerEntity: limit(DEFAULT_DATA_LIMITS.attributesPerEntity, "attributes of one managed entity"),
    cellBytes: limit(DEFAULT_DATA_LIMITS.cellBytes, "bytes of a cell or headline value"),
    linkFrameBytes: {
      ...limit(DEFAULT_DATA_LIMITS.linkFrameBytes, "bytes of one probe-link frame"),
      minimum: MIN_LINK_FRAME_BYTES,
    },
    jsonDepth: limit(DEFAULT_DATA_LIMITS.jsonDepth, "nesting of arrays and objects in untrusted JSON"),
  },
  additionalProperties: false,
} as const;

/**
 * The whole setup file. Only `gateway.name` is required; everything else has a default. `gateway`
 * itself may be left out in a hub-only setup (only `hub:` and `limits:`, for `vigil hub`): whether
 * a setup needs it depends on the command that loads it, so `sectionIssues` in
 * `setup-cross-checks.ts` says so, not this schema.
 */
export const SETUP_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "urn:vigil:setup",
  title: "vigil setup file",
  type: "object",
  properties: {
    gateway,
    probes: { type: "array", items: probe, default: [] },
    rules: { type: "array", items: rule, default: [] },
    hub,
    limits,
  },
  additionalProperties: false,
} as const;
