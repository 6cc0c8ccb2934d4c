/**
 * Values and names pass through exactly (DESIGN 3.2), over real HTTP into a real gateway
 * whose real publisher checks every message against the public-v2 schema:
 * - a cell's text is the JSON text it was sent as (numbers of any length and form), strings,
 *   booleans and null as DESIGN 3.2 says; columns keep the order they were sent in;
 * - names such as `constructor`, `__proto__`, `toString`, `hasOwnProperty` work as managed entity,
 *   sampler, dataview, row and column names, and their messages are valid and published;
 * - a property: any dataview body the probe accepts comes out of the gateway with the same cell text.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { VigilError } from "../../src/errors/catalog.js";
import { buildGateway } from "../../src/gateway/app.js";
import { Publisher } from "../../src/gateway/publish/publisher.js";
import { LINK_PROTOCOL_VERSION } from "../../src/link/protocol.js";
import type { PublicV2Message, TableMessage } from "../../src/messages/types.js";
import { buildProbe } from "../../src/probe/app.js";
import { publishedNames } from "../../src/probe/dataview-model.js";
import { parseDataviewBody, parseRowBody } from "../../src/probe/ingest-body.js";
import { eventually } from "../link/helpers.js";

const logger = pino({ level: "silent" });
const setup = parseSetup(`
gateway: { name: GW, maxColumnsPerDataview: 64, maxCellLength: 200 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me
        samplers:
          - { name: s, plugin: rest-api, rowLimit: 50 }
          - { name: constructor, plugin: rest-api }
          - { name: __proto__, plugin: rest-api }
      - { name: __proto__, samplers: [{ name: toString, plugin: rest-api }] }
      - { name: constructor, samplers: [{ name: hasOwnProperty, plugin: rest-api }] }
`);

// The real publisher (schema check, `invalid` counter) with a sink that holds nothing: the
// messages are read from its live tap, called synchronously as the gateway publishes.
const publisher = new Publisher({
  gateway: "GW",
  sinks: [{ name: "test", publish: async () => {}, close: async () => {} }],
  logger,
});
const published: PublicV2Message[] = [];
publisher.subscribe((envelope) => published.push(envelope.message));
const gateway = buildGateway({ setup, publisher, logger });
const probe = buildProbe({ name: "p1", link: gateway.connectInProcess(), setup: setup.probes[0]!, logger });
let base = "";

before(async () => {
  base = (await probe.start()).http;
  await eventually(() => probe.linkStatus().state === "up", "the link to come up");
});
after(async () => {
  await probe.stop(1000);
  await gateway.stop(1000);
  await publisher.close(1000);
});

/** True when every change the probe took is acknowledged, so the gateway has published it. */
const idle = () => {
  const status = probe.linkStatus();
  return status.state === "up" && status.outgoing === 0 && status.inFlightBatches === 0;
};

const path = (me: string, sampler: string, dataview: string, row?: string) =>
  `/v1/managedEntity/${encodeURIComponent(me)}/sampler/${encodeURIComponent(sampler)}/dataview/${encodeURIComponent(dataview)}${row === undefined ? "" : `/row/${encodeURIComponent(row)}`}`;

