/**
 * The gateway turns what probes send over their links into public-v2 messages (DESIGN 4.3): which
 * operations, in which order, every message valid against the schema; reconnects compare the
 * probe's state with what the gateway had.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseSetup } from "../../src/config/load-setup.js";
import { Hierarchy } from "../../src/gateway/hierarchy.js";
import { type Change, encodeCells, type ProbeParameters } from "../../src/link/protocol.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import { validateMessage } from "../../src/messages/validate.js";
import { summary } from "../link/helpers.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - { name: me1, attributes: { Env: prod }, samplers: [{ name: s1, plugin: rest-api, rowLimit: 10 }] }
      - { name: me2, samplers: [] }
`);

const at = Date.UTC(2026, 0, 1);
const address = { managedEntity: "me1", sampler: "s1", samplerType: "", dataview: "dv" };
const params: ProbeParameters = {
  osType: "Linux",
  HostName: "h",
  Port: "7136",
  OS: "Linux 6",
  Version: "0.1.0",
};

type Step =
  | { hello: ProbeParameters; resumed?: boolean }
  | { state: Change[]; last?: boolean }
  | { changes: Change[] }
  | { params: ProbeParameters }
  | "down";

const dv = (rows: [string, string[]][], columns = ["n", "v"], dataview = "dv"): Change => ({
  kind: "dataview",
  dataview: { ...address, dataview },
  at,
  plugin: "rest-api",
  columns,
  rows: rows.map(([name, cells]) => ({ name, cells: encodeCells(cells) })),
  headlines: [
    ["samplingStatus", "OK"],
    ["totalRows", String(rows.length)],
  ],
});
const row = (name: string, cells: string[], columns?: string[]): Change => ({
  kind: "row",
  dataview: address,
  at,
  name,
  cells: encodeCells(cells),
  ...(columns === undefined ? {} : { columns }),
});
const rowDelete = (name: string): Change => ({ kind: "rowDelete", dataview: address, at, name });
const headlines = (total: number): Change => ({
  kind: "headlines",
  dataview: address,
  at,
  headlines: [
    ["samplingStatus", "OK"],
    ["totalRows", String(total)],
  ],
});

const connect: Step[] = [{ hello: params }, { state: [], last: true }];
const ab = dv([
  ["a", ["a", "1"]],
  ["b", ["b", "2"]],
]);
const reconnect = (...state: Change[]): Step[] => ["down", { hello: params }, { state, last: true }];
const ANNOUNCED_AGAIN = ["probe:snapshot", "managedEntity:snapshot", "managedEntity:snapshot"];

function apply(hierarchy: Hierarchy, step: Step): PublicV2Message[] {
  if (step === "down") return hierarchy.down("p1", at);
  if ("hello" in step) {
    hierarchy.hello("p1", step.hello, step.resumed ?? false);
    return [];
  }
  if ("params" in step) return hierarchy.parameters("p1", step.params, at);
  if ("state" in step) return hierarchy.state("p1", step.state, step.last ?? true, at).messages;
  return hierarchy.changes("p1", step.changes, at).messages;
}

// [name, steps, the messages the LAST step causes]
const cases: [string, Step[], string[]][] = [
  [
    "a first connection announces the probe and every managed entity",
    connect,
    ["probe:create", "managedEntity:create", "managedEntity:create"],
  ],
  [
    "a probe that was linked before, to a gateway that restarted: its state is republished as snapshot",
    [
      { hello: params, resumed: true },
      { state: [ab], last: true },
    ],
    [...ANNOUNCED_AGAIN, "headline:snapshot", "table:snapshot:a", "table:snapshot:b"],
  ],
  [
    "a new dataview creates its headlines and rows",
    [...connect, { changes: [ab] }],
    ["headline:create", "table:create:a", "table:create:b"],
  ],
  [
    "a row written again is an update even with the same values",
    [...connect, { changes: [ab] }, { changes: [row("a", ["a", "1"])] }],
    ["table:update:a"],
  ],
  [
    "a row upsert publishes exactly one table message",
    [...connect, { changes: [ab] }, { changes: [row("b", ["b", "3"])] }],
    ["table:update:b"],
  ],
  [
    "a new row is a create, its count a headline update",
    [...connect, { changes: [ab] }, { changes: [row("c", ["c", "3"]), headlines(3)] }],
    ["table:create:c", "headline:update"],
  ],
  [
    "a replace deletes the rows it no longer has and updates the rest",
    [...connect, { changes: [ab] }, { changes: [dv([["a", ["a", "1"]]])] }],
    ["headline:update", "table:delete:b", "table:update:a"],
  ],
  [
    "renumbered duplicates are updates of the names that remain, then one delete",
    [
      ...connect,
      {
        changes: [
          dv([
            ["a", ["a", "1"]],
            ["a_duplicate1", ["a", "2"]],
          ]),
        ],
      },
      { changes: [row("a", ["a", "2"]), rowDelete("a_duplicate1"), headlines(1)] },
    ],
    ["table:update:a", "table:delete:a_duplicate1", "headline:update"],
  ],
  [
    "a deleted dataview deletes its rows and headlines",
    [
      ...connect,
      { changes: [dv([["a", ["a", "1"]]])] },
      { changes: [{ kind: "dataviewDelete", dataview: address, at }] },
    ],
    ["table:delete:a", "headline:delete"],
  ],
  ["a lost link publishes the probe as down", [...connect, "down"], ["probe:update"]],
  ["a probe already down is not published again", [...connect, "down", "down"], []],
  [
    "a reconnect with unchanged state republishes it as snapshots",
    [...connect, { changes: [ab] }, ...reconnect(ab)],
    [...ANNOUNCED_AGAIN, "headline:snapshot", "table:snapshot:a", "table:snapshot:b"],
  ],
  [
    "a reconnect publishes only the real differences",
    [
      ...connect,
      { changes: [ab] },
      ...reconnect(
        dv([
          ["a", ["a", "9"]],
          ["c", ["c", "3"]],
        ]),
      ),
    ],
    [...ANNOUNCED_AGAIN, "headline:snapshot", "table:update:a", "table:create:c", "table:delete:b"],
  ],
  [
    "a reconnect without a dataview deletes it",
    [...connect, { changes: [ab] }, ...reconnect()],
    [...ANNOUNCED_AGAIN, "table:delete:a", "table:delete:b", "headline:delete"],
  ],
  [
    "a reconnect with a new blank column sees no difference",
    [
      ...connect,
      { changes: [ab] },
      ...reconnect(
        dv(
          [
            ["a", ["a", "1"]],
            ["b", ["b", "2"]],
          ],
          ["n", "v", "w"],
        ),
      ),
    ],
    [...ANNOUNCED_AGAIN, "headline:snapshot", "table:snapshot:a", "table:snapshot:b"],
  ],
  [
    "a reconnect with other parameters updates the probe",
    [...connect, "down", { hello: { ...params, Port: "9999" } }, { state: [], last: true }],
    ["probe:update", "managedEntity:snapshot", "managedEntity:snapshot"],
  ],
  [
    "a state in several batches: rows after the dataview item count too",
    [
      ...connect,
      { changes: [ab] },
      "down",
      { hello: params },
      { state: [dv([["a", ["a", "1"]]])], last: false },
      { state: [row("b", ["b", "2"])], last: true },
    ],
    ["table:snapshot:b"],
  ],
  [
    "new parameters of a connected probe update it",
    [...connect, { params: { ...params, Port: "1" } }],
    ["probe:update"],
  ],
  ["the same parameters publish nothing", [...connect, { params }], []],
  [
    "changes for a sampler the setup does not have are refused",
    [...connect, { changes: [{ ...ab, dataview: { ...address, sampler: "nope" } } as Change] }],
    [],
  ],
  ["a row of an unknown dataview is refused", [...connect, { changes: [row("a", ["a"])] }], []],
];

describe("gateway hierarchy: link changes → public-v2 messages", () => {
  for (const [name, steps, expected] of cases) {
    test(name, () => {
      const hierarchy = new Hierarchy(setup.gateway, setup.probes);
      let last: PublicV2Message[] = [];
      for (const step of steps) {
        last = apply(hierarchy, step);
        for (const message of last) {
          const result = validateMessage(message);
          assert.ok(result.ok, `${summary(message)} invalid: ${result.ok ? "" : result.errors.join("; ")}`);
        }
      }
      assert.deepEqual(last.map(summary), expected);
    });
  }

  test("refused changes are counted", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    for (const step of connect) apply(hierarchy, step);
    const applied = hierarchy.changes("p1", [row("a", ["a"]), rowDelete("zz")], at);
    assert.equal(applied.rejected, 1);
    assert.equal(hierarchy.stats().rejected, 1);
  });

  test("a replace beyond the sampler's row limit is refused", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    for (const step of connect) apply(hierarchy, step);
    const rows = Array.from({ length: 11 }, (_, i): [string, string[]] => [`r${i}`, [`r${i}`]]);
    assert.equal(hierarchy.changes("p1", [dv(rows)], at).rejected, 1);
  });

  test("table messages carry the whole row, the target filter and both times", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    for (const step of connect) apply(hierarchy, step);
    const [, table] = hierarchy.changes("p1", [dv([["a", ["a", "1"]]])], at + 5).messages;
    assert.deepEqual(JSON.parse(JSON.stringify(table)), {
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

  test("a row holds every column of the dataview, blanks included, __proto__ as a plain column", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    for (const step of connect) apply(hierarchy, step);
    hierarchy.changes("p1", [dv([["a", ["a"]]], ["n", "__proto__", "constructor"])], at);
    const [table] = hierarchy.changes("p1", [row("a", ["a", "", "c"])], at).messages;
    assert.ok(table?.type === "table");
    const cells = table.data.row;
    assert.equal(Object.getPrototypeOf(cells), null);
    assert.equal(JSON.stringify(cells), '{"n":"a","__proto__":"","constructor":"c"}');
  });

  test("managed entity messages carry the setup attributes", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    hierarchy.hello("p1", params);
    const { messages } = hierarchy.state("p1", [], true, at);
    assert.deepEqual(messages[1]?.data, {
      timestamp: new Date(at).toISOString(),
      target: { gateway: "GW", probe: "p1", managedEntity: "me1" },
      attributes: { Env: "prod" },
    });
  });

  test("snapshot republishes current state", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    for (const step of [...connect, { changes: [dv([["a", ["a", "1"]]])] }]) apply(hierarchy, step);
    assert.deepEqual(hierarchy.snapshot(at).map(summary), [
      "probe:snapshot",
      "managedEntity:snapshot",
      "managedEntity:snapshot",
      "headline:snapshot",
      "table:snapshot:a",
    ]);
  });

  test("a setup update publishes managed entity changes and deletes a removed probe", () => {
    const hierarchy = new Hierarchy(setup.gateway, setup.probes);
    for (const step of [...connect, { changes: [ab] }]) apply(hierarchy, step);
    const changed = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - { name: me1, attributes: { Env: test }, samplers: [{ name: s1, plugin: rest-api, rowLimit: 10 }] }
      - { name: me3, samplers: [] }
`);
    assert.deepEqual(hierarchy.updateSetup(changed.gateway, changed.probes, at).map(summary), [
      "managedEntity:update",
      "managedEntity:create",
      "managedEntity:delete",
    ]);
    const gone = parseSetup("gateway: { name: GW }\n");
    const deleted = hierarchy.updateSetup(gone.gateway, gone.probes, at);
    for (const message of deleted) assert.ok(validateMessage(message).ok, summary(message));
    assert.deepEqual(deleted.map(summary), [
      "table:delete:a",
      "table:delete:b",
      "headline:delete",
      "managedEntity:delete",
      "managedEntity:delete",
      "probe:delete",
    ]);
    assert.equal(hierarchy.has("p1"), false);
  });
});
