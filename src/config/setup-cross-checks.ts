/**
 * The setup's cross-checks (DESIGN 2): what a JSON Schema cannot say. Names unique where they are
 * addressed (probes, managed entities in a probe, samplers by `name(type)`, rules, app-key client
 * ids), an fkm `source.sampler` naming a rest-api sampler of its entity (DESIGN 3.4), rule targets
 * naming a cell or a headline, regular expressions that compile, listeners on distinct ports,
 * at most one of a probe's `linkSecret` and `linkSecretFile` (the secrets themselves are checked
 * where they are read, `link-secret.ts`),
 * complete hub TLS and Kerberos settings (DESIGN 5.4), text that is well-formed Unicode, and names
 * and attributes within the setup's own `limits` (what the gateway publishes of them must pass the
 * hub's check of the same limits, DESIGN 5.4b).
 *
 * The checks run on the raw data even when the schema failed, so one pass reports everything, and
 * therefore guard every access.
 */
import { type DataLimits, DEFAULT_DATA_LIMITS, overBytes } from "../limits/data-limits.js";
import { patternProblem } from "../text/pattern.js";
import { loneSurrogateAt } from "../text/well-formed.js";
import {
  DEFAULT_PROBE_HOSTNAME,
  DEFAULT_REST_API_HTTP_PORT,
  DEFAULT_REST_API_HTTPS_PORT,
} from "./defaults.js";
import { formatSamplerRef, parseSamplerRef } from "./sampler-ref.js";
import { formatPath, isRecord, nearest, type RawIssue, type Segment } from "./setup-issues.js";

/**
 * Every cross-check issue of `data` (any value: the YAML as read), [] when there is none. fkm
 * keyword patterns and `matches` rule values are RE2 regular expressions (`src/text/pattern.ts`);
 * port 0 (a free port) may repeat; a probe without `hostname` listens on the default one.
 */
export function crossCheckIssues(data: unknown): RawIssue[] {
  const issues: RawIssue[] = [];
  const root = isRecord(data) ? data : {};
  checkWellFormed(data, [], issues);
  checkProbes(list(root.probes), issues);
  checkRules(list(root.rules), issues);
  checkTls("gateway", isRecord(root.gateway) ? root.gateway.tls : undefined, issues);
  checkHub(isRecord(root.hub) ? root.hub : {}, issues);
  checkLimits(root, issues);
  return issues;
}

/**
 * Whether `data` has the sections its command needs (DESIGN 1, 2). With `gateway:` every section is
 * allowed. Without it, the file is a hub-only setup when it holds `hub:` (and maybe `limits:`) and
 * neither `probes:` nor `rules:`, which only the gateway uses: `hubOnly` (the hub's and `vigil
 * validate`'s loads) accepts it, every other load refuses it saying what it is. `probes:` or
 * `rules:` without `gateway:` are refused either way: nothing would use them.
 */
export function sectionIssues(data: unknown, hubOnly: boolean): RawIssue[] {
  if (!isRecord(data) || data.gateway !== undefined) return [];
  const gatewayOnly = (["probes", "rules"] as const).filter((key) => data[key] !== undefined);
  const isHubOnly = data.hub !== undefined && gatewayOnly.length === 0;
  if (!hubOnly) {
    return [
      {
        segments: ["gateway"],
        message: isHubOnly
          ? "this is a hub-only setup ('hub' without 'gateway'), which only `vigil hub` runs; " +
            "give this command the deployment's setup, with its 'gateway' section"
          : "required key 'gateway' is missing; add it",
      },
    ];
  }
  if (isHubOnly) return [];
  if (gatewayOnly.length === 0) {
    return [
      {
        segments: ["gateway"],
        message: "required key 'gateway' is missing; add it, or write a 'hub' section for a hub-only setup",
      },
    ];
  }
  return gatewayOnly.map((key) => ({
    segments: [key],
    message: `'${key}' needs the 'gateway' section that uses it; add it, or remove '${key}' for a hub-only setup (only 'hub' and 'limits')`,
    atKey: true,
  }));
}

/**
 * The names and attributes the gateway publishes from the setup (gateway, probe, managed entity,
 * sampler and type names, attributes, fkm keyword patterns, which name the rows of an fkm dataview)
 * within the setup's `limits` (defaults where unset or invalid): the hub refuses a message beyond
 * them, so the setup must not make one.
 */
