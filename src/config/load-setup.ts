/**
 * Loads the setup file (DESIGN 2): YAML → JSON Schema validation → semantic checks → defaults →
 * deep freeze. Every problem is collected, with the path of the offending key and its line in the
 * file, and thrown at once as a `SetupError`, so `vigil validate` (the seed's "setup editor" check)
 * can print them all.
 *
 * fkm keyword patterns and `matches` rule values are JavaScript regular expressions, compiled
 * without flags (so `pattern: "ERROR"` finds the substring ERROR, case-sensitively).
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import { type Document, isAlias, isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import type { Severity } from "../messages/types.js";
import {
  DEFAULT_BUFFER_SIZE,
  DEFAULT_CLIENT_CA_CERTIFICATE,
  DEFAULT_COLUMN_TYPE,
  DEFAULT_COLUMN_UNIT,
  DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
  DEFAULT_FKM_SAMPLE_INTERVAL,
  DEFAULT_GATEWAY_PORT,
  DEFAULT_HUB_PORT,
  DEFAULT_MEMORY_LIMIT_MB,
  DEFAULT_MEMORY_RATIO,
  DEFAULT_NATS_STREAM,
  DEFAULT_NATS_SUBJECT_PREFIX,
  DEFAULT_PROBE_HOSTNAME,
  DEFAULT_PUBLISH,
  DEFAULT_REST_API_HTTP_PORT,
  DEFAULT_REST_API_HTTPS_PORT,
  DEFAULT_ROW_LIMIT,
  DEFAULT_RULE_TARGET_WILDCARD,
  DEFAULT_SECURITY_ENABLED,
  DEFAULT_TOKEN_LIFETIME,
  DEFAULT_VERIFY_CLIENT_CERTIFICATE,
} from "./defaults.js";
import type {
  ColumnSchema,
  ManagedEntitySetup,
  ProbeSetup,
  PublishSink,
  RuleOperator,
  RuleSetup,
  RuleTarget,
  SamplerSetup,
  Setup,
} from "./setup.js";
import { SETUP_SCHEMA } from "./setup-schema.js";

/** One problem in a setup: where (`probes[0].managedEntities[1].name`) and what to do about it. */
export interface SetupIssue {
  /** Path of the offending key, prefixed with `FILE:` when the setup came from a file; "" for the whole file. */
  readonly path: string;
  readonly message: string;
  /** 1-based line and column in the YAML text, when known. */
  readonly line?: number;
  readonly column?: number;
}

/** A setup that cannot be used; `issues` lists every problem found, not just the first. */
export class SetupError extends Error {
  readonly issues: readonly SetupIssue[];

  constructor(issues: readonly SetupIssue[], options?: { cause?: unknown }) {
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    super(`Invalid setup (${count}):\n${formatIssues(issues)}`, options);
    this.name = "SetupError";
    this.issues = issues;
  }
}

/**
 * Parses and validates setup YAML and returns the frozen `Setup` with every default filled in
 * (gateway port 7039, publish [memory], probe hostname 127.0.0.1 and ports 7136/7137, rest-api
 * bufferSize 1000 and rowLimit 200, fkm sampleInterval 20 s, hub port 8081, security enabled with
 * 300 s tokens; see `defaults.ts`). `source` (a file name) prefixes every issue path; `baseDir`,
 * when given, is the folder that relative paths in the setup (publish file, certificates, keytab)
 * are resolved against, otherwise they are kept as written. Throws a `SetupError` listing every
 * YAML syntax error, or else every schema and semantic problem.
 */
export function parseSetup(yamlText: string, source?: string, baseDir?: string): Setup {
  const lineCounter = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const prefix = (inner: string): string =>
    source === undefined ? inner : inner ? `${source}:${inner}` : source;

  if (doc.errors.length > 0) {
    throw new SetupError(
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return {
          path: prefix(""),
          message: `YAML syntax error at line ${line}, column ${col}: ${error.message}`,
          line,
          column: col,
        };
      }),
    );
  }

  let data: unknown;
  try {
    data = doc.toJS(); // the default alias limit guards against "billion laughs" documents
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SetupError([{ path: prefix(""), message: `the YAML cannot be read: ${reason}` }], { cause });
  }
  const located = (issue: RawIssue): SetupIssue => {
    const offset = locate(doc, issue.segments, issue.atKey === true);
    const base = { path: prefix(formatPath(issue.segments)), message: issue.message };
    if (offset === undefined) return base;
    const { line, col } = lineCounter.linePos(offset);
    return { ...base, line, column: col };
  };

  if (data === null || data === undefined) {
    throw new SetupError([
      located({ segments: [], message: "the setup is empty; write at least `gateway: { name: GW1 }`" }),
    ]);
  }

  const raw = [...schemaIssues(data), ...semanticIssues(data)];
  if (raw.length > 0) throw new SetupError(sortIssues(dedupe(raw.map(located))));

  // The schema and the semantic checks have passed, so `data` has the shape of SetupInput.
  return deepFreeze(buildSetup(data as SetupInput, baseDir));
}

