import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseSetup, SetupError, type SetupIssue } from "../../src/config/load-setup.js";
import type { DeploymentSetup, FkmSampler, RestApiSampler } from "../../src/config/setup.js";

/** A setup with one probe `p` and one managed entity `m` holding the given samplers (flow YAML). */
const withSamplers = (samplers: string): string =>
  `gateway: {name: G}\nprobes: [{name: p, managedEntities: [{name: m, samplers: [${samplers}]}]}]`;
/** A setup with the given probes (flow YAML). */
const withProbes = (probes: string): string => `gateway: {name: G}\nprobes: [${probes}]`;
/** A setup with the given rules (flow YAML). */
const withRules = (rules: string): string => `gateway: {name: G}\nrules: [${rules}]`;
/** A setup with the given hub section (flow YAML). */
const withHub = (hub: string): string => `gateway: {name: G}\nhub: ${hub}`;
const REST = "{name: orders, plugin: rest-api}";
const FKM = (source: string, keywords = "[{pattern: x, severity: OK}]"): string =>
  `{name: e, plugin: fkm, source: {sampler: ${source}, stream: s}, keywords: ${keywords}}`;
const WHEN = `when: {operator: ">", value: 1}, severity: OK`;
const S0 = "probes[0].managedEntities[0].samplers[0]";
const S1 = "probes[0].managedEntities[0].samplers[1]";

function issuesOf(yaml: string): readonly SetupIssue[] {
  try {
    parseSetup(yaml);
  } catch (error) {
    if (error instanceof SetupError) return error.issues;
    throw error;
  }
  assert.fail("expected a SetupError");
}

const sampler = (setup: DeploymentSetup, index: number): RestApiSampler | FkmSampler | undefined =>
  setup.probes[0]?.managedEntities[0]?.samplers[index];

function restApi(setup: DeploymentSetup): RestApiSampler {
  const first = sampler(setup, 0);
  assert.equal(first?.plugin, "rest-api");
  return first as RestApiSampler;
}

