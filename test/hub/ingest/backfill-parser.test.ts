/**
 * The backfill parser: a body parsed and checked by the worker threads must make exactly
 * the part the hub's thread made of it before (the body decoded whole, read as one JSON array or
 * split into lines, check-message.ts run in place), for NDJSON and JSON array bodies of every kind
 * of message, good and bad, in any bytes (invalid UTF-8, CRLF, blank lines of Unicode
 * whitespace): property over random bodies through real workers, with pools of one and three. The
 * slices of lines cut on the hub's thread are those of the decoded text (property). Also: the
 * workers parse only the slices asked for (a bounded lead, whatever the body's size); a body that
 * starts like a JSON array and is not one is a 400; closing fails a body being read with 503, and
 * the next body gets new workers; a worker that stops fails the bodies it was reading with 503,
 * logged, and the next body gets a new one; idle workers stop, unlogged, and a body being read keeps
 * them.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Worker } from "node:worker_threads";
import fc from "fast-check";
import {
  addSlice,
  arraySlices,
  lineDeliveries,
  lineRanges,
  startsLikeArray,
} from "../../../src/hub/ingest/backfill-body.js";
import { BackfillParser, parseWorkers, SLICES_AHEAD } from "../../../src/hub/ingest/backfill-parser.js";
import { CheckedPart, checkInto } from "../../../src/hub/ingest/check-message.js";
import { DEFAULT_DATA_LIMITS } from "../../../src/limits/data-limits.js";
import { fuzzBudget } from "../../helpers/fuzz-budget.js";

const LIMITS = DEFAULT_DATA_LIMITS;

const logger = {
  error: (details: object, message: string) => assert.fail(`${message}: ${JSON.stringify(details)}`),
};
const parser = new BackfillParser(logger, 1);
const pool = new BackfillParser(logger, 3);
after(() => Promise.all([parser.close(), pool.close()]));
// Workers start with their first body (seconds on a busy machine, from TypeScript source): started
// before the properties, so no property's time budget runs out on its first run.
before(async () => {
  for (const from of [parser, pool]) {
    const part = new CheckedPart();
    for await (const slice of from.slices(new TextEncoder().encode("{}\n{}\n{}"), 1, LIMITS))
      addSlice(part, slice);
  }
});

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
const text = fc.tuple(fc.array(entry, { maxLength: 40 }), fc.boolean()).map(([entries, array]) => {
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
/** Bytes no text encodes: a lone continuation byte, a cut sequence, an overlong one, 0xFF. */
const badBytes = fc.constantFrom([0x80], [0xe2, 0x82], [0xc0, 0xaf], [0xff], [0xf0, 0x9f, 0x98]);
/** Whitespace `trim` removes, as a line of its own or around one. */
const spaces = fc.constantFrom("\r", " \t", "\u00a0", "\ufeff", "\u2028", "\u3000");
/** A body as bytes: text with, now and then, bytes that are not UTF-8 and whitespace spliced in. */
const body = fc
  .tuple(
    text,
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.oneof(
          badBytes,
          spaces.map((w) => [...Buffer.from(w)]),
        ),
      ),
      {
        maxLength: 3,
      },
    ),
    fc.constantFrom("", "\n", "\r\n", "\n \n"),
  )
  .map(([t, splices, ending]) => {
    const bytes = [...Buffer.from(t + ending)];
    for (const [at, insert] of splices) bytes.splice(at % (bytes.length + 1), 0, ...insert);
    return Uint8Array.from(bytes);
  });

/** The lines of a decoded NDJSON body as the hub read them before: split at `\n`, no blank last one. */
function textLines(decoded: string): string[] {
  const lines = decoded.split("\n");
  if (lines[lines.length - 1]?.trim() === "") lines.pop();
  return lines;
}

/** The part the hub's thread made of `bytes` before the workers: decoded whole, then read. */
function inPlace(bytes: Uint8Array, size: number): CheckedPart {
  const decoded = Buffer.from(bytes).toString("utf8");
  const part = new CheckedPart();
  if (decoded.trimStart().startsWith("[")) {
    for (const slice of arraySlices(decoded, size, LIMITS.jsonDepth))
      checkInto(slice.deliveries, part, LIMITS);
  } else checkInto(lineDeliveries(textLines(decoded).join("\n"), LIMITS.jsonDepth), part, LIMITS);
  return part;
}

