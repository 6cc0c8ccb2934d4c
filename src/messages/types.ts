/**
 * TypeScript shapes of the public-v2 messages a gateway publishes (seed area C, DESIGN 4.3).
 * Kept in step with `schema/public-v2/public-v2.schema.json`: test/messages/schema-types.test.ts
 * checks that typed sample messages validate against the schema and that the enums below equal the
 * schema's.
 */

/** An ISO 8601 date-time string (RFC 3339 `date-time`). */
export type DateTimeString = string;

export const MESSAGE_TYPES = [
  "probe",
  "managedEntity",
  "headline",
  "table",
  "severity",
  "snooze",
  "userassignment",
] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

export const OPERATIONS = ["create", "update", "delete", "snapshot"] as const;
export type Operation = (typeof OPERATIONS)[number];

export const SEVERITIES = ["UNDEFINED", "OK", "WARNING", "CRITICAL", "UNKNOWN"] as const;
export type Severity = (typeof SEVERITIES)[number];

export const SNOOZE_PERIODS = [
  "Manual",
  "SeverityTo",
  "SeverityFrom",
  "Time",
  "DateTime",
  "ValueChanges",
  "SeverityToOrTime",
  "Until",
  "Unknown",
] as const;
export type SnoozePeriod = (typeof SNOOZE_PERIODS)[number];

export const ASSIGNMENT_PERIODS = [
  "Manual",
  "SeverityToOK",
  "SeverityTo",
  "SeverityFrom",
  "Time",
  "SeverityToOrTime",
  "ValueChanges",
  "Until",
  "Unknown",
] as const;
export type AssignmentPeriod = (typeof ASSIGNMENT_PERIODS)[number];

/** Probe data: `parameters.osType` is required; every other parameter is an optional string. */
export interface ProbeData {
  timestamp: DateTimeString;
  target: { gateway: string; probe: string };
  parameters: {
    osType: string;
    HostName?: string;
    Port?: string;
    ConState?: string;
    OS?: string;
    Version?: string;
    [name: string]: string;
  };
}

export interface ManagedEntityData {
  timestamp: DateTimeString;
  target: { gateway: string; probe: string; managedEntity: string };
  attributes: Record<string, string>;
}

export interface MetricsFilter {
  osType: string;
  pluginName: string;
}

export interface MetricsTarget {
  gateway: string;
  probe: string;
  managedEntity: string;
  type: string;
  sampler: string;
  dataview: string;
  /** Absent for headlines, present for table rows (seed, Events table). */
  row?: string;
  filter: MetricsFilter;
}

/** Target of a `headline` message: a {@link MetricsTarget} without `row`. */
export type HeadlineTarget = Omit<MetricsTarget, "row"> & { row?: never };

/** Target of a `table` message: a {@link MetricsTarget} naming its row. */
export type TableTarget = MetricsTarget & { row: string };

/** Metrics data; `T` narrows the target for headline and table messages. */
export interface MetricsData<T extends MetricsTarget = MetricsTarget> {
  sampleTime: DateTimeString;
  probeTime?: DateTimeString;
  target: T;
  row: Record<string, string>;
  computedColumn?: string;
  computedRow?: boolean;
}

/** Identifies one item at any level of the hierarchy; see the seed's dependency rules. */
export interface EventTarget {
  gateway: string;
  probe?: string;
  managedEntity?: string;
  type?: string;
  sampler?: string;
  dataview?: string;
  row?: string;
  column?: string;
  filter?: MetricsFilter;
}

export interface SeverityValue {
  cell: string;
  dateTime?: DateTimeString;
  number?: number;
}

export interface SeverityPayload {
  severity: Severity;
  previousSeverity?: Severity;
  active: boolean;
  snoozed: boolean;
  snoozedParents: number;
  userAssigned: boolean;
  value?: SeverityValue;
}

interface UntilConditions {
  untilSeverity?: Severity;
  untilSeverityNot?: Severity;
  untilTime?: DateTimeString;
  untilValueNot?: string;
}

export interface SnoozeOnPayload extends UntilConditions {
  snoozed: true;
  snoozedBy: string;
  comment: string;
  period: SnoozePeriod;
}

export interface SnoozeOffPayload {
  snoozed: false;
  unsnoozedBy: string;
  comment?: string;
}

export interface AssignmentPayload extends UntilConditions {
  userAssigned: true;
  assignedTo: string;
  assignedBy: string;
  comment: string;
  period: AssignmentPeriod;
}

export interface UnassignmentPayload {
  userAssigned: false;
  unassignedBy: string;
  comment?: string;
}

export interface EventData<P> {
  timestamp: DateTimeString;
  target: EventTarget;
  data: P;
}

interface Envelope<T extends MessageType, D> {
  type: T;
  operation: Operation;
  data: D;
}

export type ProbeMessage = Envelope<"probe", ProbeData>;
export type ManagedEntityMessage = Envelope<"managedEntity", ManagedEntityData>;
// The schema forbids `target.row` on headline messages and requires it on table messages (seed C,
// Events table), and so do these types.
export type HeadlineMessage = Envelope<"headline", MetricsData<HeadlineTarget>>;
export type TableMessage = Envelope<"table", MetricsData<TableTarget>>;
export type SeverityMessage = Envelope<"severity", EventData<SeverityPayload>>;
export type SnoozeMessage = Envelope<"snooze", EventData<SnoozeOnPayload | SnoozeOffPayload>>;
export type UserAssignmentMessage = Envelope<
  "userassignment",
  EventData<AssignmentPayload | UnassignmentPayload>
>;

/** Every public-v2 message, discriminated by `type`. */
export type PublicV2Message =
  | ProbeMessage
  | ManagedEntityMessage
  | HeadlineMessage
  | TableMessage
  | SeverityMessage
  | SnoozeMessage
  | UserAssignmentMessage;

/** The message of one type, e.g. `MessageOf<"table">`. */
export type MessageOf<T extends MessageType> = Extract<PublicV2Message, { type: T }>;

/** Publication topic of each message type (DESIGN 4.3): entities, metrics or events. */
export type Topic = "entities" | "metrics" | "events";
export const TOPIC_OF: Record<MessageType, Topic> = {
  probe: "entities",
  managedEntity: "entities",
  headline: "metrics",
  table: "metrics",
  severity: "events",
  snooze: "events",
  userassignment: "events",
};
