/**
 * Reading the bodies of the gateway's commands (DESIGN 4.2) and the query of `GET /v1/items`.
 * Every mistake is a 400 `INVALID_COMMAND` naming the field (`target.sampler`, `untilTime`, …);
 * unknown fields are refused, not ignored. What a period needs (seed C: the form of the command,
 * and its `until*` fields):
 *
 * | period | snooze | assign | until fields |
 * |---|---|---|---|
 * | Manual | yes | yes | none |
 * | SeverityTo | yes | yes | `untilSeverity` |
 * | SeverityToOK | – | yes | none (`untilSeverity` is OK) |
 * | SeverityFrom | yes | yes | `untilSeverityNot` (default: the item's current severity) |
 * | Time, DateTime (snooze only) | yes | Time | `untilTime` (in the future) |
 * | SeverityToOrTime | yes | yes | `untilSeverity` and `untilTime` |
 * | ValueChanges | yes | yes | `untilValueNot` (default: the cell's current value); cells and headlines |
 * | Until, Unknown | yes | yes | any of the four |
 */
import { COMMAND_MAX_TEXT } from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import {
  ASSIGNMENT_PERIODS,
  type AssignmentPeriod,
  type EventTarget,
  SEVERITIES,
  type Severity,
  SNOOZE_PERIODS,
  type SnoozePeriod,
} from "../../messages/types.js";
import type { Until } from "../severity/event-messages.js";
import type { AssignCommand, SnoozeCommand } from "../severity/item-commands.js";

const TARGET_FIELDS = [
  "gateway",
  "probe",
  "managedEntity",
  "type",
  "sampler",
  "dataview",
  "row",
  "column",
] as const;
/** The seed's target dependencies (seed C "Event target"). */
const DEPENDENCIES: readonly [keyof EventTarget, readonly (keyof EventTarget)[]][] = [
  ["managedEntity", ["probe"]],
  ["type", ["managedEntity", "sampler"]],
  ["sampler", ["managedEntity", "type"]],
  ["dataview", ["sampler"]],
  ["column", ["dataview"]],
  ["row", ["column"]],
];
const UNTIL_FIELDS = ["untilSeverity", "untilSeverityNot", "untilTime", "untilValueNot"] as const;
type UntilField = (typeof UNTIL_FIELDS)[number];

/** What each period requires and allows of the until fields. */
const PERIOD_FIELDS: Readonly<
  Record<string, { required: readonly UntilField[]; allowed: readonly UntilField[] }>
> = {
  Manual: { required: [], allowed: [] },
  SeverityTo: { required: ["untilSeverity"], allowed: ["untilSeverity"] },
  SeverityToOK: { required: [], allowed: ["untilSeverity"] },
  SeverityFrom: { required: [], allowed: ["untilSeverityNot"] },
  Time: { required: ["untilTime"], allowed: ["untilTime"] },
  DateTime: { required: ["untilTime"], allowed: ["untilTime"] },
  SeverityToOrTime: { required: ["untilSeverity", "untilTime"], allowed: ["untilSeverity", "untilTime"] },
  ValueChanges: { required: [], allowed: ["untilValueNot"] },
  Until: { required: [], allowed: UNTIL_FIELDS },
  Unknown: { required: [], allowed: UNTIL_FIELDS },
};

const invalid = (field: string, detail: string) => new VigilError("INVALID_COMMAND", { field, detail });

type Fields = Readonly<Record<string, unknown>>;

function object(value: unknown, field: string): Fields {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalid(field, "must be a JSON object");
  return value as Fields;
}

function only(fields: Fields, allowed: readonly string[], prefix: string): void {
  for (const name of Object.keys(fields)) {
    if (!allowed.includes(name))
      throw invalid(`${prefix}${name}`, `unknown field; the fields are ${allowed.join(", ")}`);
  }
}

function text(
  fields: Fields,
  name: string,
  prefix = "",
  required = false,
  nonEmpty = false,
): string | undefined {
  const value = fields[name];
  if (value === undefined) {
    if (required) throw invalid(`${prefix}${name}`, "is required");
    return undefined;
  }
  if (typeof value !== "string") throw invalid(`${prefix}${name}`, "must be a string");
  if (nonEmpty && value === "") throw invalid(`${prefix}${name}`, "must not be empty");
  if (value.length > COMMAND_MAX_TEXT)
    throw invalid(`${prefix}${name}`, `is longer than ${COMMAND_MAX_TEXT} characters`);
  return value;
}

/**
 * An event target (`target` of a command, or the query of `GET /v1/items` with `gateway`
 * defaulting to this gateway): string fields, the seed's dependencies, `filter` allowed and ignored
 * for identification (it describes the item, it does not name it).
 */
