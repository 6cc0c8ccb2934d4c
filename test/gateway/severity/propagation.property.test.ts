/**
 * Incremental propagation equals a full recomputation (DESIGN 4.1): after any sequence of row
 * writes and deletes, snoozes and unsnoozes, disconnects and reconnects, every item's severity is
 * what the rules and its children say: a leaf the rules' result (UNKNOWN while its probe is down and
 * rules target it), a parent the highest of its non-snoozed children (UNKNOWN while its probe is
 * down), UNDEFINED when none counts. fast-check, bounded runs.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { bareTarget } from "../../../src/gateway/severity/item-target.js";
import type { ItemView } from "../../../src/gateway/severity/item-views.js";
import { BY_RANK, compileRules, evaluate, SEVERITY_RANK } from "../../../src/gateway/severity/rules.js";
import { type Change, encodeCells } from "../../../src/link/protocol.js";
import type { EventTarget, PublicV2Message, Severity } from "../../../src/messages/types.js";
import { address, modelOf, params, setup, T0 } from "./fixtures.js";

type Op =
  | { kind: "put"; me: "me1" | "me2"; row: string; value: number }
  | { kind: "delete"; me: "me1" | "me2"; row: string }
  | { kind: "snooze" | "unsnooze"; level: number; row: string }
  | { kind: "down" }
  | { kind: "up" };

const rowName = fc.constantFrom("r0", "r1", "r2");
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("put" as const),
      me: fc.constantFrom("me1" as const, "me2" as const),
      row: rowName,
      value: fc.integer({ min: 0, max: 200 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("delete" as const),
      me: fc.constantFrom("me1" as const, "me2" as const),
      row: rowName,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom("snooze" as const, "unsnooze" as const),
      level: fc.integer({ min: 0, max: 5 }),
      row: rowName,
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "down" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "up" as const }) },
);

function targetAt(level: number, row: string): EventTarget {
  const base = { gateway: "GW", probe: "p1", managedEntity: "me1", type: "", sampler: "s1", dataview: "dv" };
  return [
    { gateway: "GW" },
    { gateway: "GW", probe: "p1" },
    { gateway: "GW", probe: "p1", managedEntity: "me1" },
    { gateway: "GW", probe: "p1", managedEntity: "me1", type: "", sampler: "s1" },
    base,
    { ...base, row, column: "queued" },
  ][level] as EventTarget;
}

const rules = compileRules(setup.rules);

describe("incremental severities", () => {
  test("equal a recomputation from the rules and the children", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
        const hierarchy = modelOf(setup.rules);
        const engine = hierarchy.severity;
        hierarchy.hello("p1", params);
        hierarchy.state("p1", [], true, T0);
        let up = true;
        /** The last published severity of each item: it must always be the current one. */
        const published = new Map<string, Severity>();
        const note = (messages: readonly PublicV2Message[]) => {
          for (const m of messages) {
            if (m.type !== "severity") continue;
            published.set(JSON.stringify(bareTarget(m.data.target)), m.data.data.severity);
          }
        };
        const rows = { me1: new Map<string, string>(), me2: new Map<string, string>() };
        const stateOf = () =>
          (["me1", "me2"] as const).flatMap((me): Change[] =>
            rows[me].size === 0
              ? []
              : [
                  {
                    kind: "dataview",
                    dataview: address(me),
                    at: T0,
                    plugin: "rest-api",
                    columns: ["name", "queued"],
                    rows: [...rows[me]].map(([name, v]) => ({ name, cells: encodeCells([name, v]) })),
                    headlines: [["totalRows", String(rows[me].size)]],
                  },
                ],
          );
        for (const o of ops) {
          if (o.kind === "put" && up) {
            const fresh = rows[o.me].size === 0;
            rows[o.me].set(o.row, String(o.value));
            note(
              hierarchy.changes(
                "p1",
                fresh
                  ? stateOf().filter((c) => c.dataview.managedEntity === o.me)
                  : [
                      {
                        kind: "row",
                        dataview: address(o.me),
                        at: T0,
                        name: o.row,
                        cells: encodeCells([o.row, String(o.value)]),
                      },
                    ],
                T0,
              ).messages,
            );
          } else if (o.kind === "delete" && up && rows[o.me].has(o.row)) {
            rows[o.me].delete(o.row);
            note(
              hierarchy.changes(
                "p1",
                [{ kind: "rowDelete", dataview: address(o.me), at: T0, name: o.row }],
                T0,
              ).messages,
            );
          } else if (o.kind === "snooze" || o.kind === "unsnooze") {
            try {
              if (o.kind === "snooze")
                note(
                  engine.snooze(
                    targetAt(o.level, o.row),
                    { user: "u", comment: "", period: "Manual", until: {} },
                    T0,
                  ).messages,
                );
              else note(engine.unsnooze(targetAt(o.level, o.row), "u", undefined, T0).messages);
            } catch {
              // 404 and 409 are fine here.
            }
          } else if (o.kind === "down" && up) {
            note(hierarchy.down("p1", T0));
            up = false;
          } else if (o.kind === "up" && !up) {
            hierarchy.hello("p1", params, true);
            note(hierarchy.state("p1", stateOf(), true, T0).messages);
            up = true;
          }
          check({ gateway: "GW" });
        }

        function check(target: EventTarget): Severity {
          const { item, children } = engine.items(target);
          const level = target.column !== undefined ? "leaf" : "parent";
          let expected: Severity;
          if (level === "leaf") {
            const candidates = rules.filter(
              (r) =>
                (target.row === undefined ? r.headline : !r.headline && r.row(target.row)) &&
                r.column(target.column as string) &&
                r.sampler(target.sampler as string, target.type as string),
            );
            const evaluated = evaluate(candidates, item.value ?? "");
            expected = !up && evaluated !== "UNDEFINED" ? "UNKNOWN" : evaluated;
          } else {
            let rank = 0;
            for (const child of children) {
              const severity = check(child.target);
              const view = engine.items(child.target).item as ItemView;
              if (!view.snoozed.snoozed) rank = Math.max(rank, SEVERITY_RANK[severity]);
            }
            expected = target.probe !== undefined && !up ? "UNKNOWN" : (BY_RANK[rank] as Severity);
          }
          assert.equal(item.severity, expected, `${JSON.stringify(target)} after ${JSON.stringify(ops)}`);
          const last = published.get(JSON.stringify(bareTarget(target)));
          if (last !== undefined)
            assert.equal(last, item.severity, `last published ${JSON.stringify(target)}`);
          return item.severity;
        }
      }),
      { numRuns: 150 },
    );
  });
});
