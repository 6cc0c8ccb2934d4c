import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { VigilError } from "../../src/errors/catalog.js";
import { type Change, decodeCells } from "../../src/link/protocol.js";
import { DataviewModel, publishedNames, type RowCells } from "../../src/probe/dataview-model.js";

type Step =
  | { put: Record<string, string>[]; order?: string[]; limit?: number }
  | { row: string; body: Record<string, string>; limit?: number }
  | { del: string };

const cellsOf = (record: Record<string, string>): RowCells => new Map(Object.entries(record));
const limits = (rowLimit = 200, maxColumns = 256) => ({
  rowLimit,
  maxColumns,
  maxCellLength: 64,
  nameBytes: 1024,
  linkFrameBytes: 8 * 1024 * 1024,
});

function apply(model: DataviewModel, step: Step): Change[] {
  if ("put" in step)
    return model.replace(step.put.map(cellsOf), step.order ?? [], limits(step.limit)).changes;
  if ("row" in step) return model.putRow(step.row, cellsOf(step.body), limits(step.limit)).changes;
  return model.deleteRow(step.del) ?? [];
}

function run(steps: Step[]): DataviewModel {
  const model = new DataviewModel();
  for (const step of steps) apply(model, step);
  return model;
}

const names = (model: DataviewModel) => model.state().rows.map((r) => r.name);
/** A prototype-less record as a plain one (own `__proto__` keys stay own keys). */
const plain = (record: Readonly<Record<string, string>>) => Object.fromEntries(Object.entries(record));

/** `kind:name` of each change, the way the gateway will publish them. */
const summary = (changes: readonly Change[]) =>
  changes.map((c) => (c.kind === "row" || c.kind === "rowDelete" ? `${c.kind}:${c.name}` : c.kind));

describe("publishedNames", () => {
  const cases: [string, string[], string[]][] = [
    ["unique names stay", ["a", "b"], ["a", "b"]],
    ["later duplicates are numbered from 1", ["a", "a", "a"], ["a", "a_duplicate1", "a_duplicate2"]],
    ["numbering is per base name", ["a", "b", "a", "b"], ["a", "b", "a_duplicate1", "b_duplicate1"]],
    [
      "a suffix that is another row's name is skipped",
      ["x", "x", "x_duplicate1"],
      ["x", "x_duplicate2", "x_duplicate1"],
    ],
    [
      "the literal name may come first",
      ["x_duplicate1", "x", "x", "x"],
      ["x_duplicate1", "x", "x_duplicate2", "x_duplicate3"],
    ],
    [
      "several taken suffixes are all skipped",
      ["x", "x_duplicate2", "x", "x", "x_duplicate1"],
      ["x", "x_duplicate2", "x_duplicate3", "x_duplicate4", "x_duplicate1"],
    ],
    [
      "a duplicated literal gets its own suffix",
      ["x", "x", "x_duplicate1", "x_duplicate1"],
      ["x", "x_duplicate2", "x_duplicate1", "x_duplicate1_duplicate1"],
    ],
    ["a leading zero is not a suffix", ["x", "x", "x_duplicate01"], ["x", "x_duplicate1", "x_duplicate01"]],
  ];
  for (const [name, input, expected] of cases)
    test(name, () => assert.deepEqual(publishedNames(input), expected));
});

