/**
 * The JSON Schema (draft 2020-12, ajv) of the frames a gateway sends its probes (DESIGN 1 "probe
 * link"), typed against their wire types (`GatewayFrame` in `protocol.ts`, the setup's part in
 * `wire-setup.ts`) with ajv's `JSONSchemaType`, so the schema and the types cannot drift. A probe
 * checks every frame it receives against it: the frames come from the network, and the gateway's
 * setup was checked once, when the gateway loaded it, against the setup file's own schema. The
 * transport has already bounded the frame's bytes and nesting (`limits.linkFrameBytes`,
 * `limits.jsonDepth`); the bounds here keep each field within what a loaded setup can hold.
 *
 * Unions are told apart by ajv's `discriminator` (the frame's `type`, a sampler's `plugin`), so an
 * error names the one branch that applies. Unknown fields are errors everywhere: a newer gateway
 * says so with its version.
 */
import {
  _,
  Ajv2020,
  type CodeKeywordDefinition,
  type ErrorObject,
  type JSONSchemaType,
  type KeywordCxt,
  type ValidateFunction,
} from "ajv/dist/2020.js";
import { SEVERITIES } from "../messages/types.js";
import { type GatewayFrame, LINK_ERROR_CODES } from "./protocol.js";
import type {
  WireFkmSampler,
  WireProbeLimits,
  WireProbeSetup,
  WireRestApiSampler,
  WireSampler,
} from "./wire-setup.js";

// Lengths are UTF-16 code units, as `String.length` and every other check of vigil's count them
// (the validator's own `maxLength`, {@link UTF16_MAX_LENGTH}), so a name of astral characters meets
// the same bound here as where it entered.
/** Longest name from the setup or of the gateway. */
const WIRE_MAX_NAME_LENGTH = 1024; // UTF-16 code units
/** Longest free text: attribute values, paths, patterns, error messages. */
const WIRE_MAX_TEXT_LENGTH = 16 * 1024; // UTF-16 code units
/** Most managed entities, samplers, keywords or attributes in one list or map. */
const WIRE_MAX_SETUP_ITEMS = 100_000; // items
const SEQ_MAX = Number.MAX_SAFE_INTEGER;

const name = { type: "string", maxLength: WIRE_MAX_NAME_LENGTH } as const;
const text = { type: "string", maxLength: WIRE_MAX_TEXT_LENGTH } as const;
const integer = (minimum: number, maximum: number) => ({ type: "integer", minimum, maximum }) as const;