async function call(method: string, url: string, body?: string) {
  const response = await fetch(`${base}${url}`, { method, ...(body === undefined ? {} : { body }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Sends a request and returns the messages the gateway published for it. */
async function publishedBy(request: () => Promise<{ status: number }>, status = 200) {
  await eventually(idle, "the link to be idle");
  const from = published.length;
  const invalidBefore = publisher.status().invalid;
  const response = await request();
  assert.equal(response.status, status, JSON.stringify(response));
  await eventually(idle, "the link to be idle");
  assert.equal(publisher.status().invalid, invalidBefore, "no message failed the schema");
  return published.slice(from);
}

const tables = (messages: readonly PublicV2Message[]) =>
  messages.filter((m): m is TableMessage => m.type === "table");

/** The last table message of each row, by row name. */
function lastRows(messages: readonly PublicV2Message[]): Map<string, TableMessage> {
  const out = new Map<string, TableMessage>();
  for (const m of tables(messages)) out.set(m.data.target.row, m);
  return out;
}

/** A cell of a published row (own keys only: `__proto__` is an ordinary key there). */
const cellOf = (message: TableMessage | undefined, column: string) =>
  message !== undefined && Object.hasOwn(message.data.row, column)
    ? Object.getOwnPropertyDescriptor(message.data.row, column)?.value
    : undefined;

describe("exact values: a cell is the JSON text it was sent as (DESIGN 3.2)", () => {
  // [what it shows, the cell's JSON text in the body, the cell's text]
  const cases: [string, string, string][] = [
    ["an integer beyond 2^53 keeps every digit", "9007199254740993", "9007199254740993"],
    [
      "a very long integer",
      "123456789012345678901234567890123456789",
      "123456789012345678901234567890123456789",
    ],
    ["a trailing fraction zero stays", "1.50", "1.50"],
    ["an exponent stays as written", "1e3", "1e3"],
    ["an upper-case signed exponent", "2.5E+10", "2.5E+10"],
    ["a negative exponent", "-1.0e-5", "-1.0e-5"],
    ["negative zero stays", "-0", "-0"],
    ["zero", "0", "0"],
    ["a plain decimal", "12.25", "12.25"],
    ["a tiny decimal that JSON.parse would print as 1e-7", "0.0000001", "0.0000001"],
    ["a long fraction", "0.1000000000000000055511151231257827", "0.1000000000000000055511151231257827"],
    ["a string", '"queued"', "queued"],
    ["a string that looks like a number stays a string", '"1.50"', "1.50"],
    ["an empty string is blank", '""', ""],
    ["escapes are decoded", '"a\\"b\\\\c\\n\\u00e9"', 'a"b\\c\né'],
    ["true", "true", "true"],
    ["false", "false", "false"],
    ["null is blank", "null", ""],
  ];

  let n = 0;
  for (const [name, json, text] of cases) {
    test(`PUT dataview: ${name}`, async () => {
      const dv = `exact-${n++}`;
      const body = `[{"id":"r", "v" : ${json} ,"w":1}]`;
      const messages = await publishedBy(() => call("PUT", path("me", "s", dv), body));
      const row = lastRows(messages).get("r");
      assert.equal(cellOf(row, "v"), text, "published cell");
      const state = await call("GET", path("me", "s", dv));
      const rows = state.body.rows as { cells: Record<string, string> }[];
      assert.equal(rows[0]?.cells.v, text, "GET cell");
    });

    test(`PUT row: ${name}`, async () => {
      const dv = `exact-${n++}`;
      assert.equal((await call("PUT", path("me", "s", dv), '[{"id":"r"}]')).status, 200);
      const messages = await publishedBy(() => call("PUT", path("me", "s", dv, "r"), `{"v":${json}}`));
      assert.equal(cellOf(lastRows(messages).get("r"), "v"), text);
    });
  }

  test("columns keep the order they were sent in, array-index-like names included", async () => {
    const dv = "order";
    const body = '[{"name":"a","10":"x","2":3,"b":"y"}]';
    await publishedBy(() => call("PUT", path("me", "s", dv), body));
    const state = await call("GET", path("me", "s", dv));
    assert.deepEqual(state.body.columns, ["name", "10", "2", "b"]);
    assert.deepEqual(
      (state.body.rows as { name: string }[]).map((r) => r.name),
      ["a"],
      "the first column sent names the row",
    );
  });

  const duplicates: [string, string][] = [
    ["without numbers", '{"id":"a","v":"1","w":"2","v":"3"}'],
    ["with numbers", '{"id":"a","v":1,"w":2,"v":3.0}'],
  ];
  for (const [name, row] of duplicates) {
    test(`a repeated key keeps its first position and its last value (${name})`, async () => {
      const dv = `dupkey-${name.replace(/ /g, "-")}`;
      await publishedBy(() => call("PUT", path("me", "s", dv), `[${row}]`));
      const state = await call("GET", path("me", "s", dv));
      assert.deepEqual(state.body.columns, ["id", "v", "w"]);
      const cells = (state.body.rows as { cells: Record<string, string> }[])[0]?.cells;
      assert.equal(cells?.v, name === "with numbers" ? "3.0" : "3");
    });
  }

  test("a body that is not UTF-8 is a 400, not silently altered", async () => {
    const body = Buffer.concat([
      Buffer.from('[{"id":"a","v":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}]'),
    ]);
    const response = await fetch(`${base}${path("me", "s", "utf8")}`, { method: "PUT", body });
    assert.equal(response.status, 400);
    const error = (await response.json()) as { title: string; body: string };
    assert.equal(error.title, "Unable to create or update dataview");
    assert.match(error.body, /not valid UTF-8/);
  });

  test("a number too long for maxCellLength is refused like any long cell", async () => {
    const r = await call("PUT", path("me", "s", "long"), `[{"id":"a","v":${"9".repeat(201)}}]`);
    assert.equal(r.status, 400);
    assert.equal(r.body.title, "Cell too long");
  });
});

describe("names are data: prototype names work end to end", () => {
  const special = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"];

  // [managed entity, sampler, dataview]
  const places: [string, string, string][] = [
    ["me", "s", "plain"],
    ["me", "constructor", "__proto__"],
    ["me", "__proto__", "toString"],
    ["__proto__", "toString", "hasOwnProperty"],
    ["constructor", "hasOwnProperty", "constructor"],
  ];
  for (const [me, sampler, dataview] of places) {
    test(`rows and columns named ${special.join(", ")} on ${me}/${sampler}/${dataview}`, async () => {
      // The first column is itself special; every row is named by a special name.
      const columns = ["__proto__", ...special.filter((c) => c !== "__proto__")];
      const rows = special.map((name, i) =>
        Object.fromEntries([["__proto__", name], ...columns.slice(1).map((c) => [c, `${name}.${c}.${i}`])]),
      );
      // JSON.stringify writes an own `__proto__` key (Object.fromEntries makes one) as an ordinary key.
      const body = JSON.stringify(rows);
      assert.ok(body.startsWith('[{"__proto__":"constructor","constructor"'), body.slice(0, 50));
      const messages = await publishedBy(() => call("PUT", path(me, sampler, dataview), body));
      const byRow = lastRows(messages);
      assert.deepEqual([...byRow.keys()].sort(), [...special].sort());
      for (const m of byRow.values()) {
        assert.equal(m.data.target.managedEntity, me);
        assert.equal(m.data.target.sampler, sampler);
        assert.equal(m.data.target.dataview, dataview);
        assert.deepEqual(Object.keys(m.data.row), columns);
      }
      assert.equal(cellOf(byRow.get("toString"), "hasOwnProperty"), "toString.hasOwnProperty.2");
      assert.equal(cellOf(byRow.get("toString"), "__proto__"), "toString");
      const headline = messages.find((m) => m.type === "headline");
      assert.ok(headline !== undefined, "the headline message is published too");

      // PUT row and DELETE row by a special name.
      const put = await publishedBy(() =>
        call("PUT", path(me, sampler, dataview, "valueOf"), '{"constructor":"changed"}'),
      );
      assert.equal(cellOf(lastRows(put).get("valueOf"), "constructor"), "changed");
      const deleted = await publishedBy(() => call("DELETE", path(me, sampler, dataview, "__proto__")));
      assert.ok(tables(deleted).some((m) => m.operation === "delete" && m.data.target.row === "__proto__"));

      // GET shows the same names as ordinary JSON keys.
      const state = await call("GET", path(me, sampler, dataview));
      assert.deepEqual(state.body.columns, columns);
      const shown = (state.body.rows as { name: string; cells: Record<string, string> }[]).find(
        (r) => r.name === "valueOf",
      );
      assert.deepEqual(Object.keys(shown?.cells ?? {}), columns);
      assert.equal(Object.getOwnPropertyDescriptor(shown?.cells, "__proto__")?.value, "valueOf");
    });
  }
});

describe("property: any dataview body the probe accepts comes out of the gateway with the same cell text", () => {
  /** A JSON number token and its text, in every form JSON allows. */
  const numberText = fc
    .tuple(
      fc.boolean(),
      fc.oneof(fc.constant("0"), fc.stringMatching(/^[1-9][0-9]{0,40}$/)),
      fc.option(fc.stringMatching(/^[0-9]{1,25}$/), { nil: undefined }),
      fc.option(
        fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.stringMatching(/^[0-9]{1,3}$/)),
        {
          nil: undefined,
        },
      ),
    )
    .map(
      ([negative, int, fraction, exponent]) =>
        `${negative ? "-" : ""}${int}${fraction === undefined ? "" : `.${fraction}`}${exponent === undefined ? "" : exponent.join("")}`,
    );
  const wellFormed = fc.string({ unit: "grapheme", maxLength: 12 });
  /** [JSON text of the cell, the cell's expected text] */
  const cell: fc.Arbitrary<[string, string]> = fc.oneof(
    numberText.map((t): [string, string] => [t, t]),
    wellFormed.map((s): [string, string] => [JSON.stringify(s), s]),
    fc.constantFrom<[string, string]>(["true", "true"], ["false", "false"], ["null", ""]),
  );
  const column = fc.oneof(
    fc.constantFrom("constructor", "__proto__", "toString", "hasOwnProperty", "0", "10", "2", "a", "b"),
    wellFormed.filter((s) => s !== "" && s !== "id"),
  );
  const space = fc.constantFrom("", " ", "\n", "\t ", "\r\n");
  const row = fc.tuple(
    fc.stringMatching(/^[a-c]{1,2}(_duplicate[1-3])?$/),
    fc.array(fc.tuple(column, cell), { maxLength: 6 }),
  );

  let run = 0;
  test("random bodies", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 8 }), space, async (rows, ws) => {
        const dv = `prop-${run++}`;
        const body = `[${rows
          .map(
            ([id, cells]) =>
              `{"id":${JSON.stringify(id)}${cells.map(([c, [json]]) => `,${ws}${JSON.stringify(c)}${ws}:${ws}${json}`).join("")}}`,
          )
          .join(`,${ws}`)}]`;
        // The expected rows: a repeated key keeps its first position and its last value.
        const expected = rows.map(([id, cells]) => {
          const map = new Map<string, string>([["id", id]]);
          for (const [c, [, text]] of cells) map.set(c, text);
          return map;
        });
        const columns = [...new Set(expected.flatMap((m) => [...m.keys()]))];
        const names = publishedNames(rows.map(([id]) => id));

        const messages = await publishedBy(() => call("PUT", path("me", "s", dv), body));
        const byRow = lastRows(messages);
        assert.deepEqual([...byRow.keys()].sort(), [...names].sort());
        expected.forEach((cells, i) => {
          const message = byRow.get(names[i] as string);
          for (const c of columns)
            assert.equal(cellOf(message, c), cells.get(c) ?? "", `row ${i} column ${c}`);
        });
        const state = await call("GET", path("me", "s", dv));
        assert.deepEqual(state.body.columns, columns);
        assert.equal((await call("DELETE", path("me", "s", dv))).status, 200);
      }),
      { numRuns: 150 },
    );
  });
});

