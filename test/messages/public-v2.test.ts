// The public-v2 schema (seed area C) through its validator: valid messages of every kind, and
// invalid ones each made by changing one valid message in one way, checked for their own error.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { isAbsolute } from "node:path";
import { describe, test } from "node:test";
import type { PublicV2Message } from "../../src/messages/types.js";
import { ASSIGNMENT_PERIODS, SEVERITIES, SNOOZE_PERIODS } from "../../src/messages/types.js";
import { assertMessage, PUBLIC_V2_SCHEMA_PATH, validateMessage } from "../../src/messages/validate.js";

const T0 = "2024-05-01T12:00:00.000Z";
const FILTER = { osType: "Linux", pluginName: "rest-api" };
const SAMPLER = { gateway: "GW1", probe: "probe1", managedEntity: "web-01", type: "", sampler: "orders" };
const CELL = { ...SAMPLER, dataview: "queue", row: "eu-1", column: "queued" };

/** One valid message of each kind; every case below starts from one of these. */
const BASE = {
  probe: {
    type: "probe",
    operation: "create",
    data: { timestamp: T0, target: { gateway: "GW1", probe: "probe1" }, parameters: { osType: "Linux" } },
  },
  managedEntity: {
    type: "managedEntity",
    operation: "create",
    data: {
      timestamp: T0,
      target: { gateway: "GW1", probe: "probe1", managedEntity: "web-01" },
      attributes: { Environment: "prod" },
    },
  },
  headline: {
    type: "headline",
    operation: "update",
    data: {
      sampleTime: T0,
      target: { ...SAMPLER, dataview: "queue", filter: FILTER },
      row: { samplingStatus: "OK", totalRows: "2" },
    },
  },
  table: {
    type: "table",
    operation: "update",
    data: {
      sampleTime: T0,
      target: { ...SAMPLER, dataview: "queue", row: "eu-1", filter: FILTER },
      row: { name: "eu-1", queued: "12" },
    },
  },
  severity: {
    type: "severity",
    operation: "update",
    data: {
      timestamp: T0,
      target: CELL,
      data: { severity: "CRITICAL", active: true, snoozed: false, snoozedParents: 0, userAssigned: false },
    },
  },
  snoozeOn: {
    type: "snooze",
    operation: "update",
    data: {
      timestamp: T0,
      target: CELL,
      data: { snoozed: true, snoozedBy: "alice", comment: "deploying", period: "Manual" },
    },
  },
  snoozeOff: {
    type: "snooze",
    operation: "update",
    data: { timestamp: T0, target: CELL, data: { snoozed: false, unsnoozedBy: "system" } },
  },
  assign: {
    type: "userassignment",
    operation: "update",
    data: {
      timestamp: T0,
      target: CELL,
      data: {
        userAssigned: true,
        assignedTo: "bob",
        assignedBy: "alice",
        comment: "yours",
        period: "Manual",
      },
    },
  },
  unassign: {
    type: "userassignment",
    operation: "update",
    data: { timestamp: T0, target: CELL, data: { userAssigned: false, unassignedBy: "bob" } },
  },
} satisfies Record<string, PublicV2Message>;

type Base = keyof typeof BASE;
type Mutation = (message: Record<string, unknown>) => void;

/** The object at `segments` below `root`; throws when a case names a path that is not there. */
function objectAt(root: Record<string, unknown>, segments: string[]): Record<string, unknown> {
  let node: unknown = root;
  for (const segment of segments) {
    node = (node as Record<string, unknown>)[segment];
    if (typeof node !== "object" || node === null) throw new Error(`no object at ${segments.join("/")}`);
  }
  return node as Record<string, unknown>;
}

/** Sets the property at slash-separated `path` (e.g. `data/target/probe`) to `value`. */
function set(path: string, value: unknown): Mutation {
  const segments = path.split("/");
  const key = segments.pop()!;
  return (message) => {
    objectAt(message, segments)[key] = value;
  };
}

