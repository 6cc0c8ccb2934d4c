/**
 * The setup file's data as the JSON Schema in `setup-schema.ts` admits it (DESIGN 2): every key the
 * schema lists, optional where the file may leave it out. The schema is typed against these types
 * (ajv's `JSONSchemaType`), so a key added to one and not the other fails to compile, and the
 * compiled validator narrows YAML data to {@link SetupInput}. `build-setup.ts` turns it into the
 * loaded `Setup`, defaults filled in from `defaults.ts`.
 */
import type { Role } from "../auth/roles.js";
import type { DataLimits } from "../limits/data-limits.js";
import type { Severity } from "../messages/types.js";
import type { ColumnSchema, RuleOperator, RuleTarget } from "./setup.js";

export interface SetupInput {
  /** Absent in a hub-only setup (then `probes` and `rules` are absent too). */
  gateway?: GatewayInput;
  probes?: readonly ProbeInput[];
  rules?: readonly RuleInput[];
  hub?: HubInput;
  limits?: Partial<DataLimits>;
}

export interface GatewayInput {
  name: string;
  port?: number;
  customDataviewMaxRows?: number;
  maxColumnsPerDataview?: number;
  maxCellLength?: number;
  memoryProtection?: MemoryProtectionInput;
  publish?: readonly PublishSinkInput[];
  tls?: TlsInput;
}

/** `memory`, `{file: PATH}` or `{nats: {…}}`: the schema admits exactly one key in the mapping. */
export type PublishSinkInput = "memory" | { file: string } | { nats: NatsSinkInput };

export interface NatsSinkInput {
  url: string;
  stream?: string;
  subjectPrefix?: string;
}

export interface TlsInput {
  certificate?: string;
  key?: string;
}

export interface MemoryProtectionInput {
  limitMb?: number;
  ratio?: number;
}

export interface ProbeInput {
  name: string;
  hostname?: string;
  linkSecret?: string;
  linkSecretFile?: string;
  restApiHttpPort?: number;
  restApiHttpsPort?: number;
  memoryProtection?: MemoryProtectionInput;
  managedEntities?: readonly ManagedEntityInput[];
}

export interface ManagedEntityInput {
  name: string;
  attributes?: Record<string, string>;
  samplers?: readonly SamplerInput[];
}

export interface RestApiSamplerInput {
  name: string;
  type?: string;
  plugin: "rest-api";
  bufferSize?: number;
  rowLimit?: number;
  verifyClientCertificate?: boolean;
  clientCaCertificate?: { enabled?: boolean; path?: string };
  schema?: { columns?: Record<string, ColumnInput> };
}

export interface ColumnInput {
  type?: ColumnSchema["type"];
  unit?: string;
}

export interface FkmSamplerInput {
  name: string;
  type?: string;
  plugin: "fkm";
  sampleInterval?: number;
  source: { sampler: string; stream: string };
  keywords: readonly { pattern: string; severity: Severity }[];
}

export type SamplerInput = RestApiSamplerInput | FkmSamplerInput;

export interface RuleInput {
  name: string;
  target: RuleTargetInput;
  when: { operator: RuleOperator; value: string | number };
  severity: Severity;
}

export type RuleTargetInput = { [K in keyof RuleTarget]?: string };

export interface HubInput {
  port?: number;
  maxSeriesPerEntity?: number;
  maxEntities?: number;
  entityCacheMb?: number;
  retentionDays?: number;
  memoryProtection?: MemoryProtectionInput;
  tls?: TlsInput;
  security?: {
    enabled?: boolean;
    tokenLifetime?: number;
    appKeys?: readonly AppKeyInput[];
    kerberos?: { enabled?: boolean; keytab?: string; servicePrincipal?: string };
    kerberosRoles?: readonly Role[];
  };
}

export interface AppKeyInput {
  clientId: string;
  clientSecret: string;
  roles?: readonly Role[];
}
