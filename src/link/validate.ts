/**
 * Validation of every frame received on the probe link (DESIGN 1 "probe link"): shape, types and
 * bounds, before anything reads it. A frame that fails is a protocol error: the receiver logs the
 * reason and closes the link; nothing here throws anything but {@link FrameError}.
 *
 * The setup's `limits` (DESIGN 5.4b, docs/security.md "Limits") bound what a probe's frames carry,
 * in bytes of UTF-8: every name (address, column, headline, probe) `nameBytes` (a row name
 * DUPLICATE_SUFFIX_BYTES more, for `_duplicate<N>`), every cell and headline value `cellBytes`,
 * every probe parameter `attributeValueBytes`. A frame beyond one is a {@link LimitFrameError},
 * which names the limit so that the receiver counts it. They are checked as the setup says, with
 * no margin (unlike the gateway section's cell length and column count, see LINK_MAX_CELL_LENGTH):
 * the gateway sends the same limits to its probes, which refuse such data where it enters.
 */

import { LINK_MAX_CELL_LENGTH, LINK_MAX_COLUMNS } from "../config/defaults.js";
import {
  type DataLimits,
  DEFAULT_DATA_LIMITS,
  DUPLICATE_SUFFIX_BYTES,
  overBytes,
} from "../limits/data-limits.js";
import { type LimitName, limitReason } from "../limits/limit-refusals.js";
import { SEVERITIES, type Severity } from "../messages/types.js";
import type {
  Change,
  DataviewAddress,
  GatewayFrame,
  ProbeFrame,
  ProbeLimits,
  ProbeParameters,
  WireCells,
  WireHeadlines,
  WireRow,
  WireSeverities,
} from "./protocol.js";
import { gatewayFrameValidator, wireErrorText } from "./wire-schema.js";

/** A frame that breaks the protocol; `message` names where (`changes[3].cells[2]`) and why. */
export class FrameError extends Error {
  override readonly name: string = "FrameError";
}

/** A frame that carries a name or value beyond one of the setup's `limits`. */
export class LimitFrameError extends FrameError {
  override readonly name = "LimitFrameError";
  constructor(
    readonly limit: LimitName,
    message: string,
  ) {
    super(message);
  }
}

/** Bounds a frame is checked against (what the receiving side allows). */
export interface FrameBounds {
  /** Most changes or state items in one batch. */
  readonly maxBatchChanges: number;
  /** Most columns of a dataview, and cells of a row. */
  readonly maxColumns: number;
  /** Longest cell, column name, dataview or row name. */
  readonly maxCellLength: number;
  /** The setup's `limits` (names, cells, parameters in bytes); absent, DEFAULT_DATA_LIMITS. */
  readonly data?: DataLimits;
}

/**
 * The bounds a gateway checks probe frames against: its gateway section's limits, or the link's
 * caps if larger, and the setup's `limits` as they are.
 */
export function frameBounds(limits: ProbeLimits, maxBatchChanges: number): FrameBounds {
  return {
    maxBatchChanges,
    maxColumns: Math.max(limits.maxColumnsPerDataview, LINK_MAX_COLUMNS),
    maxCellLength: Math.max(limits.maxCellLength, LINK_MAX_CELL_LENGTH),
    data: limits.data ?? DEFAULT_DATA_LIMITS,
  };
}

const dataOf = (bounds: FrameBounds): DataLimits => bounds.data ?? DEFAULT_DATA_LIMITS;

/** Refuses `text` at `path` when it is longer than `setting` bytes, naming `limit`. */
function withinBytes(text: string, path: string, limit: LimitName, setting: number): void {
  if (overBytes(text, setting)) {
    throw new LimitFrameError(limit, limitReason(limit, path, Buffer.byteLength(text), setting));
  }
}

/** A name (address, column, headline, probe) within `limits.nameBytes`. */
function nameWithin(text: string, path: string, bounds: FrameBounds, extra = 0): string {
  withinBytes(text, path, "nameBytes", dataOf(bounds).nameBytes + extra);
  return text;
}