async function viaWorkers(bytes: Uint8Array, size: number, from = parser): Promise<CheckedPart> {
  const part = new CheckedPart();
  for await (const slice of from.slices(bytes, size, LIMITS)) addSlice(part, slice);
  return part;
}
const encoded = (t: string): Uint8Array => new TextEncoder().encode(t);

/** A part as plain data: NaN stays NaN, and null-prototype records compare by their entries. */
const plain = (part: CheckedPart) => ({
  length: part.length,
  rejected: part.rejected,
  checked: part.checked.map((c) => JSON.parse(JSON.stringify(c)) as unknown),
  protoNames: part.checked.map((c) => Object.getOwnPropertyNames(c.message?.data ?? {})),
  columns: Array.from({ length: part.cells.length }, (_, c) => part.cells.column(c)),
  texts: Array.from({ length: part.cells.length }, (_, c) => part.cells.text(c)),
  values: Array.from({ length: part.cells.length }, (_, c) => part.cells.value(c)).map((v) =>
    Number.isNaN(v) ? "NaN" : v,
  ),
});

describe("backfill parser", () => {
  test("a worker per core beyond the one the hub's thread and DuckDB share, one at least, two at most", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 64].map((cores) => parseWorkers(cores)),
      [1, 1, 2, 2, 2],
    );
  });

  test("property: the workers make the part the hub's thread made, slice by slice", async () => {
    await fc.assert(
      fc.asyncProperty(body, fc.integer({ min: 1, max: 7 }), fc.boolean(), async (bytes, size, many) => {
        const from = many ? pool : parser;
        let expected: ReturnType<typeof plain>;
        try {
          expected = plain(inPlace(bytes, size));
        } catch (error) {
          // A body that starts with `[` is read as one JSON array: the same refusal either way.
          await assert.rejects(viaWorkers(bytes, size, from), { code: (error as { code: string }).code });
          return;
        }
        assert.deepEqual(plain(await viaWorkers(bytes, size, from)), expected);
      }),
      fuzzBudget(300),
    );
  });

  test("property: slices of lines cut from the bytes are those of the decoded text", () => {
    fc.assert(
      fc.property(body, fc.integer({ min: 1, max: 7 }), (bytes, size) => {
        const decoded = Buffer.from(bytes).toString("utf8");
        assert.equal(startsLikeArray(bytes), decoded.trimStart().startsWith("["));
        // Expected: each run of `size` non-blank lines, and how many lines (blank or not) follow it.
        const lines = textLines(decoded);
        const expected: { lines: string[]; left: number }[] = [];
        let run: string[] = [];
        lines.forEach((line, i) => {
          if (line.trim() === "") return;
          run.push(line);
          if (run.length === size) {
            expected.push({ lines: run, left: lines.length - i - 1 });
            run = [];
          }
        });
        if (run.length > 0) expected.push({ lines: run, left: 0 });
        const actual = [...lineRanges(bytes, size)].map((r) => {
          const slice = Buffer.from(bytes.subarray(r.start, r.end)).toString("utf8");
          const nonBlank = slice.split("\n").filter((line) => line.trim() !== "");
          assert.equal(nonBlank.length, r.count);
          return { lines: nonBlank, left: r.left };
        });
        assert.deepEqual(actual, expected);
      }),
      fuzzBudget(300),
    );
  });

  test("property: lines left are counted exactly up to `exactUpTo`, and beyond it are more", () => {
    fc.assert(
      fc.property(body, fc.integer({ min: 1, max: 7 }), fc.nat({ max: 12 }), (bytes, size, exactUpTo) => {
        const exact = [...lineRanges(bytes, size)];
        const bounded = [...lineRanges(bytes, size, exactUpTo)];
        assert.equal(bounded.length, exact.length);
        bounded.forEach((range, i) => {
          const full = exact[i] as (typeof exact)[number];
          assert.deepEqual([range.start, range.end, range.count], [full.start, full.end, full.count]);
          if (full.left <= exactUpTo) assert.equal(range.left, full.left);
          else assert.ok(range.left > exactUpTo, `${range.left} lines left reported, ${full.left} there`);
        });
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
    const part = await viaWorkers(encoded(message), 10);
    const data = part.checked[0]?.message?.data as { attributes: object } | undefined;
    assert.ok(data !== undefined);
    const attributes = data.attributes;
    assert.deepEqual(Object.getOwnPropertyNames(attributes), ["__proto__", "constructor"]);
    assert.equal(Object.getPrototypeOf(attributes), Object.prototype);
  });

  test("a body that starts like a JSON array and is not one is INVALID_MESSAGE (400)", async () => {
    await assert.rejects(viaWorkers(encoded("[{"), 10), { code: "INVALID_MESSAGE", status: 400 });
    await assert.rejects(viaWorkers(encoded('\u00a0[1]"'), 10), { code: "INVALID_MESSAGE" });
    // The worker goes on with the next body.
    assert.equal((await viaWorkers(encoded("{}"), 10)).rejected.length, 1);
  });

  for (const [kind, text] of [
    ["NDJSON", Array.from({ length: 400 }, () => "{}").join("\n")],
    ["JSON array", `[${Array.from({ length: 400 }, () => "{}").join(",")}]`],
  ] as const) {
    test(`the workers parse only the slices asked for: at most SLICES_AHEAD wait, whatever the body's size (${kind})`, async () => {
      // A pool of its own: a property test above may still be reading a body on the shared one.
      const own = new BackfillParser(logger, 3);
      try {
        const slices = own.slices(encoded(text), 1, LIMITS); // 400 slices of one message
        const first = await slices.next();
        assert.equal(first.done, false);
        // Every slice asked for answered (however slow the machine): the workers ran as far ahead
        // as they were let, and must have stopped at the slices asked for.
        while (own.outstanding > 0) await new Promise((resolve) => setImmediate(resolve));
        assert.equal(own.buffered, SLICES_AHEAD, "every slice asked for came back, and no more");
        await slices.return(undefined); // a body given up: its slices are dropped
        assert.equal(own.buffered, 0);
        assert.equal(own.outstanding, 0);
      } finally {
        await own.close();
      }
    });
  }

  test("closing the parser fails a body being read with 503; a later body starts a new worker", async () => {
    const closing = new BackfillParser(logger, 2);
    const text = Array.from({ length: 2_000 }, () => "{}").join("\n");
    const slices = closing.slices(encoded(text), 1, LIMITS);
    await slices.next(); // started
    await closing.close();
    await assert.rejects(
      (async () => {
        for await (const _ of slices);
      })(),
      { code: "SERVICE_UNAVAILABLE", status: 503 },
    );
    const part = new CheckedPart();
    for await (const slice of closing.slices(encoded("{}\n{}"), 10, LIMITS)) addSlice(part, slice);
    assert.equal(part.rejected.length, 2);
    await closing.close();
  });

  test("idle workers stop once no body has been read for a while, unlogged; the next body starts them again", async () => {
    // The module's logger fails the test on any log line: an idle stop is not a failure.
    const idle = new BackfillParser(logger, 2, 20);
    try {
      const first = await viaWorkers(encoded("{}\n{}\n{}\n{}"), 1, idle);
      assert.equal(first.rejected.length, 4);
      // Waits on the parser, not on a clock: the stop comes whenever the machine gets to it.
      while (idle.running > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const again = await viaWorkers(encoded("{}\n{}\n{}"), 1, idle);
      assert.equal(again.rejected.length, 3);
      assert.ok(idle.running > 0, "a body started the workers again");
    } finally {
      await idle.close();
    }
    assert.equal(idle.running, 0);
  });

  test("workers reading a body are not stopped as idle, however long it takes", async () => {
    const busy = new BackfillParser(logger, 2, 1);
    try {
      const text = Array.from({ length: 200 }, () => "{}").join("\n");
      const part = new CheckedPart();
      for await (const slice of busy.slices(encoded(text), 1, LIMITS)) {
        addSlice(part, slice);
        // Longer than the idle time, between every slice of the body.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      assert.equal(part.rejected.length, 200);
    } finally {
      await busy.close();
    }
  });

  test("a worker that stops fails the bodies it was reading with 503, logged; the next body gets a new one", async () => {
    const logged: string[] = [];
    const crashing = new BackfillParser({ error: (_details, message) => logged.push(message) }, 2);
    try {
      const text = Array.from({ length: 2_000 }, () => "{}").join("\n");
      const slices = crashing.slices(encoded(text), 1, LIMITS);
      await slices.next(); // started: both workers hold slices of the body
      const workers = (crashing as unknown as { workers: (Worker | undefined)[] }).workers;
      await workers[1]?.terminate();
      await assert.rejects(
        (async () => {
          for await (const _ of slices);
        })(),
        { code: "SERVICE_UNAVAILABLE", status: 503 },
      );
      assert.deepEqual(logged, ["a backfill parser's worker stopped; the backfills it was reading fail"]);
      const part = await viaWorkers(encoded("{}\n{}\n{}"), 1, crashing);
      assert.equal(part.rejected.length, 3);
    } finally {
      await crashing.close();
    }
  });
});
