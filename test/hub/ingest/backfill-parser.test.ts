/**
 * The backfill parser (issue 12): a body parsed and checked in the worker thread must make exactly
 * the part the hub's thread makes of it (check-message.ts run in place), for NDJSON and JSON array
 * bodies of every kind of message, good and bad: property over random bodies through a real worker.
 * Also: the worker parses only the slices asked for (a bounded lead, whatever the body's size); a
 * body that starts like a JSON array and is not one is a 400; closing fails a body being read with
 * 503, and the next body gets a new worker.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import { addSlice, deliveryParts } from "../../../src/hub/ingest/backfill-body.js";
import { BackfillParser, SLICES_AHEAD } from "../../../src/hub/ingest/backfill-parser.js";
import { CheckedPart, checkInto } from "../../../src/hub/ingest/check-message.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const logger = {
  error: (details: object, message: string) => assert.fail(`${message}: ${JSON.stringify(details)}`),
};
const parser = new BackfillParser(logger);
after(() => parser.close());

/** Names a client may send, `__proto__` and `constructor` included (data, never object keys). */
const name = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "cpu", "", "toString"),
  fc.string({ maxLength: 6 }),
  fc.string({ maxLength: 4, unit: "binary" }),
);
const cell = fc.oneof(
  fc.constantFrom("", "1", "-2.5e3", " 7 ", "0x10", "Infinity", "1e999", "12 %", "\ud800"),
  fc.double().map(String),
  fc.string({ maxLength: 5 }),
);
const time = fc.oneof(
  fc.integer({ min: -1e12, max: 4e12 }).map((ms) => new Date(ms).toISOString()),
  fc.constantFrom("2016-12-31T23:59:60Z", "2026-01-01T00:00:00.5+01:00", "not a time"),
);
const cells = fc.dictionary(name, cell, { maxKeys: 6 });
const target = fc.record({ gateway: name, probe: name, managedEntity: name });
const metrics = fc
  .tuple(fc.constantFrom("table", "headline"), fc.constantFrom("update", "create", "delete"), target)
  .chain(([type, operation, t]) =>
    fc.record({
      type: fc.constant(type),
      operation: fc.constant(operation),
      data: fc.record({
        sampleTime: time,
        target: fc.record({
          ...Object.fromEntries(Object.entries(t).map(([k, v]) => [k, fc.constant(v)])),
          type: name,
          sampler: name,
          dataview: name,
          ...(type === "table" ? { row: name } : {}),
          filter: fc.record({ osType: name, pluginName: name }),
        }),
        row: cells,
      }),
    }),
  );