describe("DataviewModel semantics (seed B, DESIGN 3.3)", () => {
  const cases: [string, Step[], string[], Record<string, string>[]?][] = [
    ["first column names the row", [{ put: [{ id: "r1", v: "1" }] }], ["r1"], [{ id: "r1", v: "1" }]],
    ["Column-Order header decides the first column", [{ put: [{ id: "r1", v: "x" }], order: ["v"] }], ["x"]],
    [
      "a Column-Order name no row has is not shown",
      [{ put: [{ id: "r1", v: "x" }], order: ["nope", "v"] }],
      ["x"],
      [{ v: "x", id: "r1" }],
    ],
    [
      "PUT dataview: rows x, x, x_duplicate1 get three names",
      [{ put: [{ id: "x" }, { id: "x" }, { id: "x_duplicate1" }] }],
      ["x", "x_duplicate2", "x_duplicate1"],
    ],
    [
      "PUT row of a literal duplicate name moves the duplicate aside",
      [{ put: [{ id: "x" }, { id: "x" }] }, { row: "x_duplicate1", body: { id: "x_duplicate1" } }],
      ["x", "x_duplicate1"],
    ],
    [
      "PUT row creating the literal name renumbers the group that held it",
      [{ put: [{ id: "x" }, { id: "x" }, { id: "y" }] }, { row: "y", body: { id: "x_duplicate1" } }],
      ["x", "x_duplicate2", "x_duplicate1"],
    ],
    [
      "DELETE of the literal name gives its suffix back",
      [{ put: [{ id: "x" }, { id: "x" }, { id: "x_duplicate1" }] }, { del: "x_duplicate1" }],
      ["x", "x_duplicate1"],
    ],
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
    [
      "PUT row of a duplicate without the first column keeps it a duplicate",
      [
        {
          put: [
            { id: "a", v: "1" },
            { id: "a", v: "2" },
          ],
        },
        { row: "a_duplicate1", body: { v: "9" } },
      ],
      ["a", "a_duplicate1"],
      [
        { id: "a", v: "1" },
        { id: "a", v: "9" },
      ],
    ],
    [
      "a rename into a name with later duplicates renumbers them",
      [{ put: [{ id: "b" }, { id: "a" }, { id: "b" }] }, { row: "a", body: { id: "b" } }],
      ["b", "b_duplicate1", "b_duplicate2"],
    ],
  ];
  for (const [name, steps, expectedNames, expectedCells] of cases) {
    test(name, () => {
      const model = run(steps);
      assert.deepEqual(names(model), expectedNames);
      if (expectedCells !== undefined) {
        assert.deepEqual(
          model.state().rows.map((r) => plain(r.cells)),
          expectedCells,
        );
      }
    });
  }

  test("row limit is reported in samplingStatus and the result", () => {
    const model = new DataviewModel();
    const { result } = model.replace([{ id: "a" }, { id: "b" }, { id: "a" }].map(cellsOf), [], limits(2));
    assert.deepEqual(result, { rows: 2, duplicates: 0, dropped: 1 });
    assert.deepEqual(plain(model.state().headlines), {
      samplingStatus: "Row limit of 2 reached: 1 row dropped",
      totalRows: "2",
    });
  });

  test("duplicates are counted", () => {
    const { result } = new DataviewModel().replace(
      [{ id: "a" }, { id: "a" }, { id: "b" }].map(cellsOf),
      [],
      limits(),
    );
    assert.deepEqual(result, { rows: 3, duplicates: 1, dropped: 0 });
  });

  test("a new row beyond the limit is refused with ROW_LIMIT_REACHED", () => {
    const model = run([{ put: [{ id: "a" }] }]);
    assert.throws(
      () => model.putRow("b", cellsOf({ id: "b" }), limits(1)),
      (e: unknown) => e instanceof VigilError && e.code === "ROW_LIMIT_REACHED" && e.status === 400,
    );
    // Replacing an existing row at the limit is fine.
    model.putRow("a", cellsOf({ id: "a", v: "1" }), limits(1));
    assert.deepEqual(names(model), ["a"]);
  });

  test("a row without a value in the first column is refused", () => {
    assert.throws(
      () => new DataviewModel().replace([{ id: "a" }, { v: "1" }].map(cellsOf), [], limits()),
      (e: unknown) => e instanceof VigilError && e.code === "INVALID_DATAVIEW" && /Row 1/.test(e.body),
    );
  });

  test("deleting a missing row reports undefined and changes nothing", () => {
    const model = run([{ put: [{ id: "a" }] }]);
    assert.equal(model.deleteRow("zz"), undefined);
    assert.deepEqual(names(model), ["a"]);
  });

  test("more distinct columns than the limit is TOO_MANY_COLUMNS and changes nothing", () => {
    const model = run([{ put: [{ id: "a", v: "1" }] }]);
    assert.throws(
      () => model.replace([cellsOf({ id: "b", x: "1", y: "2" })], [], limits(200, 2)),
      (e: unknown) => e instanceof VigilError && e.code === "TOO_MANY_COLUMNS" && /\b2\b/.test(e.body),
    );
    assert.throws(
      () => model.putRow("a", cellsOf({ w: "1" }), limits(200, 2)),
      (e: unknown) => e instanceof VigilError && e.code === "TOO_MANY_COLUMNS",
    );
    assert.deepEqual(model.state().columns, ["id", "v"]);
  });

  test("a row name from the path is a cell: longer than maxCellLength is CELL_TOO_LONG", () => {
    const model = run([{ put: [{ id: "a" }] }]);
    assert.throws(
      () => model.putRow("x".repeat(65), cellsOf({ v: "1" }), limits()),
      (e: unknown) => e instanceof VigilError && e.code === "CELL_TOO_LONG" && /limit of 64/.test(e.body),
    );
  });

  test("Column-Order names that no kept row has are returned, not shown", () => {
    const model = new DataviewModel();
    const { notes } = model.replace(
      [
        { id: "a", v: "1" },
        { id: "b", late: "2" },
      ].map(cellsOf),
      ["late", "v", "y".repeat(65), "late", "gone"],
      limits(1),
    );
    assert.deepEqual(notes.ignoredColumns, ["late", "y".repeat(65), "gone"]);
    assert.deepEqual(model.state().columns, ["v", "id"]);
  });

  test("__proto__ and constructor are ordinary columns", () => {
    const body = JSON.parse('{"id":"a","__proto__":"p","constructor":"c"}') as Record<string, string>;
    const model = new DataviewModel();
    model.replace([cellsOf(body)], [], limits());
    const row = model.state().rows[0];
    assert.ok(row !== undefined);
    assert.equal(Object.getPrototypeOf(row.cells), null);
    assert.deepEqual(Object.entries(row.cells), [
      ["id", "a"],
      ["__proto__", "p"],
      ["constructor", "c"],
    ]);
  });
});

