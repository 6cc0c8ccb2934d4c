// Keeps src/messages/types.ts in step with schema/public-v2: typed samples of every union member,
// with every optional field, validate; the exported enums equal the schema's; and every property
// the schema names appears in some typed sample, so a field added to one side fails here.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import type {
  HeadlineMessage,
  HeadlineTarget,
  ManagedEntityMessage,
  MetricsData,
  ProbeData,
  ProbeMessage,
  PublicV2Message,
  SeverityMessage,
  SnoozeMessage,
  SnoozeOnPayload,
  TableMessage,
  TableTarget,
  UserAssignmentMessage,
} from "../../src/messages/types.js";
import {
  ASSIGNMENT_PERIODS,
  MESSAGE_TYPES,
  OPERATIONS,
  SEVERITIES,
  SNOOZE_PERIODS,
  TOPIC_OF,
} from "../../src/messages/types.js";
import { PUBLIC_V2_SCHEMA_PATH, validateMessage } from "../../src/messages/validate.js";

const T0 = "2024-05-01T12:00:00Z";
const FILTER = { osType: "Linux", pluginName: "rest-api" };
const CELL_TARGET = {
  gateway: "GW1",
  probe: "probe1",
  managedEntity: "web-01",
  type: "",
  sampler: "orders",
  dataview: "queue",
  row: "eu-1",
  column: "queued",
  filter: FILTER,
};

const probe: ProbeMessage = {
  type: "probe",
  operation: "create",
  data: {
    timestamp: T0,
    target: { gateway: "GW1", probe: "probe1" },
    parameters: {
      osType: "Linux",
      HostName: "host1",
      Port: "7036",
      ConState: "Up",
      OS: "Linux 6.1",
      Version: "7.0",
      Site: "emea",
    },
  },
};

const managedEntity: ManagedEntityMessage = {
  type: "managedEntity",
  operation: "update",
  data: {
    timestamp: T0,
    target: { gateway: "GW1", probe: "probe1", managedEntity: "web-01" },
    attributes: { Environment: "prod" },
  },
};

const headline: HeadlineMessage = {
  type: "headline",
  operation: "update",
  data: {
    sampleTime: T0,
    probeTime: T0,
    target: {
      gateway: "GW1",
      probe: "probe1",
      managedEntity: "web-01",
      type: "",
      sampler: "orders",
      dataview: "queue",
      filter: FILTER,
    },
    row: { samplingStatus: "OK", totalRows: "1" },
    computedColumn: "rate",
    computedRow: false,
  } satisfies MetricsData<HeadlineTarget>,
};

const table: TableMessage = {
  type: "table",
  operation: "snapshot",
  data: {
    sampleTime: T0,
    probeTime: T0,
    target: { ...headline.data.target, row: "eu-1" },
    row: { name: "eu-1", queued: "12" },
    computedColumn: "rate",
    computedRow: true,
  } satisfies MetricsData<TableTarget>,
};

const severity: SeverityMessage = {
  type: "severity",
  operation: "update",
  data: {
    timestamp: T0,
    target: CELL_TARGET,
    data: {
      severity: "CRITICAL",
      previousSeverity: "OK",
      active: true,
      snoozed: false,
      snoozedParents: 0,
      userAssigned: false,
      value: { cell: "12", dateTime: T0, number: 12 },
    },
  },
};

const snoozeOn: SnoozeMessage = {
  type: "snooze",
  operation: "update",
  data: {
    timestamp: T0,
    target: CELL_TARGET,
    data: {
      snoozed: true,
      snoozedBy: "alice",
      comment: "deploying",
      period: "SeverityToOrTime",
      untilSeverity: "OK",
      untilSeverityNot: "CRITICAL",
      untilTime: T0,
      untilValueNot: "12",
    },
  },
};

const snoozeOff: SnoozeMessage = {
  type: "snooze",
  operation: "snapshot",
  data: {
    timestamp: T0,
    target: CELL_TARGET,
    data: { snoozed: false, unsnoozedBy: "system", comment: "done" },
  },
};

const assignment: UserAssignmentMessage = {
  type: "userassignment",
  operation: "update",
  data: {
    timestamp: T0,
    target: CELL_TARGET,
    data: {
      userAssigned: true,
      assignedTo: "bob",
      assignedBy: "alice",
      comment: "yours",
      period: "SeverityToOrTime",
      untilSeverity: "OK",
      untilSeverityNot: "WARNING",
      untilTime: T0,
      untilValueNot: "12",
    },
  },
};