export function parseTarget(value: unknown, prefix: string, defaultGateway?: string): EventTarget {
  const fields = object(value, prefix === "" ? "query" : prefix.slice(0, -1));
  only(fields, [...TARGET_FIELDS, "filter"], prefix);
  const gateway = text(fields, "gateway", prefix, defaultGateway === undefined) ?? (defaultGateway as string);
  const target: EventTarget = { gateway };
  for (const name of TARGET_FIELDS) {
    if (name === "gateway") continue;
    const v = text(fields, name, prefix);
    if (v !== undefined) target[name] = v;
  }
  for (const [field, needs] of DEPENDENCIES) {
    if (target[field] === undefined) continue;
    for (const need of needs)
      if (target[need] === undefined)
        throw invalid(
          `${prefix}${need}`,
          `is required with ${prefix}${field} (type is "" for a sampler without one)`,
        );
  }
  if (fields.filter !== undefined) {
    const filter = object(fields.filter, `${prefix}filter`);
    only(filter, ["osType", "pluginName"], `${prefix}filter.`);
    text(filter, "osType", `${prefix}filter.`);
    text(filter, "pluginName", `${prefix}filter.`);
    if (target.probe === undefined) throw invalid(`${prefix}probe`, `is required with ${prefix}filter`);
  }
  return target;
}

function severity(fields: Fields, name: string): Severity | undefined {
  const value = fields[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !(SEVERITIES as readonly string[]).includes(value))
    throw invalid(name, `must be one of ${SEVERITIES.join(", ")}`);
  return value as Severity;
}

/** RFC 3339 date-time with a zone (the schema's `date-time`). */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function until(fields: Fields, period: string): Until {
  const rule = PERIOD_FIELDS[period] as { required: readonly UntilField[]; allowed: readonly UntilField[] };
  for (const name of UNTIL_FIELDS) {
    if (fields[name] !== undefined && !rule.allowed.includes(name))
      throw invalid(name, `is not used with period ${period}`);
    if (fields[name] === undefined && rule.required.includes(name))
      throw invalid(name, `is required with period ${period}`);
  }
  const out: { -readonly [K in keyof Until]: Until[K] } = {};
  const untilSeverity = severity(fields, "untilSeverity");
  if (untilSeverity !== undefined) {
    if (period === "SeverityToOK" && untilSeverity !== "OK")
      throw invalid("untilSeverity", "is OK with period SeverityToOK");
    out.untilSeverity = untilSeverity;
  }
  const untilSeverityNot = severity(fields, "untilSeverityNot");
  if (untilSeverityNot !== undefined) out.untilSeverityNot = untilSeverityNot;
  const untilTime = text(fields, "untilTime");
  if (untilTime !== undefined) {
    const ms = Date.parse(untilTime);
    if (!DATE_TIME.test(untilTime) || !Number.isFinite(ms))
      throw invalid("untilTime", "must be an RFC 3339 date-time with a zone, e.g. 2026-01-01T12:00:00Z");
    out.untilTime = ms;
  }
  const untilValueNot = text(fields, "untilValueNot");
  if (untilValueNot !== undefined) out.untilValueNot = untilValueNot;
  return out;
}

function period<P extends string>(fields: Fields, periods: readonly P[], exclude: readonly string[] = []): P {
  const value = fields.period ?? "Manual";
  if (typeof value !== "string" || !periods.includes(value as P) || exclude.includes(value))
    throw invalid("period", `must be one of ${periods.filter((p) => !exclude.includes(p)).join(", ")}`);
  return value as P;
}

export interface ParsedSnooze {
  readonly target: EventTarget;
  readonly command: SnoozeCommand;
}

/** `POST /v1/commands/snooze`: target, user, comment (default ""), period (default Manual), until*. */
export function parseSnooze(body: unknown): ParsedSnooze {
  const fields = object(body, "body");
  only(fields, ["target", "user", "comment", "period", ...UNTIL_FIELDS], "");
  const target = parseTarget(fields.target, "target.");
  const user = text(fields, "user", "", true, true) as string;
  const comment = text(fields, "comment") ?? "";
  // SeverityToOK is an assignment period only (seed C).
  const p = period<SnoozePeriod>(fields, SNOOZE_PERIODS);
  return { target, command: { user, comment, period: p, until: until(fields, p) } };
}

export interface ParsedAssign {
  readonly target: EventTarget;
  readonly command: AssignCommand;
}

/** `POST /v1/commands/assign`: target, user, assignedTo, comment (default ""), period (default Manual), until*. */
export function parseAssign(body: unknown): ParsedAssign {
  const fields = object(body, "body");
  only(fields, ["target", "user", "assignedTo", "comment", "period", ...UNTIL_FIELDS], "");
  const target = parseTarget(fields.target, "target.");
  const user = text(fields, "user", "", true, true) as string;
  const assignedTo = text(fields, "assignedTo", "", true, true) as string;
  const comment = text(fields, "comment") ?? "";
  const p = period<AssignmentPeriod>(fields, ASSIGNMENT_PERIODS);
  return { target, command: { user, assignedTo, comment, period: p, until: until(fields, p) } };
}

export interface ParsedRelease {
  readonly target: EventTarget;
  readonly user: string;
  readonly comment: string | undefined;
}

/** `POST /v1/commands/unsnooze` and `unassign`: target, user, optional comment. */
export function parseRelease(body: unknown): ParsedRelease {
  const fields = object(body, "body");
  only(fields, ["target", "user", "comment"], "");
  const target = parseTarget(fields.target, "target.");
  const user = text(fields, "user", "", true, true) as string;
  return { target, user, comment: text(fields, "comment") };
}