function checkLimits(root: Record<string, unknown>, issues: RawIssue[]): void {
  const given = isRecord(root.limits) ? root.limits : {};
  const limit = (key: keyof DataLimits): number => {
    const value = given[key];
    return typeof value === "number" && Number.isInteger(value) && value >= 1
      ? value
      : DEFAULT_DATA_LIMITS[key];
  };
  const nameBytes = limit("nameBytes");
  const name = (value: unknown, where: Segment[]) => {
    if (typeof value === "string" && overBytes(value, nameBytes)) {
      issues.push({
        segments: where,
        message: `${Buffer.byteLength(value)} bytes, more than limits.nameBytes (${nameBytes}); use a shorter name or raise limits.nameBytes`,
      });
    }
  };
  if (isRecord(root.gateway)) name(root.gateway.name, ["gateway", "name"]);
  list(root.probes).forEach((probe, p) => {
    if (!isRecord(probe)) return;
    name(probe.name, ["probes", p, "name"]);
    list(probe.managedEntities).forEach((entity, e) => {
      if (!isRecord(entity)) return;
      const at: Segment[] = ["probes", p, "managedEntities", e];
      name(entity.name, [...at, "name"]);
      checkAttributeLimits(entity.attributes, [...at, "attributes"], nameBytes, limit, issues);
      list(entity.samplers).forEach((sampler, s) => {
        if (!isRecord(sampler)) return;
        const where: Segment[] = [...at, "samplers", s];
        name(sampler.name, [...where, "name"]);
        name(sampler.type, [...where, "type"]);
        list(sampler.keywords).forEach((keyword, k) => {
          if (isRecord(keyword)) name(keyword.pattern, [...where, "keywords", k, "pattern"]);
        });
      });
    });
  });
}

function checkAttributeLimits(
  attributes: unknown,
  at: Segment[],
  nameBytes: number,
  limit: (key: keyof DataLimits) => number,
  issues: RawIssue[],
): void {
  if (!isRecord(attributes)) return;
  const entries = Object.entries(attributes);
  const most = limit("attributesPerEntity");
  if (entries.length > most) {
    issues.push({
      segments: at,
      message: `${entries.length} attributes, more than limits.attributesPerEntity (${most}); remove some or raise the limit`,
    });
  }
  const valueBytes = limit("attributeValueBytes");
  for (const [key, value] of entries) {
    if (overBytes(key, nameBytes)) {
      issues.push({
        segments: [...at, key],
        atKey: true,
        message: `${Buffer.byteLength(key)} bytes, more than limits.nameBytes (${nameBytes}); use a shorter name or raise limits.nameBytes`,
      });
    }
    if (typeof value === "string" && overBytes(value, valueBytes)) {
      issues.push({
        segments: [...at, key],
        message: `${Buffer.byteLength(value)} bytes, more than limits.attributeValueBytes (${valueBytes}); shorten it or raise the limit`,
      });
    }
  }
}

/**
 * Every key and string value must be well-formed Unicode: a lone surrogate (YAML `"\uD800"`) cannot
 * be written as UTF-8, so the hub's store and every JSON consumer downstream would refuse or mangle
 * it. Refusing it here names the place instead of failing later.
 */
function checkWellFormed(value: unknown, at: readonly Segment[], issues: RawIssue[]): void {
  if (typeof value === "string") {
    const message = surrogateMessage("text", value);
    if (message !== undefined) issues.push({ segments: at, message });
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) checkWellFormed(item, [...at, index], issues);
  } else if (isRecord(value)) {
    for (const [key, child] of Object.entries(value)) {
      const message = surrogateMessage("key", key);
      if (message !== undefined) issues.push({ segments: [...at, key], message, atKey: true });
      checkWellFormed(child, [...at, key], issues);
    }
  }
}

function surrogateMessage(what: "text" | "key", text: string): string | undefined {
  const index = loneSurrogateAt(text);
  if (index === undefined) return undefined;
  const unit = `\\u${text.charCodeAt(index).toString(16).padStart(4, "0")}`;
  return (
    `the ${what} is not well-formed Unicode: it holds a lone UTF-16 surrogate (${unit} at index ${index}); ` +
    "remove it or write the whole character"
  );
}