describe("names are data: headlines named like prototype members reach the gateway's messages", () => {
  // rest-api dataviews have fixed headlines; an fkm or Streams Dataview sends its own names over
  // the link, so this drives the gateway's link end directly with such a dataview.
  test("a dataview whose headlines and columns are prototype names is published valid", async () => {
    const hand = new Publisher({
      gateway: "GW",
      sinks: [{ name: "test", publish: async () => {}, close: async () => {} }],
      logger,
    });
    const seen: PublicV2Message[] = [];
    hand.subscribe((envelope) => seen.push(envelope.message));
    const gw = buildGateway({ setup, publisher: hand, logger });
    const end = await gw.connectInProcess().connect();
    const frames: { type: string; seq?: number }[] = [];
    end.listen({ frame: (value) => frames.push(value as { type: string }), close: () => {} });
    try {
      end.send({
        type: "hello",
        version: LINK_PROTOCOL_VERSION,
        probe: "p1",
        parameters: { osType: "Linux", HostName: "h", Port: "1", OS: "Linux", Version: "0" },
        coalesced: 0,
        resumed: false,
      });
      await eventually(() => frames.some((f) => f.type === "welcome"), "the welcome");
      const special = ["constructor", "__proto__", "toString", "hasOwnProperty"];
      end.send({
        type: "state",
        seq: 1,
        last: true,
        items: [
          {
            kind: "dataview",
            dataview: { managedEntity: "me", sampler: "s", samplerType: "", dataview: "__proto__" },
            at: Date.now(),
            plugin: "rest-api",
            columns: special,
            rows: [{ name: "toString", cells: special.map((c) => `${c}!`) }],
            headlines: special.map((h) => [h, `${h}?`]),
          },
        ],
      });
      await eventually(() => frames.some((f) => f.type === "ack" && f.seq === 1), "the ack");
      assert.equal(hand.status().invalid, 0);
      const headline = seen.find((m) => m.type === "headline");
      assert.ok(headline !== undefined, "a headline message");
      assert.deepEqual(Object.keys(headline.data.row), special);
      assert.equal(Object.getOwnPropertyDescriptor(headline.data.row, "__proto__")?.value, "__proto__?");
      const table = tables(seen)[0];
      assert.deepEqual(Object.keys(table?.data.row ?? {}), special);
      assert.equal(cellOf(table, "__proto__"), "__proto__!");
    } finally {
      end.close(1000, "test done");
      await gw.stop(1000);
      await hand.close(1000);
    }
  });
});

