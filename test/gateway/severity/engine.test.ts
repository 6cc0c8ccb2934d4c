/**
 * The severity engine through the hierarchy (DESIGN 4.1–4.3): what the rules give cells and
 * headlines, propagation to every parent (ignoring snoozed children), a disconnected probe's items
 * UNKNOWN, one `severity` message per change with the previously published value, held back while
 * a probe's state arrives, the fkm sampler's cell severities, rules changed by a reload.
 * Every message is checked against schema/public-v2.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { severityValue } from "../../../src/gateway/severity/event-messages.js";
import { CommandRefused } from "../../../src/gateway/severity/item-commands.js";
import { SeverityEngine } from "../../../src/gateway/severity/severity-engine.js";
import type { Change, WireSeverities } from "../../../src/link/protocol.js";
import type { SeverityMessage } from "../../../src/messages/types.js";

import { address, dataview, linked, modelOf, params, row, setup, severities, T0 } from "./fixtures.js";

describe("severity evaluation and propagation", () => {
  test("a probe's first state: each item with a severity published once, at the end, after its metrics", () => {
    const { first } = linked([
      dataview([
        ["a", "5"],
        ["b", "50"],
      ]),
    ]);
    assert.deepEqual(severities(first), [
      "update:p1=WARNING",
      "update:p1/me1=WARNING",
      "update:p1/me1/s1=WARNING",
      "update:p1/me1/s1/dv=WARNING",
      "update:p1/me1/s1/dv/totalRows=OK",
      "update:p1/me1/s1/dv/a/queued=OK",
      "update:p1/me1/s1/dv/b/queued=WARNING",
      "update:GW=WARNING",
    ]);
    const last = first.at(-1) as SeverityMessage;
    assert.equal(last.data.target.gateway, "GW");
    const cell = first.find((m) => m.type === "severity" && m.data.target.row === "b") as SeverityMessage;
    assert.deepEqual(cell.data.data, {
      severity: "WARNING",
      active: true,
      snoozed: false,
      snoozedParents: 0,
      userAssigned: false,
      value: { cell: "50", number: 50 },
    });
    assert.deepEqual(cell.data.target.filter, { osType: "Linux", pluginName: "rest-api" });
    const index = first.indexOf(cell);
    assert.ok(
      first.slice(0, index).some((m) => m.type === "table"),
      "metrics come before their events",
    );
  });

  /** [what it shows, changes before, the changes, the severity messages they give]. */
  const cases: [string, Change[], Change[], string[]][] = [
    ["the same value again: no message (one per change, not per sample)", [], [row("b", "50")], []],
    [
      "a blank cell compares as a string: '' > '10' is false, so OK",
      [],
      [row("b", "")],
      [
        "update:p1/me1/s1/dv/b/queued=OK<WARNING",
        "update:p1/me1/s1/dv=OK<WARNING",
        "update:p1/me1/s1=OK<WARNING",
        "update:p1/me1=OK<WARNING",
        "update:p1=OK<WARNING",
        "update:GW=OK<WARNING",
      ],
    ],
    [
      "a cell going CRITICAL raises every parent",
      [],
      [row("a", "500")],
      [
        "update:p1/me1/s1/dv/a/queued=CRITICAL<OK",
        "update:p1/me1/s1/dv=CRITICAL<WARNING",
        "update:p1/me1/s1=CRITICAL<WARNING",
        "update:p1/me1=CRITICAL<WARNING",
        "update:p1=CRITICAL<WARNING",
        "update:GW=CRITICAL<WARNING",
      ],
    ],
    [
      "a change below a sibling's higher severity changes no parent",
      [],
      [row("a", "20")],
      ["update:p1/me1/s1/dv/a/queued=WARNING<OK"],
    ],
    [
      "a deleted row takes its cells' severities away",
      [],
      [{ kind: "rowDelete", dataview: address(), at: T0, name: "b" }],
      [
        "update:p1/me1/s1/dv=OK<WARNING",
        "update:p1/me1/s1=OK<WARNING",
        "update:p1/me1=OK<WARNING",
        "update:p1=OK<WARNING",
        "update:GW=OK<WARNING",
      ],
    ],
    [
      "a headline rule (totalRows >= 3)",
      [row("b", "1")],
      [
        dataview([
          ["a", "1"],
          ["b", "2"],
          ["c", "3"],
        ]),
      ],
      [
        "update:p1/me1/s1/dv/totalRows=WARNING<OK",
        "update:p1/me1/s1/dv=WARNING<OK",
        "update:p1/me1/s1=WARNING<OK",
        "update:p1/me1=WARNING<OK",
        "update:p1=WARNING<OK",
        "update:GW=WARNING<OK",
        "update:p1/me1/s1/dv/c/queued=OK",
      ],
    ],
    [
      "a new dataview elsewhere: its targeted items are OK",
      [],
      [dataview([["x", "1"]], "me2", "other")],
      [
        "update:p1/me2/s1/other/totalRows=OK",
        "update:p1/me2/s1/other=OK",
        "update:p1/me2/s1=OK",
        "update:p1/me2=OK",
        "update:p1/me2/s1/other/x/queued=OK",
      ],
    ],
    // Its rows go first, then the dataview (the order of the hierarchy's delete messages).
    [
      "a deleted dataview takes its items away",
      [],
      [{ kind: "dataviewDelete", dataview: address(), at: T0 }],
      [
        "update:p1/me1/s1/dv=OK<WARNING",
        "update:p1/me1/s1=OK<WARNING",
        "update:p1/me1=OK<WARNING",
        "update:p1=OK<WARNING",
        "update:GW=OK<WARNING",
        "update:p1/me1/s1=UNDEFINED<OK",
        "update:p1/me1=UNDEFINED<OK",
        "update:p1=UNDEFINED<OK",
        "update:GW=UNDEFINED<OK",
      ],
    ],
  ];
  for (const [name, before, changes, expected] of cases) {
    test(name, () => {
      const { hierarchy } = linked([
        dataview([
          ["a", "5"],
          ["b", "50"],
        ]),
      ]);
      if (before.length > 0) hierarchy.changes("p1", before, T0);
      assert.deepEqual(severities(hierarchy.changes("p1", changes, T0 + 1000).messages), expected);
    });
  }

  test("a disconnected probe's items are UNKNOWN (targeted cells too); reconnecting publishes each once", () => {
    const { hierarchy } = linked([dataview([["a", "5"]])]);
    assert.deepEqual(severities(hierarchy.down("p1", T0 + 1)), [
      "update:p1/me1/s1/dv/totalRows=UNKNOWN<OK",
      "update:p1/me1/s1/dv=UNKNOWN<OK",
      "update:p1/me1/s1=UNKNOWN<OK",
      "update:p1/me1=UNKNOWN<OK",
      "update:p1=UNKNOWN<OK",
      "update:GW=UNKNOWN<OK",
      "update:p1/me1/s1/dv/a/queued=UNKNOWN<OK",
      "update:p1/me2=UNKNOWN",
    ]);
    hierarchy.hello("p1", params, true);
    const back = hierarchy.state("p1", [dataview([["a", "500"]])], true, T0 + 2).messages;
    assert.deepEqual(severities(back), [
      "update:p1=CRITICAL<UNKNOWN",
      "update:p1/me1=CRITICAL<UNKNOWN",
      "update:p1/me1/s1=CRITICAL<UNKNOWN",
      "update:p1/me1/s1/dv=CRITICAL<UNKNOWN",
      "update:p1/me1/s1/dv/totalRows=OK<UNKNOWN",
      "update:p1/me1/s1/dv/a/queued=CRITICAL<UNKNOWN",
      "update:p1/me2=UNDEFINED<UNKNOWN",
      "update:GW=CRITICAL<UNKNOWN",
    ]);
  });

  test("a probe coming back unchanged: its items are republished as snapshot", () => {
    const { hierarchy } = linked([dataview([["a", "5"]])]);
    hierarchy.down("p1", T0 + 1);
    hierarchy.hello("p1", params, true);
    const back = hierarchy.state("p1", [dataview([["a", "5"]])], true, T0 + 2).messages;
    // The items went UNKNOWN and back: updates; a second reconnect without a down is all snapshots.
    assert.equal(severities(back).filter((s) => s.startsWith("update:")).length, 8);
    hierarchy.hello("p1", params, true);
    const again = hierarchy.state("p1", [dataview([["a", "5"]])], true, T0 + 3).messages;
    assert.deepEqual(severities(again), [
      "snapshot:p1=OK",
      "snapshot:p1/me1=OK",
      "snapshot:p1/me1/s1=OK",
      "snapshot:p1/me1/s1/dv=OK",
      "snapshot:p1/me1/s1/dv/totalRows=OK",
      "snapshot:p1/me1/s1/dv/a/queued=OK",
    ]);
  });

  test("the fkm sampler's cell severity counts like a rule's (the highest wins)", () => {
    const fkm = (matches: string, severity: "OK" | "CRITICAL"): Change => {
      const severitiesOf: WireSeverities = [["matches", severity]];
      return {
        kind: "dataview",
        dataview: { managedEntity: "me1", sampler: "log", samplerType: "", dataview: "log" },
        at: T0,
        plugin: "fkm",
        columns: ["pattern", "severity", "matches"],
        rows: [{ name: "ERROR", cells: ["ERROR", "CRITICAL", matches], severities: severitiesOf }],
        headlines: [["samplingStatus", "OK"]],
      };
    };
    const { hierarchy, first } = linked([fkm("0", "OK")]);
    assert.deepEqual(severities(first), [
      "update:p1=OK",
      "update:p1/me1=OK",
      "update:p1/me1/log=OK",
      "update:p1/me1/log/log=OK",
      "update:p1/me1/log/log/ERROR/matches=OK",
      "update:GW=OK",
    ]);
    const messages = hierarchy.changes("p1", [fkm("3", "CRITICAL")], T0 + 1).messages;
    assert.deepEqual(severities(messages).slice(0, 2), [
      "update:p1/me1/log/log/ERROR/matches=CRITICAL<OK",
      "update:p1/me1/log/log=CRITICAL<OK",
    ]);
    const cell = messages.find(
      (m) => m.type === "severity" && m.data.target.column === "matches",
    ) as SeverityMessage;
    assert.deepEqual(cell.data.target.filter, { osType: "Linux", pluginName: "fkm" });
  });

  test("new rules (reload) are evaluated at once over what the gateway holds", () => {
    const { hierarchy } = linked([
      dataview([
        ["a", "5"],
        ["b", "50"],
      ]),
    ]);
    const stricter = setup.rules.map((r) =>
      r.name === "queue critical" ? { ...r, when: { operator: ">" as const, value: 40 } } : r,
    );
    assert.deepEqual(severities(hierarchy.updateRules(stricter, T0 + 1)), [
      "update:p1/me1/s1/dv/b/queued=CRITICAL<WARNING",
      "update:p1/me1/s1/dv=CRITICAL<WARNING",
      "update:p1/me1/s1=CRITICAL<WARNING",
      "update:p1/me1=CRITICAL<WARNING",
      "update:p1=CRITICAL<WARNING",
      "update:GW=CRITICAL<WARNING",
    ]);
    const none = hierarchy.updateRules([], T0 + 2);
    assert.ok(severities(none).includes("update:GW=UNDEFINED<CRITICAL"));
    assert.ok(severities(none).includes("update:p1/me1/s1/dv/b/queued=UNDEFINED<CRITICAL"));
  });
});