/** Removes the property at slash-separated `path`, which must exist. */
function del(path: string): Mutation {
  const segments = path.split("/");
  const key = segments.pop()!;
  return (message) => {
    const parent = objectAt(message, segments);
    if (!(key in parent)) throw new Error(`nothing to delete at ${path}`);
    delete parent[key];
  };
}

/** A deep copy of the base message with the mutations applied in order. */
function from(base: Base, ...mutations: Mutation[]): unknown {
  const message = structuredClone(BASE[base]) as Record<string, unknown>;
  for (const mutate of mutations) mutate(message);
  return message;
}

const ALL_UNTIL = [
  set("data/data/untilSeverity", "OK"),
  set("data/data/untilSeverityNot", "CRITICAL"),
  set("data/data/untilTime", "2024-05-02T08:00:00+01:00"),
  set("data/data/untilValueNot", "12"),
];

// biome-ignore format: one line per case reads as a table
const VALID: [name: string, message: unknown][] = [
  ["probe create with only osType", from("probe")],
  ["probe update with every named parameter", from("probe", set("data/parameters", { osType: "Linux", HostName: "h1", Port: "7036", ConState: "Up", OS: "Linux 6.1", Version: "7.0" }))],
  ["probe delete with further string parameters", from("probe", set("operation", "delete"), set("data/parameters/Site", "emea"), set("data/parameters/Rack", ""))],
  ["probe snapshot with ConState Down", from("probe", set("operation", "snapshot"), set("data/parameters/ConState", "Down"))],
  ["managed entity create with attributes", from("managedEntity")],
  ["managed entity update with empty attributes", from("managedEntity", set("operation", "update"), set("data/attributes", {}))],
  ["managed entity delete", from("managedEntity", set("operation", "delete"))],
  ["managed entity snapshot", from("managedEntity", set("operation", "snapshot"))],
  ["headline update without optional fields", from("headline")],
  ["headline create with probeTime", from("headline", set("operation", "create"), set("data/probeTime", "2024-05-01T11:59:59.5Z"))],
  ["headline with computedColumn and computedRow false", from("headline", set("data/computedColumn", "rate"), set("data/computedRow", false))],
  ["headline delete with empty row", from("headline", set("operation", "delete"), set("data/row", {}))],
  ["headline snapshot of a typed sampler", from("headline", set("operation", "snapshot"), set("data/target/type", "orders-type"))],
  ["table update without optional fields", from("table")],
  ["table create with every optional field", from("table", set("operation", "create"), set("data/probeTime", T0), set("data/computedColumn", "rate"), set("data/computedRow", true))],
  ["table delete", from("table", set("operation", "delete"))],
  ["table snapshot with an empty row name", from("table", set("operation", "snapshot"), set("data/target/row", ""), set("data/row", { name: "" }))],
  ["table with a fkm filter and Windows probe", from("table", set("data/target/filter", { osType: "Windows", pluginName: "fkm" }))],
  ["severity of a gateway", from("severity", set("data/target", { gateway: "GW1" }))],
  ["severity of a probe", from("severity", set("data/target", { gateway: "GW1", probe: "p" }))],
  ["severity of a probe with filter", from("severity", set("data/target", { gateway: "GW1", probe: "p", filter: FILTER }))],
  ["severity of a managed entity", from("severity", set("data/target", { gateway: "GW1", probe: "p", managedEntity: "m" }))],
  ["severity of a sampler", from("severity", set("data/target", SAMPLER))],
  ["severity of a dataview", from("severity", set("data/target", { ...SAMPLER, dataview: "queue" }))],
  ["severity of a headline (column without row)", from("severity", set("data/target", { ...SAMPLER, dataview: "queue", column: "totalRows" }))],
  ["severity of a cell with filter", from("severity", set("data/target", { ...CELL, filter: FILTER }))],
  ["severity with previousSeverity and full value", from("severity", set("data/data/previousSeverity", "OK"), set("data/data/value", { cell: "12", dateTime: T0, number: 12.5 }))],
  ["severity with value cell only", from("severity", set("data/data/value", { cell: "" }))],
  ["severity snapshot, inactive, snoozed under 3 parents", from("severity", set("operation", "snapshot"), set("data/data/active", false), set("data/data/snoozed", true), set("data/data/snoozedParents", 3), set("data/data/userAssigned", true))],
  ["severity create (operation allowed by the enum)", from("severity", set("operation", "create"))],
  ...SEVERITIES.map((s): [string, unknown] => [`severity ${s}`, from("severity", set("data/data/severity", s), set("data/data/previousSeverity", s))]),
  ...SNOOZE_PERIODS.map((p): [string, unknown] => [`snooze on, period ${p}`, from("snoozeOn", set("data/data/period", p))]),
  ["snooze on with every until field", from("snoozeOn", set("data/data/period", "SeverityToOrTime"), ...ALL_UNTIL)],
  ["snooze on of a gateway", from("snoozeOn", set("data/target", { gateway: "GW1" }))],
  ["snooze off without comment", from("snoozeOff")],
  ["snooze off with comment, snapshot", from("snoozeOff", set("operation", "snapshot"), set("data/data/comment", "done"))],
  ...ASSIGNMENT_PERIODS.map((p): [string, unknown] => [`assignment, period ${p}`, from("assign", set("data/data/period", p))]),
  ["assignment with every until field", from("assign", set("data/data/period", "SeverityToOrTime"), ...ALL_UNTIL)],
  ["assignment of a managed entity", from("assign", set("data/target", { gateway: "GW1", probe: "p", managedEntity: "m" }))],
  ["unassignment without comment", from("unassign")],
  ["unassignment with comment, snapshot", from("unassign", set("operation", "snapshot"), set("data/data/comment", "fixed"))],
  ["timestamp with a +05:30 offset", from("probe", set("data/timestamp", "2024-05-01T17:30:00+05:30"))],
  ["timestamp without fractional seconds", from("severity", set("data/timestamp", "2024-05-01T12:00:00Z"))],
  ["timestamp with microseconds and negative offset", from("managedEntity", set("data/timestamp", "2024-05-01T07:00:00.123456-05:00"))],
];