describe("the exact reader accepts what JSON.parse accepts, and reads the same values", () => {
  const limits = { maxCellLength: 1000, nameBytes: 1024, cellBytes: 65_536, jsonDepth: 64 };
  /** A scalar as JSON.parse gives it, as the cell text the probe keeps. */
  const expectedText = (value: unknown) => (value === null ? "" : String(value));
  const mutation = fc.tuple(
    fc.nat(),
    fc.constantFrom(
      '"',
      "\\",
      ",",
      ":",
      "{",
      "}",
      "[",
      "]",
      "0",
      "-",
      ".",
      "e",
      "+",
      " ",
      "\n",
      "\u0001",
      "t",
      "n",
      "x",
      "\u00e9",
    ),
    fc.constantFrom("insert", "delete", "replace"),
  );
  const valid = fc.array(fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 0 })), {
    maxLength: 4,
  });
  const text = fc.oneof(
    fc.json({ maxDepth: 3 }),
    fc.string({ maxLength: 30 }),
    fc.tuple(valid, fc.array(mutation, { maxLength: 3 }), fc.boolean()).map(([rows, edits, one]) => {
      let t = JSON.stringify(one ? (rows[0] ?? {}) : rows, null, edits.length % 2 === 0 ? undefined : 1);
      for (const [at, char, kind] of edits) {
        const i = at % (t.length + 1);
        t =
          kind === "insert"
            ? t.slice(0, i) + char + t.slice(i)
            : t.slice(0, i) + (kind === "replace" ? char : "") + t.slice(i + 1);
      }
      return t;
    }),
  );

  /** What JSON.parse says the body is: rows of [column, JSON.parse value] or undefined when refused. */
  function reference(body: string, dataview: boolean): [string, unknown][][] | undefined {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return undefined;
    }
    const rows = dataview ? value : [value];
    if (!Array.isArray(rows)) return undefined;
    const out: [string, unknown][][] = [];
    for (const row of rows) {
      if (row === null || typeof row !== "object" || Array.isArray(row)) return undefined;
      const entries = Object.entries(row as Record<string, unknown>);
      if (entries.some(([, v]) => v !== null && typeof v === "object")) return undefined;
      out.push(entries);
    }
    return out;
  }

  for (const dataview of [true, false]) {
    test(`${dataview ? "dataview" : "row"} bodies`, () => {
      fc.assert(
        fc.property(text, (body) => {
          const expected = reference(body, dataview);
          let rows: ReadonlyMap<string, string>[] | undefined;
          try {
            const buffer = Buffer.from(body);
            rows = dataview ? parseDataviewBody(buffer, limits) : [parseRowBody(buffer, limits)];
          } catch (error) {
            assert.ok(error instanceof VigilError && error.status === 400, String(error));
            // Refused: JSON.parse refuses it too, or a name or value fails the checks.
            if (expected !== undefined) {
              assert.ok(
                error.code === "INVALID_DATAVIEW" ||
                  error.code === "INVALID_ROW" ||
                  error.code === "CELL_TOO_LONG" ||
                  error.code === "NO_BODY",
              );
              assert.doesNotMatch(error.body, /not valid JSON/);
            }
            return;
          }
          assert.ok(expected !== undefined, "accepted only what JSON.parse accepts");
          assert.equal(rows.length, expected.length);
          rows.forEach((cells, i) => {
            const want = new Map((expected[i] ?? []).map(([c, v]) => [c, v]));
            assert.deepEqual([...cells.keys()].sort(), [...want.keys()].sort());
            for (const [column, cell] of cells) {
              const value = want.get(column);
              if (typeof value === "number") assert.equal(Number(cell), value, `number ${cell}`);
              else assert.equal(cell, expectedText(value));
            }
          });
        }),
        { numRuns: 3000 },
      );
    });
  }
});