// Bounds on names that are not cells (names from the setup or the probe's own identity).
const MAX_NAME_LENGTH = 1024; // UTF-16 code units
const MAX_TEXT_LENGTH = 16 * 1024; // UTF-16 code units, error messages and reasons

type Json = Record<string, unknown>;

function fail(path: string, what: string): never {
  throw new FrameError(`${path}: ${what}`);
}

function object(
  value: unknown,
  path: string,
  keys: readonly string[],
  optional: readonly string[] = [],
): Json {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail(path, "must be an object");
  const json = value as Json;
  for (const key of Object.keys(json)) {
    if (!keys.includes(key) && !optional.includes(key)) fail(path, `unknown field '${key.slice(0, 64)}'`);
  }
  for (const key of keys) if (!Object.hasOwn(json, key)) fail(path, `missing field '${key}'`);
  return json;
}

function string(value: unknown, path: string, max = MAX_NAME_LENGTH): string {
  if (typeof value !== "string") fail(path, "must be a string");
  if (value.length > max) fail(path, `longer than ${max} characters`);
  return value;
}

function integer(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    fail(path, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

function boolean(value: unknown, path: string): boolean {
  if (typeof value !== "boolean") fail(path, "must be true or false");
  return value;
}

function array(value: unknown, path: string, max: number): readonly unknown[] {
  if (!Array.isArray(value)) fail(path, "must be an array");
  if (value.length > max) fail(path, `has more than ${max} elements`);
  return value;
}

const EPOCH_MS_MAX = 8.64e15; // the largest JavaScript Date

function parameters(value: unknown, path: string, bounds: FrameBounds): ProbeParameters {
  const p = object(value, path, ["osType", "HostName", "Port", "OS", "Version"]);
  const { attributeValueBytes } = dataOf(bounds);
  const parameter = (item: unknown, name: string): string => {
    // The byte limit first (counted); the code-unit cap only backs it.
    if (typeof item === "string")
      withinBytes(item, `${path}.${name}`, "attributeValueBytes", attributeValueBytes);
    return string(item, `${path}.${name}`, Math.max(MAX_NAME_LENGTH, attributeValueBytes));
  };
  return {
    osType: parameter(p.osType, "osType"),
    HostName: parameter(p.HostName, "HostName"),
    Port: parameter(p.Port, "Port"),
    OS: parameter(p.OS, "OS"),
    Version: parameter(p.Version, "Version"),
  };
}

function address(value: unknown, path: string, bounds: FrameBounds): DataviewAddress {
  const a = object(value, path, ["managedEntity", "sampler", "samplerType", "dataview"]);
  const max = Math.max(bounds.maxCellLength, MAX_NAME_LENGTH);
  const name = (item: unknown, field: string): string =>
    nameWithin(string(item, `${path}.${field}`, max), `${path}.${field}`, bounds);
  return {
    managedEntity: name(a.managedEntity, "managedEntity"),
    sampler: name(a.sampler, "sampler"),
    samplerType: name(a.samplerType, "samplerType"),
    dataview: name(a.dataview, "dataview"),
  };
}

function cells(value: unknown, path: string, bounds: FrameBounds): WireCells {
  const { maxColumns, maxCellLength } = bounds;
  const { cellBytes } = dataOf(bounds);
  const list = array(value, path, maxColumns);
  let count = 0;
  for (let i = 0; i < list.length; i += 1) {
    const cell = list[i];
    if (typeof cell === "string") {
      if (cell.length > maxCellLength) fail(`${path}[${i}]`, `longer than ${maxCellLength} characters`);
      withinBytes(cell, `${path}[${i}]`, "cellBytes", cellBytes);
      count += 1;
    } else count += integer(cell, `${path}[${i}]`, 1, maxColumns);
    if (count > maxColumns) fail(path, `spells out more than ${maxColumns} cells`);
  }
  return list as WireCells;
}

function columns(value: unknown, path: string, bounds: FrameBounds): readonly string[] {
  const list = array(value, path, bounds.maxColumns);
  list.forEach((column, i) => {
    nameWithin(string(column, `${path}[${i}]`, bounds.maxCellLength), `${path}[${i}]`, bounds);
  });
  return list as readonly string[];
}

function rowName(value: unknown, path: string, bounds: FrameBounds): string {
  // A published name is the first cell plus at most `_duplicate<N>`.
  return nameWithin(string(value, path, bounds.maxCellLength + 32), path, bounds, DUPLICATE_SUFFIX_BYTES);
}

function headlines(value: unknown, path: string, bounds: FrameBounds): WireHeadlines {
  const list = array(value, path, 64);
  const { cellBytes } = dataOf(bounds);
  list.forEach((pair, i) => {
    const p = array(pair, `${path}[${i}]`, 2);
    if (p.length !== 2) fail(`${path}[${i}]`, "must be a [name, value] pair");
    if (typeof p[0] === "string") nameWithin(p[0], `${path}[${i}][0]`, bounds);
    string(p[0], `${path}[${i}][0]`, Math.max(MAX_NAME_LENGTH, dataOf(bounds).nameBytes));
    withinBytes(
      string(p[1], `${path}[${i}][1]`, MAX_TEXT_LENGTH),
      `${path}[${i}][1]`,
      "cellBytes",
      cellBytes,
    );
  });
  return list as WireHeadlines;
}

/** `[column, severity]` pairs a sampler sets on a row's cells (fkm, DESIGN 3.4). */
function severities(value: unknown, path: string, bounds: FrameBounds): WireSeverities {
  const list = array(value, path, bounds.maxColumns);
  list.forEach((pair, i) => {
    const p = array(pair, `${path}[${i}]`, 2);
    if (p.length !== 2) fail(`${path}[${i}]`, "must be a [column, severity] pair");
    nameWithin(string(p[0], `${path}[${i}][0]`, bounds.maxCellLength), `${path}[${i}][0]`, bounds);
    if (!SEVERITIES.includes(p[1] as Severity)) {
      fail(`${path}[${i}][1]`, `must be one of ${SEVERITIES.join(", ")}`);
    }
  });
  return list as WireSeverities;
}

function row(value: unknown, path: string, bounds: FrameBounds): WireRow {
  const r = object(value, path, ["name", "cells"], ["at", "severities"]);
  let out: WireRow = {
    name: rowName(r.name, `${path}.name`, bounds),
    cells: cells(r.cells, `${path}.cells`, bounds),
  };
  if (r.at !== undefined) out = { ...out, at: integer(r.at, `${path}.at`, 0, EPOCH_MS_MAX) };
  if (r.severities !== undefined) {
    out = { ...out, severities: severities(r.severities, `${path}.severities`, bounds) };
  }
  return out;
}

/** Validates one change (the `kind` decides its fields). */
const ROW_CHANGE_KEYS = new Set(["kind", "dataview", "at", "name", "cells", "columns"]);
const ADDRESS_KEYS = new Set(["managedEntity", "sampler", "samplerType", "dataview"]);

/** A plain object (a parsed JSON object or an object literal), whose keys `for…in` lists exactly. */
function plain(value: unknown): value is Json {
  return (
    value !== null &&
    typeof value === "object" &&
    Object.getPrototypeOf(value) === Object.prototype &&
    !Array.isArray(value)
  );
}

/**
 * Whether `value` is a string at most `max` code units long and `bytes` bytes of UTF-8 long; one
 * comparison for most (a string no longer than a third of `bytes` has at most `bytes` bytes).
 */
function nameOk(value: unknown, max: number, bytes: number): value is string {
  if (typeof value !== "string") return false;
  const length = value.length;
  return length <= max && (length <= bytes / 3 || !overBytes(value, bytes));
}

/**
 * The common change, a row upsert without severities, checked without building any error path
 * (a change per accepted PUT row). Returns what {@link change} returns for it, or
 * undefined for anything it does not accept at once: {@link change} then decides and names the
 * fault. It accepts nothing {@link change} refuses (the same checks, on a narrower shape).
 */
function plainRowChange(value: unknown, bounds: FrameBounds): Change | undefined {
  if (!plain(value) || value.kind !== "row") return undefined;
  for (const key in value) if (!ROW_CHANGE_KEYS.has(key)) return undefined;
  const a = value.dataview;
  if (!plain(a)) return undefined;
  for (const key in a) if (!ADDRESS_KEYS.has(key)) return undefined;
  const max = Math.max(bounds.maxCellLength, MAX_NAME_LENGTH);
  const { nameBytes, cellBytes } = dataOf(bounds);
  const { managedEntity, sampler, samplerType, dataview } = a;
  if (
    !nameOk(managedEntity, max, nameBytes) ||
    !nameOk(sampler, max, nameBytes) ||
    !nameOk(samplerType, max, nameBytes) ||
    !nameOk(dataview, max, nameBytes)
  )
    return undefined;
  const { at, name, cells: list, columns: names } = value;
  if (typeof at !== "number" || !Number.isInteger(at) || at < 0 || at > EPOCH_MS_MAX) return undefined;
  if (!nameOk(name, bounds.maxCellLength + 32, nameBytes + DUPLICATE_SUFFIX_BYTES)) return undefined;
  const { maxColumns, maxCellLength } = bounds;
  if (!Array.isArray(list) || list.length > maxColumns) return undefined;
  // A cell no longer than this is within both bounds at once (see nameOk).
  const quick = Math.min(maxCellLength, cellBytes / 3);
  let count = 0;
  for (let i = 0; i < list.length; i += 1) {
    const cell: unknown = list[i];
    if (typeof cell === "string") {
      if (cell.length > quick && (cell.length > maxCellLength || overBytes(cell, cellBytes)))
        return undefined;
      count += 1;
    } else if (typeof cell === "number" && Number.isInteger(cell) && cell >= 1 && cell <= maxColumns) {
      count += cell;
    } else return undefined;
    if (count > maxColumns) return undefined;
  }
  const address: DataviewAddress = { managedEntity, sampler, samplerType, dataview };
  if (names === undefined) return { kind: "row", dataview: address, at, name, cells: list as WireCells };
  if (!Array.isArray(names) || names.length > maxColumns) return undefined;
  for (let i = 0; i < names.length; i += 1) {
    const column: unknown = names[i];
    if (!nameOk(column, maxCellLength, nameBytes)) return undefined;
  }
  return {
    kind: "row",
    dataview: address,
    at,
    name,
    cells: list as WireCells,
    columns: names as readonly string[],
  };
}

function change(value: unknown, path: string, bounds: FrameBounds): Change {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail(path, "must be an object");
  const kind = (value as Json).kind;
  const common = (c: Json) => ({
    dataview: address(c.dataview, `${path}.dataview`, bounds),
    at: integer(c.at, `${path}.at`, 0, EPOCH_MS_MAX),
  });
  switch (kind) {
    case "row": {
      const c = object(value, path, ["kind", "dataview", "at", "name", "cells"], ["columns", "severities"]);
      let out: Extract<Change, { kind: "row" }> = {
        kind,
        ...common(c),
        name: rowName(c.name, `${path}.name`, bounds),
        cells: cells(c.cells, `${path}.cells`, bounds),
      };
      if (c.columns !== undefined) out = { ...out, columns: columns(c.columns, `${path}.columns`, bounds) };
      if (c.severities !== undefined) {
        out = { ...out, severities: severities(c.severities, `${path}.severities`, bounds) };
      }
      return out;
    }
    case "rowDelete": {
      const c = object(value, path, ["kind", "dataview", "at", "name"]);
      return { kind, ...common(c), name: rowName(c.name, `${path}.name`, bounds) };
    }
    case "dataview": {
      const c = object(value, path, ["kind", "dataview", "at", "plugin", "columns", "rows", "headlines"]);
      // A probe never holds more rows than its row limit; the frame size cap bounds the rest.
      const rows = array(c.rows, `${path}.rows`, Number.MAX_SAFE_INTEGER);
      return {
        kind,
        ...common(c),
        plugin: string(c.plugin, `${path}.plugin`),
        columns: columns(c.columns, `${path}.columns`, bounds),
        rows: rows.map((r, i) => row(r, `${path}.rows[${i}]`, bounds)),
        headlines: headlines(c.headlines, `${path}.headlines`, bounds),
      };
    }
    case "dataviewDelete": {
      const c = object(value, path, ["kind", "dataview", "at"]);
      return { kind, ...common(c) };
    }
    case "headlines": {
      const c = object(value, path, ["kind", "dataview", "at", "headlines"]);
      return { kind, ...common(c), headlines: headlines(c.headlines, `${path}.headlines`, bounds) };
    }
    default:
      return fail(`${path}.kind`, `unknown change kind ${JSON.stringify(kind)?.slice(0, 64)}`);
  }
}

const SEQ_MAX = Number.MAX_SAFE_INTEGER;

/**
 * Validates a frame a gateway received from a probe. Every field is checked; unknown fields are
 * errors (the protocol is versioned, so a newer probe says so in `hello`).
 */
export function parseProbeFrame(value: unknown, bounds: FrameBounds): ProbeFrame {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail("frame", "must be an object");
  const type = (value as Json).type;
  switch (type) {
    case "hello": {
      const f = object(value, "hello", ["type", "version", "probe", "parameters", "coalesced", "resumed"]);
      return {
        type,
        version: integer(f.version, "hello.version", 0, SEQ_MAX),
        probe: string(
          typeof f.probe === "string" ? nameWithin(f.probe, "hello.probe", bounds) : f.probe,
          "hello.probe",
        ),
        parameters: parameters(f.parameters, "hello.parameters", bounds),
        coalesced: integer(f.coalesced, "hello.coalesced", 0, SEQ_MAX),
        resumed: boolean(f.resumed, "hello.resumed"),
      };
    }
    case "parameters": {
      const f = object(value, "parameters", ["type", "seq", "parameters"]);
      return {
        type,
        seq: integer(f.seq, "parameters.seq", 1, SEQ_MAX),
        parameters: parameters(f.parameters, "parameters.parameters", bounds),
      };
    }
    case "state": {
      const f = object(value, "state", ["type", "seq", "items", "last"]);
      const items = array(f.items, "state.items", bounds.maxBatchChanges);
      return {
        type,
        seq: integer(f.seq, "state.seq", 1, SEQ_MAX),
        items: items.map((item, i) => {
          const c = plainRowChange(item, bounds) ?? change(item, `state.items[${i}]`, bounds);
          if (c.kind !== "dataview" && c.kind !== "row") {
            fail(`state.items[${i}].kind`, "a state holds only 'dataview' and 'row' items");
          }
          return c;
        }),
        last: boolean(f.last, "state.last"),
      };
    }
    case "changes": {
      const f = object(value, "changes", ["type", "seq", "changes"]);
      const changes = array(f.changes, "changes.changes", bounds.maxBatchChanges);
      if (changes.length === 0) fail("changes.changes", "must not be empty");
      return {
        type,
        seq: integer(f.seq, "changes.seq", 1, SEQ_MAX),
        changes: changes.map(
          (c, i) => plainRowChange(c, bounds) ?? change(c, `changes.changes[${i}]`, bounds),
        ),
      };
    }
    case "heartbeat":
      object(value, "heartbeat", ["type"]);
      return { type };
    case "bye": {
      const f = object(value, "bye", ["type", "reason"]);
      return { type, reason: string(f.reason, "bye.reason", MAX_TEXT_LENGTH) };
    }
    default:
      return fail("frame.type", `unknown frame type ${JSON.stringify(type)?.slice(0, 64)}`);
  }
}

/**
 * Validates a frame a probe received from its gateway against the wire schema
 * (`GATEWAY_FRAME_SCHEMA`); the first fault is a {@link FrameError} naming where and why.
 */
export function parseGatewayFrame(value: unknown): GatewayFrame {
  const validate = gatewayFrameValidator();
  if (validate(value)) return value;
  const [error] = validate.errors ?? [];
  throw new FrameError(
    error === undefined ? "frame: does not fit the link's schema" : wireErrorText(error, value),
  );
}