function checkProbes(probes: readonly unknown[], issues: RawIssue[]): void {
  const probeNames = new Map<string, string>();
  const ports = new Map<string, string>();
  probes.forEach((probe, p) => {
    if (!isRecord(probe)) return;
    unique(probeNames, probe.name, ["probes", p, "name"], "probe name", issues);
    if (probe.linkSecret !== undefined && probe.linkSecretFile !== undefined) {
      issues.push({
        segments: ["probes", p, "linkSecretFile"],
        message: "give the probe's link secret once: linkSecret or linkSecretFile, not both",
      });
    }

    const hostname = typeof probe.hostname === "string" ? probe.hostname : DEFAULT_PROBE_HOSTNAME;
    for (const [key, fallback] of [
      ["restApiHttpPort", DEFAULT_REST_API_HTTP_PORT],
      ["restApiHttpsPort", DEFAULT_REST_API_HTTPS_PORT],
    ] as const) {
      const port = probe[key] ?? fallback;
      if (typeof port !== "number" || port === 0) continue; // 0: the system picks a free port
      const where = ["probes", p, key];
      const id = `${hostname.toLowerCase()}:${port}`;
      const first = ports.get(id);
      if (first === undefined) ports.set(id, formatPath(where));
      else
        issues.push({
          segments: where,
          message: `port ${port} on ${hostname} is already used by ${first}; give each listener its own port (or 0 for a free one)`,
        });
    }

    const entityNames = new Map<string, string>();
    list(probe.managedEntities).forEach((entity, e) => {
      if (!isRecord(entity)) return;
      const at = ["probes", p, "managedEntities", e] as const;
      unique(entityNames, entity.name, [...at, "name"], "managed entity name in this probe", issues);
      checkSamplers(list(entity.samplers), at, issues);
    });
  });
}

function checkSamplers(samplers: readonly unknown[], at: readonly Segment[], issues: RawIssue[]): void {
  const seen = new Map<string, string>();
  samplers.forEach((sampler, s) => {
    if (!isRecord(sampler) || typeof sampler.name !== "string") return;
    const where = [...at, "samplers", s];
    const type = typeof sampler.type === "string" ? sampler.type : "";
    const id = formatSamplerRef(sampler.name, type);
    const first = seen.get(id);
    if (first === undefined) seen.set(id, formatPath(where));
    else
      issues.push({
        segments: [...where, "name"],
        message: `duplicate sampler '${sampler.name}'${type ? ` of type '${type}'` : " without a type"} (also ${first}); give it another name or a different type`,
      });

    const ca = sampler.clientCaCertificate;
    if (isRecord(ca) && ca.enabled === true && (ca.path === undefined || ca.path === "")) {
      issues.push({
        segments: [...where, "clientCaCertificate", "path"],
        message:
          "Client CA certificate enabled without a path; set clientCaCertificate.path to the CA certificate " +
          "file, or set enabled: false to verify against the probe's -ssl-certificate-chain",
      });
    }

    if (sampler.plugin === "fkm") {
      checkFkmSource(sampler.source, samplers, [...where, "source", "sampler"], issues);
      list(sampler.keywords).forEach((keyword, k) => {
        if (isRecord(keyword)) checkRegex(keyword.pattern, [...where, "keywords", k, "pattern"], issues);
      });
    }
  });
}

/** An fkm `source.sampler` is `name` or `name(type)` of a rest-api sampler on the same entity. */
function checkFkmSource(source: unknown, samplers: readonly unknown[], where: Segment[], issues: RawIssue[]) {
  if (!isRecord(source) || typeof source.sampler !== "string" || source.sampler === "") return;
  const wanted = source.sampler;
  const { name, type } = parseSamplerRef(wanted);
  const matches = samplers.filter(
    (s) =>
      isRecord(s) &&
      s.name === name &&
      (type === null || (typeof s.type === "string" ? s.type : "") === type),
  );
  const restApi = matches.filter((s) => isRecord(s) && s.plugin === "rest-api");
  const names = samplers
    .filter((s) => isRecord(s) && s.plugin === "rest-api" && typeof s.name === "string")
    .map((s) => (isRecord(s) ? String(s.name) : ""));
  if (restApi.length === 1) return;
  if (restApi.length > 1) {
    issues.push({
      segments: where,
      message: `source sampler '${wanted}' is ambiguous: several rest-api samplers have that name; write it as name(type)`,
    });
  } else if (matches.length > 0) {
    issues.push({
      segments: where,
      message: `source sampler '${wanted}' is not a rest-api sampler; an fkm sampler reads the stream of a rest-api sampler`,
    });
  } else {
    const suggestion = nearest(wanted, names);
    issues.push({
      segments: where,
      message:
        `source sampler '${wanted}' is not a rest-api sampler of this managed entity` +
        (suggestion === undefined
          ? names.length > 0
            ? ` (its rest-api samplers: ${names.join(", ")})`
            : "; add a rest-api sampler to read from"
          : `; did you mean '${suggestion}'?`),
    });
  }
}

