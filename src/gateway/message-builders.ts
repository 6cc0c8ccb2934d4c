/**
 * Builders of the public-v2 messages the gateway publishes (seed C, DESIGN 4.3). Each takes the
 * gateway's view of an item and returns a message that validates against schema/public-v2.
 * Metrics rows are passed in as objects built for the one message (prototype-less, since column
 * names are data), never shared between messages.
 */

import type { DataviewAddress, ProbeParameters } from "../link/protocol.js";
import type {
  DateTimeString,
  HeadlineMessage,
  HeadlineTarget,
  ManagedEntityMessage,
  Operation,
  ProbeMessage,
  TableMessage,
  TableTarget,
} from "../messages/types.js";

/** An instant as the ISO 8601 string messages carry; callers convert once per event, not per message. */
export const iso = (ms: number): DateTimeString => new Date(ms).toISOString();

/** A `probe` message: the probe's parameters, `ConState` included (seed C, Probe data). */
export function probeMessage(
  operation: Operation,
  gateway: string,
  probe: string,
  parameters: ProbeParameters & { ConState: string },
  timestamp: DateTimeString,
): ProbeMessage {
  return {
    type: "probe",
    operation,
    data: { timestamp, target: { gateway, probe }, parameters: { ...parameters } },
  };
}

/** A `managedEntity` message: the managed entity's setup attributes (seed C, Managed entity data). */
export function managedEntityMessage(
  operation: Operation,
  gateway: string,
  probe: string,
  managedEntity: string,
  attributes: Readonly<Record<string, string>>,
  timestamp: DateTimeString,
): ManagedEntityMessage {
  return {
    type: "managedEntity",
    operation,
    data: { timestamp, target: { gateway, probe, managedEntity }, attributes: { ...attributes } },
  };
}

export interface MetricsContext {
  readonly gateway: string;
  readonly probe: string;
  readonly osType: string;
  readonly plugin: string;
  readonly address: DataviewAddress;
}

function metricsTarget(context: MetricsContext): HeadlineTarget {
  const { address } = context;
  return {
    gateway: context.gateway,
    probe: context.probe,
    managedEntity: address.managedEntity,
    type: address.samplerType,
    sampler: address.sampler,
    dataview: address.dataview,
    filter: { osType: context.osType, pluginName: context.plugin },
  };
}

/** The target of a table message: a headline's target and then `row` (one object). */
function tableTarget(context: MetricsContext, row: string): TableTarget {
  return { ...metricsTarget(context), row };
}

/** A `table` message carries every column of one row, the row-name column included (DESIGN 4.3). */
export function tableMessage(
  operation: Operation,
  context: MetricsContext,
  row: string,
  cells: Record<string, string>,
  sampleTime: DateTimeString,
  probeTime: DateTimeString,
): TableMessage {
  return {
    type: "table",
    operation,
    data: metricsData(tableTarget(context, row), cells, sampleTime, probeTime),
  };
}

/** A `headline` message carries every headline of one dataview and no `target.row`. */
export function headlineMessage(
  operation: Operation,
  context: MetricsContext,
  headlines: Record<string, string>,
  sampleTime: DateTimeString,
  probeTime: DateTimeString,
): HeadlineMessage {
  return {
    type: "headline",
    operation,
    data: metricsData(metricsTarget(context), headlines, sampleTime, probeTime),
  };
}

/** The `data` of a table or headline message, its keys in the order public-v2 writes them. */
function metricsData<T>(
  target: T,
  row: Record<string, string>,
  sampleTime: DateTimeString,
  probeTime: DateTimeString,
) {
  return { sampleTime, probeTime, target, row };
}