describe("parseSetup: valid setups, defaults filled in", () => {
  // [what it shows, YAML, the part of the result to look at, what it must equal]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, (setup: DeploymentSetup) => unknown, unknown][] = [
    ["only gateway.name is required", "gateway: {name: GW}", (s) => [s.gateway.name, s.probes, s.rules], ["GW", [], []]],
    ["gateway defaults: port 7039, no row override, 256 columns, 8192-unit cells, 2048 MB at 0.9, publish to memory", "gateway: {name: G}", (s) => s.gateway, { name: "G", port: 7039, customDataviewMaxRows: 0, maxColumnsPerDataview: 256, maxCellLength: 8192, memoryProtection: { limitMb: 2048, ratio: 0.9 }, publish: [{ kind: "memory" }], tls: { certificate: "", key: "" } }],
    ["hub defaults: port 8081, no TLS", "gateway: {name: G}", (s) => [s.hub.port, s.hub.tls], [8081, { certificate: "", key: "" }]],
    ["hub defaults: 100000 series per entity, 2048 MB at 0.9", "gateway: {name: G}", (s) => [s.hub.maxSeriesPerEntity, s.hub.memoryProtection], [100_000, { limitMb: 2048, ratio: 0.9 }]],
    ["the new gateway and hub limits take the values given", "gateway: {name: G, maxColumnsPerDataview: 3, maxCellLength: 10, memoryProtection: {limitMb: 64}}\nhub: {maxSeriesPerEntity: 5, memoryProtection: {ratio: 0.5}}", (s) => [s.gateway.maxColumnsPerDataview, s.gateway.maxCellLength, s.gateway.memoryProtection, s.hub.maxSeriesPerEntity, s.hub.memoryProtection], [3, 10, { limitMb: 64, ratio: 0.9 }, 5, { limitMb: 2048, ratio: 0.5 }]],
    ["a paired surrogate (one emoji) is well-formed text", withProbes(`{name: p, managedEntities: [{name: m, attributes: {mood: "\\uD83D\\uDE00"}}]}`), (s) => s.probes[0]?.managedEntities[0]?.attributes.mood, "\u{1F600}"],
    ["security defaults: on, 300 s tokens, no keys, no Kerberos", "gateway: {name: G}", (s) => s.hub.security, { enabled: true, tokenLifetime: 300, appKeys: [], kerberos: { enabled: false, keytab: "", servicePrincipal: "" }, kerberosRoles: ["read"] }],
    ["an app key without roles reads only", withHub("{security: {appKeys: [{clientId: a, clientSecret: x}]}}"), (s) => s.hub.security.appKeys[0]?.roles, ["read"]],
    ["an app key with its roles", withHub("{security: {appKeys: [{clientId: a, clientSecret: x, roles: [write, operate]}]}}"), (s) => s.hub.security.appKeys[0]?.roles, ["write", "operate"]],
    ["kerberosRoles as given", withHub("{security: {kerberosRoles: [read, operate]}}"), (s) => s.hub.security.kerberosRoles, ["read", "operate"]],
    ["probe defaults: 127.0.0.1, ports 7136/7137, 2048 MB at 0.9", withProbes("{name: p}"), (s) => s.probes[0], { name: "p", hostname: "127.0.0.1", restApiHttpPort: 7136, restApiHttpsPort: 7137, memoryProtection: { limitMb: 2048, ratio: 0.9 }, managedEntities: [] }],
    ["managed entity defaults: no attributes, no samplers", withProbes("{name: p, managedEntities: [{name: m}]}"), (s) => s.probes[0]?.managedEntities[0], { name: "m", attributes: {}, samplers: [] }],
    ["rest-api sampler defaults: type '', buffer 1000, 200 rows, no mTLS", withSamplers(REST), (s) => sampler(s, 0), { name: "orders", type: "", plugin: "rest-api", bufferSize: 1000, rowLimit: 200, verifyClientCertificate: false, clientCaCertificate: { enabled: false, path: "" }, schema: { columns: {} } }],
    ["a column without type or unit is float64 with unit none", withSamplers("{name: o, plugin: rest-api, schema: {columns: {latency: {}}}}"), (s) => restApi(s).schema.columns, { latency: { type: "float64", unit: "none" } }],
    ["fkm sampler defaults: sampleInterval 20 s", withSamplers(`${REST}, ${FKM("orders")}`), (s) => sampler(s, 1), { name: "e", type: "", plugin: "fkm", sampleInterval: 20, source: { sampler: "orders", stream: "s" }, keywords: [{ pattern: "x", severity: "OK" }] }],
    ["a fractional sampleInterval is allowed", withSamplers(`${REST}, {name: e, plugin: fkm, sampleInterval: 0.5, source: {sampler: orders, stream: s}, keywords: [{pattern: x, severity: OK}]}`), (s) => (sampler(s, 1) as FkmSampler).sampleInterval, 0.5],
    ["nats sink defaults: stream VIGIL, subjectPrefix vigil", "gateway: {name: G, publish: [{nats: {url: 'nats://h:4222'}}]}", (s) => s.gateway.publish, [{ kind: "nats", url: "nats://h:4222", stream: "VIGIL", subjectPrefix: "vigil" }]],
    ["several sinks, kept in order", "gateway: {name: G, publish: [memory, {file: m.ndjson}]}", (s) => s.gateway.publish, [{ kind: "memory" }, { kind: "file", path: "m.ndjson" }]],
    ["an empty publish list publishes nowhere", "gateway: {name: G, publish: []}", (s) => s.gateway.publish, []],
    ["port 0 (pick a free port) may repeat", "gateway: {name: G, port: 0}\nprobes: [{name: a, restApiHttpPort: 0, restApiHttpsPort: 0}, {name: b, restApiHttpPort: 0, restApiHttpsPort: 0}]", (s) => [s.gateway.port, s.probes[1]?.restApiHttpPort], [0, 0]],
    ["the same ports on different hostnames are fine", withProbes("{name: a, hostname: 10.0.0.1}, {name: b, hostname: 10.0.0.2}"), (s) => s.probes.length, 2],
    ["one name with two types is two samplers; an fkm source picks one as name(type)", withSamplers(`{name: o, type: a, plugin: rest-api}, {name: o, type: b, plugin: rest-api}, ${FKM("o(b)")}`), (s) => s.probes[0]?.managedEntities[0]?.samplers.map((x) => x.type), ["a", "b", ""]],
    ["a cell rule without row gets row '*' and no headline key", withRules(`{name: r, target: {column: c}, ${WHEN}}`), (s) => s.rules[0]?.target, { managedEntity: "*", sampler: "*", dataview: "*", row: "*", column: "c" }],
    ["a headline rule has no row or column key", withRules(`{name: r, target: {sampler: o, headline: totalRows}, ${WHEN}}`), (s) => s.rules[0]?.target, { managedEntity: "*", sampler: "o", dataview: "*", headline: "totalRows" }],
    ["a matches rule takes a regex string", withRules("{name: r, target: {column: c}, when: {operator: matches, value: '^err(or)?$'}, severity: CRITICAL}"), (s) => s.rules[0]?.when, { operator: "matches", value: "^err(or)?$" }],
    ["ratio 1 and customDataviewMaxRows > 0 are allowed", "gateway: {name: G, customDataviewMaxRows: 50}\nprobes: [{name: p, memoryProtection: {ratio: 1}}]", (s) => [s.gateway.customDataviewMaxRows, s.probes[0]?.memoryProtection.ratio], [50, 1]],
    ["quoted attribute values stay text", withProbes("{name: p, managedEntities: [{name: m, attributes: {Version: '1.10'}}]}"), (s) => s.probes[0]?.managedEntities[0]?.attributes, { Version: "1.10" }],
    ["YAML anchors and aliases work", withProbes("{name: p, managedEntities: [{name: a, samplers: [&o {name: o, plugin: rest-api}]}, {name: b, samplers: [*o]}]}"), (s) => s.probes[0]?.managedEntities[1]?.samplers[0]?.name, "o"],
    ["Kerberos with a principal in GSSAPI form", withHub("{security: {kerberos: {enabled: true, keytab: /k.keytab, servicePrincipal: 'HTTP@host'}}}"), (s) => s.hub.security.kerberos, { enabled: true, keytab: "/k.keytab", servicePrincipal: "HTTP@host" }],
  ];
  for (const [name, yaml, pick, expected] of cases)
    test(name, () => assert.deepEqual(pick(parseSetup(yaml)), expected));
});

