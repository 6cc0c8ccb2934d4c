/**
 * The gateway turns probe events into public-v2 messages (DESIGN 4.3): which operations, in which
 * order, and every message valid against the schema.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseSetup } from "../../src/config/load-setup.js";
import { Hierarchy } from "../../src/gateway/hierarchy.js";
import { asEpochMs } from "../../src/ids.js";
import type { DataviewState, ProbeEvent } from "../../src/link/probe-link.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import { validateMessage } from "../../src/messages/validate.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - { name: me1, attributes: { Env: prod }, samplers: [{ name: s1, plugin: rest-api }] }
      - { name: me2, samplers: [] }
`);

const at = asEpochMs(Date.UTC(2026, 0, 1));
const address = { managedEntity: "me1", sampler: "s1", samplerType: "", dataview: "dv" };
const hello: ProbeEvent = {
  kind: "hello",
  at,
  parameters: { osType: "Linux", HostName: "h", Port: "7136", OS: "Linux 6", Version: "0.1.0" },
};

function state(rows: [string, Record<string, string>][], total = rows.length): DataviewState {
  return {
    columns: ["n", "v"],
    rows: rows.map(([name, cells]) => ({ name, cells })),
    headlines: { samplingStatus: "OK", totalRows: String(total) },
  };
}

const dv = (rows: [string, Record<string, string>][], touched: string[]): ProbeEvent => ({
  kind: "dataview",
  at,
  address,
  plugin: "rest-api",
  state: state(rows),
  touched,
});

const summary = (m: PublicV2Message): string => {
  const target = m.data.target as { row?: string };
  return `${m.type}:${m.operation}${target.row === undefined ? "" : `:${target.row}`}`;
};

// [name, events, the messages the LAST event causes]
const cases: [string, ProbeEvent[], string[]][] = [
  [
    "hello announces the probe and every managed entity",
    [hello],
    ["probe:create", "managedEntity:create", "managedEntity:create"],
  ],
  [
    "a new dataview creates its headlines and rows",
    [hello, dv([["a", { n: "a", v: "1" }]], ["a"])],
    ["headline:create", "table:create:a"],
  ],
  [
    "a row written again is an update even with the same values",
    [hello, dv([["a", { n: "a", v: "1" }]], ["a"]), dv([["a", { n: "a", v: "1" }]], ["a"])],
    ["table:update:a"],
  ],
  [
    "a row neither written nor changed publishes nothing",
    [
      hello,
      dv(
        [
          ["a", { n: "a", v: "1" }],
          ["b", { n: "b", v: "2" }],
        ],
        ["a", "b"],
      ),
      dv(
        [
          ["a", { n: "a", v: "1" }],
          ["b", { n: "b", v: "3" }],
        ],
        ["b"],
      ),
    ],
    ["table:update:b"],
  ],
  [
    "a row that goes is deleted and the headline count updates",
    [
      hello,
      dv(
        [
          ["a", { n: "a", v: "1" }],
          ["b", { n: "b", v: "2" }],
        ],
        ["a", "b"],
      ),
      dv([["a", { n: "a", v: "1" }]], []),
    ],
    ["headline:update", "table:delete:b"],
  ],
  [
    "renumbered duplicates are updates of the names that remain",
    [
      hello,
      dv(
        [
          ["a", { n: "a", v: "1" }],
          ["a_duplicate1", { n: "a", v: "2" }],
        ],
        ["a", "a_duplicate1"],
      ),
      dv([["a", { n: "a", v: "2" }]], []),
    ],
    ["headline:update", "table:delete:a_duplicate1", "table:update:a"],
  ],
  [
    "a deleted dataview deletes its rows and headlines",
    [hello, dv([["a", { n: "a", v: "1" }]], ["a"]), { kind: "dataviewDeleted", at, address }],
    ["table:delete:a", "headline:delete"],
  ],
  ["bye publishes the probe as down", [hello, { kind: "bye", at }], ["probe:update"]],
  [
    "a reconnecting probe is re-announced as snapshot and its old data deleted",
    [hello, dv([["a", { n: "a", v: "1" }]], ["a"]), hello],
    [
      "table:delete:a",
      "headline:delete",
      "probe:snapshot",
      "managedEntity:snapshot",
      "managedEntity:snapshot",
    ],
  ],
];

describe("gateway hierarchy: probe events → public-v2 messages", () => {
  for (const [name, events, expected] of cases) {
    test(name, () => {
      const hierarchy = new Hierarchy(setup.gateway, setup.probes);
      let last: PublicV2Message[] = [];
      for (const event of events) {
        last = hierarchy.apply("p1", event, at);
        for (const message of last) {
          const result = validateMessage(message);
          assert.ok(result.ok, `${summary(message)} invalid: ${result.ok ? "" : result.errors.join("; ")}`);
        }
      }
      assert.deepEqual(last.map(summary), expected);
    });
  }

  test("table messages carry the whole row, the target filter and both times", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    hierarchy.apply("p1", hello, at);
    const [, table] = hierarchy.apply("p1", dv([["a", { n: "a", v: "1" }]], ["a"]), at + 5);
    assert.deepEqual(table, {
      type: "table",
      operation: "create",
      data: {
        sampleTime: new Date(at + 5).toISOString(),
        probeTime: new Date(at).toISOString(),
        target: {
          gateway: "GW",
          probe: "p1",
          managedEntity: "me1",
          type: "",
          sampler: "s1",
          dataview: "dv",
          filter: { osType: "Linux", pluginName: "rest-api" },
          row: "a",
        },
        row: { n: "a", v: "1" },
      },
    });
  });

  test("managed entity messages carry the setup attributes", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    const messages = hierarchy.apply("p1", hello, at);
    assert.deepEqual(messages[1]?.data, {
      timestamp: new Date(at).toISOString(),
      target: { gateway: "GW", probe: "p1", managedEntity: "me1" },
      attributes: { Env: "prod" },
    });
  });

  test("snapshot republishes current state", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    hierarchy.apply("p1", hello, at);
    hierarchy.apply("p1", dv([["a", { n: "a", v: "1" }]], ["a"]), at);
    assert.deepEqual(hierarchy.snapshot(at).map(summary), [
      "probe:snapshot",
      "managedEntity:snapshot",
      "managedEntity:snapshot",
      "headline:snapshot",
      "table:snapshot:a",
    ]);
  });
});