describe("DataviewModel changes: work proportional to the change", () => {
  const dup = [
    { id: "a", v: "1" },
    { id: "a", v: "2" },
    { id: "a", v: "3" },
    { id: "b", v: "4" },
  ];
  const cases: [string, Step[], Step, string[]][] = [
    ["PUT dataview is one replace", [], { put: dup }, ["dataview"]],
    [
      "PUT row on an existing row is exactly one row upsert",
      [{ put: dup }],
      { row: "b", body: { v: "9" } },
      ["row:b"],
    ],
    [
      "PUT row of a new row is one upsert and the headline count",
      [{ put: dup }],
      { row: "c", body: { v: "9" } },
      ["row:c", "headlines"],
    ],
    [
      "DELETE of a base name with duplicates: the renumbered rows and one delete",
      [{ put: dup }],
      { del: "a" },
      ["row:a", "row:a_duplicate1", "rowDelete:a_duplicate2", "headlines"],
    ],
    [
      "DELETE of the last duplicate renumbers nothing",
      [{ put: dup }],
      { del: "a_duplicate2" },
      ["rowDelete:a_duplicate2", "headlines"],
    ],
    ["DELETE of a unique row is one delete", [{ put: dup }], { del: "b" }, ["rowDelete:b", "headlines"]],
    [
      "a rename out of a duplicate group renumbers the rest",
      [{ put: dup }],
      { row: "a", body: { id: "z" } },
      ["row:z", "row:a", "row:a_duplicate1", "rowDelete:a_duplicate2"],
    ],
  ];
  for (const [name, before, step, expected] of cases) {
    test(name, () => {
      const model = run(before);
      assert.deepEqual(summary(apply(model, step)), expected);
    });
  }

  test("a row upsert carries the column list only when it changed", () => {
    const model = run([{ put: [{ id: "a", v: "1" }] }]);
    const [same] = model.putRow("a", cellsOf({ v: "2" }), limits()).changes;
    assert.ok(same?.kind === "row" && same.columns === undefined);
    const [grown] = model.putRow("a", cellsOf({ w: "3" }), limits()).changes;
    assert.ok(grown?.kind === "row");
    assert.deepEqual(grown.columns, ["id", "v", "w"]);
    assert.deepEqual(grown.cells, ["a", 1, "3"]);
  });
});

/**
 * Property: the incremental model shows exactly what the old whole-dataview rules give (names by
 * `publishedNames` over the base names in order), and its changes, applied to a mirror keyed by
 * published name, always reproduce its state.
 */