describe("parseSetup: relative paths", () => {
  const yaml =
    "gateway: {name: G, publish: [{file: out/m.ndjson}, {file: /abs/m.ndjson}]}\n" +
    "hub: {tls: {certificate: c.pem, key: k.pem}, security: {kerberos: {keytab: k.keytab}}}";
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string | undefined, string[]][] = [
    ["resolved against baseDir", "/srv/vigil", ["/srv/vigil/out/m.ndjson", "/abs/m.ndjson", "/srv/vigil/c.pem", "/srv/vigil/k.pem", "/srv/vigil/k.keytab"]],
    ["kept as written without baseDir", undefined, ["out/m.ndjson", "/abs/m.ndjson", "c.pem", "k.pem", "k.keytab"]],
  ];
  for (const [name, baseDir, expected] of cases) {
    test(name, () => {
      const s = parseSetup(yaml, undefined, baseDir);
      const files = s.gateway.publish.map((sink) => (sink.kind === "file" ? sink.path : ""));
      const { tls, security } = s.hub;
      assert.deepEqual([...files, tls.certificate, tls.key, security.kerberos.keytab], expected);
    });
  }
  test("a client CA path is resolved too", () => {
    const yaml = withSamplers(
      "{name: o, plugin: rest-api, clientCaCertificate: {enabled: true, path: ca.pem}}",
    );
    assert.equal(restApi(parseSetup(yaml, undefined, "/etc/v")).clientCaCertificate.path, "/etc/v/ca.pem");
  });
});

describe("parseSetup: the result is frozen", () => {
  const setup = parseSetup(withSamplers("{name: o, plugin: rest-api, schema: {columns: {a: {}}}}"));
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, () => void][] = [
    ["top-level object", () => Object.assign(setup.gateway, { name: "x" })],
    ["array", () => (setup.probes as unknown[]).push({})],
    ["nested sampler", () => Object.assign(restApi(setup), { rowLimit: 1 })],
    ["column map", () => Object.assign(restApi(setup).schema.columns, { b: { type: "int64", unit: "none" } })],
  ];
  for (const [name, mutate] of cases)
    test(`mutating a ${name} throws`, () => assert.throws(mutate, TypeError));
});

