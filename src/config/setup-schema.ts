/**
 * JSON Schema (draft 2020-12) of the YAML setup file (DESIGN 2), typed against `SetupInput`
 * (`setup-input.ts`) with ajv's `JSONSchemaType`, so the schema and the type cannot drift. Unknown
 * keys are errors at every level (`additionalProperties: false`). `default` values are annotations
 * (ajv does not fill them): `build-setup.ts` fills the defaults, from the same named constants of
 * `defaults.ts`. What a JSON Schema cannot say (duplicate names, cross-references, regex syntax,
 * port clashes, well-formed Unicode) is checked in `setup-cross-checks.ts`.
 *
 * Two things `JSONSchemaType` cannot express are adapted here, each in one place:
 * - It types a key the file may leave out only with `nullable: true` (it takes absent and null for
 *   one). In YAML an empty value is null, which the setup refuses like any other wrong type, so
 *   {@link compilableSetupSchema} removes the marks before ajv sees the schema: the validator is then
 *   exactly as strict as `SetupInput` says.
 * - It types a union of object shapes only as `anyOf`/`oneOf`, whose errors would list every
 *   branch's. Samplers and publish sinks are discriminated with `if`/`then` instead, so that a
 *   person reads the errors of the one branch that applies; each branch is typed on its own
 *   ({@link SAMPLER_SCHEMAS}, the sinks' shapes) and the key that holds them refers to the joined
 *   schema in `$defs`.
 */

import type { JSONSchemaType, SchemaObject } from "ajv/dist/2020.js";
import { DEFAULT_ROLES, ROLES } from "../auth/roles.js";
import { DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import * as defaults from "./defaults.js";
import type {
  FkmSamplerInput,
  NatsSinkInput,
  RestApiSamplerInput,
  SamplerInput,
  SetupInput,
} from "./setup-input.js";

export const PLUGINS = ["rest-api", "fkm"] as const satisfies readonly SamplerInput["plugin"][];
export const RULE_OPERATORS = ["=", "!=", ">", ">=", "<", "<=", "contains", "matches"] as const;
/** Same values as `SEVERITIES` in messages/types.ts, repeated so the schema stays a plain literal. */
export const SETUP_SEVERITIES = ["UNDEFINED", "OK", "WARNING", "CRITICAL", "UNKNOWN"] as const;
export const COLUMN_TYPES = ["float64", "int64", "string"] as const;

/** 0 asks the operating system for a free port (tests use it). */
const port = (defaultPort: number) =>
  ({ type: "integer", minimum: 0, maximum: 65535, default: defaultPort, nullable: true }) as const;
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
  nullable: true,
} as const;
const filePath = { type: "string", nullable: true } as const;
/** Memory protection (DESIGN 3.5) of a probe, the gateway or the hub: the same keys and defaults. */
const memoryProtection = {
  type: "object",
  properties: {
    limitMb: { type: "integer", minimum: 1, default: defaults.DEFAULT_MEMORY_LIMIT_MB, nullable: true },
    ratio: {
      type: "number",
      exclusiveMinimum: 0,
      maximum: 1,
      default: defaults.DEFAULT_MEMORY_RATIO,
      nullable: true,
    },
  },
  additionalProperties: false,
  nullable: true,
} as const;