const restApiSampler = {
  type: "object",
  required: [
    "name",
    "type",
    "plugin",
    "bufferSize",
    "rowLimit",
    "verifyClientCertificate",
    "clientCaCertificate",
    "schema",
  ],
  properties: {
    name,
    type: name,
    plugin: { type: "string", const: "rest-api" },
    bufferSize: integer(1, SEQ_MAX),
    rowLimit: integer(0, SEQ_MAX),
    verifyClientCertificate: { type: "boolean" },
    clientCaCertificate: {
      type: "object",
      required: ["enabled", "path"],
      properties: { enabled: { type: "boolean" }, path: text },
      additionalProperties: false,
    },
    schema: {
      type: "object",
      required: ["columns"],
      properties: {
        columns: {
          type: "object",
          required: [],
          additionalProperties: {
            type: "object",
            required: ["type", "unit"],
            properties: { type: { type: "string", enum: ["float64", "int64", "string"] }, unit: name },
            additionalProperties: false,
          },
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<WireRestApiSampler>;

const fkmSampler = {
  type: "object",
  required: ["name", "type", "plugin", "sampleInterval", "source", "keywords"],
  properties: {
    name,
    type: name,
    plugin: { type: "string", const: "fkm" },
    sampleInterval: { type: "number", exclusiveMinimum: 0 },
    source: {
      type: "object",
      required: ["sampler", "stream"],
      properties: { sampler: name, stream: name },
      additionalProperties: false,
    },
    keywords: {
      type: "array",
      maxItems: WIRE_MAX_SETUP_ITEMS,
      items: {
        type: "object",
        required: ["pattern", "severity"],
        properties: { pattern: text, severity: { type: "string", enum: SEVERITIES } },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<WireFkmSampler>;

const sampler = {
  type: "object",
  discriminator: { propertyName: "plugin" },
  oneOf: [restApiSampler, fkmSampler],
} as const satisfies JSONSchemaType<WireSampler>;

/** The probe's part of the setup, as `welcome` and `setup` carry it. */
export const WIRE_PROBE_SETUP_SCHEMA = {
  type: "object",
  required: [
    "name",
    "hostname",
    "restApiHttpPort",
    "restApiHttpsPort",
    "memoryProtection",
    "managedEntities",
  ],
  properties: {
    name,
    hostname: name,
    restApiHttpPort: integer(0, 65535),
    restApiHttpsPort: integer(0, 65535),
    memoryProtection: {
      type: "object",
      required: ["limitMb", "ratio"],
      properties: {
        limitMb: { type: "number", minimum: 1, maximum: SEQ_MAX },
        ratio: { type: "number", exclusiveMinimum: 0, maximum: 1 },
      },
      additionalProperties: false,
    },
    managedEntities: {
      type: "array",
      maxItems: WIRE_MAX_SETUP_ITEMS,
      items: {
        type: "object",
        required: ["name", "attributes", "samplers"],
        properties: {
          name,
          attributes: {
            type: "object",
            required: [],
            maxProperties: WIRE_MAX_SETUP_ITEMS,
            additionalProperties: text,
          },
          samplers: { type: "array", maxItems: WIRE_MAX_SETUP_ITEMS, items: sampler },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<WireProbeSetup>;

const dataLimit = integer(1, 2 ** 31 - 1);

const limits = {
  type: "object",
  required: ["customDataviewMaxRows", "maxColumnsPerDataview", "maxCellLength", "data"],
  properties: {
    customDataviewMaxRows: integer(0, SEQ_MAX),
    maxColumnsPerDataview: integer(1, SEQ_MAX),
    maxCellLength: integer(1, SEQ_MAX),
    data: {
      type: "object",
      required: [
        "nameBytes",
        "attributeValueBytes",
        "attributesPerEntity",
        "cellBytes",
        "linkFrameBytes",
        "jsonDepth",
      ],
      properties: {
        nameBytes: dataLimit,
        attributeValueBytes: dataLimit,
        attributesPerEntity: dataLimit,
        cellBytes: dataLimit,
        linkFrameBytes: dataLimit,
        jsonDepth: dataLimit,
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const satisfies JSONSchemaType<WireProbeLimits>;

/** Every frame a gateway sends, told apart by `type`. */
export const GATEWAY_FRAME_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "urn:vigil:link:gateway-frame",
  type: "object",
  discriminator: { propertyName: "type" },
  oneOf: [
    {
      type: "object",
      required: ["type", "version", "gateway", "setup", "limits", "credit", "maxBatchChanges", "heartbeatMs"],
      properties: {
        type: { type: "string", const: "welcome" },
        version: integer(0, SEQ_MAX),
        gateway: name,
        setup: WIRE_PROBE_SETUP_SCHEMA,
        limits,
        credit: integer(1, 1_000_000),
        maxBatchChanges: integer(1, 1_000_000),
        heartbeatMs: integer(1, 3_600_000),
      },
      additionalProperties: false,
    },
    {
      type: "object",
      required: ["type", "setup", "limits"],
      properties: { type: { type: "string", const: "setup" }, setup: WIRE_PROBE_SETUP_SCHEMA, limits },
      additionalProperties: false,
    },
    {
      type: "object",
      required: ["type", "seq"],
      properties: { type: { type: "string", const: "ack" }, seq: integer(1, SEQ_MAX) },
      additionalProperties: false,
    },
    {
      type: "object",
      required: ["type"],
      properties: { type: { type: "string", const: "heartbeat" } },
      additionalProperties: false,
    },
    {
      type: "object",
      required: ["type", "code", "message"],
      properties: {
        type: { type: "string", const: "error" },
        code: { type: "string", enum: LINK_ERROR_CODES },
        message: text,
      },
      additionalProperties: false,
    },
  ],
} as const satisfies JSONSchemaType<GatewayFrame>;

let compiled: ValidateFunction<GatewayFrame> | undefined;

/**
 * `maxLength` counted in UTF-16 code units (`String.length`), where ajv's own counts code points;
 * its errors are shaped as ajv's (`params.limit`). It replaces ajv's keyword in the frame validator.
 */
const UTF16_MAX_LENGTH: CodeKeywordDefinition = {
  keyword: "maxLength",
  type: "string",
  schemaType: "number",
  error: {
    message: ({ schemaCode }) => _`"must NOT have more than " + ${schemaCode} + " characters"`,
    params: ({ schemaCode }) => _`{limit: ${schemaCode}}`,
  },
  code(cxt: KeywordCxt) {
    cxt.fail(_`${cxt.data}.length > ${cxt.schemaCode}`);
  },
};

/**
 * The compiled validator of {@link GATEWAY_FRAME_SCHEMA}: it stops at the first error (a frame is
 * refused whole), and narrows a frame that passes to `GatewayFrame`.
 */
export function gatewayFrameValidator(): ValidateFunction<GatewayFrame> {
  if (compiled === undefined) {
    const ajv = new Ajv2020({ discriminator: true, strict: true, allErrors: false, verbose: true });
    ajv.removeKeyword("maxLength");
    ajv.addKeyword(UTF16_MAX_LENGTH);
    compiled = ajv.compile(GATEWAY_FRAME_SCHEMA);
  }
  return compiled;
}

/**
 * What an ajv error of a gateway frame says, as `path: why` (`welcome.setup.restApiHttpPort: must
 * be an integer from 0 to 65535`): the path starts with the frame's type, or `frame`.
 */
export function wireErrorText(error: ErrorObject, frame: unknown): string {
  const type = typeof frame === "object" && frame !== null && "type" in frame ? frame.type : undefined;
  const known = GATEWAY_FRAME_SCHEMA.oneOf.some((branch) => branch.properties.type.const === type);
  const root = known && typeof type === "string" ? type : "frame";
  const path = root + pathText(error.instancePath);
  const params: Record<string, unknown> = error.params;
  const schema: Record<string, unknown> =
    typeof error.parentSchema === "object" && error.parentSchema !== null ? error.parentSchema : {};
  switch (error.keyword) {
    case "required":
      return `${path}: missing field '${String(params.missingProperty)}'`;
    case "additionalProperties":
      return `${path}: unknown field '${String(params.additionalProperty).slice(0, 64)}'`;
    case "discriminator": {
      const tag = String(params.tag);
      if (tag === "type")
        return `frame.type: unknown frame type ${JSON.stringify(params.tagValue)?.slice(0, 64)}`;
      return `${path}.${tag}: must be ${discriminatorValues(tag)}`;
    }
    case "type":
      if (schema.type === "integer" || schema.type === "number") return `${path}: ${range(schema)}`;
      return `${path}: must be ${TYPE_TEXT[String(params.type)] ?? String(params.type)}`;
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return `${path}: ${range(schema)}`;
    case "enum":
    case "const":
      return `${path}: must be one of ${(Array.isArray(schema.enum) ? schema.enum : [schema.const]).join(", ")}`;
    case "maxLength":
      return `${path}: longer than ${String(params.limit)} characters`;
    case "maxItems":
      return `${path}: has more than ${String(params.limit)} elements`;
    case "maxProperties":
      return `${path}: has more than ${String(params.limit)} entries`;
    default:
      return `${path}: ${error.message ?? `fails '${error.keyword}'`}`;
  }
}

const TYPE_TEXT: Readonly<Record<string, string>> = {
  object: "an object",
  array: "an array",
  string: "a string",
  boolean: "true or false",
};

function range(schema: Record<string, unknown>): string {
  const kind = schema.type === "integer" ? "an integer" : "a number";
  const low = schema.minimum ?? schema.exclusiveMinimum;
  const high = schema.maximum ?? schema.exclusiveMaximum;
  return `must be ${kind} from ${String(low)} to ${String(high)}`;
}

function discriminatorValues(tag: string): string {
  if (tag !== "plugin") return "known";
  return sampler.oneOf.map((branch) => `'${branch.properties.plugin.const}'`).join(" or ");
}

/** `/setup/managedEntities/0/name` as `.setup.managedEntities[0].name`. */
function pathText(pointer: string): string {
  if (pointer === "") return "";
  return pointer
    .slice(1)
    .split("/")
    .map((encoded) => {
      const key = encoded.replace(/~1/g, "/").replace(/~0/g, "~");
      return /^\d+$/.test(key) ? `[${key}]` : `.${key.slice(0, 64)}`;
    })
    .join("");
}
