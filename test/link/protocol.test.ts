/**
 * The probe link protocol: every frame either side receives is validated (shape, types, bounds)
 * before it is read; a bad one is a FrameError naming where and why. Cell encoding round-trips.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { LINK_MAX_CELL_LENGTH, LINK_MAX_COLUMNS } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { DEFAULT_DATA_LIMITS } from "../../src/limits/data-limits.js";
import {
  decodeCells,
  encodeCells,
  LINK_PROTOCOL_VERSION,
  probeLimits,
  wireCellCount,
} from "../../src/link/protocol.js";
import { FrameError, frameBounds, parseGatewayFrame, parseProbeFrame } from "../../src/link/validate.js";
import { WIRE_PROBE_SETUP_SCHEMA } from "../../src/link/wire-schema.js";
import { probeSetupOfWire, wireProbeLimits, wireProbeSetup } from "../../src/link/wire-setup.js";

const setup = parseSetup(`
gateway: { name: GW, maxColumnsPerDataview: 4, maxCellLength: 10 }
probes:
  - name: p1
    managedEntities:
      - name: me
        attributes: { Env: prod }
        samplers:
          - { name: s, plugin: rest-api }
          - { name: f, plugin: fkm, source: { sampler: s, stream: x }, keywords: [{ pattern: E, severity: CRITICAL }] }
`);
// Small bounds, to see them enforced (a gateway uses frameBounds(): its limits or larger caps).
const bounds = { maxBatchChanges: 3, maxColumns: 4, maxCellLength: 10 };
const parameters = { osType: "Linux", HostName: "h", Port: "1", OS: "Linux 6", Version: "0.1.0" };
const dataview = { managedEntity: "me", sampler: "s", samplerType: "", dataview: "dv" };
const row = { kind: "row", dataview, at: 1, name: "a", cells: ["a", 2, "x"] };
const replace = {
  kind: "dataview",
  dataview,
  at: 1,
  plugin: "rest-api",
  columns: ["n", "v"],
  rows: [{ name: "a", cells: ["a"] }],
  headlines: [["totalRows", "1"]],
};

// [name, frame, error message pattern (undefined: valid)]
const probeFrames: [string, unknown, RegExp | undefined][] = [
  [
    "hello",
    { type: "hello", version: LINK_PROTOCOL_VERSION, probe: "p1", parameters, coalesced: 0, resumed: false },
    undefined,
  ],
  [
    "hello without parameters",
    { type: "hello", version: 1, probe: "p1", coalesced: 0, resumed: false },
    /missing field 'parameters'/,
  ],
  [
    "hello with a numeric parameter",
    {
      type: "hello",
      version: 1,
      probe: "p1",
      parameters: { ...parameters, Port: 1 },
      coalesced: 0,
      resumed: false,
    },
    /hello.parameters.Port: must be a string/,
  ],
  ["parameters", { type: "parameters", seq: 1, parameters }, undefined],
  [
    "state with a dataview and a row",
    { type: "state", seq: 1, items: [replace, row], last: true },
    undefined,
  ],
  ["an empty last state", { type: "state", seq: 1, items: [], last: true }, undefined],
  [
    "state holding a delete",
    { type: "state", seq: 1, items: [{ kind: "dataviewDelete", dataview, at: 1 }], last: true },
    /a state holds only/,
  ],
  [
    "changes",
    { type: "changes", seq: 2, changes: [row, replace, { kind: "rowDelete", dataview, at: 1, name: "a" }] },
    undefined,
  ],
  [
    "changes with headlines",
    { type: "changes", seq: 2, changes: [{ kind: "headlines", dataview, at: 1, headlines: [["a", "b"]] }] },
    undefined,
  ],
  ["empty changes", { type: "changes", seq: 2, changes: [] }, /must not be empty/],
  [
    "more changes than a batch may hold",
    { type: "changes", seq: 2, changes: [row, row, row, row] },
    /more than 3 elements/,
  ],
  ["seq 0", { type: "changes", seq: 0, changes: [row] }, /changes.seq: must be an integer from 1/],
  ["a fractional seq", { type: "changes", seq: 1.5, changes: [row] }, /changes.seq/],
  [
    "an unknown change kind",
    { type: "changes", seq: 1, changes: [{ ...row, kind: "stream" }] },
    /unknown change kind "stream"/,
  ],
  ["an unknown field", { type: "changes", seq: 1, changes: [row], extra: 1 }, /unknown field 'extra'/],
  [
    "a cell over maxCellLength",
    { type: "changes", seq: 1, changes: [{ ...row, cells: ["x".repeat(11)] }] },
    /cells\[0\]: longer than 10/,
  ],
  [
    "more cells than columns allow",
    { type: "changes", seq: 1, changes: [{ ...row, cells: ["a", 4] }] },
    /more than 4 cells/,
  ],
  [
    "a blank run of 0",
    { type: "changes", seq: 1, changes: [{ ...row, cells: ["a", 0] }] },
    /cells\[1\]: must be an integer from 1/,
  ],
  ["a cell that is an object", { type: "changes", seq: 1, changes: [{ ...row, cells: [{}] }] }, /cells\[0\]/],
  [
    "too many columns",
    { type: "changes", seq: 1, changes: [{ ...replace, columns: ["a", "b", "c", "d", "e"] }] },
    /columns: has more than 4/,
  ],
  [
    "a headline that is not a pair",
    { type: "changes", seq: 1, changes: [{ ...replace, headlines: [["a"]] }] },
    /must be a \[name, value\] pair/,
  ],
  [
    "an address without dataview",
    {
      type: "changes",
      seq: 1,
      changes: [{ ...row, dataview: { managedEntity: "me", sampler: "s", samplerType: "" } }],
    },
    /changes\[0\].dataview: missing field 'dataview'/,
  ],
  ["a negative time", { type: "changes", seq: 1, changes: [{ ...row, at: -1 }] }, /at: must be an integer/],
  ["heartbeat", { type: "heartbeat" }, undefined],
  ["bye", { type: "bye", reason: "stopping" }, undefined],
  ["an unknown type", { type: "hug" }, /unknown frame type "hug"/],
  ["an array", [], /frame: must be an object/],
  ["null", null, /frame: must be an object/],
  ["a string", "hello", /frame: must be an object/],
];

const probeSetup = setup.probes[0]!;
const limits = probeLimits(setup.gateway);
const welcome = {
  type: "welcome",
  version: LINK_PROTOCOL_VERSION,
  gateway: "GW",
  setup: JSON.parse(JSON.stringify(probeSetup)),
  limits,
  credit: 8,
  maxBatchChanges: 500,
  heartbeatMs: 5000,
};
const gatewayFrames: [string, unknown, RegExp | undefined][] = [
  ["welcome", welcome, undefined],
  [
    "welcome without credit",
    JSON.parse(JSON.stringify({ ...welcome, credit: undefined })),
    /welcome: missing field 'credit'/,
  ],
  ["welcome with credit 0", { ...welcome, credit: 0 }, /welcome.credit/],
  [
    "welcome with a bad sampler plugin",
    {
      ...welcome,
      setup: {
        ...welcome.setup,
        managedEntities: [
          { name: "me", attributes: {}, samplers: [{ name: "x", type: "", plugin: "other" }] },
        ],
      },
    },
    /samplers\[0\].plugin: must be 'rest-api' or 'fkm'/,
  ],
  [
    "welcome with a port out of range",
    { ...welcome, setup: { ...welcome.setup, restApiHttpPort: 70000 } },
    /restApiHttpPort: must be an integer from 0 to 65535/,
  ],
  ["setup", { type: "setup", setup: welcome.setup, limits }, undefined],
  ["ack", { type: "ack", seq: 3 }, undefined],
  ["ack without seq", { type: "ack" }, /missing field 'seq'/],
  ["heartbeat", { type: "heartbeat" }, undefined],
  ["error", { type: "error", code: "UNKNOWN_PROBE", message: "no such probe" }, undefined],
  ["error with an unknown code", { type: "error", code: "OOPS", message: "x" }, /error.code: must be one of/],
  // Lengths are UTF-16 code units, as everywhere else: 16 384 units of astral characters is the most.
  [
    "error with a message of 16 384 UTF-16 units",
    { type: "error", code: "UNKNOWN_PROBE", message: "😀".repeat(8192) },
    undefined,
  ],
  [
    "error with a message of 16 386 UTF-16 units (8 193 characters)",
    { type: "error", code: "UNKNOWN_PROBE", message: "😀".repeat(8193) },
    /error\.message: longer than 16384 characters/,
  ],
  ["an unknown type", { type: "changes", seq: 1, changes: [] }, /unknown frame type "changes"/],
];

describe("probe link: frames from a probe", () => {
  for (const [name, frame, error] of probeFrames) {
    test(`${error === undefined ? "accepts" : "refuses"} ${name}`, () => {
      if (error === undefined) assert.doesNotThrow(() => parseProbeFrame(frame, bounds));
      else
        assert.throws(
          () => parseProbeFrame(frame, bounds),
          (e: unknown) => e instanceof FrameError && error.test(e.message),
        );
    });
  }
});

describe("probe link: frames from a gateway", () => {
  for (const [name, frame, error] of gatewayFrames) {
    test(`${error === undefined ? "accepts" : "refuses"} ${name}`, () => {
      if (error === undefined) assert.doesNotThrow(() => parseGatewayFrame(frame));
      else
        assert.throws(
          () => parseGatewayFrame(frame),
          (e: unknown) => e instanceof FrameError && error.test(e.message),
        );
    });
  }

  test("a welcome's setup reads back as the setup that was sent", () => {
    const parsed = parseGatewayFrame(welcome);
    assert.ok(parsed.type === "welcome");
    assert.deepEqual(JSON.parse(JSON.stringify(parsed.setup)), JSON.parse(JSON.stringify(probeSetup)));
  });

  test("setup attributes named __proto__ stay data", () => {
    const frame = JSON.parse(
      JSON.stringify(welcome).replace(
        '"attributes":{"Env":"prod"}',
        '"attributes":{"__proto__":"x","Env":"prod"}',
      ),
    );
    const parsed = parseGatewayFrame(frame);
    assert.ok(parsed.type === "welcome");
    const attributes = parsed.setup.managedEntities[0]?.attributes ?? {};
    assert.deepEqual(Object.entries(attributes), [
      ["__proto__", "x"],
      ["Env", "prod"],
    ]);
  });
});

describe("probe link: a gateway's bounds", () => {
  test("are its limits, or the link's caps when those are larger (a lowered limit never breaks links)", () => {
    const bounds = frameBounds(
      { customDataviewMaxRows: 0, maxColumnsPerDataview: 4, maxCellLength: 10 },
      500,
    );
    assert.deepEqual(bounds, {
      maxBatchChanges: 500,
      maxColumns: LINK_MAX_COLUMNS,
      maxCellLength: LINK_MAX_CELL_LENGTH,
      data: DEFAULT_DATA_LIMITS,
    });
    const large = frameBounds(
      { customDataviewMaxRows: 0, maxColumnsPerDataview: 100_000, maxCellLength: 2e6 },
      1,
    );
    assert.deepEqual(large, {
      maxBatchChanges: 1,
      maxColumns: 100_000,
      maxCellLength: 2e6,
      data: DEFAULT_DATA_LIMITS,
    });
  });
});

describe("probe link: cell encoding", () => {
  const cases: [string, string[], (string | number)[]][] = [
    ["no blanks", ["a", "b"], ["a", "b"]],
    ["a run of blanks is a count", ["a", "", "", "b"], ["a", 2, "b"]],
    ["trailing blanks are left out", ["a", "", ""], ["a"]],
    ["leading blanks", ["", "b"], [1, "b"]],
    ["all blank", ["", ""], []],
  ];
  for (const [name, cells, wire] of cases) {
    test(name, () => {
      assert.deepEqual(encodeCells(cells), wire);
      assert.deepEqual(decodeCells(wire, cells.length), cells);
    });
  }

  test("round trip for any cells", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("", "", "x", "yz")), (cells) => {
        const wire = encodeCells(cells);
        assert.deepEqual(decodeCells(wire, cells.length), cells);
        assert.ok(wireCellCount(wire) <= cells.length);
      }),
    );
  });

  test("decoding never spells out more cells than there are columns", () => {
    assert.deepEqual(decodeCells(["a", 1_000_000_000, "b"], 3), ["a", "", ""]);
  });
});

/** Every property path a schema lists (`managedEntities[].samplers[].keywords[].pattern`), sorted. */
function schemaKeys(schema: unknown, prefix = ""): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const keys: string[] = [];
  if ("properties" in schema && typeof schema.properties === "object" && schema.properties !== null) {
    for (const [key, child] of Object.entries(schema.properties)) {
      keys.push(`${prefix}${key}`, ...schemaKeys(child, `${prefix}${key}.`));
    }
  }
  if ("items" in schema) keys.push(...schemaKeys(schema.items, `${prefix.replace(/\.$/, "")}[].`));
  if ("additionalProperties" in schema) keys.push(...schemaKeys(schema.additionalProperties, `${prefix}*.`));
  if ("oneOf" in schema && Array.isArray(schema.oneOf)) {
    for (const branch of schema.oneOf) keys.push(...schemaKeys(branch, prefix));
  }
  return [...new Set(keys)].sort();
}