describe("bodies JSON.parse refuses are refused as not JSON", () => {
  const limits = { maxCellLength: 1000, nameBytes: 1024, cellBytes: 65_536, jsonDepth: 64 };
  const cells = [
    "01",
    "-01",
    "-",
    "1.",
    ".5",
    "1e",
    "1e+",
    "+1",
    "- 1",
    "1.5.5",
    "0x10",
    "Infinity",
    "NaN",
    "tru",
    "nul",
    "True",
    "'a'",
    '"\\x"',
    '"\\u12"',
    '"a\tb"',
    '"a\u0001b"',
    '"unterminated',
    "1 2",
  ];
  for (const cell of cells) {
    test(`a cell ${JSON.stringify(cell)}`, () => {
      assert.throws(
        () => parseDataviewBody(Buffer.from(`[{"id":"a","v":${cell}}]`), limits),
        (e: unknown) => e instanceof VigilError && /not valid JSON/.test(e.body),
      );
      assert.throws(
        () => parseRowBody(Buffer.from(`{"v":${cell}}`), limits),
        (e: unknown) => e instanceof VigilError && /not valid JSON/.test(e.body),
      );
    });
  }
  const bodies = [
    '[{"id":"a"},]',
    '[{"id":"a",}]',
    '[,{"id":"a"}]',
    '[{"id" "a"}]',
    '[{"id":"a"}] x',
    '\ufeff[{"id":"a"}]',
    '[{"id":"a"}\u00a0]',
    '[{id:"a"}]',
    "[",
    "",
  ];
  for (const body of bodies) {
    test(`a body ${JSON.stringify(body)}`, () => {
      assert.throws(
        () => parseDataviewBody(Buffer.from(body), limits),
        (e: unknown) => e instanceof VigilError && e.status === 400,
      );
    });
  }
});
