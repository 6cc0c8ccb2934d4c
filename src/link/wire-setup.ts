/**
 * The probe's part of the setup as the link carries it in `welcome` and `setup` frames (DESIGN 1
 * "probe link"): wire types of their own, not the config types, so that a key added to the setup
 * file changes the wire only when these types (and their schema in `wire-schema.ts`, whose keys a
 * test pins) change too, and then `LINK_PROTOCOL_VERSION` with them. The gateway maps its loaded
 * setup to them with {@link wireProbeSetup} and {@link wireProbeLimits}; the probe maps a frame it
 * has validated back with {@link probeSetupOfWire} and {@link probeLimitsOfWire}. Every field is
 * named at both edges, in the order the setup holds it, so the frame's JSON is the same text it was
 * when the frame carried the config type itself.
 */
import type { ColumnSchema, ManagedEntitySetup, ProbeSetup, SamplerSetup } from "../config/setup.js";
import { type DataLimits, DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import type { Severity } from "../messages/types.js";
import type { ProbeLimits } from "./protocol.js";

export interface WireProbeSetup {
  readonly name: string;
  readonly hostname: string;
  readonly restApiHttpPort: number;
  readonly restApiHttpsPort: number;
  readonly memoryProtection: WireMemoryProtection;
  readonly managedEntities: readonly WireManagedEntity[];
}

export interface WireMemoryProtection {
  /** MiB of resident memory. */
  readonly limitMb: number;
  /** Fraction of `limitMb`, in (0, 1]. */
  readonly ratio: number;
}

export interface WireManagedEntity {
  readonly name: string;
  /** Names from the gateway's setup (checked when it was loaded), never from a client. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly samplers: readonly WireSampler[];
}

export type WireSampler = WireRestApiSampler | WireFkmSampler;

export interface WireRestApiSampler {
  readonly name: string;
  readonly type: string;
  readonly plugin: "rest-api";
  readonly bufferSize: number;
  readonly rowLimit: number;
  readonly verifyClientCertificate: boolean;
  readonly clientCaCertificate: { readonly enabled: boolean; readonly path: string };
  /** Column names from the gateway's setup, never from a client. */
  readonly schema: { readonly columns: Readonly<Record<string, WireColumn>> };
}

export interface WireColumn {
  readonly type: "float64" | "int64" | "string";
  readonly unit: string;
}

export interface WireFkmSampler {
  readonly name: string;
  readonly type: string;
  readonly plugin: "fkm";
  /** Seconds between samples. */
  readonly sampleInterval: number;
  readonly source: { readonly sampler: string; readonly stream: string };
  readonly keywords: readonly WireKeyword[];
}

export interface WireKeyword {
  readonly pattern: string;
  readonly severity: Severity;
}

/** The gateway-wide settings a probe applies, as the link carries them (see `ProbeLimits`). */
export interface WireProbeLimits {
  readonly customDataviewMaxRows: number;
  readonly maxColumnsPerDataview: number;
  readonly maxCellLength: number;
  /** The setup's `limits` section (a gateway always sends it). */
  readonly data: WireDataLimits;
}

export interface WireDataLimits {
  readonly nameBytes: number;
  readonly attributeValueBytes: number;
  readonly attributesPerEntity: number;
  readonly cellBytes: number;
  readonly linkFrameBytes: number;
  readonly jsonDepth: number;
}

/** The wire shape of a probe's part of the gateway's setup, field by field. */
export function wireProbeSetup(setup: ProbeSetup): WireProbeSetup {
  return copyProbeSetup(setup);
}

/**
 * The probe's part of the setup from a `welcome` or `setup` frame that passed the wire schema. The
 * copy is a `WireProbeSetup` returned as a `ProbeSetup`: a field the config type gains and the
 * wire type lacks fails to compile here, so the wire changes only on purpose.
 */
export function probeSetupOfWire(wire: WireProbeSetup): ProbeSetup {
  return copyProbeSetup(wire);
}

function copyProbeSetup(setup: ProbeSetup | WireProbeSetup): WireProbeSetup {
  return {
    name: setup.name,
    hostname: setup.hostname,
    restApiHttpPort: setup.restApiHttpPort,
    restApiHttpsPort: setup.restApiHttpsPort,
    memoryProtection: { limitMb: setup.memoryProtection.limitMb, ratio: setup.memoryProtection.ratio },
    managedEntities: setup.managedEntities.map(
      (entity: ManagedEntitySetup | WireManagedEntity): WireManagedEntity => ({
        name: entity.name,
        attributes: copyRecord(entity.attributes, (value) => value),
        samplers: entity.samplers.map(copySampler),
      }),
    ),
  };
}

/** The wire shape of the limits a gateway gives its probes; `data` DEFAULT_DATA_LIMITS unless set. */
export function wireProbeLimits(limits: ProbeLimits): WireProbeLimits {
  return copyLimits({ ...limits, data: limits.data ?? DEFAULT_DATA_LIMITS });
}

/** The limits from a `welcome` or `setup` frame that passed the wire schema. */
export function probeLimitsOfWire(wire: WireProbeLimits): ProbeLimits {
  return copyLimits(wire);
}

function copyLimits(limits: Required<ProbeLimits> | WireProbeLimits): WireProbeLimits {
  return {
    customDataviewMaxRows: limits.customDataviewMaxRows,
    maxColumnsPerDataview: limits.maxColumnsPerDataview,
    maxCellLength: limits.maxCellLength,
    data: dataLimits(limits.data),
  };
}

function dataLimits(d: DataLimits | WireDataLimits): WireDataLimits {
  return {
    nameBytes: d.nameBytes,
    attributeValueBytes: d.attributeValueBytes,
    attributesPerEntity: d.attributesPerEntity,
    cellBytes: d.cellBytes,
    linkFrameBytes: d.linkFrameBytes,
    jsonDepth: d.jsonDepth,
  };
}

function copySampler(sampler: SamplerSetup | WireSampler): WireSampler {
  if (sampler.plugin === "fkm") {
    return {
      name: sampler.name,
      type: sampler.type,
      plugin: "fkm",
      sampleInterval: sampler.sampleInterval,
      source: { sampler: sampler.source.sampler, stream: sampler.source.stream },
      keywords: sampler.keywords.map(({ pattern, severity }) => ({ pattern, severity })),
    };
  }
  return {
    name: sampler.name,
    type: sampler.type,
    plugin: "rest-api",
    bufferSize: sampler.bufferSize,
    rowLimit: sampler.rowLimit,
    verifyClientCertificate: sampler.verifyClientCertificate,
    clientCaCertificate: {
      enabled: sampler.clientCaCertificate.enabled,
      path: sampler.clientCaCertificate.path,
    },
    schema: { columns: copyRecord(sampler.schema.columns, column) },
  };
}

function column(c: ColumnSchema | WireColumn): WireColumn {
  return { type: c.type, unit: c.unit };
}

/**
 * A copy of a record keyed by names (attributes, schema columns) as a prototype-less object with
 * its own keys in order, so a name such as `__proto__` stays data on either side of the link.
 */
function copyRecord<A, B>(record: Readonly<Record<string, A>>, map: (value: A) => B): Record<string, B> {
  const out: Record<string, B> = Object.create(null);
  for (const [key, value] of Object.entries(record)) out[key] = map(value);
  return out;
}