/** [name, base, mutation, one expected error]; every other error must concern the same path. */
// biome-ignore format: one line per case reads as a table
const INVALID: [name: string, base: Base, mutation: Mutation, expected: string][] = [
  // Envelope
  ["envelope without type", "probe", del("type"), "(root): must have required property 'type'"],
  ["envelope without operation", "table", del("operation"), "(root): must have required property 'operation'"],
  ["envelope without data", "severity", del("data"), "(root): must have required property 'data'"],
  ["envelope with an extra property", "probe", set("topic", "entities"), "(root): must NOT have additional properties 'topic'"],
  ["unknown type", "table", set("type", "metric"), '/type: must be equal to one of the allowed values: "probe", "managedEntity", "headline", "table", "severity", "snooze", "userassignment"'],
  ["type is case-sensitive", "managedEntity", set("type", "managedentity"), "/type: must be equal to one of the allowed values"],
  ["unknown operation", "table", set("operation", "upsert"), '/operation: must be equal to one of the allowed values: "create", "update", "delete", "snapshot"'],
  ["data is a string", "probe", set("data", "x"), "/data: must be object"],
  ["probe type carrying table data", "table", set("type", "probe"), "/data: must have required property 'timestamp'"],
  // Probe data
  ["probe timestamp not a date-time", "probe", set("data/timestamp", "2024-05-01 12:00"), '/data/timestamp: must match format "date-time"'],
  ["probe timestamp with month 13", "probe", set("data/timestamp", "2024-13-01T12:00:00Z"), '/data/timestamp: must match format "date-time"'],
  ["probe timestamp without offset", "probe", set("data/timestamp", "2024-05-01T12:00:00"), '/data/timestamp: must match format "date-time"'],
  ["probe data without timestamp", "probe", del("data/timestamp"), "/data: must have required property 'timestamp'"],
  ["probe data with an extra property", "probe", set("data/attributes", {}), "/data: must NOT have additional properties 'attributes'"],
  ["probe target without probe", "probe", del("data/target/probe"), "/data/target: must have required property 'probe'"],
  ["probe target with managedEntity", "probe", set("data/target/managedEntity", "m"), "/data/target: must NOT have additional properties 'managedEntity'"],
  ["probe parameters without osType", "probe", del("data/parameters/osType"), "/data/parameters: must have required property 'osType'"],
  ["probe extra parameter that is a number", "probe", set("data/parameters/Cores", 8), "/data/parameters/Cores: must be string"],
  ["probe extra parameter that is null", "probe", set("data/parameters/Site", null), "/data/parameters/Site: must be string"],
  ["probe named parameter Port as a number", "probe", set("data/parameters/Port", 7036), "/data/parameters/Port: must be string"],
  // Managed entity data
  ["managed entity target without managedEntity", "managedEntity", del("data/target/managedEntity"), "/data/target: must have required property 'managedEntity'"],
  ["managed entity target with an extra property", "managedEntity", set("data/target/sampler", "s"), "/data/target: must NOT have additional properties 'sampler'"],
  ["managed entity attribute that is a number", "managedEntity", set("data/attributes/Cores", 8), "/data/attributes/Cores: must be string"],
  ["managed entity without attributes", "managedEntity", del("data/attributes"), "/data: must have required property 'attributes'"],
  ["managed entity data with an extra property", "managedEntity", set("data/parameters", {}), "/data: must NOT have additional properties 'parameters'"],
  // Metrics data
  ["headline target with a row", "headline", set("data/target/row", "eu-1"), "/data/target: must NOT have additional properties 'row'"],
  ["table target without row", "table", del("data/target/row"), "/data/target: must have required property 'row'"],
  ["table target without filter", "table", del("data/target/filter"), "/data/target: must have required property 'filter'"],
  ["table target without sampler", "table", del("data/target/sampler"), "/data/target: must have required property 'sampler'"],
  ["headline target without type", "headline", del("data/target/type"), "/data/target: must have required property 'type'"],
  ["table target with a column", "table", set("data/target/column", "queued"), "/data/target: must NOT have additional properties 'column'"],
  ["metrics filter without pluginName", "table", del("data/target/filter/pluginName"), "/data/target/filter: must have required property 'pluginName'"],
  ["metrics filter with an extra property", "headline", set("data/target/filter/hostName", "h"), "/data/target/filter: must NOT have additional properties 'hostName'"],
  ["table row value that is a number", "table", set("data/row/queued", 12), "/data/row/queued: must be string"],
  ["headline row value that is a boolean", "headline", set("data/row/samplingStatus", true), "/data/row/samplingStatus: must be string"],
  ["table without row", "table", del("data/row"), "/data: must have required property 'row'"],
  ["table without sampleTime", "table", del("data/sampleTime"), "/data: must have required property 'sampleTime'"],
  ["computedRow as a string", "table", set("data/computedRow", "true"), "/data/computedRow: must be boolean"],
  ["computedColumn as a number", "headline", set("data/computedColumn", 1), "/data/computedColumn: must be string"],
  ["probeTime not a date-time", "table", set("data/probeTime", "yesterday"), '/data/probeTime: must match format "date-time"'],
  ["metrics data with an extra property", "table", set("data/timestamp", T0), "/data: must NOT have additional properties 'timestamp'"],
  // Event target: each dependency rule of the seed
  ["managedEntity without probe", "severity", set("data/target", { gateway: "GW1", managedEntity: "m" }), "/data/target: must have property 'probe' when property 'managedEntity' is present"],
  ["type without managedEntity", "severity", set("data/target", { gateway: "GW1", probe: "p", type: "", sampler: "s" }), "/data/target: must have property 'managedEntity' when property 'type' is present"],
  ["type without sampler", "severity", set("data/target", { gateway: "GW1", probe: "p", managedEntity: "m", type: "" }), "/data/target: must have property 'sampler' when property 'type' is present"],
  ["sampler without managedEntity", "severity", set("data/target", { gateway: "GW1", probe: "p", type: "", sampler: "s" }), "/data/target: must have property 'managedEntity' when property 'sampler' is present"],
  ["sampler without type", "severity", del("data/target/type"), "/data/target: must have property 'type' when property 'sampler' is present"],
  ["dataview without sampler", "severity", set("data/target", { gateway: "GW1", probe: "p", managedEntity: "m", dataview: "d" }), "/data/target: must have property 'sampler' when property 'dataview' is present"],
  ["column without dataview", "severity", set("data/target", { ...SAMPLER, column: "c" }), "/data/target: must have property 'dataview' when property 'column' is present"],
  ["row without column", "severity", del("data/target/column"), "/data/target: must have property 'column' when property 'row' is present"],
  ["filter without probe", "snoozeOn", set("data/target", { gateway: "GW1", filter: FILTER }), "/data/target: must have property 'probe' when property 'filter' is present"],
  ["event target without gateway", "severity", del("data/target/gateway"), "/data/target: must have required property 'gateway'"],
  ["event target with an extra property", "severity", set("data/target/headline", "h"), "/data/target: must NOT have additional properties 'headline'"],
  ["event target row as a number", "severity", set("data/target/row", 1), "/data/target/row: must be string"],
  ["event filter without osType", "severity", set("data/target/filter", { pluginName: "fkm" }), "/data/target/filter: must have required property 'osType'"],
  ["event filter with an extra property", "assign", set("data/target/filter", { ...FILTER, version: "7" }), "/data/target/filter: must NOT have additional properties 'version'"],
  // Event data and the severity payload
  ["event data without timestamp", "severity", del("data/timestamp"), "/data: must have required property 'timestamp'"],
  ["event data with an extra property", "snoozeOff", set("data/sampleTime", T0), "/data: must NOT have additional properties 'sampleTime'"],
  ["event timestamp not a date-time", "unassign", set("data/timestamp", "1714564800"), '/data/timestamp: must match format "date-time"'],
  ["severity not in the enum", "severity", set("data/data/severity", "MAJOR"), '/data/data/severity: must be equal to one of the allowed values: "UNDEFINED", "OK", "WARNING", "CRITICAL", "UNKNOWN"'],
  ["previousSeverity in lower case", "severity", set("data/data/previousSeverity", "ok"), "/data/data/previousSeverity: must be equal to one of the allowed values"],
  ["snoozedParents not an integer", "severity", set("data/data/snoozedParents", 1.5), "/data/data/snoozedParents: must be integer"],
  ["snoozedParents negative", "severity", set("data/data/snoozedParents", -1), "/data/data/snoozedParents: must be >= 0"],
  ["snoozedParents as a string", "severity", set("data/data/snoozedParents", "2"), "/data/data/snoozedParents: must be integer"],
  ["severity payload without active", "severity", del("data/data/active"), "/data/data: must have required property 'active'"],
  ["severity payload without snoozed", "severity", del("data/data/snoozed"), "/data/data: must have required property 'snoozed'"],
  ["severity payload without userAssigned", "severity", del("data/data/userAssigned"), "/data/data: must have required property 'userAssigned'"],
  ["severity payload without snoozedParents", "severity", del("data/data/snoozedParents"), "/data/data: must have required property 'snoozedParents'"],
  ["active as a string", "severity", set("data/data/active", "yes"), "/data/data/active: must be boolean"],
  ["severity payload with an extra property", "severity", set("data/data/comment", "x"), "/data/data: must NOT have additional properties 'comment'"],
  ["severity value without cell", "severity", set("data/data/value", { number: 1 }), "/data/data/value: must have required property 'cell'"],
  ["severity value with an extra property", "severity", set("data/data/value", { cell: "1", unit: "ms" }), "/data/data/value: must NOT have additional properties 'unit'"],
  ["severity value dateTime not a date-time", "severity", set("data/data/value", { cell: "1", dateTime: "noon" }), '/data/data/value/dateTime: must match format "date-time"'],
  ["severity value number as a string", "severity", set("data/data/value", { cell: "1", number: "1" }), "/data/data/value/number: must be number"],
  ["severity type carrying a snooze payload", "snoozeOn", set("type", "severity"), "/data/data: must have required property 'severity'"],
  // Snooze payloads
  ["snooze without snoozed", "snoozeOn", del("data/data/snoozed"), "/data/data: must have required property 'snoozed'"],
  ["snoozed as a string", "snoozeOn", set("data/data/snoozed", "true"), "/data/data/snoozed: must be boolean"],
  ["snooze on with snoozed false is judged as snooze off", "snoozeOn", set("data/data/snoozed", false), "/data/data: must have required property 'unsnoozedBy'"],
  ["snooze on without snoozedBy", "snoozeOn", del("data/data/snoozedBy"), "/data/data: must have required property 'snoozedBy'"],
  ["snooze on without comment", "snoozeOn", del("data/data/comment"), "/data/data: must have required property 'comment'"],
  ["snooze on without period", "snoozeOn", del("data/data/period"), "/data/data: must have required property 'period'"],
  ["snooze period not in the enum", "snoozeOn", set("data/data/period", "Forever"), "/data/data/period: must be equal to one of the allowed values"],
  ["snooze period that only assignments have", "snoozeOn", set("data/data/period", "SeverityToOK"), "/data/data/period: must be equal to one of the allowed values"],
  ["snooze untilTime not a date-time", "snoozeOn", set("data/data/untilTime", "2024-05-02"), '/data/data/untilTime: must match format "date-time"'],
  ["snooze untilSeverity not in the enum", "snoozeOn", set("data/data/untilSeverity", "GREEN"), "/data/data/untilSeverity: must be equal to one of the allowed values"],
  ["snooze untilValueNot as a number", "snoozeOn", set("data/data/untilValueNot", 3), "/data/data/untilValueNot: must be string"],
  ["snooze on with an extra property", "snoozeOn", set("data/data/assignedTo", "bob"), "/data/data: must NOT have additional properties 'assignedTo'"],
  ["snooze off without unsnoozedBy", "snoozeOff", del("data/data/unsnoozedBy"), "/data/data: must have required property 'unsnoozedBy'"],
  ["snooze off with a period", "snoozeOff", set("data/data/period", "Manual"), "/data/data: must NOT have additional properties 'period'"],
  ["snooze off with snoozed true is judged as snooze on", "snoozeOff", set("data/data/snoozed", true), "/data/data: must have required property 'snoozedBy'"],
  ["snooze type carrying an assignment payload", "assign", set("type", "snooze"), "/data/data: must have required property 'snoozed'"],
  // Assignment payloads
  ["assignment without userAssigned", "assign", del("data/data/userAssigned"), "/data/data: must have required property 'userAssigned'"],
  ["userAssigned as a number", "assign", set("data/data/userAssigned", 1), "/data/data/userAssigned: must be boolean"],
  ["assignment without assignedTo", "assign", del("data/data/assignedTo"), "/data/data: must have required property 'assignedTo'"],
  ["assignment without assignedBy", "assign", del("data/data/assignedBy"), "/data/data: must have required property 'assignedBy'"],
  ["assignment without comment", "assign", del("data/data/comment"), "/data/data: must have required property 'comment'"],
  ["assignment period that only snoozes have", "assign", set("data/data/period", "DateTime"), '/data/data/period: must be equal to one of the allowed values: "Manual", "SeverityToOK"'],
  ["assignment untilSeverityNot not in the enum", "assign", set("data/data/untilSeverityNot", "critical"), "/data/data/untilSeverityNot: must be equal to one of the allowed values"],
  ["assignment untilTime not a date-time", "assign", set("data/data/untilTime", "tomorrow"), '/data/data/untilTime: must match format "date-time"'],
  ["assignment with snoozedBy", "assign", set("data/data/snoozedBy", "x"), "/data/data: must NOT have additional properties 'snoozedBy'"],
  ["assignment with userAssigned false is judged as unassignment", "assign", set("data/data/userAssigned", false), "/data/data: must have required property 'unassignedBy'"],
  ["unassignment without unassignedBy", "unassign", del("data/data/unassignedBy"), "/data/data: must have required property 'unassignedBy'"],
  ["unassignment with assignedTo", "unassign", set("data/data/assignedTo", "bob"), "/data/data: must NOT have additional properties 'assignedTo'"],
  ["unassignment with an until field", "unassign", set("data/data/untilTime", T0), "/data/data: must NOT have additional properties 'untilTime'"],
  ["unassignment comment as a number", "unassign", set("data/data/comment", 5), "/data/data/comment: must be string"],
];

