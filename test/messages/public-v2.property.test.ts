// fast-check properties of the public-v2 validator: messages built from arbitraries over the
// TypeScript types of src/messages/types.ts validate, also after a JSON round trip; and no extra
// envelope property is accepted.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type {
  AssignmentPayload,
  EventTarget,
  HeadlineMessage,
  ManagedEntityMessage,
  MetricsFilter,
  ProbeMessage,
  PublicV2Message,
  SeverityMessage,
  SeverityPayload,
  SnoozeMessage,
  SnoozeOffPayload,
  SnoozeOnPayload,
  TableMessage,
  UnassignmentPayload,
  UserAssignmentMessage,
} from "../../src/messages/types.js";
import { ASSIGNMENT_PERIODS, OPERATIONS, SEVERITIES, SNOOZE_PERIODS } from "../../src/messages/types.js";
import { validateMessage } from "../../src/messages/validate.js";

const RUNS = 500;

// Any string, astral and lone-surrogate code units included: the schema constrains none of them.
const text = fc.string({ unit: "binary", maxLength: 12 });
const operation = fc.constantFrom(...OPERATIONS);
const severity = fc.constantFrom(...SEVERITIES);
const stringMap = fc.dictionary(text, text, { maxKeys: 5 });

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/** RFC 3339 date-times: `Z`, `+00:00` or any offset up to ±23:59, with 0 to 6 fractional digits. */
const dateTime = fc
  .tuple(
    fc.date({
      min: new Date("0001-01-01T00:00:00Z"),
      max: new Date("9999-12-31T23:59:59Z"),
      noInvalidDate: true,
    }),
    fc.integer({ min: 0, max: 6 }),
    fc.oneof(fc.constant("Z"), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })),
  )
  .map(([date, digits, offset]) => {
    const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ for years 0001..9999
    const fraction = digits === 0 ? "" : `.${`${iso.slice(20, 23)}000`.slice(0, digits)}`;
    const zone =
      offset === "Z"
        ? "Z"
        : `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
    return `${iso.slice(0, 19)}${fraction}${zone}`;
  });

const filter: fc.Arbitrary<MetricsFilter> = fc.record({ osType: text, pluginName: text });

/** Optional keys of `record` may be absent, never `undefined` (exactOptionalPropertyTypes). */
function partial<T extends object, K extends keyof T>(
  model: { [P in keyof T]: fc.Arbitrary<T[P]> },
  requiredKeys: K[],
): fc.Arbitrary<T> {
  return fc.record(model, { requiredKeys }) as unknown as fc.Arbitrary<T>;
}

const probeMessage: fc.Arbitrary<ProbeMessage> = fc.record({
  type: fc.constant("probe"),
  operation,
  data: fc.record({
    timestamp: dateTime,
    target: fc.record({ gateway: text, probe: text }),
    parameters: fc
      .tuple(
        stringMap,
        fc.record(
          { osType: text, HostName: text, Port: text, ConState: text, OS: text, Version: text },
          { requiredKeys: ["osType"] },
        ),
      )
      .map(([extra, known]) => ({ ...extra, ...known })),
  }),
});

const managedEntityMessage: fc.Arbitrary<ManagedEntityMessage> = fc.record({
  type: fc.constant("managedEntity"),
  operation,
  data: fc.record({
    timestamp: dateTime,
    target: fc.record({ gateway: text, probe: text, managedEntity: text }),
    attributes: stringMap,
  }),
});

const samplerTarget = { gateway: text, probe: text, managedEntity: text, type: text, sampler: text };
const metricsOptional = { probeTime: dateTime, computedColumn: text, computedRow: fc.boolean() };

const headlineMessage: fc.Arbitrary<HeadlineMessage> = fc.record({
  type: fc.constant("headline"),
  operation,
  data: partial<HeadlineMessage["data"], "sampleTime" | "target" | "row">(
    {
      sampleTime: dateTime,
      target: fc.record({ ...samplerTarget, dataview: text, filter }),
      row: stringMap,
      ...metricsOptional,
    },
    ["sampleTime", "target", "row"],
  ),
});

const tableMessage: fc.Arbitrary<TableMessage> = fc.record({
  type: fc.constant("table"),
  operation,
  data: partial<TableMessage["data"], "sampleTime" | "target" | "row">(
    {
      sampleTime: dateTime,
      target: fc.record({ ...samplerTarget, dataview: text, row: text, filter }),
      row: stringMap,
      ...metricsOptional,
    },
    ["sampleTime", "target", "row"],
  ),
});

/**
 * Event targets at every depth the seed's dependencies allow: gateway, probe, managed entity,
 * sampler (with its type), dataview, headline (column) and cell (row and column); `filter` only
 * from the probe level down.
 */
const eventTarget: fc.Arbitrary<EventTarget> = fc
  .tuple(fc.integer({ min: 0, max: 6 }), fc.record(samplerTarget), text, text, text, fc.option(filter))
  .map(([depth, names, dataview, row, column, maybeFilter]) => {
    const target: EventTarget = { gateway: names.gateway };
    if (depth >= 1) target.probe = names.probe;
    if (depth >= 2) target.managedEntity = names.managedEntity;
    if (depth >= 3) Object.assign(target, { type: names.type, sampler: names.sampler });
    if (depth >= 4) target.dataview = dataview;
    if (depth >= 5) target.column = column;
    if (depth >= 6) target.row = row;
    if (depth >= 1 && maybeFilter !== null) target.filter = maybeFilter;
    return target;
  });

const severityPayload = partial<
  SeverityPayload,
  "severity" | "active" | "snoozed" | "snoozedParents" | "userAssigned"
>(
  {
    severity,
    previousSeverity: severity,
    active: fc.boolean(),
    snoozed: fc.boolean(),
    snoozedParents: fc.nat(),
    userAssigned: fc.boolean(),
    value: fc.record(
      { cell: text, dateTime, number: fc.double({ noNaN: true, noDefaultInfinity: true }) },
      {
        requiredKeys: ["cell"],
      },
    ),
  },
  ["severity", "active", "snoozed", "snoozedParents", "userAssigned"],
);

const until = {
  untilSeverity: severity,
  untilSeverityNot: severity,
  untilTime: dateTime,
  untilValueNot: text,
};

const snoozeOn = partial<SnoozeOnPayload, "snoozed" | "snoozedBy" | "comment" | "period">(
  {
    snoozed: fc.constant(true),
    snoozedBy: text,
    comment: text,
    period: fc.constantFrom(...SNOOZE_PERIODS),
    ...until,
  },
  ["snoozed", "snoozedBy", "comment", "period"],
);
const snoozeOff = partial<SnoozeOffPayload, "snoozed" | "unsnoozedBy">(
  { snoozed: fc.constant(false), unsnoozedBy: text, comment: text },
  ["snoozed", "unsnoozedBy"],
);
const assignment = partial<
  AssignmentPayload,
  "userAssigned" | "assignedTo" | "assignedBy" | "comment" | "period"
>(
  {
    userAssigned: fc.constant(true),
    assignedTo: text,
    assignedBy: text,
    comment: text,
    period: fc.constantFrom(...ASSIGNMENT_PERIODS),
    ...until,
  },
  ["userAssigned", "assignedTo", "assignedBy", "comment", "period"],
);
const unassignment = partial<UnassignmentPayload, "userAssigned" | "unassignedBy">(
  { userAssigned: fc.constant(false), unassignedBy: text, comment: text },
  ["userAssigned", "unassignedBy"],
);

const severityMessage: fc.Arbitrary<SeverityMessage> = fc.record({
  type: fc.constant("severity"),
  operation,
  data: fc.record({ timestamp: dateTime, target: eventTarget, data: severityPayload }),
});
const snoozeMessage: fc.Arbitrary<SnoozeMessage> = fc.record({
  type: fc.constant("snooze"),
  operation,
  data: fc.record({ timestamp: dateTime, target: eventTarget, data: fc.oneof(snoozeOn, snoozeOff) }),
});
const userAssignmentMessage: fc.Arbitrary<UserAssignmentMessage> = fc.record({
  type: fc.constant("userassignment"),
  operation,
  data: fc.record({ timestamp: dateTime, target: eventTarget, data: fc.oneof(assignment, unassignment) }),
});

const message: fc.Arbitrary<PublicV2Message> = fc.oneof(
  probeMessage,
  managedEntityMessage,
  headlineMessage,
  tableMessage,
  severityMessage,
  snoozeMessage,
  userAssignmentMessage,
);

describe("public-v2 properties", () => {
  test("random messages built from the TypeScript types validate", () => {
    fc.assert(
      fc.property(message, (m) => {
        assert.deepEqual(validateMessage(m), { ok: true, message: m });
      }),
      { numRuns: RUNS },
    );
  });

  test("they still validate after a JSON round trip", () => {
    fc.assert(
      fc.property(message, (m) => {
        const result = validateMessage(JSON.parse(JSON.stringify(m)));
        assert.ok(result.ok, result.ok ? "" : result.errors.join("\n"));
      }),
      { numRuns: RUNS },
    );
  });

  test("an extra envelope property is always rejected, at the root", () => {
    const extraKey = text.filter((k) => !["type", "operation", "data"].includes(k));
    fc.assert(
      fc.property(message, extraKey, (m, key) => {
        const result = validateMessage({ ...m, [key]: 1 });
        assert.equal(result.ok, false);
        if (!result.ok)
          assert.ok(result.errors.includes(`(root): must NOT have additional properties '${key}'`));
      }),
      { numRuns: RUNS },
    );
  });
});