const restApiSampler = {
  type: "object",
  required: ["name", "plugin"],
  properties: {
    name: samplerName,
    type: samplerType,
    plugin: { type: "string", const: "rest-api" },
    bufferSize: { type: "integer", minimum: 1, default: defaults.DEFAULT_BUFFER_SIZE, nullable: true },
    rowLimit: { type: "integer", minimum: 1, default: defaults.DEFAULT_ROW_LIMIT, nullable: true },
    verifyClientCertificate: {
      type: "boolean",
      default: defaults.DEFAULT_VERIFY_CLIENT_CERTIFICATE,
      nullable: true,
    },
    clientCaCertificate: {
      type: "object",
      properties: { enabled: { type: "boolean", default: false, nullable: true }, path: filePath },
      additionalProperties: false,
      nullable: true,
    },
    schema: {
      type: "object",
      properties: {
        columns: {
          type: "object",
          propertyNames: { minLength: 1 },
          required: [],
          additionalProperties: {
            type: "object",
            properties: {
              type: {
                type: "string",
                enum: COLUMN_TYPES,
                default: defaults.DEFAULT_COLUMN_TYPE,
                nullable: true,
              },
              unit: { type: "string", minLength: 1, default: defaults.DEFAULT_COLUMN_UNIT, nullable: true },
            },
            additionalProperties: false,
          },
          nullable: true,
        },
      },
      additionalProperties: false,
      nullable: true,
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<RestApiSamplerInput>;

const fkmSampler = {
  type: "object",
  required: ["name", "plugin", "source", "keywords"],
  properties: {
    name: samplerName,
    type: samplerType,
    plugin: { type: "string", const: "fkm" },
    sampleInterval: {
      type: "number",
      exclusiveMinimum: 0,
      default: defaults.DEFAULT_FKM_SAMPLE_INTERVAL,
      description: "seconds between two samples",
      nullable: true,
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
          severity: { type: "string", enum: SETUP_SEVERITIES },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<FkmSamplerInput>;

/**
 * Each plug-in's sampler schema, typed against its own input type: a plug-in added to
 * `SamplerInput` fails to compile until it has one here.
 */
export const SAMPLER_SCHEMAS = {
  "rest-api": restApiSampler,
  fkm: fkmSampler,
} as const satisfies {
  readonly [P in SamplerInput["plugin"]]: JSONSchemaType<Extract<SamplerInput, { plugin: P }>>;
};

/** A sampler: the `plugin` picks its branch; an unknown plugin is reported against `PLUGINS`. */
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
      required: [],
      additionalProperties: { type: "string" },
      default: {},
      nullable: true,
    },
    samplers: { $ref: "#/$defs/samplers" },
  },
  additionalProperties: false,
} as const;

const probe = {
  type: "object",
  required: ["name"],
  properties: {
    name,
    hostname: { type: "string", minLength: 1, default: defaults.DEFAULT_PROBE_HOSTNAME, nullable: true },
    restApiHttpPort: port(defaults.DEFAULT_REST_API_HTTP_PORT),
    restApiHttpsPort: port(defaults.DEFAULT_REST_API_HTTPS_PORT),
    memoryProtection,
    linkSecret: {
      type: "string",
      description: "the secret the probe presents on the probe link (at least 16 characters)",
      nullable: true,
    },
    linkSecretFile: { ...filePath, description: "a file (mode 0600) holding the probe's link secret" },
    managedEntities: { type: "array", items: managedEntity, default: [], nullable: true },
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
      default: defaults.DEFAULT_NATS_STREAM,
      description: "a JetStream stream name (letters, digits, _ and -)",
      nullable: true,
    },
    subjectPrefix: {
      type: "string",
      pattern: "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$",
      default: defaults.DEFAULT_NATS_SUBJECT_PREFIX,
      description: "dot-separated subject tokens of letters, digits, _ and -",
      nullable: true,
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<NatsSinkInput>;

/** `{file: PATH}` or `{nats: {…}}`, exactly one key; typed by each key's own schema. */
const fileSinkPath = { type: "string", minLength: 1 } as const satisfies JSONSchemaType<string>;

const publishSink = {
  if: { type: "string" },
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword; the object is never awaited
  then: { const: "memory" },
  else: {
    type: "object",
    minProperties: 1,
    maxProperties: 1,
    properties: { file: fileSinkPath, nats: natsSink },
    additionalProperties: false,
    description: "memory, {file: PATH} or {nats: {url, stream, subjectPrefix}}",
  },
} as const;

/** HTTPS for the gateway or the hub: both files set, that server serves HTTPS only. */
const tls = {
  type: "object",
  properties: { certificate: filePath, key: filePath },
  additionalProperties: false,
  nullable: true,
} as const;

const gateway = {
  type: "object",
  required: ["name"],
  properties: {
    name,
    port: port(defaults.DEFAULT_GATEWAY_PORT),
    customDataviewMaxRows: {
      type: "integer",
      minimum: 0,
      default: defaults.DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
      nullable: true,
    },
    maxColumnsPerDataview: {
      type: "integer",
      minimum: 1,
      default: defaults.DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
      description: "distinct columns per dataview",
      nullable: true,
    },
    maxCellLength: {
      type: "integer",
      minimum: 1,
      default: defaults.DEFAULT_MAX_CELL_LENGTH,
      description: "UTF-16 code units per cell",
      nullable: true,
    },
    memoryProtection,
    publish: { $ref: "#/$defs/publish" },
    tls,
  },
  additionalProperties: false,
  nullable: true,
} as const;

const targetField = {
  type: "string",
  minLength: 1,
  default: defaults.DEFAULT_RULE_TARGET_WILDCARD,
  nullable: true,
} as const;
const cellOrHeadline = { type: "string", minLength: 1, nullable: true } as const;

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
        row: cellOrHeadline,
        column: cellOrHeadline,
        headline: cellOrHeadline,
      },
      additionalProperties: false,
    },
    when: {
      type: "object",
      required: ["operator", "value"],
      properties: {
        operator: { type: "string", enum: RULE_OPERATORS },
        value: { type: ["string", "number"] },
      },
      additionalProperties: false,
    },
    severity: { type: "string", enum: SETUP_SEVERITIES },
  },
  additionalProperties: false,
} as const;

/** Roles of an application key or of Kerberos principals (DESIGN 5.4a); duplicates are a cross-check. */
const roles = {
  type: "array",
  minItems: 1,
  items: { type: "string", enum: ROLES },
  default: DEFAULT_ROLES,
  description: "roles: read, write, operate",
  nullable: true,
} as const;
const hub = {
  type: "object",
  properties: {
    port: port(defaults.DEFAULT_HUB_PORT),
    maxSeriesPerEntity: {
      type: "integer",
      minimum: 1,
      default: defaults.DEFAULT_MAX_SERIES_PER_ENTITY,
      description: "series per entity",
      nullable: true,
    },
    maxEntities: {
      type: "integer",
      minimum: 1,
      default: defaults.DEFAULT_MAX_ENTITIES,
      description: "entities (and probes) the hub holds",
      nullable: true,
    },
    entityCacheMb: {
      type: "integer",
      minimum: 0,
      default: defaults.DEFAULT_ENTITY_CACHE_MB,
      description: "MiB of entities the hub keeps in memory for entity requests (0: none)",
      nullable: true,
    },
    retentionDays: {
      type: "integer",
      minimum: 0,
      maximum: 36_500,
      default: defaults.DEFAULT_RETENTION_DAYS,
      description: "days (0 keeps everything)",
      nullable: true,
    },
    memoryProtection,
    tls,
    security: {
      type: "object",
      properties: {
        enabled: { type: "boolean", default: defaults.DEFAULT_SECURITY_ENABLED, nullable: true },
        tokenLifetime: {
          type: "integer",
          minimum: 1,
          default: defaults.DEFAULT_TOKEN_LIFETIME,
          description: "seconds",
          nullable: true,
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
          nullable: true,
        },
        kerberos: {
          type: "object",
          properties: {
            enabled: { type: "boolean", default: false, nullable: true },
            keytab: filePath,
            servicePrincipal: { type: "string", nullable: true },
          },
          additionalProperties: false,
          nullable: true,
        },
        kerberosRoles: roles,
      },
      additionalProperties: false,
      nullable: true,
    },
  },
  additionalProperties: false,
  nullable: true,
} as const;

const limit = (defaultValue: number, description: string) =>
  ({
    type: "integer",
    minimum: 1,
    maximum: 2 ** 31 - 1,
    default: defaultValue,
    description,
    nullable: true,
  }) as const;

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
      minimum: defaults.MIN_LINK_FRAME_BYTES,
    },
    jsonDepth: limit(DEFAULT_DATA_LIMITS.jsonDepth, "nesting of arrays and objects in untrusted JSON"),
  },
  additionalProperties: false,
  nullable: true,
} as const;