describe("parseSetup: invalid setups report every issue with its path", () => {
  // [what it shows, YAML, expected issues as [path, message fragment], in file order]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, [string, string][]][] = [
    ["unknown top-level key, near miss", "gateway: {name: G}\nrule: []", [["rule", "unknown key 'rule'; did you mean 'rules'?"]]],
    ["unknown top-level key lists the allowed ones", "gateway: {name: G}\nextra: 1", [["extra", "unknown key 'extra'; remove it (allowed keys: gateway, probes, rules, hub, limits)"]]],
    ["unknown key in a sampler, wrong case", withSamplers("{name: o, plugin: rest-api, rowlimit: 5}"), [[`${S0}.rowlimit`, "unknown key 'rowlimit'; did you mean 'rowLimit'?"]]],
    ["fkm key on a rest-api sampler", withSamplers("{name: o, plugin: rest-api, sampleInterval: 5}"), [[`${S0}.sampleInterval`, "it belongs to fkm samplers"]]],
    ["unknown key in a rule", withRules(`{name: r, target: {column: c}, ${WHEN}, sevrity: OK}`), [["rules[0].sevrity", "unknown key 'sevrity'; did you mean 'severity'?"]]],
    ["unknown key in a rule target also leaves it without a column", withRules(`{name: r, target: {colum: c}, ${WHEN}}`), [["rules[0].target", "needs a column"], ["rules[0].target.colum", "did you mean 'column'?"]]],
    ["gateway is required", "probes: []", [["gateway", "required key 'gateway' is missing"]]],
    ["gateway.name is required", "gateway: {port: 1}", [["gateway.name", "required key 'name' is missing"]]],
    ["empty name", "gateway: {name: ''}", [["gateway.name", "must not be empty"]]],
    ["port as a string", "gateway: {name: G, port: '80'}", [["gateway.port", "expected an integer, got '80'"]]],
    ["fractional port", "gateway: {name: G, port: 80.5}", [["gateway.port", "expected an integer, got 80.5"]]],
    ["an empty value where a key may be left out", "gateway:\n  name: G\n  port:\n", [["gateway.port", "expected an integer, got an empty value"]]],
    ["a number where a severity is needed names the severities only", withRules("{name: r, target: {column: c}, when: {operator: '>', value: 1}, severity: 5}"), [["rules[0].severity", "5 is not allowed; use 'UNDEFINED', 'OK', 'WARNING', 'CRITICAL', 'UNKNOWN'"]]],
    ["number where text is needed suggests quotes", withProbes("{name: p, managedEntities: [{name: m, attributes: {Version: 1.10}}]}"), [["probes[0].managedEntities[0].attributes.Version", `put it in quotes ("1.1")`]]],
    ["list where a mapping is needed", "gateway: [a]", [["gateway", "expected a mapping (key: value), got a list"]]],
    ["port above 65535", withProbes("{name: p, restApiHttpPort: 65536}"), [["probes[0].restApiHttpPort", "65536 is out of range; must be at least 0 and at most 65535"]]],
    ["negative port", withHub("{port: -1}"), [["hub.port", "must be at least 0"]]],
    ["ratio 0 is outside (0, 1]", withProbes("{name: p, memoryProtection: {ratio: 0}}"), [["probes[0].memoryProtection.ratio", "must be greater than 0 and at most 1"]]],
    ["ratio above 1", withProbes("{name: p, memoryProtection: {ratio: 1.5}}"), [["probes[0].memoryProtection.ratio", "1.5 is out of range"]]],
    ["bufferSize 0", withSamplers("{name: o, plugin: rest-api, bufferSize: 0}"), [[`${S0}.bufferSize`, "must be at least 1"]]],
    ["rowLimit 0", withSamplers("{name: o, plugin: rest-api, rowLimit: 0}"), [[`${S0}.rowLimit`, "must be at least 1"]]],
    ["negative customDataviewMaxRows", "gateway: {name: G, customDataviewMaxRows: -1}", [["gateway.customDataviewMaxRows", "must be at least 0"]]],
    ["tokenLifetime 0", withHub("{security: {tokenLifetime: 0}}"), [["hub.security.tokenLifetime", "must be at least 1 (seconds)"]]],
    ["unknown plugin, near miss", withSamplers("{name: o, plugin: restapi}"), [[`${S0}.plugin`, "'restapi' is not allowed; use 'rest-api', 'fkm'; did you mean 'rest-api'?"]]],
    ["severity in lower case", withRules("{name: r, target: {column: c}, when: {operator: '>', value: 1}, severity: critical}"), [["rules[0].severity", "did you mean 'CRITICAL'?"]]],
    ["unknown operator", withRules("{name: r, target: {column: c}, when: {operator: '=~', value: 1}, severity: OK}"), [["rules[0].when.operator", "use '=', '!=', '>', '>=', '<', '<=', 'contains', 'matches'"]]],
    ["unknown column type", withSamplers("{name: o, plugin: rest-api, schema: {columns: {a: {type: float}}}}"), [[`${S0}.schema.columns.a.type`, "did you mean 'float64'?"]]],
    ["boolean rule value", withRules("{name: r, target: {column: c}, when: {operator: '=', value: true}, severity: OK}"), [["rules[0].when.value", "expected a string or a number, got true"]]],
    ["client CA enabled without a path", withSamplers("{name: o, plugin: rest-api, clientCaCertificate: {enabled: true}}"), [[`${S0}.clientCaCertificate.path`, "Client CA certificate enabled without a path"]]],
    ["client CA enabled with an empty path", withSamplers("{name: o, plugin: rest-api, verifyClientCertificate: true, clientCaCertificate: {enabled: true, path: ''}}"), [[`${S0}.clientCaCertificate.path`, "Client CA certificate enabled without a path"]]],
    ["several problems reported at once, schema and semantic", "gateway: {name: G, prot: 1}\nprobes: [{name: p, restApiHttpPort: 99999, managedEntities: [{name: m, samplers: [{name: o, plugin: rest-api, clientCaCertificate: {enabled: true}}]}]}]\nhub: {port: x}", [["gateway.prot", "did you mean 'port'?"], ["probes[0].restApiHttpPort", "at most 65535"], [`${S0}.clientCaCertificate.path`, "without a path"], ["hub.port", "expected an integer"]]],
    ["duplicate probe names", withProbes("{name: p, hostname: a}, {name: p, hostname: b}"), [["probes[1].name", "duplicate probe name 'p' (also probes[0].name)"]]],
    ["duplicate managed entity names in a probe", withProbes("{name: p, managedEntities: [{name: m}, {name: m}]}"), [["probes[0].managedEntities[1].name", "duplicate managed entity name in this probe 'm'"]]],
    ["duplicate sampler name and type", withSamplers(`${REST}, ${REST}`), [[`${S1}.name`, "duplicate sampler 'orders' without a type"]]],
    ["duplicate rule names", withRules(`{name: r, target: {column: c}, ${WHEN}}, {name: r, target: {column: d}, ${WHEN}}`), [["rules[1].name", "duplicate rule name 'r'"]]],
    ["fkm source not found, near miss", withSamplers(`${REST}, ${FKM("order")}`), [[`${S1}.source.sampler`, "'order' is not a rest-api sampler of this managed entity; did you mean 'orders'?"]]],
    ["fkm source not found lists the rest-api samplers", withSamplers(`${REST}, ${FKM("payments")}`), [[`${S1}.source.sampler`, "(its rest-api samplers: orders)"]]],
    ["fkm source is not a rest-api sampler", withSamplers(FKM("e")), [[`${S0}.source.sampler`, "an fkm sampler reads the stream of a rest-api sampler"]]],
    ["fkm source ambiguous between types", withSamplers(`{name: o, type: a, plugin: rest-api}, {name: o, type: b, plugin: rest-api}, ${FKM("o")}`), [["probes[0].managedEntities[0].samplers[2].source.sampler", "is ambiguous"]]],
    ["fkm without source and keywords", withSamplers("{name: e, plugin: fkm}"), [[`${S0}.source`, "required key 'source'"], [`${S0}.keywords`, "required key 'keywords'"]]],
    ["fkm with no keywords", withSamplers(`${REST}, ${FKM("orders", "[]")}`), [[`${S1}.keywords`, "needs at least 1 item"]]],
    ["bad regex in an fkm keyword", withSamplers(`${REST}, ${FKM("orders", "[{pattern: '(', severity: OK}]")}`), [[`${S1}.keywords[0].pattern`, "'(' is not a valid RE2 regular expression"]]],
    ["bad regex in a matches rule", withRules("{name: r, target: {column: c}, when: {operator: matches, value: '[a'}, severity: OK}"), [["rules[0].when.value", "'[a' is not a valid RE2 regular expression"]]],
    ["lookahead (not RE2) in a matches rule", withRules("{name: r, target: {column: c}, when: {operator: matches, value: 'a(?=b)'}, severity: OK}"), [["rules[0].when.value", "lookaround and backreferences are not supported"]]],
    ["two probes on one port and host", withProbes("{name: a}, {name: b, restApiHttpPort: 7136, restApiHttpsPort: 7200}"), [["probes[1].restApiHttpPort", "port 7136 on 127.0.0.1 is already used by probes[0].restApiHttpPort"]]],
    ["one probe's HTTP and HTTPS ports equal", withProbes("{name: a, restApiHttpPort: 8000, restApiHttpsPort: 8000}"), [["probes[0].restApiHttpsPort", "already used by probes[0].restApiHttpPort"]]],
    ["rule target with both cell and headline", withRules(`{name: r, target: {row: x, column: c, headline: h}, ${WHEN}}`), [["rules[0].target.headline", "not both"]]],
    ["rule target with a row but no column", withRules(`{name: r, target: {row: x}, ${WHEN}}`), [["rules[0].target", "with a row needs a column"]]],
    ["rule without target", withRules(`{name: r, ${WHEN}}`), [["rules[0].target", "required key 'target'"]]],
    ["misspelled publish sink", "gateway: {name: G, publish: [memroy]}", [["gateway.publish[0]", "'memroy' is not allowed; use 'memory'"]]],
    ["empty publish sink", "gateway: {name: G, publish: [{}]}", [["gateway.publish[0]", "needs exactly one of the keys 'file', 'nats'"]]],
    ["nats url that is not nats://", "gateway: {name: G, publish: [{nats: {url: 'http://h'}}]}", [["gateway.publish[0].nats.url", "expected a NATS server URL"]]],
    ["sampler name with parentheses", withSamplers("{name: 'o(x)', plugin: rest-api}"), [[`${S0}.name`, "a sampler name without parentheses"]]],
    ["hub TLS certificate without key", withHub("{tls: {certificate: c.pem}}"), [["hub.tls.key", "needs both certificate and key"]]],
    ["gateway TLS key without certificate", "gateway: {name: G, tls: {key: k.pem}}", [["gateway.tls.certificate", "gateway TLS needs both certificate and key"]]],
    ["gateway TLS with an unknown key", "gateway: {name: G, tls: {cert: c.pem}}", [["gateway.tls.cert", "unknown"]]],
    ["Kerberos enabled without keytab and principal", withHub("{security: {kerberos: {enabled: true}}}"), [["hub.security.kerberos.keytab", "without a keytab"], ["hub.security.kerberos.servicePrincipal", "without a servicePrincipal"]]],
    ["malformed service principal", withHub("{security: {kerberos: {servicePrincipal: host}}}"), [["hub.security.kerberos.servicePrincipal", "HTTP/<host>@<REALM>"]]],
    ["duplicate app key client ids", withHub("{security: {appKeys: [{clientId: a, clientSecret: x}, {clientId: a, clientSecret: y}]}}"), [["hub.security.appKeys[1].clientId", "duplicate clientId 'a'"]]],
    ["an app key role that is not a role", withHub("{security: {appKeys: [{clientId: a, clientSecret: x, roles: [admin]}]}}"), [["hub.security.appKeys[0].roles[0]", "'admin' is not allowed; use 'read', 'write', 'operate'"]]],
    ["a misspelled app key role", withHub("{security: {appKeys: [{clientId: a, clientSecret: x, roles: [raed]}]}}"), [["hub.security.appKeys[0].roles[0]", "did you mean 'read'?"]]],
    ["an app key with no roles at all", withHub("{security: {appKeys: [{clientId: a, clientSecret: x, roles: []}]}}"), [["hub.security.appKeys[0].roles", "needs at least 1 item(s)"]]],
    ["an app key role listed twice", withHub("{security: {appKeys: [{clientId: a, clientSecret: x, roles: [read, write, read]}]}}"), [["hub.security.appKeys[0].roles[2]", "role 'read' is listed twice"]]],
    ["roles that are not a list", withHub("{security: {appKeys: [{clientId: a, clientSecret: x, roles: read}]}}"), [["hub.security.appKeys[0].roles", "expected a list"]]],
    ["empty kerberosRoles", withHub("{security: {kerberosRoles: []}}"), [["hub.security.kerberosRoles", "needs at least 1 item(s)"]]],
    ["a kerberos role listed twice", withHub("{security: {kerberosRoles: [operate, operate]}}"), [["hub.security.kerberosRoles[1]", "role 'operate' is listed twice"]]],
    ["a misspelled kerberosRoles", withHub("{security: {kerberosRole: [read]}}"), [["hub.security.kerberosRole", "did you mean 'kerberosRoles'?"]]],
    ["maxColumnsPerDataview 0", "gateway: {name: G, maxColumnsPerDataview: 0}", [["gateway.maxColumnsPerDataview", "0 is out of range; must be at least 1 (distinct columns per dataview)"]]],
    ["fractional maxColumnsPerDataview", "gateway: {name: G, maxColumnsPerDataview: 2.5}", [["gateway.maxColumnsPerDataview", "expected an integer, got 2.5"]]],
    ["maxCellLength 0", "gateway: {name: G, maxCellLength: 0}", [["gateway.maxCellLength", "must be at least 1 (UTF-16 code units per cell)"]]],
    ["misspelled gateway memoryProtection", "gateway: {name: G, memoryProtecton: {}}", [["gateway.memoryProtecton", "did you mean 'memoryProtection'?"]]],
    ["gateway memory ratio 0", "gateway: {name: G, memoryProtection: {ratio: 0}}", [["gateway.memoryProtection.ratio", "must be greater than 0 and at most 1"]]],
    ["gateway memory limit 0", "gateway: {name: G, memoryProtection: {limitMb: 0}}", [["gateway.memoryProtection.limitMb", "must be at least 1"]]],
    ["maxSeriesPerEntity 0", withHub("{maxSeriesPerEntity: 0}"), [["hub.maxSeriesPerEntity", "must be at least 1 (series per entity)"]]],
    ["maxSeriesPerEntity as text", withHub("{maxSeriesPerEntity: many}"), [["hub.maxSeriesPerEntity", "expected an integer, got 'many'"]]],
    ["misspelled maxSeriesPerEntity", withHub("{maxSeriesPerEntty: 5}"), [["hub.maxSeriesPerEntty", "did you mean 'maxSeriesPerEntity'?"]]],
    ["hub memory ratio above 1", withHub("{memoryProtection: {ratio: 1.5}}"), [["hub.memoryProtection.ratio", "1.5 is out of range"]]],
    ["misspelled key in hub memoryProtection", withHub("{memoryProtection: {limitMB: 5}}"), [["hub.memoryProtection.limitMB", "did you mean 'limitMb'?"]]],
    ["lone surrogate in an attribute value", withProbes(`{name: p, managedEntities: [{name: m, attributes: {Region: "em\\uD800ea"}}]}`), [["probes[0].managedEntities[0].attributes.Region", "the text is not well-formed Unicode: it holds a lone UTF-16 surrogate (\\ud800 at index 2)"]]],
    ["lone surrogate in an attribute key", withProbes(`{name: p, managedEntities: [{name: m, attributes: {"\\uDC00": x}}]}`), [['probes[0].managedEntities[0].attributes["\\udc00"]', "the key is not well-formed Unicode"]]],
    ["lone surrogate in a name", withProbes(`{name: "p\\uD800"}`), [["probes[0].name", "lone UTF-16 surrogate (\\ud800 at index 1)"]]],
    ["lone surrogate in a publish file path", `gateway: {name: G, publish: [{file: "m\\uDBFF.ndjson"}]}`, [["gateway.publish[0].file", "(\\udbff at index 1)"]]],
    ["lone surrogate in an fkm pattern", withSamplers(`${REST}, ${FKM("orders", '[{pattern: "\\uD800", severity: OK}]')}`), [[`${S1}.keywords[0].pattern`, "not well-formed Unicode"]]],
    ["lone surrogate in a rule value", withRules(`{name: r, target: {column: c}, when: {operator: "=", value: "\\uDFFF"}, severity: OK}`), [["rules[0].when.value", "not well-formed Unicode"]]],
    ["a high surrogate followed by text, then a low one alone, are two issues", withProbes(`{name: p, managedEntities: [{name: "\\uD800x", attributes: {a: "x\\uDC00"}}]}`), [["probes[0].managedEntities[0].name", "index 0"], ["probes[0].managedEntities[0].attributes.a", "index 1"]]],
    ["a managed entity name beyond limits.nameBytes", withProbes(`{name: p, managedEntities: [{name: ${"m".repeat(1025)}}]}`), [["probes[0].managedEntities[0].name", "1025 bytes, more than limits.nameBytes (1024)"]]],
    ["an attribute value beyond a lowered limits.attributeValueBytes", `limits: {attributeValueBytes: 4}\n${withProbes("{name: p, managedEntities: [{name: m, attributes: {Region: emea-1}}]}")}`, [["probes[0].managedEntities[0].attributes.Region", "6 bytes, more than limits.attributeValueBytes (4)"]]],
    ["more attributes than limits.attributesPerEntity", `limits: {attributesPerEntity: 1}\n${withProbes("{name: p, managedEntities: [{name: m, attributes: {a: x, b: y}}]}")}`, [["probes[0].managedEntities[0].attributes", "2 attributes, more than limits.attributesPerEntity (1)"]]],
    ["an fkm pattern (a row name) beyond limits.nameBytes", `limits: {nameBytes: 3}\n${withSamplers(`{name: o, plugin: rest-api}, {name: e, plugin: fkm, source: {sampler: o, stream: s}, keywords: [{pattern: ERROR, severity: OK}]}`)}`, [[`${S1}.keywords[0].pattern`, "5 bytes, more than limits.nameBytes (3)"]]],
    ["empty document", "", [["", "the setup is empty"]]],
    ["a scalar document", "42", [["", "expected a mapping (key: value), got 42"]]],
    ["YAML syntax error names line and column", "gateway:\n  name: G\n  port: [1, 2\n", [["", "YAML syntax error at line 4, column 1"]]],
    ["too many aliases (billion laughs) are refused", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]", [["", "the YAML cannot be read: Excessive alias count"]]],
    ["duplicate YAML keys are a syntax error", "gateway:\n  name: G\n  name: H\n", [["", "at line 3, column 3: Map keys must be unique"]]],
    ["a key that is a list is refused where it is", "gateway:\n  name: G\n  ? [a, b]\n  : x\n", [["", "a key at line 3, column 5 is a list, a mapping or binary data"]]],
    ["a key that is an alias of a mapping is refused", "a: &m {x: 1}\ngateway: {name: G, *m : y}\n", [["", "a key at line 2, column 20 is a list, a mapping or binary data"]]],
    ["a key of binary data is refused", "gateway:\n  name: G\n  !!binary aGk= : x\n", [["", "a key at line 3, column 12 is a list, a mapping or binary data"]]],
  ];
  for (const [name, yaml, expected] of cases) {
    test(name, () => {
      const issues = issuesOf(yaml);
      const listing = issues.map((i) => `${i.path}: ${i.message}`).join("\n");
      assert.deepEqual(
        issues.map((i) => i.path),
        expected.map(([path]) => path),
        listing,
      );
      for (const [index, [, fragment]] of expected.entries()) {
        assert.ok(
          issues[index]?.message.includes(fragment),
          `issue ${index} lacks "${fragment}":\n${listing}`,
        );
      }
    });
  }
});

