/**
 * The setup file (DESIGN 2) after loading: every default filled in, every object frozen.
 * `load-setup.ts` produces it from YAML; nothing else in vigil reads the file.
 */
import type { Role } from "../auth/roles.js";
import type { DataLimits } from "../limits/data-limits.js";
import type { Severity } from "../messages/types.js";
import type { ProbeLinkSecret } from "./link-secret.js";

export type RuleOperator = "=" | "!=" | ">" | ">=" | "<" | "<=" | "contains" | "matches";

export type PublishSink =
  | { readonly kind: "memory" }
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "nats"; readonly url: string; readonly stream: string; readonly subjectPrefix: string };

export interface ColumnSchema {
  readonly type: "float64" | "int64" | "string";
  readonly unit: string;
}

interface SamplerBase {
  readonly name: string;
  /** Sampler type, "" when the sampler has none; addressed as `name(type)`. */
  readonly type: string;
}

export interface RestApiSampler extends SamplerBase {
  readonly plugin: "rest-api";
  readonly bufferSize: number;
  readonly rowLimit: number;
  readonly verifyClientCertificate: boolean;
  readonly clientCaCertificate: { readonly enabled: boolean; readonly path: string };
  readonly schema: { readonly columns: Readonly<Record<string, ColumnSchema>> };
}

export interface FkmSampler extends SamplerBase {
  readonly plugin: "fkm";
  /** Seconds between samples. */
  readonly sampleInterval: number;
  readonly source: { readonly sampler: string; readonly stream: string };
  /** `pattern` is an RE2 regular expression without flags (validated at load); "ERROR" finds that substring. */
  readonly keywords: readonly { readonly pattern: string; readonly severity: Severity }[];
}

export type SamplerSetup = RestApiSampler | FkmSampler;

export interface ManagedEntitySetup {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly samplers: readonly SamplerSetup[];
}

export interface ProbeSetup {
  readonly name: string;
  readonly hostname: string;
  readonly restApiHttpPort: number;
  readonly restApiHttpsPort: number;
  readonly memoryProtection: MemoryProtectionSetup;
  readonly managedEntities: readonly ManagedEntitySetup[];
}

/** A rule's target: each field a name or "*"; a rule names either `row`+`column` or `headline`. */
export interface RuleTarget {
  readonly managedEntity: string;
  readonly sampler: string;
  readonly dataview: string;
  readonly row?: string;
  readonly column?: string;
  readonly headline?: string;
}

export interface RuleSetup {
  readonly name: string;
  readonly target: RuleTarget;
  /** For `matches`, `value` is an RE2 regular expression without flags (validated at load). */
  readonly when: { readonly operator: RuleOperator; readonly value: string | number };
  readonly severity: Severity;
}

/** RSS watch of a process (DESIGN 3.5): past `ratio × limitMb` it answers 503 instead of growing. */
export interface MemoryProtectionSetup {
  /** MiB of resident memory. */
  readonly limitMb: number;
  /** Fraction of `limitMb`, in (0, 1]. */
  readonly ratio: number;
}

/** An application key (DESIGN 5.4, 5.4a): its client id, secret and roles. */
export interface AppKeySetup {
  readonly clientId: string;
  readonly clientSecret: string;
  /** Default DEFAULT_ROLES, `[read]`. */
  readonly roles: readonly Role[];
}

export interface HubSetup {
  readonly port: number;
  /** Series one entity may have; a message that would create more is dead-lettered. */
  readonly maxSeriesPerEntity: number;
  /** Entities (and probes) the hub holds; a message that would add one more is dead-lettered. */
  readonly maxEntities: number;
  /**
   * MiB the entity cache may hold (src/hub/store/entity-cache.ts); 0 turns it off. Its count bound
   * is `maxEntities`.
   */
  readonly entityCacheMb: number;
  /** Samples and events older than this many days are removed in the background; 0 keeps all. */
  readonly retentionDays: number;
  readonly memoryProtection: MemoryProtectionSetup;
  readonly tls: TlsFiles;
  readonly security: {
    readonly enabled: boolean;
    /** Seconds. */
    readonly tokenLifetime: number;
    readonly appKeys: readonly AppKeySetup[];
    readonly kerberos: {
      readonly enabled: boolean;
      readonly keytab: string;
      readonly servicePrincipal: string;
    };
    /** Roles of every Kerberos principal (DESIGN 5.4a); default DEFAULT_ROLES, `[read]`. */
    readonly kerberosRoles: readonly Role[];
  };
}

export interface GatewaySetup {
  readonly name: string;
  readonly port: number;
  /** > 0 overrides every sampler's rowLimit. */
  readonly customDataviewMaxRows: number;
  /** Distinct columns one dataview may have; a PUT beyond is a 400 naming the limit. */
  readonly maxColumnsPerDataview: number;
  /** Longest cell text, in UTF-16 code units (JavaScript string length); a PUT beyond is a 400. */
  readonly maxCellLength: number;
  readonly memoryProtection: MemoryProtectionSetup;
  readonly publish: readonly PublishSink[];
  /** Both set: the gateway's HTTP API and probe link are HTTPS (wss) only. */
  readonly tls: TlsFiles;
}

/** A server's certificate and key (PEM file paths); both empty for plain HTTP. */
export interface TlsFiles {
  readonly certificate: string;
  readonly key: string;
}

/**
 * What a setup file holds. `gateway` is undefined in a hub-only setup (only `hub:` and `limits:`,
 * DESIGN 1 `vigil hub`): a hub needs no gateway's setup to store and answer what gateways publish,
 * and such a setup has no probes, rules or link secrets. Only the hub and `vigil validate` load
 * one; every other command loads a {@link DeploymentSetup}.
 */
export interface Setup {
  readonly gateway: GatewaySetup | undefined;
  readonly probes: readonly ProbeSetup[];
  readonly rules: readonly RuleSetup[];
  readonly hub: HubSetup;
  /** What may enter from the network, the same at every entry point (docs/security.md, "Limits"). */
  readonly limits: DataLimits;
  /**
   * The link secrets of the probes that have one (`linkSecret` or `linkSecretFile`), kept apart
   * from `probes` so that no probe's part of the setup (sent in `welcome`) carries one.
   */
  readonly linkSecrets: readonly ProbeLinkSecret[];
}

/** A setup with its `gateway:` section: the whole deployment (DESIGN 2), what a gateway and a probe run from. */
export type DeploymentSetup = Setup & { readonly gateway: GatewaySetup };

/** Whether `setup` describes the deployment (has `gateway:`) rather than only the hub's part. */
export function isDeploymentSetup(setup: Setup): setup is DeploymentSetup {
  return setup.gateway !== undefined;
}

/**
 * `setup` as a deployment's setup, for a gateway or probe taking a reloaded one; throws an Error
 * for a hub-only setup (the loaders of those commands refuse one before it gets here).
 */
export function deploymentSetup(setup: Setup): DeploymentSetup {
  if (!isDeploymentSetup(setup))
    throw new Error("a hub-only setup (no 'gateway' section) cannot replace a gateway's or probe's setup");
  return setup;
}
