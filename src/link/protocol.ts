/**
 * The probe link protocol (DESIGN 1 "probe link", DESIGN 4.3): what a probe and its gateway say to
 * each other, the same frames in-process (`vigil up`) and over a WebSocket on the gateway port
 * (`/v1/probe-link`, JSON text frames).
 *
 * Probe → gateway: `hello`, then (after `welcome`) optionally `parameters`, then its **current
 * state** in `state` batches (the last one has `last: true`), then `changes` batches; `heartbeat`
 * at any time; `bye` on a clean stop. Gateway → probe: `welcome` (the probe's part of the setup,
 * the gateway-wide limits, the credit window), `setup` (live update of that part), `ack` (a batch
 * was applied and its messages handed to the publisher; returns credit), `heartbeat`, `error`.
 *
 * Flow control (DESIGN 1 "Hand-offs", DESIGN 5.4b): the probe has at most `credit` batches
 * unacknowledged. Every frame that makes the gateway publish (`state`, `changes` and `parameters`)
 * is a batch: it carries the next sequence number, from 1 on each link, and counts against the
 * credit; an `ack` is cumulative (every batch up to `seq`). The other frames (`hello`, `heartbeat`,
 * `bye`) queue nothing: a second `hello` is a protocol error and `bye` ends the link.
 *
 * Names that clients send (columns, rows, dataviews) are always values in arrays or strings here,
 * never object keys, so a frame can be parsed from JSON and read without prototype tricks.
 */