describe("parseSetup: positions and sources", () => {
  test("an issue carries the line and column of the offending key", () => {
    const [issue] = issuesOf("gateway:\n  name: G\n  prot: 1\n");
    assert.deepEqual([issue?.line, issue?.column], [3, 3]);
  });
  test("a missing key points at its parent", () => {
    const [issue] = issuesOf("gateway: {name: G}\nprobes:\n  - hostname: h\n");
    assert.deepEqual([issue?.path, issue?.line, issue?.column], ["probes[0].name", 3, 5]);
  });
  test("the source prefixes every path", () => {
    assert.throws(
      () => parseSetup("gateway: {name: G, prot: 1}", "setup.yaml"),
      (error: unknown) => error instanceof SetupError && error.issues[0]?.path === "setup.yaml:gateway.prot",
    );
  });
  test("the error message lists every issue", () => {
    assert.throws(
      () => parseSetup("gateway: {prot: 1}"),
      /Invalid setup \(2 problems\):\ngateway\.name: .*\ngateway\.prot: /,
    );
  });
});

describe("parseSetup: a hub-only setup (DESIGN 1 `vigil hub`)", () => {
  const HUB_ONLY = { hubOnly: true } as const;
  const hubIssues = (yaml: string): readonly SetupIssue[] => {
    try {
      parseSetup(yaml, undefined, undefined, HUB_ONLY);
    } catch (error) {
      if (error instanceof SetupError) return error.issues;
      throw error;
    }
    assert.fail("expected a SetupError");
  };

  test("only `hub:` loads with the hub's load: no gateway, no probes, no rules, the hub as written", () => {
    const setup = parseSetup("hub: {port: 0, security: {enabled: false}}", undefined, undefined, HUB_ONLY);
    assert.equal(setup.gateway, undefined);
    assert.deepEqual([setup.probes, setup.rules, setup.linkSecrets], [[], [], []]);
    assert.deepEqual([setup.hub.port, setup.hub.security.enabled], [0, false]);
  });

  test("`limits:` may stand beside `hub:`", () => {
    const setup = parseSetup("hub: {}\nlimits: {nameBytes: 100}", undefined, undefined, HUB_ONLY);
    assert.equal(setup.limits.nameBytes, 100);
  });

  test("the hub's load takes the deployment's whole setup too", () => {
    const setup = parseSetup("gateway: {name: G}\nhub: {port: 0}", undefined, undefined, HUB_ONLY);
    assert.equal(setup.gateway?.name, "G");
  });

  // [what it shows, YAML, expected issues as [path, message fragment]]
  // biome-ignore format: one line per case (STYLE 16)
  const refused: [string, string, [string, string][]][] = [
    ["probes without a gateway have no use", "hub: {}\nprobes: []", [["probes", "'probes' needs the 'gateway' section that uses it"]]],
    ["rules without a gateway have no use", "hub: {}\nrules: []", [["rules", "'rules' needs the 'gateway' section that uses it"]]],
    ["only limits: neither the deployment nor the hub", "limits: {nameBytes: 100}", [["gateway", "add it, or write a 'hub' section for a hub-only setup"]]],
    ["an empty document says both ways out", "", [["", "the setup is empty; write at least `gateway: { name: GW1 }`, or `hub: {}` for a hub-only setup"]]],
    ["the hub's own checks still apply", "hub: {prot: 1}", [["hub.prot", "did you mean 'port'?"]]],
  ];
  for (const [name, yaml, expected] of refused) {
    test(name, () => {
      const issues = hubIssues(yaml);
      const listing = issues.map((i) => `${i.path}: ${i.message}`).join("\n");
      assert.deepEqual(
        issues.map((i) => i.path),
        expected.map(([path]) => path),
        listing,
      );
      for (const [index, [, fragment]] of expected.entries())
        assert.ok(
          issues[index]?.message.includes(fragment),
          `issue ${index} lacks "${fragment}":\n${listing}`,
        );
    });
  }

  test("every other load refuses it, saying it is a hub-only setup that only `vigil hub` runs", () => {
    const [issue, ...more] = issuesOf("hub: {port: 0}");
    assert.deepEqual(more, []);
    assert.equal(issue?.path, "gateway");
    assert.match(
      issue?.message ?? "",
      /^this is a hub-only setup \('hub' without 'gateway'\), which only `vigil hub` runs; give this command the deployment's setup, with its 'gateway' section$/,
    );
  });
});