/**
 * The whole setup file but for the discriminated unions, typed against `SetupInput`. Only
 * `gateway.name` is required; everything else has a default. `gateway` itself may be left out in a
 * hub-only setup (only `hub:` and `limits:`, for `vigil hub`): whether a setup needs it depends on
 * the command that loads it, so `sectionIssues` in `setup-cross-checks.ts` says so, not this schema.
 */
const setupFile = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "urn:vigil:setup",
  title: "vigil setup file",
  type: "object",
  properties: {
    gateway,
    probes: { type: "array", items: probe, default: [], nullable: true },
    rules: { type: "array", items: rule, default: [], nullable: true },
    hub,
    limits,
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<SetupInput>;

/**
 * The setup file's schema: {@link setupFile} with the two discriminated unions it refers to.
 * `JSONSchemaType` types `$defs` only loosely (any JSON), so they stand beside the typed part; their
 * branches are typed one by one above.
 */
export const SETUP_SCHEMA = {
  ...setupFile,
  $defs: {
    samplers: { type: "array", items: sampler, default: [] },
    publish: { type: "array", items: publishSink, default: defaults.DEFAULT_PUBLISH },
  },
} as const;

/**
 * {@link SETUP_SCHEMA} as ajv compiles it: without the `nullable` marks that `JSONSchemaType`
 * asks of every key the file may leave out, so that an empty YAML value (null) stays an error and
 * the validator admits exactly `SetupInput`. Nothing else differs.
 */
export function compilableSetupSchema(): SchemaObject {
  return withoutNullable(SETUP_SCHEMA);
}

function withoutNullable(schema: object): SchemaObject {
  const out: SchemaObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "nullable") continue;
    out[key] = compilable(value);
  }
  return out;
}

function compilable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(compilable);
  if (typeof value === "object" && value !== null) return withoutNullable(value);
  return value;
}