describe("the severity message's value block (seed C: cell, number, dateTime where they apply)", () => {
  const cases: [string, Record<string, unknown>][] = [
    ["150", { cell: "150", number: 150 }],
    ["-0.5", { cell: "-0.5", number: -0.5 }],
    ["abc", { cell: "abc" }],
    ["", { cell: "" }],
    [
      "2026-01-01T12:00:00+01:00",
      { cell: "2026-01-01T12:00:00+01:00", dateTime: "2026-01-01T11:00:00.000Z" },
    ],
    ["2026-01-01", { cell: "2026-01-01" }],
  ];
  for (const [cell, expected] of cases)
    test(`'${cell}'`, () => assert.deepEqual(severityValue(cell), expected));
});

describe("names are data", () => {
  test("rows and columns named __proto__ and constructor are ordinary items", () => {
    const rules = [
      {
        name: "proto",
        target: { managedEntity: "*", sampler: "*", dataview: "*", row: "constructor", column: "__proto__" },
        when: { operator: "=" as const, value: "bad" },
        severity: "CRITICAL" as const,
      },
    ];
    const hierarchy = modelOf(rules);
    hierarchy.hello("p1", params);
    const change: Change = {
      kind: "dataview",
      dataview: address("me1", "__proto__"),
      at: T0,
      plugin: "rest-api",
      columns: ["name", "__proto__"],
      rows: [
        { name: "constructor", cells: ["constructor", "bad"] },
        { name: "__proto__", cells: ["__proto__", "bad"] },
      ],
      headlines: [],
    };
    const out = severities(hierarchy.state("p1", [change], true, T0).messages);
    assert.ok(out.includes("update:p1/me1/s1/__proto__/constructor/__proto__=CRITICAL"), out.join("\n"));
    assert.ok(
      !out.some((s) => s.startsWith("update:p1/me1/s1/__proto__/__proto__/")),
      "the rule targets row 'constructor' only",
    );
    assert.equal(({} as Record<string, unknown>).bad, undefined, "no prototype was touched");
  });
});