const unassignment: UserAssignmentMessage = {
  type: "userassignment",
  operation: "update",
  data: {
    timestamp: T0,
    target: CELL_TARGET,
    data: { userAssigned: false, unassignedBy: "bob", comment: "fixed" },
  },
};

const SAMPLES: [name: string, message: PublicV2Message][] = [
  ["probe", probe],
  ["managedEntity", managedEntity],
  ["headline", headline],
  ["table", table],
  ["severity", severity],
  ["snooze on", snoozeOn],
  ["snooze off", snoozeOff],
  ["assignment", assignment],
  ["unassignment", unassignment],
];

// The types reject what the schema rejects: `tsc` fails if one of these parts compiles. Each is a
// part of a sample, put back into its message by the test below.
const headlineDataWithRow: unknown =
  // @ts-expect-error a headline target has no row
  { ...headline.data, target: { ...headline.data.target, row: "r" } } satisfies MetricsData<HeadlineTarget>;
const tableDataWithoutRow: unknown =
  // @ts-expect-error a table target needs its row
  { ...table.data, target: headline.data.target } satisfies MetricsData<TableTarget>;
const numberParameter: unknown =
  // @ts-expect-error probe parameters are strings
  { osType: "Linux", Cores: 8 } satisfies ProbeData["parameters"];
const foreverSnooze: unknown =
  // @ts-expect-error "Forever" is no snooze period
  { snoozed: true, snoozedBy: "alice", comment: "", period: "Forever" } satisfies SnoozeOnPayload;

type SchemaNode = { [key: string]: unknown };

function readSchema(): SchemaNode {
  return JSON.parse(readFileSync(PUBLIC_V2_SCHEMA_PATH, "utf8")) as SchemaNode;
}

/** The `enum` of the schema's `$defs[name]`. */
function schemaEnum(name: string): unknown {
  const defs = readSchema().$defs as Record<string, SchemaNode>;
  return defs[name]?.enum;
}

/** Every key of every `properties` object anywhere in the schema. */
function schemaPropertyNames(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) {
    for (const item of node) schemaPropertyNames(item, out);
  } else if (typeof node === "object" && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === "properties" && typeof value === "object" && value !== null) {
        for (const name of Object.keys(value)) out.add(name);
      }
      schemaPropertyNames(value, out);
    }
  }
  return out;
}

/** Every property name used anywhere in a sample message. */
function sampleKeys(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value === "object" && value !== null) {
    for (const [key, child] of Object.entries(value)) {
      out.add(key);
      sampleKeys(child, out);
    }
  }
  return out;
}

describe("types.ts and the public-v2 schema", () => {
  for (const [name, message] of SAMPLES) {
    test(`typed ${name} sample validates`, () => {
      assert.deepEqual(validateMessage(message), { ok: true, message });
    });
  }

  test("the samples cover every message type", () => {
    assert.deepEqual(new Set(SAMPLES.map(([, m]) => m.type)), new Set(MESSAGE_TYPES));
  });

  test("every property the schema names appears in a typed sample", () => {
    const used = new Set(SAMPLES.flatMap(([, m]) => [...sampleKeys(m)]));
    const missing = [...schemaPropertyNames(readSchema())].filter((name) => !used.has(name));
    assert.deepEqual(missing, []);
  });

  test("the type-rejected variants are also rejected by the schema", () => {
    const messages = [
      { ...headline, data: headlineDataWithRow },
      { ...table, data: tableDataWithoutRow },
      { ...probe, data: { ...probe.data, parameters: numberParameter } },
      { ...snoozeOn, data: { ...snoozeOn.data, data: foreverSnooze } },
    ];
    for (const message of messages) assert.equal(validateMessage(message).ok, false, JSON.stringify(message));
  });

  const ENUMS: [name: string, exported: readonly string[], def: string][] = [
    ["MESSAGE_TYPES", MESSAGE_TYPES, "messageType"],
    ["OPERATIONS", OPERATIONS, "operation"],
    ["SEVERITIES", SEVERITIES, "severity"],
    ["SNOOZE_PERIODS", SNOOZE_PERIODS, "snoozePeriod"],
    ["ASSIGNMENT_PERIODS", ASSIGNMENT_PERIODS, "assignmentPeriod"],
  ];
  for (const [name, exported, def] of ENUMS) {
    test(`${name} equals the schema's $defs.${def}.enum`, () => {
      assert.deepEqual(schemaEnum(def), [...exported]);
    });
  }

  test("TOPIC_OF has exactly the message types as keys", () => {
    assert.deepEqual(Object.keys(TOPIC_OF).sort(), [...MESSAGE_TYPES].sort());
  });
});