/** The JSON pointer at the start of a formatted error, before `: `. */
function pathOf(error: string): string {
  return error.slice(0, error.indexOf(": "));
}

describe("public-v2 schema", () => {
  test("every base message is valid", () => {
    for (const [name, message] of Object.entries(BASE)) {
      assert.deepEqual(validateMessage(message), { ok: true, message }, name);
    }
  });

  test("the tables are as large as the brief asks", () => {
    assert.ok(VALID.length >= 30, `${VALID.length} valid cases`);
    assert.ok(INVALID.length >= 40, `${INVALID.length} invalid cases`);
  });

  describe("valid messages", () => {
    for (const [name, message] of VALID) {
      test(name, () => {
        const result = validateMessage(message);
        assert.deepEqual(result, { ok: true, message });
      });
    }
  });

  describe("invalid messages", () => {
    for (const [name, base, mutation, expected] of INVALID) {
      test(name, () => {
        const message = from(base, mutation);
        assert.notDeepEqual(message, BASE[base], "the mutation changed nothing");
        const result = validateMessage(message);
        assert.equal(result.ok, false, "accepted");
        if (result.ok) return;
        assert.ok(
          result.errors.some((e) => e.startsWith(expected)),
          `expected ${JSON.stringify(expected)} among ${JSON.stringify(result.errors)}`,
        );
        // Only the mutated place is blamed: the other branches of the schema add no noise.
        const where = pathOf(expected);
        for (const error of result.errors) {
          const path = pathOf(error);
          assert.ok(path === where || path.startsWith(`${where}/`), `unrelated error ${error}`);
        }
      });
    }
  });
});