/**
 * Reads a setup file and parses it with `parseSetup`: issue paths start with `path` as given
 * (`setup.yaml:probes[0].name`), and relative paths inside the file are resolved against the file's
 * folder. A file that cannot be read is a `SetupError` too, with the read error as `cause`.
 */
export function loadSetupFile(path: string): Setup {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SetupError([{ path, message: `cannot read the setup file (${reason}); check the path` }], {
      cause,
    });
  }
  return parseSetup(text, path, dirname(resolve(path)));
}

/**
 * Formats a `SetupError` for people: one line per issue, `path: message`, with ` (line L, column C)`
 * appended when the position is known, in file order. `vigil validate` prints this.
 */
export function formatSetupIssues(error: SetupError): string {
  return formatIssues(error.issues);
}

function formatIssues(issues: readonly SetupIssue[]): string {
  return issues
    .map((issue) => {
      const known = issue.line === undefined || issue.message.includes(`at line ${issue.line},`);
      const where = known ? "" : ` (line ${issue.line}, column ${issue.column ?? 1})`;
      return `${issue.path ? `${issue.path}: ` : ""}${issue.message}${where}`;
    })
    .join("\n");
}

// ---------------------------------------------------------------------------------------------
// Paths and positions

type Segment = string | number;

interface RawIssue {
  readonly segments: readonly Segment[];
  readonly message: string;
  /** Point at the key rather than its value (unknown keys). */
  readonly atKey?: boolean;
}

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/;

/** `["probes", 0, "name"]` → `probes[0].name`; keys that are not identifiers are quoted: `columns["a b"]`. */
function formatPath(segments: readonly Segment[]): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
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

/** Offset in the YAML text of the deepest node on `segments` (the key itself when `atKey`). */
function locate(doc: Document, segments: readonly Segment[], atKey: boolean): number | undefined {
  let node: unknown = doc.contents;
  let offset = rangeStart(node);
  for (const [i, segment] of segments.entries()) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(segment));
      if (pair === undefined) return offset;
      const last = i === segments.length - 1;
      const keyOffset = rangeStart(pair.key);
      if (last && atKey) return keyOffset ?? offset;
      node = pair.value;
      offset = rangeStart(node) ?? keyOffset ?? offset;
    } else if (isSeq(node) && typeof segment === "number") {
      node = node.items[segment];
      offset = rangeStart(node) ?? offset;
    } else {
      return offset;
    }
  }
  return offset;
}

function rangeStart(node: unknown): number | undefined {
  return isNode(node) ? node.range?.[0] : undefined;
}