function checkRules(rules: readonly unknown[], issues: RawIssue[]): void {
  const names = new Map<string, string>();
  rules.forEach((rule, r) => {
    if (!isRecord(rule)) return;
    unique(names, rule.name, ["rules", r, "name"], "rule name", issues);

    const target = rule.target;
    if (isRecord(target)) {
      const cell = target.row !== undefined || target.column !== undefined;
      if (target.headline !== undefined && cell) {
        issues.push({
          segments: ["rules", r, "target", "headline"],
          message: "a rule target names either a cell (row and column) or a headline, not both; remove one",
        });
      } else if (target.headline === undefined && target.column === undefined) {
        issues.push({
          segments: ["rules", r, "target"],
          message:
            target.row === undefined
              ? "a rule target needs a column (with row, default '*') or a headline"
              : "a rule target with a row needs a column too",
        });
      }
    }

    const when = rule.when;
    if (
      isRecord(when) &&
      when.operator === "matches" &&
      (typeof when.value === "string" || typeof when.value === "number")
    ) {
      checkRegex(String(when.value), ["rules", r, "when", "value"], issues);
    }
  });
}

/** `gateway.tls` or `hub.tls`: both files or neither. */
function checkTls(section: "gateway" | "hub", tls: unknown, issues: RawIssue[]): void {
  if (!isRecord(tls)) return;
  const certificate = typeof tls.certificate === "string" && tls.certificate !== "";
  const key = typeof tls.key === "string" && tls.key !== "";
  if (certificate !== key) {
    issues.push({
      segments: [section, "tls", certificate ? "key" : "certificate"],
      message: `${section} TLS needs both certificate and key (or neither, for plain HTTP); set the missing one`,
    });
  }
}

function checkHub(hub: Record<string, unknown>, issues: RawIssue[]): void {
  checkTls("hub", hub.tls, issues);
  const security = isRecord(hub.security) ? hub.security : {};
  const clientIds = new Map<string, string>();
  list(security.appKeys).forEach((appKey, a) => {
    if (!isRecord(appKey)) return;
    unique(clientIds, appKey.clientId, ["hub", "security", "appKeys", a, "clientId"], "clientId", issues);
    distinctRoles(appKey.roles, ["hub", "security", "appKeys", a, "roles"], issues);
  });
  distinctRoles(security.kerberosRoles, ["hub", "security", "kerberosRoles"], issues);
  const kerberos = security.kerberos;
  if (isRecord(kerberos)) {
    for (const key of ["keytab", "servicePrincipal"] as const) {
      if (kerberos.enabled === true && (kerberos[key] === undefined || kerberos[key] === "")) {
        issues.push({
          segments: ["hub", "security", "kerberos", key],
          message: `Kerberos is enabled without a ${key}; set it, or set enabled: false`,
        });
      }
    }
    const principal = kerberos.servicePrincipal;
    if (
      typeof principal === "string" &&
      principal !== "" &&
      !/^HTTP(\/[^@/\s]+@[^@/\s]+|@[^@/\s]+)$/.test(principal)
    ) {
      issues.push({
        segments: ["hub", "security", "kerberos", "servicePrincipal"],
        message: `'${principal}' is not a service principal; write it as HTTP/<host>@<REALM> (or HTTP@<host>)`,
      });
    }
  }
}

/** A role listed twice is a mistake, not a stronger grant (DESIGN 5.4a). */
function distinctRoles(roles: unknown, segments: readonly Segment[], issues: RawIssue[]): void {
  const seen = new Set<unknown>();
  list(roles).forEach((role, r) => {
    if (seen.has(role)) {
      issues.push({
        segments: [...segments, r],
        message: `role '${String(role)}' is listed twice; list each role once`,
      });
    }
    seen.add(role);
  });
}

function unique(
  seen: Map<string, string>,
  name: unknown,
  where: Segment[],
  what: string,
  issues: RawIssue[],
) {
  if (typeof name !== "string") return;
  const first = seen.get(name);
  if (first === undefined) seen.set(name, formatPath(where));
  else
    issues.push({
      segments: where,
      message: `duplicate ${what} '${name}' (also ${first}); names must be unique`,
    });
}

function checkRegex(pattern: unknown, where: Segment[], issues: RawIssue[]): void {
  if (typeof pattern !== "string") return;
  const reason = patternProblem(pattern);
  if (reason !== undefined) {
    issues.push({
      segments: where,
      message: `'${pattern}' is not a valid RE2 regular expression (${reason}); fix it, escaping special characters with \\ (lookaround and backreferences are not supported)`,
    });
  }
}

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}