describe("bounds", () => {
  test("snoozes plus assignments are bounded: a command beyond the limit is refused", () => {
    const engine = new SeverityEngine({
      gateway: "GW",
      rules: [],
      lookup: { find: () => ({}), children: () => [] },
      maxStates: 2,
    });
    const snooze = { user: "ann", comment: "", period: "Manual" as const, until: {} };
    engine.snooze({ gateway: "GW", probe: "a" }, snooze, T0);
    engine.assign(
      { gateway: "GW", probe: "a" },
      { user: "ann", assignedTo: "bob", comment: "", period: "Manual", until: {} },
      T0,
    );
    assert.throws(
      () => engine.snooze({ gateway: "GW", probe: "b" }, snooze, T0),
      (error: unknown) =>
        error instanceof CommandRefused && error.reason === "not-applicable" && /limit/.test(error.message),
    );
    engine.unsnooze({ gateway: "GW", probe: "a" }, "ann", undefined, T0);
    engine.snooze({ gateway: "GW", probe: "b" }, snooze, T0);
    assert.deepEqual(engine.stats(), { items: 3, snoozed: 1, assigned: 1, severity: "UNDEFINED" });
  });

  test("time releases come from tick() over the caller's clock", () => {
    const engine = new SeverityEngine({
      gateway: "GW",
      rules: [],
      lookup: { find: () => ({}), children: () => [] },
    });
    engine.snooze(
      { gateway: "GW" },
      { user: "ann", comment: "", period: "Time", until: { untilTime: T0 + 60_000 } },
      T0,
    );
    assert.deepEqual(engine.tick(T0 + 59_999), []);
    const [off] = engine.tick(T0 + 60_000);
    assert.deepEqual(off?.type === "snooze" && off.data.data, {
      snoozed: false,
      unsnoozedBy: "system",
      comment: "time passed",
    });
    assert.deepEqual(engine.tick(T0 + 120_000), []);
  });
});
