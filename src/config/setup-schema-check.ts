/**
 * The setup's JSON Schema checks (DESIGN 2): runs ajv over the data with every error collected
 * (`allErrors`) and turns each ajv error into an issue a person can act on: the path of the key,
 * what was expected, and the nearest allowed name when one is close ("did you mean 'rowLimit'?",
 * STYLE 11). What the schema cannot say is checked in `setup-cross-checks.ts`.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import type { SetupInput } from "./setup-input.js";
import { isRecord, nearest, type RawIssue, type Segment } from "./setup-issues.js";
import { compilableSetupSchema, SAMPLER_SCHEMAS } from "./setup-schema.js";

let compiled: ValidateFunction<SetupInput> | undefined;

function validator(): ValidateFunction<SetupInput> {
  if (compiled === undefined) {
    const ajv = new Ajv2020({ allErrors: true, verbose: true, allowUnionTypes: true, strict: true });
    compiled = ajv.compile<SetupInput>(compilableSetupSchema());
  }
  return compiled;
}

/** Keys of each sampler plug-in's schema, to say "'keywords' belongs to fkm samplers". */
const PLUGIN_KEYS: ReadonlyMap<string, readonly string[]> = new Map(
  Object.entries(SAMPLER_SCHEMAS).map(
    ([plugin, schema]) => [plugin, Object.keys(schema.properties)] as const,
  ),
);

/** What the schema says of setup data: the data as `SetupInput` when it fits, else its issues. */
export type SchemaCheck =
  | { readonly input: SetupInput; readonly issues: [] }
  | { readonly issues: RawIssue[] };

/**
 * Checks `data` against the setup schema: `input` is `data` itself, narrowed by the validator,
 * when it fits; otherwise one issue per ajv error (the failing `if` of a sampler or publish sink is
 * left out: its `then` branch reports the details).
 */
export function checkSetupSchema(data: unknown): SchemaCheck {
  const validate = validator();
  if (validate(data)) return { input: data, issues: [] };
  return { issues: (validate.errors ?? []).filter(reported).map((error) => schemaIssue(error, data)) };
}

/**
 * Whether an ajv error becomes an issue. A failing `if` does not: its `then` branch reports the
 * details. Nor does a wrong type where the schema lists the allowed values (`enum`, `const`): the
 * `type` is there for `JSONSchemaType`, and the values' issue already says what to write.
 */
function reported(error: ErrorObject): boolean {
  if (error.keyword === "if") return false;
  if (error.keyword !== "type" || !isRecord(error.parentSchema)) return true;
  return !("enum" in error.parentSchema || "const" in error.parentSchema);
}

function schemaIssue(error: ErrorObject, data: unknown): RawIssue {
  const segments = pointerSegments(error.instancePath, data);
  const params = error.params as Record<string, unknown>;
  const parent = isRecord(error.parentSchema) ? error.parentSchema : {};
  const value: unknown = error.data;

  switch (error.keyword) {
    case "additionalProperties": {
      const key = String(params.additionalProperty);
      const known = isRecord(parent.properties) ? Object.keys(parent.properties) : [];
      return { segments: [...segments, key], message: unknownKeyMessage(key, known, parent), atKey: true };
    }
    case "required": {
      const key = String(params.missingProperty);
      return { segments: [...segments, key], message: `required key '${key}' is missing; add it` };
    }
    case "type": {
      const expected = String(params.type)
        .split(",")
        .map((t) => TYPE_NAMES[t] ?? t)
        .join(" or ");
      const hint =
        String(params.type) === "string" && (typeof value === "number" || typeof value === "boolean")
          ? `; put it in quotes ("${String(value)}") to keep it as text`
          : typeof parent.description === "string"
            ? ` (${parent.description})`
            : "";
      return { segments, message: `expected ${expected}, got ${describe(value)}${hint}` };
    }
    case "enum":
    case "const": {
      const allowed = error.keyword === "enum" ? (params.allowedValues as unknown[]) : [params.allowedValue];
      const names = allowed.map(String);
      // With a single allowed value, "use 'memory'" already is the suggestion.
      const suggestion = typeof value === "string" && names.length > 1 ? nearest(value, names) : undefined;
      return {
        segments,
        message:
          `${describe(value)} is not allowed; use ${names.map((n) => `'${n}'`).join(", ")}` +
          (suggestion === undefined ? "" : `; did you mean '${suggestion}'?`),
      };
    }
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return { segments, message: `${describe(value)} is out of range; ${rangeText(parent)}` };
    case "minLength":
      return { segments, message: "must not be empty" };
    case "minItems":
      return { segments, message: `needs at least ${String(params.limit)} item(s)` };
    case "minProperties":
    case "maxProperties": {
      const keys = isRecord(parent.properties) ? Object.keys(parent.properties) : [];
      return { segments, message: `needs exactly one of the keys ${keys.map((k) => `'${k}'`).join(", ")}` };
    }
    case "propertyNames":
      return { segments, message: "keys must not be empty" };
    case "pattern": {
      const what =
        typeof parent.description === "string" ? parent.description : `text matching ${params.pattern}`;
      return { segments, message: `${describe(value)} is not valid here; expected ${what}` };
    }
    default:
      return { segments, message: error.message ?? `fails the '${error.keyword}' rule of the setup schema` };
  }
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  integer: "an integer",
  boolean: "true or false",
  object: "a mapping (key: value)",
  array: "a list",
  null: "nothing",
};

function describe(value: unknown): string {
  if (value === null || value === undefined) return "an empty value";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `'${value}'`;
  return String(value);
}

function rangeText(schema: Record<string, unknown>): string {
  // One end of the range in words: its inclusive bound if the schema has one, else its exclusive one.
  const end = (inclusive: unknown, exclusive: unknown, within: string, beyond: string): string | undefined =>
    typeof inclusive === "number"
      ? `${within} ${inclusive}`
      : typeof exclusive === "number"
        ? `${beyond} ${exclusive}`
        : undefined;
  const low = end(schema.minimum, schema.exclusiveMinimum, "at least", "greater than");
  const high = end(schema.maximum, schema.exclusiveMaximum, "at most", "less than");
  const unit = typeof schema.description === "string" ? ` (${schema.description})` : "";
  return `must be ${[low, high].filter((s) => s !== undefined).join(" and ")}${unit}`;
}

function unknownKeyMessage(key: string, known: readonly string[], parent: Record<string, unknown>): string {
  const suggestion = nearest(key, known);
  if (suggestion !== undefined) return `unknown key '${key}'; did you mean '${suggestion}'?`;
  const plugin =
    isRecord(parent.properties) && isRecord(parent.properties.plugin)
      ? parent.properties.plugin.const
      : undefined;
  if (typeof plugin === "string") {
    for (const [other, keys] of PLUGIN_KEYS) {
      if (other !== plugin && keys.includes(key)) {
        return `unknown key '${key}': it belongs to ${other} samplers, not ${plugin} ones; remove it or set plugin: ${other}`;
      }
    }
  }
  return `unknown key '${key}'; remove it (allowed keys: ${known.join(", ")})`;
}

/** Turns ajv's JSON Pointer into segments, using the data to tell array indexes from keys. */
function pointerSegments(pointer: string, data: unknown): Segment[] {
  if (pointer === "") return [];
  const segments: Segment[] = [];
  let node: unknown = data;
  for (const encoded of pointer.slice(1).split("/")) {
    const key = encoded.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(node)) {
      const index = Number(key);
      segments.push(index);
      node = node[index];
    } else {
      segments.push(key);
      node = isRecord(node) ? node[key] : undefined;
    }
  }
  return segments;
}