function dedupe(issues: SetupIssue[]): SetupIssue[] {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** File order (stable), so the list reads top to bottom like the file. */
function sortIssues(issues: SetupIssue[]): SetupIssue[] {
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort(
      (a, b) =>
        (a.issue.line ?? 0) - (b.issue.line ?? 0) ||
        (a.issue.column ?? 0) - (b.issue.column ?? 0) ||
        a.index - b.index,
    )
    .map(({ issue }) => issue);
}

// ---------------------------------------------------------------------------------------------
// Schema validation and its messages

let compiled: ReturnType<Ajv2020["compile"]> | undefined;

function validator(): ReturnType<Ajv2020["compile"]> {
  if (compiled === undefined) {
    const ajv = new Ajv2020({ allErrors: true, verbose: true, allowUnionTypes: true, strict: true });
    compiled = ajv.compile(SETUP_SCHEMA);
  }
  return compiled;
}

/** Keys of each sampler plug-in's schema, to say "'keywords' belongs to fkm samplers". */
const PLUGIN_KEYS: ReadonlyMap<string, readonly string[]> = new Map(
  SETUP_SCHEMA.properties.probes.items.properties.managedEntities.items.properties.samplers.items.allOf.map(
    (branch) => [branch.then.properties.plugin.const, Object.keys(branch.then.properties)] as const,
  ),
);

function schemaIssues(data: unknown): RawIssue[] {
  const validate = validator();
  if (validate(data)) return [];
  return (validate.errors ?? [])
    .filter((error) => error.keyword !== "if") // the failing `then` branch reports the details
    .map((error) => schemaIssue(error, data));
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
  const low =
    typeof schema.minimum === "number"
      ? `at least ${schema.minimum}`
      : typeof schema.exclusiveMinimum === "number"
        ? `greater than ${schema.exclusiveMinimum}`
        : undefined;
  const high =
    typeof schema.maximum === "number"
      ? `at most ${schema.maximum}`
      : typeof schema.exclusiveMaximum === "number"
        ? `less than ${schema.exclusiveMaximum}`
        : undefined;
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

/** The candidate equal ignoring case, else the closest within edit distance 2 (STYLE 11). */
function nearest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const same = candidates.find((c) => c.toLowerCase() === lower);
  if (same !== undefined) return same;
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

// ---------------------------------------------------------------------------------------------
// Semantic checks: what JSON Schema cannot express. They run on the raw data even when the schema
// failed, so one pass reports everything, and therefore guard every access.

function semanticIssues(data: unknown): RawIssue[] {
  const issues: RawIssue[] = [];
  const root = isRecord(data) ? data : {};
  checkProbes(list(root.probes), issues);
  checkRules(list(root.rules), issues);
  checkHub(isRecord(root.hub) ? root.hub : {}, issues);
  return issues;
}

function checkProbes(probes: readonly unknown[], issues: RawIssue[]): void {
  const probeNames = new Map<string, string>();
  const ports = new Map<string, string>();
  probes.forEach((probe, p) => {
    if (!isRecord(probe)) return;
    unique(probeNames, probe.name, ["probes", p, "name"], "probe name", issues);

    const hostname = typeof probe.hostname === "string" ? probe.hostname : DEFAULT_PROBE_HOSTNAME;
    for (const [key, fallback] of [
      ["restApiHttpPort", DEFAULT_REST_API_HTTP_PORT],
      ["restApiHttpsPort", DEFAULT_REST_API_HTTPS_PORT],
    ] as const) {
      const port = probe[key] ?? fallback;
      if (typeof port !== "number" || port === 0) continue; // 0: the system picks a free port
      const where = ["probes", p, key];
      const id = `${hostname.toLowerCase()}:${port}`;
      const first = ports.get(id);
      if (first === undefined) ports.set(id, formatPath(where));
      else
        issues.push({
          segments: where,
          message: `port ${port} on ${hostname} is already used by ${first}; give each listener its own port (or 0 for a free one)`,
        });
    }

    const entityNames = new Map<string, string>();
    list(probe.managedEntities).forEach((entity, e) => {
      if (!isRecord(entity)) return;
      const at = ["probes", p, "managedEntities", e] as const;
      unique(entityNames, entity.name, [...at, "name"], "managed entity name in this probe", issues);
      checkSamplers(list(entity.samplers), at, issues);
    });
  });
}

function checkSamplers(samplers: readonly unknown[], at: readonly Segment[], issues: RawIssue[]): void {
  const seen = new Map<string, string>();
  samplers.forEach((sampler, s) => {
    if (!isRecord(sampler) || typeof sampler.name !== "string") return;
    const where = [...at, "samplers", s];
    const type = typeof sampler.type === "string" ? sampler.type : "";
    const id = `${sampler.name}(${type})`;
    const first = seen.get(id);
    if (first === undefined) seen.set(id, formatPath(where));
    else
      issues.push({
        segments: [...where, "name"],
        message: `duplicate sampler '${sampler.name}'${type ? ` of type '${type}'` : " without a type"} (also ${first}); give it another name or a different type`,
      });

    const ca = sampler.clientCaCertificate;
    if (isRecord(ca) && ca.enabled === true && (ca.path === undefined || ca.path === "")) {
      issues.push({
        segments: [...where, "clientCaCertificate", "path"],
        message:
          "Client CA certificate enabled without a path; set clientCaCertificate.path to the CA certificate " +
          "file, or set enabled: false to verify against the probe's -ssl-certificate-chain",
      });
    }

    if (sampler.plugin === "fkm") {
      checkFkmSource(sampler.source, samplers, [...where, "source", "sampler"], issues);
      list(sampler.keywords).forEach((keyword, k) => {
        if (isRecord(keyword)) checkRegex(keyword.pattern, [...where, "keywords", k, "pattern"], issues);
      });
    }
  });
}

/** An fkm `source.sampler` is `name` or `name(type)` of a rest-api sampler on the same entity. */
function checkFkmSource(source: unknown, samplers: readonly unknown[], where: Segment[], issues: RawIssue[]) {
  if (!isRecord(source) || typeof source.sampler !== "string" || source.sampler === "") return;
  const wanted = source.sampler;
  const typed = /^(.*)\(([^()]*)\)$/.exec(wanted);
  const name = typed?.[1] ?? wanted;
  const matches = samplers.filter(
    (s) =>
      isRecord(s) &&
      s.name === name &&
      (typed === null || (typeof s.type === "string" ? s.type : "") === typed[2]),
  );
  const restApi = matches.filter((s) => isRecord(s) && s.plugin === "rest-api");
  const names = samplers
    .filter((s) => isRecord(s) && s.plugin === "rest-api" && typeof s.name === "string")
    .map((s) => (isRecord(s) ? String(s.name) : ""));
  if (restApi.length === 1) return;
  if (restApi.length > 1) {
    issues.push({
      segments: where,
      message: `source sampler '${wanted}' is ambiguous: several rest-api samplers have that name; write it as name(type)`,
    });
  } else if (matches.length > 0) {
    issues.push({
      segments: where,
      message: `source sampler '${wanted}' is not a rest-api sampler; an fkm sampler reads the stream of a rest-api sampler`,
    });
  } else {
    const suggestion = nearest(wanted, names);
    issues.push({
      segments: where,
      message:
        `source sampler '${wanted}' is not a rest-api sampler of this managed entity` +
        (suggestion === undefined
          ? names.length > 0
            ? ` (its rest-api samplers: ${names.join(", ")})`
            : "; add a rest-api sampler to read from"
          : `; did you mean '${suggestion}'?`),
    });
  }
}

function checkRules(rules: readonly unknown[], issues: RawIssue[]): void {
  const names = new Map<string, string>();
  rules.forEach((rule, r) => {
    if (!isRecord(rule)) return;
    unique(names, rule.name, ["rules", r, "name"], "rule name", issues);

    const target = rule.target;
    if (isRecord(target)) {
      const cell = target.row !== undefined || target.column !== undefined;
      if (target.headline !== undefined && cell) {
        issues.push({
          segments: ["rules", r, "target", "headline"],
          message: "a rule target names either a cell (row and column) or a headline, not both; remove one",
        });
      } else if (target.headline === undefined && target.column === undefined) {
        issues.push({
          segments: ["rules", r, "target"],
          message:
            target.row === undefined
              ? "a rule target needs a column (with row, default '*') or a headline"
              : "a rule target with a row needs a column too",
        });
      }
    }

    const when = rule.when;
    if (
      isRecord(when) &&
      when.operator === "matches" &&
      (typeof when.value === "string" || typeof when.value === "number")
    ) {
      checkRegex(String(when.value), ["rules", r, "when", "value"], issues);
    }
  });
}

function checkHub(hub: Record<string, unknown>, issues: RawIssue[]): void {
  const tls = hub.tls;
  if (isRecord(tls)) {
    const certificate = typeof tls.certificate === "string" && tls.certificate !== "";
    const key = typeof tls.key === "string" && tls.key !== "";
    if (certificate !== key) {
      issues.push({
        segments: ["hub", "tls", certificate ? "key" : "certificate"],
        message: "hub TLS needs both certificate and key (or neither, for plain HTTP); set the missing one",
      });
    }
  }
  const security = isRecord(hub.security) ? hub.security : {};
  const clientIds = new Map<string, string>();
  list(security.appKeys).forEach((appKey, a) => {
    if (isRecord(appKey))
      unique(clientIds, appKey.clientId, ["hub", "security", "appKeys", a, "clientId"], "clientId", issues);
  });
  const kerberos = security.kerberos;
  if (isRecord(kerberos)) {
    for (const key of ["keytab", "servicePrincipal"] as const) {
      if (kerberos.enabled === true && (kerberos[key] === undefined || kerberos[key] === "")) {
        issues.push({
          segments: ["hub", "security", "kerberos", key],
          message: `Kerberos is enabled without a ${key}; set it, or set enabled: false`,
        });
      }
    }
    const principal = kerberos.servicePrincipal;
    if (
      typeof principal === "string" &&
      principal !== "" &&
      !/^HTTP(\/[^@/\s]+@[^@/\s]+|@[^@/\s]+)$/.test(principal)
    ) {
      issues.push({
        segments: ["hub", "security", "kerberos", "servicePrincipal"],
        message: `'${principal}' is not a service principal; write it as HTTP/<host>@<REALM> (or HTTP@<host>)`,
      });
    }
  }
}

function unique(
  seen: Map<string, string>,
  name: unknown,
  where: Segment[],
  what: string,
  issues: RawIssue[],
) {
  if (typeof name !== "string") return;
  const first = seen.get(name);
  if (first === undefined) seen.set(name, formatPath(where));
  else
    issues.push({
      segments: where,
      message: `duplicate ${what} '${name}' (also ${first}); names must be unique`,
    });
}

function checkRegex(pattern: unknown, where: Segment[], issues: RawIssue[]): void {
  if (typeof pattern !== "string") return;
  try {
    new RegExp(pattern);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    issues.push({
      segments: where,
      message: `'${pattern}' is not a valid regular expression (${reason}); fix it, escaping special characters with \\`,
    });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

// ---------------------------------------------------------------------------------------------
// Defaults

/** The YAML's shape once validated: what the schema allows, optional where it has a default. */
interface SetupInput {
  gateway: {
    name: string;
    port?: number;
    customDataviewMaxRows?: number;
    publish?: (
      | "memory"
      | { file: string }
      | { nats: { url: string; stream?: string; subjectPrefix?: string } }
    )[];
  };
  probes?: ProbeInput[];
  rules?: RuleInput[];
  hub?: {
    port?: number;
    tls?: { certificate?: string; key?: string };
    security?: {
      enabled?: boolean;
      tokenLifetime?: number;
      appKeys?: { clientId: string; clientSecret: string }[];
      kerberos?: { enabled?: boolean; keytab?: string; servicePrincipal?: string };
    };
  };
}

interface ProbeInput {
  name: string;
  hostname?: string;
  restApiHttpPort?: number;
  restApiHttpsPort?: number;
  memoryProtection?: { limitMb?: number; ratio?: number };
  managedEntities?: {
    name: string;
    attributes?: Record<string, string>;
    samplers?: SamplerInput[];
  }[];
}

type SamplerInput =
  | {
      name: string;
      type?: string;
      plugin: "rest-api";
      bufferSize?: number;
      rowLimit?: number;
      verifyClientCertificate?: boolean;
      clientCaCertificate?: { enabled?: boolean; path?: string };
      schema?: { columns?: Record<string, { type?: ColumnSchema["type"]; unit?: string }> };
    }
  | {
      name: string;
      type?: string;
      plugin: "fkm";
      sampleInterval?: number;
      source: { sampler: string; stream: string };
      keywords: { pattern: string; severity: Severity }[];
    };

interface RuleInput {
  name: string;
  target: Partial<Record<keyof RuleTarget, string>>;
  when: { operator: RuleOperator; value: string | number };
  severity: Severity;
}

function buildSetup(input: SetupInput, baseDir: string | undefined): Setup {
  const path = (p: string | undefined): string =>
    p === undefined || p === "" ? "" : baseDir === undefined || isAbsolute(p) ? p : resolve(baseDir, p);
  const hub = input.hub ?? {};
  const security = hub.security ?? {};
  const kerberos = security.kerberos ?? {};
  return {
    gateway: {
      name: input.gateway.name,
      port: input.gateway.port ?? DEFAULT_GATEWAY_PORT,
      customDataviewMaxRows: input.gateway.customDataviewMaxRows ?? DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
      publish: (input.gateway.publish ?? DEFAULT_PUBLISH).map((sink): PublishSink => {
        if (sink === "memory") return { kind: "memory" };
        if ("file" in sink) return { kind: "file", path: path(sink.file) };
        return {
          kind: "nats",
          url: sink.nats.url,
          stream: sink.nats.stream ?? DEFAULT_NATS_STREAM,
          subjectPrefix: sink.nats.subjectPrefix ?? DEFAULT_NATS_SUBJECT_PREFIX,
        };
      }),
    },
    probes: (input.probes ?? []).map((probe) => buildProbe(probe, path)),
    rules: (input.rules ?? []).map(buildRule),
    hub: {
      port: hub.port ?? DEFAULT_HUB_PORT,
      tls: { certificate: path(hub.tls?.certificate), key: path(hub.tls?.key) },
      security: {
        enabled: security.enabled ?? DEFAULT_SECURITY_ENABLED,
        tokenLifetime: security.tokenLifetime ?? DEFAULT_TOKEN_LIFETIME,
        appKeys: (security.appKeys ?? []).map(({ clientId, clientSecret }) => ({ clientId, clientSecret })),
        kerberos: {
          enabled: kerberos.enabled ?? false,
          keytab: path(kerberos.keytab),
          servicePrincipal: kerberos.servicePrincipal ?? "",
        },
      },
    },
  };
}

function buildProbe(probe: ProbeInput, path: (p: string | undefined) => string): ProbeSetup {
  return {
    name: probe.name,
    hostname: probe.hostname ?? DEFAULT_PROBE_HOSTNAME,
    restApiHttpPort: probe.restApiHttpPort ?? DEFAULT_REST_API_HTTP_PORT,
    restApiHttpsPort: probe.restApiHttpsPort ?? DEFAULT_REST_API_HTTPS_PORT,
    memoryProtection: {
      limitMb: probe.memoryProtection?.limitMb ?? DEFAULT_MEMORY_LIMIT_MB,
      ratio: probe.memoryProtection?.ratio ?? DEFAULT_MEMORY_RATIO,
    },
    managedEntities: (probe.managedEntities ?? []).map(
      (entity): ManagedEntitySetup => ({
        name: entity.name,
        attributes: { ...entity.attributes },
        samplers: (entity.samplers ?? []).map((sampler) => buildSampler(sampler, path)),
      }),
    ),
  };
}

function buildSampler(sampler: SamplerInput, path: (p: string | undefined) => string): SamplerSetup {
  const type = sampler.type ?? "";
  if (sampler.plugin === "fkm") {
    return {
      name: sampler.name,
      type,
      plugin: "fkm",
      sampleInterval: sampler.sampleInterval ?? DEFAULT_FKM_SAMPLE_INTERVAL,
      source: { sampler: sampler.source.sampler, stream: sampler.source.stream },
      keywords: sampler.keywords.map(({ pattern, severity }) => ({ pattern, severity })),
    };
  }
  const columns: Record<string, ColumnSchema> = {};
  for (const [column, declared] of Object.entries(sampler.schema?.columns ?? {})) {
    columns[column] = {
      type: declared.type ?? DEFAULT_COLUMN_TYPE,
      unit: declared.unit ?? DEFAULT_COLUMN_UNIT,
    };
  }
  return {
    name: sampler.name,
    type,
    plugin: "rest-api",
    bufferSize: sampler.bufferSize ?? DEFAULT_BUFFER_SIZE,
    rowLimit: sampler.rowLimit ?? DEFAULT_ROW_LIMIT,
    verifyClientCertificate: sampler.verifyClientCertificate ?? DEFAULT_VERIFY_CLIENT_CERTIFICATE,
    clientCaCertificate: {
      enabled: sampler.clientCaCertificate?.enabled ?? DEFAULT_CLIENT_CA_CERTIFICATE.enabled,
      path: path(sampler.clientCaCertificate?.path ?? DEFAULT_CLIENT_CA_CERTIFICATE.path),
    },
    schema: { columns },
  };
}

function buildRule(rule: RuleInput): RuleSetup {
  const { target } = rule;
  const cellOrHeadline: Pick<RuleTarget, "row" | "column" | "headline"> =
    target.headline !== undefined
      ? { headline: target.headline }
      : { row: target.row ?? DEFAULT_RULE_TARGET_WILDCARD, column: target.column ?? "" };
  return {
    name: rule.name,
    target: {
      managedEntity: target.managedEntity ?? DEFAULT_RULE_TARGET_WILDCARD,
      sampler: target.sampler ?? DEFAULT_RULE_TARGET_WILDCARD,
      dataview: target.dataview ?? DEFAULT_RULE_TARGET_WILDCARD,
      ...cellOrHeadline,
    },
    when: { operator: rule.when.operator, value: rule.when.value },
    severity: rule.severity,
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