import type { GatewaySetup } from "../config/setup.js";
import { type DataLimits, DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import type { Severity } from "../messages/types.js";
import type { WireProbeLimits, WireProbeSetup } from "./wire-setup.js";

/** Version of this protocol; a probe and a gateway must agree exactly (a mismatch is refused). */
export const LINK_PROTOCOL_VERSION = 2;

/** Where the gateway serves the link (WebSocket upgrade on the gateway port, DESIGN 1). */
export const LINK_PATH = "/v1/probe-link";

/** Parameters of a probe as published in `probe` messages (seed C, Probe data). */
export interface ProbeParameters {
  readonly osType: string;
  readonly HostName: string;
  readonly Port: string;
  readonly OS: string;
  readonly Version: string;
}

export interface DataviewAddress {
  readonly managedEntity: string;
  readonly sampler: string;
  /** Sampler type, "" when none. */
  readonly samplerType: string;
  readonly dataview: string;
}

/**
 * The cells of one row in the dataview's column order: a string is a cell's value, a positive
 * integer `n` stands for `n` blank cells, and trailing blanks are left out. Wide, sparse rows
 * stay as small as the data that was sent.
 */
export type WireCells = readonly (string | number)[];

/** One row under its published name (duplicates already `<name>_duplicateN`, DESIGN 3.3). */
export interface WireRow {
  readonly name: string;
  readonly cells: WireCells;
  /** When the probe received this row's data (epoch ms); the enclosing change's `at` when absent. */
  readonly at?: number;
  /** Cell severities the sampler sets (fkm `matches`, DESIGN 3.4); absent when it sets none. */
  readonly severities?: WireSeverities;
}

/**
 * Cell severities a sampler sets itself, as `[column, severity]` pairs (an fkm keyword row's
 * `matches` cell, DESIGN 3.4: published like a rule's). Absent on a row: the sampler sets none.
 */
export type WireSeverities = readonly (readonly [string, Severity])[];

/** Headlines as `[name, value]` pairs, in display order. */
export type WireHeadlines = readonly (readonly [string, string])[];

/**
 * One change in published terms (DESIGN 4.3). `at` is when the probe received the data (epoch ms),
 * published as `probeTime`. Streams need no kind of their own: a sampler's streams travel as its
 * `Streams Dataview` (DESIGN 3.4), an ordinary dataview; message bodies never cross the link.
 */
export type Change =
  /** A row written (or renamed by duplicate renumbering): published `create` or `update`. */
  | {
      readonly kind: "row";
      readonly dataview: DataviewAddress;
      readonly at: number;
      readonly name: string;
      readonly cells: WireCells;
      /** The dataview's whole column list, present only when this change altered it. */
      readonly columns?: readonly string[];
      /** Cell severities the sampler sets (see {@link WireSeverities}); absent when it sets none. */
      readonly severities?: WireSeverities;
    }
  | {
      readonly kind: "rowDelete";
      readonly dataview: DataviewAddress;
      readonly at: number;
      readonly name: string;
    }
  /** The whole dataview (PUT dataview, or an item of the probe's state). */
  | {
      readonly kind: "dataview";
      readonly dataview: DataviewAddress;
      readonly at: number;
      /** Plug-in of the sampler: `rest-api` or `fkm`. */
      readonly plugin: string;
      readonly columns: readonly string[];
      readonly rows: readonly WireRow[];
      readonly headlines: WireHeadlines;
    }
  | { readonly kind: "dataviewDelete"; readonly dataview: DataviewAddress; readonly at: number }
  | {
      readonly kind: "headlines";
      readonly dataview: DataviewAddress;
      readonly at: number;
      readonly headlines: WireHeadlines;
    };

export type ChangeKind = Change["kind"];

/** The gateway-wide settings a probe applies (DESIGN 2 `gateway`, DESIGN 3.3). */
export interface ProbeLimits {
  /** > 0 replaces every sampler's rowLimit. */
  readonly customDataviewMaxRows: number;
  readonly maxColumnsPerDataview: number;
  /** UTF-16 code units. */
  readonly maxCellLength: number;
  /**
   * The setup's `limits` section (DESIGN 5.4b), which the probe applies where data enters; absent
   * (a caller that builds limits by hand), the defaults.
   */
  readonly data?: DataLimits;
}

/**
 * The limits a gateway's setup gives its probes: its gateway section's, and its `limits` section
 * (`data`; DEFAULT_DATA_LIMITS unless given).
 */
export function probeLimits(gateway: GatewaySetup, data: DataLimits = DEFAULT_DATA_LIMITS): ProbeLimits {
  return {
    customDataviewMaxRows: gateway.customDataviewMaxRows,
    maxColumnsPerDataview: gateway.maxColumnsPerDataview,
    maxCellLength: gateway.maxCellLength,
    data,
  };
}

export type ProbeFrame =
  | {
      readonly type: "hello";
      readonly version: number;
      readonly probe: string;
      readonly parameters: ProbeParameters;
      /** Changes this probe process coalesced into a state since it started (status pages). */
      readonly coalesced: number;
      /**
       * True when this probe process was linked to a gateway before: its state is then current
       * state being republished (DESIGN 4.3 `snapshot`), also for a gateway that restarted and so
       * knows none of it; false on the probe's first link, whose items are `create`d.
       */
      readonly resumed: boolean;
    }
  /** New parameters (the probe's port once it listens): sequenced and acknowledged like a batch. */
  | { readonly type: "parameters"; readonly seq: number; readonly parameters: ProbeParameters }
  | {
      readonly type: "state";
      readonly seq: number;
      readonly items: readonly Change[];
      readonly last: boolean;
    }
  | { readonly type: "changes"; readonly seq: number; readonly changes: readonly Change[] }
  | { readonly type: "heartbeat" }
  | { readonly type: "bye"; readonly reason: string };

/** Why a gateway refuses or ends a link; the probe logs it (and retries later, except on stop). */
export const LINK_ERROR_CODES = [
  "VERSION_MISMATCH",
  "UNKNOWN_PROBE",
  /** The `hello` names a probe other than the one whose link secret the upgrade presented. */
  "NOT_THIS_PROBE",
  /** A reload of the gateway's setup changed or removed the probe's link secret. */
  "SECRET_CHANGED",
  "PROTOCOL_ERROR",
  "REPLACED",
  "SHUTTING_DOWN",
] as const;
export type LinkErrorCode = (typeof LINK_ERROR_CODES)[number];

/**
 * What a gateway sends. The setup's part travels in wire types of its own (`wire-setup.ts`), not
 * the config types, so a new setup key does not change these frames unless the link says so; the
 * probe checks each frame against `GATEWAY_FRAME_SCHEMA` (`wire-schema.ts`).
 */
export type GatewayFrame =
  | {
      readonly type: "welcome";
      readonly version: number;
      readonly gateway: string;
      readonly setup: WireProbeSetup;
      readonly limits: WireProbeLimits;
      /** Batches the probe may have unacknowledged. */
      readonly credit: number;
      /** Most changes (or state items) one batch may carry. */
      readonly maxBatchChanges: number;
      /** Heartbeat interval; a link silent for 3 intervals is lost. */
      readonly heartbeatMs: number;
    }
  | { readonly type: "setup"; readonly setup: WireProbeSetup; readonly limits: WireProbeLimits }
  | { readonly type: "ack"; readonly seq: number }
  | { readonly type: "heartbeat" }
  | { readonly type: "error"; readonly code: LinkErrorCode; readonly message: string };

/** Close codes used on the link (WebSocket codes; the in-process link uses the same numbers). */
export const CLOSE_NORMAL = 1000;
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_INVALID_DATA = 1007;
export const CLOSE_POLICY = 1008;
export const CLOSE_TOO_BIG = 1009;
/** Application code: no frame for 3 heartbeat intervals. */
export const CLOSE_HEARTBEAT_TIMEOUT = 4000;
/** Application code: a frame's JSON nests arrays and objects deeper than `limits.jsonDepth`. */
export const CLOSE_TOO_DEEP = 4001;
/** Application code: no `hello` within LINK_HELLO_TIMEOUT_MS of the upgrade. */
export const CLOSE_HELLO_TIMEOUT = 4002;

/**
 * Encodes cells (in column order) as {@link WireCells}: runs of blanks become their count and
 * trailing blanks are dropped.
 */
export function encodeCells(cells: readonly string[]): (string | number)[] {
  const out: (string | number)[] = [];
  let blanks = 0;
  for (const cell of cells) {
    if (cell === "") {
      blanks += 1;
      continue;
    }
    if (blanks > 0) out.push(blanks);
    blanks = 0;
    out.push(cell);
  }
  return out;
}

/** Decodes {@link WireCells} to one value per column (missing trailing cells are blank). */
export function decodeCells(cells: WireCells, columns: number): string[] {
  const out: string[] = [];
  for (const cell of cells) {
    if (typeof cell === "string") out.push(cell);
    else for (let i = 0; i < cell && out.length < columns; i += 1) out.push("");
    if (out.length >= columns) break;
  }
  while (out.length < columns) out.push("");
  return out;
}

/** Number of cells that {@link WireCells} spell out (blanks counted), for validation. */
export function wireCellCount(cells: WireCells): number {
  let n = 0;
  for (const cell of cells) n += typeof cell === "string" ? 1 : cell;
  return n;
}

/**
 * A rough size of a change in UTF-16 code units plus a few per element: enough to cut batches
 * and bound the probe's outgoing buffer without serialising anything.
 */
export function estimateChangeSize(change: Change): number {
  const address = change.dataview;
  let size =
    64 +
    address.managedEntity.length +
    address.sampler.length +
    address.samplerType.length +
    address.dataview.length;
  // Plain loops and helpers at module level: this runs once per change the probe accepts.
  switch (change.kind) {
    case "row":
      size += change.name.length + cellsSize(change.cells);
      if (change.columns !== undefined) for (const column of change.columns) size += column.length + 3;
      if (change.severities !== undefined)
        for (const [column] of change.severities) size += column.length + 16;
      break;
    case "rowDelete":
      size += change.name.length;
      break;
    case "dataview":
      for (const column of change.columns) size += column.length + 3;
      for (const row of change.rows) size += row.name.length + 24 + cellsSize(row.cells);
      size += headlinesSize(change.headlines);
      break;
    case "dataviewDelete":
      break;
    case "headlines":
      size += headlinesSize(change.headlines);
      break;
  }
  return size;
}

function cellsSize(wire: WireCells): number {
  let size = 0;
  for (let i = 0; i < wire.length; i += 1) {
    const cell = wire[i] as string | number;
    size += typeof cell === "string" ? cell.length + 3 : 4;
  }
  return size;
}

function headlinesSize(pairs: WireHeadlines): number {
  let size = 0;
  for (const [name, value] of pairs) size += name.length + value.length + 6;
  return size;
}
