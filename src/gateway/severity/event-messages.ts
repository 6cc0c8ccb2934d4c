/**
 * Builders of the three public-v2 event messages (seed C "Event data", DESIGN 4.3): `severity`,
 * `snooze` and `userassignment`, each `update` for a change and `snapshot` when current state is
 * republished. Every one validates against schema/public-v2 (the publisher checks).
 */
import type {
  AssignmentPayload,
  AssignmentPeriod,
  DateTimeString,
  EventTarget,
  Operation,
  Severity,
  SeverityMessage,
  SeverityValue,
  SnoozeMessage,
  SnoozePeriod,
  UserAssignmentMessage,
} from "../../messages/types.js";
import { parseNumber } from "./rules.js";

/** Automatic release conditions of a snooze or an assignment (seed C: the `until*` fields). */
export interface Until {
  readonly untilSeverity?: Severity;
  readonly untilSeverityNot?: Severity;
  /** Epoch ms. */
  readonly untilTime?: number;
  readonly untilValueNot?: string;
}

export interface SnoozeState extends Until {
  readonly snoozedBy: string;
  /**
   * The `sub` of the token that sent the command (DESIGN 5.4a), beside the body's `snoozedBy`;
   * kept in the gateway's state and items, never published (public-v2 has no such field).
   */
  readonly snoozedBySubject?: string;
  readonly comment: string;
  readonly period: SnoozePeriod;
  /** Epoch ms of the command. */
  readonly at: number;
}

export interface AssignmentState extends Until {
  readonly assignedTo: string;
  readonly assignedBy: string;
  /** The `sub` of the token that sent the command, as `snoozedBySubject`; never published. */
  readonly assignedBySubject?: string;
  readonly comment: string;
  readonly period: AssignmentPeriod;
  readonly at: number;
}

/** RFC 3339 date-time with a zone, the only text read as a `dateTime` value. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * The `value` block of a cell or headline (seed C): `cell` as displayed; `number` when the value
 * parses as a number; `dateTime` when it is an RFC 3339 date-time (normalised to UTC).
 */
export function severityValue(cell: string): SeverityValue {
  const value: SeverityValue = { cell };
  const number = parseNumber(cell);
  if (number !== undefined) value.number = number;
  else if (DATE_TIME.test(cell)) {
    const ms = Date.parse(cell);
    if (Number.isFinite(ms)) value.dateTime = new Date(ms).toISOString();
  }
  return value;
}

export interface SeverityFacts {
  readonly severity: Severity;
  readonly previousSeverity: Severity | undefined;
  readonly active: boolean;
  readonly snoozed: boolean;
  readonly snoozedParents: number;
  readonly userAssigned: boolean;
  /** Cells and headlines only. */
  readonly value: string | undefined;
}

export function severityMessage(
  operation: Operation,
  target: EventTarget,
  facts: SeverityFacts,
  timestamp: DateTimeString,
): SeverityMessage {
  return {
    type: "severity",
    operation,
    data: {
      timestamp,
      target: { ...target },
      data: {
        severity: facts.severity,
        ...(facts.previousSeverity === undefined ? {} : { previousSeverity: facts.previousSeverity }),
        active: facts.active,
        snoozed: facts.snoozed,
        snoozedParents: facts.snoozedParents,
        userAssigned: facts.userAssigned,
        ...(facts.value === undefined ? {} : { value: severityValue(facts.value) }),
      },
    },
  };
}

function untilFields(until: Until) {
  return {
    ...(until.untilSeverity === undefined ? {} : { untilSeverity: until.untilSeverity }),
    ...(until.untilSeverityNot === undefined ? {} : { untilSeverityNot: until.untilSeverityNot }),
    ...(until.untilTime === undefined ? {} : { untilTime: new Date(until.untilTime).toISOString() }),
    ...(until.untilValueNot === undefined ? {} : { untilValueNot: until.untilValueNot }),
  };
}

/** `snooze` with `snoozed: true` (seed C "snooze (on)"). */
export function snoozeOnMessage(
  operation: Operation,
  target: EventTarget,
  state: SnoozeState,
  timestamp: DateTimeString,
): SnoozeMessage {
  return {
    type: "snooze",
    operation,
    data: {
      timestamp,
      target: { ...target },
      data: {
        snoozed: true,
        snoozedBy: state.snoozedBy,
        comment: state.comment,
        period: state.period,
        ...untilFields(state),
      },
    },
  };
}

/** `snooze` with `snoozed: false` (seed C "snooze (off)"). */
export function snoozeOffMessage(
  target: EventTarget,
  unsnoozedBy: string,
  comment: string | undefined,
  timestamp: DateTimeString,
): SnoozeMessage {
  return {
    type: "snooze",
    operation: "update",
    data: {
      timestamp,
      target: { ...target },
      data: { snoozed: false, unsnoozedBy, ...(comment === undefined ? {} : { comment }) },
    },
  };
}

/** `userassignment` with `userAssigned: true` (seed C "assignment"). */
export function assignMessage(
  operation: Operation,
  target: EventTarget,
  state: AssignmentState,
  timestamp: DateTimeString,
): UserAssignmentMessage {
  const payload: AssignmentPayload = {
    userAssigned: true,
    assignedTo: state.assignedTo,
    assignedBy: state.assignedBy,
    comment: state.comment,
    period: state.period,
    ...untilFields(state),
  };
  return { type: "userassignment", operation, data: { timestamp, target: { ...target }, data: payload } };
}

/** `userassignment` with `userAssigned: false` (seed C "unassignment"). */
export function unassignMessage(
  target: EventTarget,
  unassignedBy: string,
  comment: string | undefined,
  timestamp: DateTimeString,
): UserAssignmentMessage {
  return {
    type: "userassignment",
    operation: "update",
    data: {
      timestamp,
      target: { ...target },
      data: { userAssigned: false, unassignedBy, ...(comment === undefined ? {} : { comment }) },
    },
  };
}
