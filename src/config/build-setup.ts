/**
 * Building the loaded `Setup` (DESIGN 2) from YAML data that has passed every check (`SetupInput`,
 * the type the setup's JSON Schema is checked against): each key left out gets its default, only
 * ever a named constant of `defaults.ts` (STYLE 10), the constants the schema's `default`
 * annotations name; relative paths are resolved; the result is deep-frozen, so no module can change
 * the setup it was given.
 */
import { isAbsolute, resolve } from "node:path";
import { DEFAULT_ROLES } from "../auth/roles.js";
import { DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import {
  DEFAULT_BUFFER_SIZE,
  DEFAULT_CLIENT_CA_CERTIFICATE,
  DEFAULT_COLUMN_TYPE,
  DEFAULT_COLUMN_UNIT,
  DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
  DEFAULT_ENTITY_CACHE_MB,
  DEFAULT_FKM_SAMPLE_INTERVAL,
  DEFAULT_GATEWAY_PORT,
  DEFAULT_HUB_PORT,
  DEFAULT_MAX_CELL_LENGTH,
  DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
  DEFAULT_MAX_ENTITIES,
  DEFAULT_MAX_SERIES_PER_ENTITY,
  DEFAULT_MEMORY_LIMIT_MB,
  DEFAULT_MEMORY_RATIO,
  DEFAULT_NATS_STREAM,
  DEFAULT_NATS_SUBJECT_PREFIX,
  DEFAULT_PROBE_HOSTNAME,
  DEFAULT_PUBLISH,
  DEFAULT_REST_API_HTTP_PORT,
  DEFAULT_REST_API_HTTPS_PORT,
  DEFAULT_RETENTION_DAYS,
  DEFAULT_ROW_LIMIT,
  DEFAULT_RULE_TARGET_WILDCARD,
  DEFAULT_SECURITY_ENABLED,
  DEFAULT_TOKEN_LIFETIME,
  DEFAULT_VERIFY_CLIENT_CERTIFICATE,
} from "./defaults.js";
import type { ProbeLinkSecret } from "./link-secret.js";
import type {
  ColumnSchema,
  GatewaySetup,
  ManagedEntitySetup,
  MemoryProtectionSetup,
  ProbeSetup,
  PublishSink,
  RuleSetup,
  RuleTarget,
  SamplerSetup,
  Setup,
} from "./setup.js";
import type {
  GatewayInput,
  MemoryProtectionInput,
  ProbeInput,
  RuleInput,
  SamplerInput,
  SetupInput,
} from "./setup-input.js";

/**
 * The frozen `Setup` for `input`, every default filled in from `defaults.ts`: gateway port 7039,
 * no row override, 256 columns per dataview, cells of up to 8192 UTF-16 code units, publish
 * [memory]; probe hostname 127.0.0.1 and ports 7136/7137; memory protection 2048 MiB at ratio 0.9
 * for probes, gateway and hub alike; rest-api bufferSize 1000 and rowLimit 200; fkm sampleInterval
 * 20 s; hub port 8081, 100 000 series per entity, security enabled with 300 s tokens, application keys
 * and Kerberos principals with the role `read`. Relative paths
 * (publish file, certificates, keytab) are resolved against `baseDir` when given, else kept as written.
 * `linkSecrets` are the probes' link secrets as `readLinkSecrets` read them (none by default).
 * An input without `gateway` (a hub-only setup, checked by the loader) has `gateway` undefined.
 */
export function buildSetup(
  input: SetupInput,
  baseDir: string | undefined,
  linkSecrets: readonly ProbeLinkSecret[] = [],
): Setup {
  return deepFreeze(setupOf(input, baseDir, linkSecrets));
}

function setupOf(
  input: SetupInput,
  baseDir: string | undefined,
  linkSecrets: readonly ProbeLinkSecret[],
): Setup {
  const path = (p: string | undefined): string =>
    p === undefined || p === "" ? "" : baseDir === undefined || isAbsolute(p) ? p : resolve(baseDir, p);
  const hub = input.hub ?? {};
  const security = hub.security ?? {};
  const kerberos = security.kerberos ?? {};
  return {
    gateway: input.gateway === undefined ? undefined : buildGateway(input.gateway, path),
    probes: (input.probes ?? []).map((probe) => buildProbe(probe, path)),
    rules: (input.rules ?? []).map(buildRule),
    hub: {
      port: hub.port ?? DEFAULT_HUB_PORT,
      maxSeriesPerEntity: hub.maxSeriesPerEntity ?? DEFAULT_MAX_SERIES_PER_ENTITY,
      maxEntities: hub.maxEntities ?? DEFAULT_MAX_ENTITIES,
      entityCacheMb: hub.entityCacheMb ?? DEFAULT_ENTITY_CACHE_MB,
      retentionDays: hub.retentionDays ?? DEFAULT_RETENTION_DAYS,
      memoryProtection: memoryProtection(hub.memoryProtection),
      tls: { certificate: path(hub.tls?.certificate), key: path(hub.tls?.key) },
      security: {
        enabled: security.enabled ?? DEFAULT_SECURITY_ENABLED,
        tokenLifetime: security.tokenLifetime ?? DEFAULT_TOKEN_LIFETIME,
        appKeys: (security.appKeys ?? []).map(({ clientId, clientSecret, roles }) => ({
          clientId,
          clientSecret,
          roles: [...(roles ?? DEFAULT_ROLES)],
        })),
        kerberos: {
          enabled: kerberos.enabled ?? false,
          keytab: path(kerberos.keytab),
          servicePrincipal: kerberos.servicePrincipal ?? "",
        },
        kerberosRoles: [...(security.kerberosRoles ?? DEFAULT_ROLES)],
      },
    },
    limits: { ...DEFAULT_DATA_LIMITS, ...input.limits },
    linkSecrets: linkSecrets.map(({ probe, secret }) => ({ probe, secret })),
  };
}

/** The `gateway:` section with its defaults (port 7039, no row override, publish [memory], …). */
function buildGateway(gateway: GatewayInput, path: (p: string | undefined) => string): GatewaySetup {
  return {
    name: gateway.name,
    port: gateway.port ?? DEFAULT_GATEWAY_PORT,
    customDataviewMaxRows: gateway.customDataviewMaxRows ?? DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS,
    maxColumnsPerDataview: gateway.maxColumnsPerDataview ?? DEFAULT_MAX_COLUMNS_PER_DATAVIEW,
    maxCellLength: gateway.maxCellLength ?? DEFAULT_MAX_CELL_LENGTH,
    memoryProtection: memoryProtection(gateway.memoryProtection),
    publish: (gateway.publish ?? DEFAULT_PUBLISH).map((sink): PublishSink => {
      if (sink === "memory") return { kind: "memory" };
      if ("file" in sink) return { kind: "file", path: path(sink.file) };
      return {
        kind: "nats",
        url: sink.nats.url,
        stream: sink.nats.stream ?? DEFAULT_NATS_STREAM,
        subjectPrefix: sink.nats.subjectPrefix ?? DEFAULT_NATS_SUBJECT_PREFIX,
      };
    }),
    tls: { certificate: path(gateway.tls?.certificate), key: path(gateway.tls?.key) },
  };
}

/** Memory protection of a probe, the gateway or the hub: the same keys and defaults for each. */
function memoryProtection(input: MemoryProtectionInput | undefined): MemoryProtectionSetup {
  return { limitMb: input?.limitMb ?? DEFAULT_MEMORY_LIMIT_MB, ratio: input?.ratio ?? DEFAULT_MEMORY_RATIO };
}

function buildProbe(probe: ProbeInput, path: (p: string | undefined) => string): ProbeSetup {
  return {
    name: probe.name,
    hostname: probe.hostname ?? DEFAULT_PROBE_HOSTNAME,
    restApiHttpPort: probe.restApiHttpPort ?? DEFAULT_REST_API_HTTP_PORT,
    restApiHttpsPort: probe.restApiHttpsPort ?? DEFAULT_REST_API_HTTPS_PORT,
    memoryProtection: memoryProtection(probe.memoryProtection),
    managedEntities: (probe.managedEntities ?? []).map(
      (entity): ManagedEntitySetup => ({
        name: entity.name,
        attributes: { ...entity.attributes },
        samplers: (entity.samplers ?? []).map((sampler) => buildSampler(sampler, path)),
      }),
    ),
  };
}

function buildSampler(sampler: SamplerInput, path: (p: string | undefined) => string): SamplerSetup {
  const type = sampler.type ?? "";
  if (sampler.plugin === "fkm") {
    return {
      name: sampler.name,
      type,
      plugin: "fkm",
      sampleInterval: sampler.sampleInterval ?? DEFAULT_FKM_SAMPLE_INTERVAL,
      source: { sampler: sampler.source.sampler, stream: sampler.source.stream },
      keywords: sampler.keywords.map(({ pattern, severity }) => ({ pattern, severity })),
    };
  }
  const columns: Record<string, ColumnSchema> = {};
  for (const [column, declared] of Object.entries(sampler.schema?.columns ?? {})) {
    columns[column] = {
      type: declared.type ?? DEFAULT_COLUMN_TYPE,
      unit: declared.unit ?? DEFAULT_COLUMN_UNIT,
    };
  }
  return {
    name: sampler.name,
    type,
    plugin: "rest-api",
    bufferSize: sampler.bufferSize ?? DEFAULT_BUFFER_SIZE,
    rowLimit: sampler.rowLimit ?? DEFAULT_ROW_LIMIT,
    verifyClientCertificate: sampler.verifyClientCertificate ?? DEFAULT_VERIFY_CLIENT_CERTIFICATE,
    clientCaCertificate: {
      enabled: sampler.clientCaCertificate?.enabled ?? DEFAULT_CLIENT_CA_CERTIFICATE.enabled,
      path: path(sampler.clientCaCertificate?.path ?? DEFAULT_CLIENT_CA_CERTIFICATE.path),
    },
    schema: { columns },
  };
}

function buildRule(rule: RuleInput): RuleSetup {
  const { target } = rule;
  const cellOrHeadline: Pick<RuleTarget, "row" | "column" | "headline"> =
    target.headline !== undefined
      ? { headline: target.headline }
      : { row: target.row ?? DEFAULT_RULE_TARGET_WILDCARD, column: target.column ?? "" };
  return {
    name: rule.name,
    target: {
      managedEntity: target.managedEntity ?? DEFAULT_RULE_TARGET_WILDCARD,
      sampler: target.sampler ?? DEFAULT_RULE_TARGET_WILDCARD,
      dataview: target.dataview ?? DEFAULT_RULE_TARGET_WILDCARD,
      ...cellOrHeadline,
    },
    when: { operator: rule.when.operator, value: rule.when.value },
    severity: rule.severity,
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
