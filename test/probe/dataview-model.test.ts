import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { VigilError } from "../../src/errors/catalog.js";
import { DataviewModel, publishedNames } from "../../src/probe/dataview-model.js";

type Step =
  | { put: Record<string, string>[]; order?: string[]; limit?: number }
  | { row: string; body: Record<string, string>; limit?: number }
  | { del: string };

function run(steps: Step[]): DataviewModel {
  const model = new DataviewModel();
  for (const step of steps) {
    if ("put" in step) model.replace(step.put, step.order ?? [], step.limit ?? 200);
    else if ("row" in step) model.putRow(step.row, step.body, step.limit ?? 200);
    else model.deleteRow(step.del);
  }
  return model;
}

const names = (model: DataviewModel) => model.state().rows.map((r) => r.name);

describe("publishedNames", () => {
  const cases: [string, string[], string[]][] = [
    ["unique names stay", ["a", "b"], ["a", "b"]],
    ["later duplicates are numbered from 1", ["a", "a", "a"], ["a", "a_duplicate1", "a_duplicate2"]],
    ["numbering is per base name", ["a", "b", "a", "b"], ["a", "b", "a_duplicate1", "b_duplicate1"]],
  ];
  for (const [name, input, expected] of cases)
    test(name, () => assert.deepEqual(publishedNames(input), expected));
});

describe("DataviewModel semantics (seed B, DESIGN 3.3)", () => {
  const cases: [string, Step[], string[], Record<string, string>[]?][] = [
    ["first column names the row", [{ put: [{ id: "r1", v: "1" }] }], ["r1"], [{ id: "r1", v: "1" }]],
    ["Column-Order header decides the first column", [{ put: [{ id: "r1", v: "x" }], order: ["v"] }], ["x"]],
    [
      "duplicates get _duplicateN",
      [
        {
          put: [
            { id: "a", v: "1" },
            { id: "a", v: "2" },
            { id: "a", v: "3" },
          ],
        },
      ],
      ["a", "a_duplicate1", "a_duplicate2"],
    ],
    [
      "DELETE by base name removes the first and renumbers",
      [
        {
          put: [
            { id: "a", v: "1" },
            { id: "a", v: "2" },
            { id: "a", v: "3" },
          ],
        },
        { del: "a" },
      ],
      ["a", "a_duplicate1"],
      [
        { id: "a", v: "2" },
        { id: "a", v: "3" },
      ],
    ],
    [
      "PUT row replaces cells; omitted cells blank",
      [{ put: [{ id: "a", v: "1", w: "2" }] }, { row: "a", body: { w: "9" } }],
      ["a"],
      [{ id: "a", v: "", w: "9" }],
    ],
    [
      "PUT row with a different first-column value renames",
      [{ put: [{ id: "a", v: "1" }] }, { row: "a", body: { id: "b", v: "2" } }],
      ["b"],
      [{ id: "b", v: "2" }],
    ],
    [
      "PUT row for a new name appends it",
      [{ put: [{ id: "a", v: "1" }] }, { row: "c", body: { v: "3" } }],
      ["a", "c"],
      [
        { id: "a", v: "1" },
        { id: "c", v: "3" },
      ],
    ],
    [
      "new columns in a row body are appended",
      [{ put: [{ id: "a" }] }, { row: "a", body: { z: "1" } }],
      ["a"],
      [{ id: "a", z: "1" }],
    ],
    [
      "PUT dataview keeps the first rows up to the limit",
      [{ put: [{ id: "a" }, { id: "b" }, { id: "c" }], limit: 2 }],
      ["a", "b"],
    ],
    ["PUT dataview replaces every row", [{ put: [{ id: "a" }, { id: "b" }] }, { put: [{ id: "c" }] }], ["c"]],
    ["PUT of an empty array empties the dataview", [{ put: [{ id: "a" }] }, { put: [] }], []],
  ];
  for (const [name, steps, expectedNames, expectedCells] of cases) {
    test(name, () => {
      const model = run(steps);
      assert.deepEqual(names(model), expectedNames);
      if (expectedCells !== undefined) {
        assert.deepEqual(
          model.state().rows.map((r) => r.cells),
          expectedCells,
        );
      }
    });
  }

  test("row limit is reported in samplingStatus and the result", () => {
    const model = new DataviewModel();
    const result = model.replace([{ id: "a" }, { id: "b" }, { id: "a" }], [], 2);
    assert.deepEqual(result, { rows: 2, duplicates: 0, dropped: 1 });
    assert.deepEqual(model.state().headlines, {
      samplingStatus: "Row limit of 2 reached: 1 row dropped",
      totalRows: "2",
    });
  });

  test("duplicates are counted", () => {
    const result = new DataviewModel().replace([{ id: "a" }, { id: "a" }, { id: "b" }], [], 200);
    assert.deepEqual(result, { rows: 3, duplicates: 1, dropped: 0 });
  });

  test("a new row beyond the limit is refused with ROW_LIMIT_REACHED", () => {
    const model = run([{ put: [{ id: "a" }] }]);
    assert.throws(
      () => model.putRow("b", { id: "b" }, 1),
      (e: unknown) => e instanceof VigilError && e.code === "ROW_LIMIT_REACHED" && e.status === 400,
    );
    // Replacing an existing row at the limit is fine.
    model.putRow("a", { id: "a", v: "1" }, 1);
    assert.deepEqual(names(model), ["a"]);
  });

  test("a row without a value in the first column is refused", () => {
    assert.throws(
      () => new DataviewModel().replace([{ id: "a" }, { v: "1" }], [], 200),
      (e: unknown) => e instanceof VigilError && e.code === "INVALID_DATAVIEW" && /Row 1/.test(e.body),
    );
  });

  test("deleting a missing row reports false and changes nothing", () => {
    const model = run([{ put: [{ id: "a" }] }]);
    assert.equal(model.deleteRow("zz"), false);
    assert.deepEqual(names(model), ["a"]);
  });
});
