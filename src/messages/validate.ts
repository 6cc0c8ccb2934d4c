/**
 * Validation of public-v2 messages (seed area C, DESIGN 4.3) against `schema/public-v2/`.
 * The schema is compiled once, at first use, with Ajv's draft 2020-12 build in strict mode.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type FormatDefinition, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { PublicV2Message } from "./types.js";

// Both this source file (src/messages/) and its build (dist/messages/) sit two levels below the
// package root, and package.json ships the `schema` folder beside `dist`.
const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Absolute path of the public-v2 JSON Schema file that every published message satisfies. */
export const PUBLIC_V2_SCHEMA_PATH = join(PACKAGE_ROOT, "schema", "public-v2", "public-v2.schema.json");

/** Outcome of {@link validateMessage}: the typed message, or readable errors. */
export type ValidationResult = { ok: true; message: PublicV2Message } | { ok: false; errors: string[] };

// ajv-formats is CommonJS; under NodeNext its default import is the module object, whose
// `default` is the plug-in (ajv-formats sets `exports.default` on the function itself too).
const addFormats = addFormatsModule.default;

let compiled: ValidateFunction<PublicV2Message> | undefined;

function validator(): ValidateFunction<PublicV2Message> {
  if (compiled === undefined) {
    const schema: unknown = JSON.parse(readFileSync(PUBLIC_V2_SCHEMA_PATH, "utf8"));
    if (typeof schema !== "object" || schema === null) {
      throw new Error(`${PUBLIC_V2_SCHEMA_PATH} does not hold a JSON Schema object`);
    }
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    addFormats(ajv);
    ajv.addFormat("date-time", dateTimeFormat());
    compiled = ajv.compile<PublicV2Message>(schema);
  }
  return compiled;
}

/** How many date-times found valid are remembered (a batch's sample time and recent probe times). */
const REMEMBERED_DATE_TIMES = 4;

/**
 * ajv-formats' own `date-time` check (full mode, RFC 3339), remembering the last few strings it
 * found valid: the messages of one batch share their sample time and mostly carry probe times just
 * seen, so the check runs about once per distinct time instead of twice per message.
 * A remembered string is one the same check accepted: what passes is unchanged.
 */
function rememberingDateTime(): FormatDefinition<string> {
  const full = addFormats.get("date-time", "full") as FormatDefinition<string>;
  const check = full.validate as (text: string) => boolean;
  const valid: string[] = [];
  let next = 0;
  return {
    ...full,
    type: "string",
    validate: (text: string): boolean => {
      for (let i = 0; i < valid.length; i += 1) if (valid[i] === text) return true;
      if (!check(text)) return false;
      valid[next] = text;
      next = (next + 1) % REMEMBERED_DATE_TIMES;
      return true;
    },
  };
}

let dateTime: FormatDefinition<string> | undefined;

/** The schema's one `date-time` format, made at first use (ajv-formats' is read then). */
function dateTimeFormat(): FormatDefinition<string> {
  dateTime ??= rememberingDateTime();
  return dateTime;
}

/**
 * Whether `text` passes the schema's `date-time` format: the very check the validator runs, for a
 * reader that checks the schema's rules itself (the backfill's table lines, table-line.ts).
 */
export function isSchemaDateTime(text: string): boolean {
  return (dateTimeFormat().validate as (text: string) => boolean)(text);
}

/** Renders one Ajv error as `<JSON pointer>: <message>`, naming the offending key or allowed values. */
function formatError(error: ErrorObject): string {
  const path = error.instancePath === "" ? "(root)" : error.instancePath;
  const params: Record<string, unknown> = error.params;
  if (error.keyword === "dependentRequired") {
    // Ajv's own message lists every dependency of the property, also the ones that are present.
    const missing = String(params.missingProperty);
    return `${path}: must have property '${missing}' when property '${String(params.property)}' is present`;
  }
  let detail = "";
  if (error.keyword === "additionalProperties") {
    detail = ` '${String(params.additionalProperty)}'`;
  } else if (error.keyword === "enum" && Array.isArray(params.allowedValues)) {
    detail = `: ${params.allowedValues.map((v) => JSON.stringify(v)).join(", ")}`;
  } else if (error.keyword === "const") {
    detail = ` ${JSON.stringify(params.allowedValue)}`;
  }
  return `${path}: ${error.message ?? error.keyword}${detail}`;
}

/**
 * Checks `value` against the public-v2 schema and returns it typed as a {@link PublicV2Message}, or
 * the list of what is wrong, each as `<JSON pointer>: <message>` (for example
 * `/data/target: must have required property 'probe'`; the root is written `(root)`). The schema
 * selects the data kind from `type` with if/then, so when `type` is valid only that kind's errors
 * are reported; the bare "must match then schema" entries that Ajv adds are left out, and
 * duplicates are removed. The schema is read and compiled at the first call.
 */
export function validateMessage(value: unknown): ValidationResult {
  const validate = validator();
  if (validate(value)) return { ok: true, message: value };
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== "if").map(formatError);
  return { ok: false, errors: [...new Set(errors)] };
}

/**
 * Returns `value` typed as a {@link PublicV2Message} when it satisfies the public-v2 schema, and
 * otherwise throws an Error whose message lists every error found by {@link validateMessage},
 * one per line.
 */
export function assertMessage(value: unknown): PublicV2Message {
  const result = validateMessage(value);
  if (result.ok) return result.message;
  throw new Error(`invalid public-v2 message:\n  ${result.errors.join("\n  ")}`);
}