describe("DataviewModel: incremental names and changes agree with the whole-dataview rules", () => {
  const base = fc.constantFrom("a", "b", "c", "a_duplicate1", "a_duplicate2", "b_duplicate1");
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc
      .array(fc.record({ id: base, v: fc.constantFrom("1", "2", "") }), { maxLength: 6 })
      .map((put) => ({ put, limit: 5 })),
    fc.record({
      row: fc.constantFrom("a", "b", "c", "a_duplicate1", "b_duplicate2", "a_duplicate2"),
      body: fc.oneof(
        fc.record({ v: fc.constantFrom("7", "8") }),
        fc.record({ id: base, v: fc.constantFrom("7", "8") }),
        fc.record({ w: fc.constantFrom("x", "y") }),
      ),
      limit: fc.constant(5),
    }),
    fc.record({ del: fc.constantFrom("a", "b", "c", "a_duplicate1", "a_duplicate2", "b_duplicate1") }),
  );

  test("random operation sequences", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const model = new DataviewModel();
        const reference: { base: string; cells: Map<string, string> }[] = [];
        let columns: string[] = [];
        const mirror = new Map<string, Map<string, string>>();
        for (const s of steps) {
          let changes: Change[];
          try {
            changes = apply(model, s);
          } catch (error) {
            if (error instanceof VigilError) continue;
            throw error;
          }
          // The reference: the previous implementation's rules, whole-dataview.
          const refNames = () => publishedNames(reference.map((r) => r.base));
          if ("put" in s) {
            reference.length = 0;
            columns = [...new Set(s.put.flatMap((r) => Object.keys(r)))];
            for (const r of s.put.slice(0, 5))
              reference.push({ base: r.id ?? "", cells: cellsOf(r) as Map<string, string> });
          } else if ("row" in s) {
            for (const c of Object.keys(s.body)) if (!columns.includes(c)) columns.push(c);
            const first = columns[0] as string;
            const given = s.body[first];
            const index = refNames().indexOf(s.row);
            const baseName = given === undefined || given === "" ? (reference[index]?.base ?? s.row) : given;
            const cells = new Map(Object.entries({ ...s.body, [first]: baseName }));
            if (index === -1) reference.push({ base: baseName, cells });
            else reference[index] = { base: baseName, cells };
          } else {
            const index = refNames().indexOf(s.del);
            if (index !== -1) reference.splice(index, 1);
          }
          const state = model.state();
          assert.deepEqual(
            state.rows.map((r) => r.name),
            refNames(),
          );
          // Mirror: what the gateway would hold after applying the changes.
          let mirrorColumns = columns;
          for (const change of changes) {
            if (change.kind === "dataview") {
              mirror.clear();
              mirrorColumns = [...change.columns];
              for (const row of change.rows) {
                const values = decodeCells(row.cells, mirrorColumns.length);
                mirror.set(row.name, new Map(mirrorColumns.map((c, i) => [c, values[i] ?? ""])));
              }
            } else if (change.kind === "row") {
              if (change.columns !== undefined) mirrorColumns = [...change.columns];
              const values = decodeCells(change.cells, state.columns.length);
              mirror.set(change.name, new Map(state.columns.map((c, i) => [c, values[i] ?? ""])));
            } else if (change.kind === "rowDelete") mirror.delete(change.name);
          }
          // Names are distinct, so the mirror keyed by name holds every row.
          assert.equal(new Set(state.rows.map((r) => r.name)).size, state.rows.length);
          const nonBlank = (m: ReadonlyMap<string, string>) => [...m].filter(([, v]) => v !== "").sort();
          assert.deepEqual([...mirror.keys()].sort(), state.rows.map((r) => r.name).sort());
          for (const row of state.rows) {
            assert.deepEqual(
              nonBlank(mirror.get(row.name) ?? new Map()),
              nonBlank(new Map(Object.entries(row.cells))),
            );
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("DataviewModel: what cannot travel in one link frame is refused, and the model stays", () => {
  const frame = 2 * 1024 * 1024; // a 2 MiB limits.linkFrameBytes: 1.25 MiB for one change
  const small = { ...limits(), maxCellLength: 1 << 20, linkFrameBytes: frame };
  const address = { managedEntity: "me", sampler: "s", samplerType: "", dataview: "dv" };
  const refused = (run: () => unknown) =>
    assert.throws(run, (error: unknown) => {
      assert.ok(error instanceof VigilError);
      assert.equal(error.code, "LIMIT_EXCEEDED");
      assert.match(error.message, /limits\.linkFrameBytes \(2097152\)/);
      return true;
    });

  test("a dataview whose rows encode past the frame (less its headroom) is refused before it replaces the rows", () => {
    const model = new DataviewModel(address);
    model.replace([cellsOf({ name: "a", v: "1" })], [], small);
    // 20 rows of 64 KiB: 1.3 MB of text, more than 1.25 MiB once encoded.
    const rows = Array.from({ length: 20 }, (_, i) => cellsOf({ name: `r${i}`, v: "x".repeat(65_536) }));
    refused(() => model.replace(rows, [], small));
    assert.deepEqual(
      model.state().rows.map((r) => r.name),
      ["a"],
      "the rows before stay",
    );
    // Control characters are 6 bytes each in JSON: counted as such.
    refused(() => model.replace([cellsOf({ name: "c", v: "\u0001".repeat(250_000) })], [], small));
    // Within the room: taken.
    model.replace(rows.slice(0, 8), [], small);
    assert.equal(model.state().rows.length, 8);
  });

  test("a row whose cells encode past the frame is refused; the row stays as it was", () => {
    const model = new DataviewModel(address);
    model.replace([cellsOf({ name: "a", v: "1" })], [], small);
    const wide = cellsOf(
      Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`c${i}`, "y".repeat(65_536)])),
    );
    refused(() => model.putRow("a", wide, { ...small, maxColumns: 256 }));
    assert.deepEqual(model.row("a")?.cells, Object.assign(Object.create(null), { name: "a", v: "1" }));
  });
});