describe("probe link: the wire shape of the setup's part", () => {
  test("is pinned: a change to welcome's setup is a change to the link (and maybe its version)", () => {
    // biome-ignore format: one key per line reads as the wire's shape
    assert.deepEqual(schemaKeys(WIRE_PROBE_SETUP_SCHEMA), [
      "hostname",
      "managedEntities",
      "managedEntities[].attributes",
      "managedEntities[].name",
      "managedEntities[].samplers",
      "managedEntities[].samplers[].bufferSize",
      "managedEntities[].samplers[].clientCaCertificate",
      "managedEntities[].samplers[].clientCaCertificate.enabled",
      "managedEntities[].samplers[].clientCaCertificate.path",
      "managedEntities[].samplers[].keywords",
      "managedEntities[].samplers[].keywords[].pattern",
      "managedEntities[].samplers[].keywords[].severity",
      "managedEntities[].samplers[].name",
      "managedEntities[].samplers[].plugin",
      "managedEntities[].samplers[].rowLimit",
      "managedEntities[].samplers[].sampleInterval",
      "managedEntities[].samplers[].schema",
      "managedEntities[].samplers[].schema.columns",
      "managedEntities[].samplers[].schema.columns.*.type",
      "managedEntities[].samplers[].schema.columns.*.unit",
      "managedEntities[].samplers[].source",
      "managedEntities[].samplers[].source.sampler",
      "managedEntities[].samplers[].source.stream",
      "managedEntities[].samplers[].type",
      "managedEntities[].samplers[].verifyClientCertificate",
      "memoryProtection",
      "memoryProtection.limitMb",
      "memoryProtection.ratio",
      "name",
      "restApiHttpPort",
      "restApiHttpsPort",
    ]);
    assert.equal(LINK_PROTOCOL_VERSION, 2);
  });

  test("is the same JSON text as the loaded setup's part, so the version stays", () => {
    assert.equal(JSON.stringify(wireProbeSetup(probeSetup)), JSON.stringify(probeSetup));
    assert.equal(JSON.stringify(wireProbeLimits(limits)), JSON.stringify(limits));
  });

  test("maps back to the setup's part the gateway sent", () => {
    const parsed = parseGatewayFrame(
      JSON.parse(JSON.stringify({ ...welcome, setup: wireProbeSetup(probeSetup) })),
    );
    assert.ok(parsed.type === "welcome");
    assert.deepEqual(
      JSON.parse(JSON.stringify(probeSetupOfWire(parsed.setup))),
      JSON.parse(JSON.stringify(probeSetup)),
    );
  });
});