describe("validator API", () => {
  test("PUBLIC_V2_SCHEMA_PATH is an absolute path to an existing file", () => {
    assert.ok(isAbsolute(PUBLIC_V2_SCHEMA_PATH));
    assert.ok(existsSync(PUBLIC_V2_SCHEMA_PATH), PUBLIC_V2_SCHEMA_PATH);
    assert.match(PUBLIC_V2_SCHEMA_PATH, /schema[/\\]public-v2[/\\]public-v2\.schema\.json$/);
  });

  test("a value that is not an object is reported at the root", () => {
    for (const value of [null, 3, "probe", [], undefined]) {
      const result = validateMessage(value);
      assert.deepEqual(result, { ok: false, errors: ["(root): must be object"] }, String(value));
    }
  });

  test("an unknown type reports only the type, not every data kind", () => {
    const result = validateMessage({ type: "alarm", operation: "update", data: {} });
    assert.equal(result.ok, false);
    assert.equal(result.ok ? 0 : result.errors.length, 1);
  });

  test("assertMessage returns a valid message unchanged", () => {
    const message = from("table");
    assert.equal(assertMessage(message), message);
  });

  test("assertMessage throws an Error listing every error", () => {
    const message = from("snoozeOn", del("data/data/snoozedBy"), set("data/data/period", "Never"));
    assert.throws(
      () => assertMessage(message),
      (error: unknown) =>
        error instanceof Error &&
        error.message.includes("/data/data: must have required property 'snoozedBy'") &&
        error.message.includes("/data/data/period: must be equal to one of the allowed values"),
    );
  });
});