const entity = fc.record({
  type: fc.constant("managedEntity"),
  operation: fc.constantFrom("create", "update", "delete"),
  data: fc.record({ timestamp: time, target, attributes: fc.dictionary(name, name, { maxKeys: 3 }) }),
});
const severity = fc.record({
  type: fc.constant("severity"),
  operation: fc.constant("update"),
  data: fc.record({
    timestamp: time,
    target,
    data: fc.record({
      severity: fc.constantFrom("OK", "CRITICAL", "BAD"),
      active: fc.boolean(),
      snoozed: fc.boolean(),
      snoozedParents: fc.nat(3),
      userAssigned: fc.boolean(),
    }),
  }),
});
/** One body entry: a message written as JSON (plain or spaced), or a line that is not one. */
const entry = fc.oneof(
  { weight: 6, arbitrary: metrics.map((m) => JSON.stringify(m)) },
  { weight: 1, arbitrary: metrics.map((m) => JSON.stringify(m, null, 0).replace(/:/g, ": ")) },
  { weight: 1, arbitrary: entity.map((m) => JSON.stringify(m)) },
  { weight: 1, arbitrary: severity.map((m) => JSON.stringify(m)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.constantFrom("{not json", "", "   ", '"\\ud800"') },
);
const body = fc.tuple(fc.array(entry, { maxLength: 40 }), fc.boolean()).map(([entries, array]) => {
  if (!array) return entries.join("\n");
  const values = entries.filter((e) => {
    try {
      JSON.parse(e);
      return true;
    } catch {
      return false;
    }
  });
  return `[${values.join(",")}]`;
});

/** The part the hub's thread makes of `text` (what the ingester did before the worker). */
function inPlace(text: string, size: number): CheckedPart {
  const part = new CheckedPart();
  for (const slice of deliveryParts(text, size)) checkInto(slice.deliveries, part);
  return part;
}

async function viaWorker(text: string, size: number): Promise<CheckedPart> {
  const part = new CheckedPart();
  for await (const slice of parser.slices(new TextEncoder().encode(text), size)) addSlice(part, slice);
  return part;
}

/** A part as plain data: NaN stays NaN, and null-prototype records compare by their entries. */
const plain = (part: CheckedPart) => ({
  length: part.length,
  rejected: part.rejected,
  checked: part.checked.map((c) => JSON.parse(JSON.stringify(c)) as unknown),
  protoNames: part.checked.map((c) => Object.getOwnPropertyNames(c.message?.data ?? {})),
  columns: part.cells.columns,
  texts: part.cells.texts,
  values: part.cells.values.map((v) => (Number.isNaN(v) ? "NaN" : v)),
});

describe("backfill parser", () => {
  test("property: the worker makes the part the hub's thread makes, slice by slice", async () => {
    await fc.assert(
      fc.asyncProperty(body, fc.integer({ min: 1, max: 7 }), async (text, size) => {
        let expected: ReturnType<typeof plain>;
        try {
          expected = plain(inPlace(text, size));
        } catch (error) {
          // A body that starts with `[` is read as one JSON array: the same refusal either way.
          await assert.rejects(viaWorker(text, size), { code: (error as { code: string }).code });
          return;
        }
        assert.deepEqual(plain(await viaWorker(text, size)), expected);
      }),
      fuzzBudget(300),
    );
  });

  test("a name `__proto__` stays an ordinary own key after the move between threads", async () => {
    const message = JSON.stringify({
      type: "managedEntity",
      operation: "create",
      data: {
        timestamp: "2026-01-01T00:00:00.000Z",
        target: { gateway: "GW", probe: "p", managedEntity: "me" },
        attributes: JSON.parse('{"__proto__": "x", "constructor": "y"}'),
      },
    });
    const part = await viaWorker(message, 10);
    const data = part.checked[0]?.message?.data as { attributes: object } | undefined;
    assert.ok(data !== undefined);
    const attributes = data.attributes;
    assert.deepEqual(Object.getOwnPropertyNames(attributes), ["__proto__", "constructor"]);
    assert.equal(Object.getPrototypeOf(attributes), Object.prototype);
  });

  test("a body that starts like a JSON array and is not one is INVALID_MESSAGE (400)", async () => {
    await assert.rejects(viaWorker("[{", 10), { code: "INVALID_MESSAGE", status: 400 });
    await assert.rejects(viaWorker('[1]"', 10), { code: "INVALID_MESSAGE" });
    // The worker goes on with the next body.
    assert.equal((await viaWorker("{}", 10)).rejected.length, 1);
  });

  test("the worker parses only the slices asked for: at most SLICES_AHEAD wait, whatever the body's size", async () => {
    const text = Array.from({ length: 400 }, () => "{}").join("\n");
    const slices = parser.slices(new TextEncoder().encode(text), 1); // 400 slices of one message
    const first = await slices.next();
    assert.equal(first.done, false);
    // Give the worker time to run ahead if it would; it must stop at the slices asked for.
    for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(parser.buffered >= 1 && parser.buffered <= SLICES_AHEAD, `${parser.buffered} slices waiting`);
    await slices.return(undefined); // a body given up: its slices are dropped
    assert.equal(parser.buffered, 0);
  });

  test("closing the parser fails a body being read with 503; a later body starts a new worker", async () => {
    const closing = new BackfillParser(logger);
    const text = Array.from({ length: 2_000 }, () => "{}").join("\n");
    const slices = closing.slices(new TextEncoder().encode(text), 1);
    await slices.next(); // started
    await closing.close();
    await assert.rejects(
      (async () => {
        for await (const _ of slices);
      })(),
      { code: "SERVICE_UNAVAILABLE", status: 503 },
    );
    const part = new CheckedPart();
    for await (const slice of closing.slices(new TextEncoder().encode("{}\n{}"), 10)) addSlice(part, slice);
    assert.equal(part.rejected.length, 2);
    await closing.close();
  });
});
