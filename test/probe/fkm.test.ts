/**
 * The fkm sampler (DESIGN 3.4): keyword rows, cumulative `messagesScanned`, the `matches` cell's
 * severity (the keyword's after a sample that matched, else OK) carried as `severities` on the
 * link, `lastMatchText` shown safely, RE2 patterns that cannot stall the probe, and live
 * reconfiguration. Time is a ManualScheduler: samples run when the test advances it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import type { FkmSampler, ProbeSetup } from "../../src/config/setup.js";
import { type Change, probeLimits, type WireRow } from "../../src/link/protocol.js";
import { FrameError, frameBounds, parseProbeFrame } from "../../src/link/validate.js";
import { buildProbe, DEFAULT_PROBE_LIMITS } from "../../src/probe/app.js";
import { FKM_COLUMNS, FkmSamplerState } from "../../src/probe/fkm/fkm-sampler.js";
import { CUT_MARK, cellText, messageText } from "../../src/probe/fkm/match-text.js";
import { ManualScheduler } from "../../src/probe/fkm/sample-scheduler.js";
import { SamplerRegistry } from "../../src/probe/sampler-registry.js";
import { ProbeStreams } from "../../src/probe/streams/probe-streams.js";
import { eventually, FakeGateway } from "../link/helpers.js";

const fkm = (keywords: FkmSampler["keywords"]): FkmSampler => ({
  name: "errors",
  type: "",
  plugin: "fkm",
  sampleInterval: 10,
  source: { sampler: "s1", stream: "log" },
  keywords,
});
const msg = (text: string | Uint8Array, at = 0) => ({
  body: typeof text === "string" ? Buffer.from(text) : Buffer.from(text),
  at,
});

/** Rows of a whole-dataview change as `name: cells | severities`. */
function rowsOf(change: Change | undefined): string[] {
  assert.ok(change?.kind === "dataview");
  return change.rows.map(
    (r: WireRow) => `${r.name}: ${JSON.stringify(r.cells)} ${JSON.stringify(r.severities)}`,
  );
}

describe("FkmSamplerState", () => {
  test("one row per keyword, named by the pattern (duplicates renamed), OK before any match", () => {
    const state = new FkmSamplerState(
      "me1",
      fkm([
        { pattern: "ERROR", severity: "CRITICAL" },
        { pattern: "WARN", severity: "WARNING" },
        { pattern: "ERROR", severity: "WARNING" },
      ]),
      0,
    );
    const [change] = state.changes();
    assert.ok(change?.kind === "dataview");
    assert.equal(change.plugin, "fkm");
    assert.deepEqual(change.columns, [...FKM_COLUMNS]);
    assert.deepEqual(change.dataview, {
      managedEntity: "me1",
      sampler: "errors",
      samplerType: "",
      dataview: "errors",
    });
    assert.deepEqual(change.headlines, [
      ["samplingStatus", "OK"],
      ["messagesScanned", "0"],
    ]);
    assert.deepEqual(rowsOf(change), [
      'ERROR: ["ERROR","CRITICAL","0"] [["matches","OK"]]',
      'WARN: ["WARN","WARNING","0"] [["matches","OK"]]',
      'ERROR_duplicate1: ["ERROR","WARNING","0"] [["matches","OK"]]',
    ]);
    assert.deepEqual(state.changes(), [], "nothing changed since");
  });

  // [what, patterns, messages, expected matches per keyword, keyword severities after the sample]
  const cases: [string, string[], string[], number[], string[]][] = [
    ["a substring anywhere", ["ERROR"], ["x ERROR y", "no", "ERROR"], [2], ["CRITICAL"]],
    ["a message counts once however often it matches", ["a"], ["aaaa"], [1], ["CRITICAL"]],
    ["no match leaves the cell OK", ["ERROR"], ["all good"], [0], ["OK"]],
    [
      "RE2 syntax: classes and anchors",
      ["^\\d{3} ", "(?i)timeout"],
      ["500 oops", "TimeOut"],
      [1, 1],
      ["CRITICAL", "CRITICAL"],
    ],
    ["case matters without (?i)", ["error"], ["ERROR"], [0], ["OK"]],
  ];
  for (const [what, patterns, messages, matches, severities] of cases) {
    test(what, () => {
      const state = new FkmSamplerState(
        "me1",
        fkm(patterns.map((pattern) => ({ pattern, severity: "CRITICAL" }))),
        0,
      );
      state.changes();
      state.sample(
        messages.map((m) => msg(m, 1_000)),
        2_000,
        100,
      );
      const view = state.view();
      assert.deepEqual(
        view.keywords.map((k) => k.matches),
        matches,
      );
      assert.deepEqual(
        view.keywords.map((k) => k.matchSeverity),
        severities,
      );
      assert.equal(view.messagesScanned, messages.length);
    });
  }

  test("changes after a sample: rows with their severity, then messagesScanned; next empty sample back to OK", () => {
    const state = new FkmSamplerState("me1", fkm([{ pattern: "ERROR", severity: "CRITICAL" }]), 0);
    state.changes();
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    state.sample([msg("boom ERROR\n", at)], at + 10, 100);
    const changes = state.changes();
    assert.deepEqual(changes, [
      {
        kind: "row",
        dataview: { managedEntity: "me1", sampler: "errors", samplerType: "", dataview: "errors" },
        at: at + 10,
        name: "ERROR",
        cells: ["ERROR", "CRITICAL", "1", "2026-01-02T03:04:05.006Z", "boom ERROR"],
        severities: [["matches", "CRITICAL"]],
      },
      {
        kind: "headlines",
        dataview: { managedEntity: "me1", sampler: "errors", samplerType: "", dataview: "errors" },
        at: at + 10,
        headlines: [
          ["samplingStatus", "OK"],
          ["messagesScanned", "1"],
        ],
      },
    ]);
    state.sample([], at + 20, 100);
    const [row, ...rest] = state.changes();
    assert.ok(row?.kind === "row");
    assert.deepEqual(row.severities, [["matches", "OK"]]);
    assert.equal(row.cells[2], "1", "matches count since start");
    assert.deepEqual(rest, [], "messagesScanned did not change");
  });

  test("a pattern that backtracks catastrophically elsewhere runs in linear time on a 10 KB message", () => {
    const state = new FkmSamplerState(
      "me1",
      fkm([
        { pattern: "(a+)+$", severity: "CRITICAL" },
        { pattern: "(x+x+)+y", severity: "WARNING" },
      ]),
      0,
    );
    const evil = `${"a".repeat(10_000)}!`;
    const xs = "x".repeat(10_000);
    state.sample([msg(evil), msg(xs), msg("a".repeat(10_000))], 1, 100);
    const view = state.view();
    // Counted, not timed: the sample returned with the right answers.
    assert.deepEqual(
      view.keywords.map((k) => k.matches),
      [1, 0],
    );
    assert.equal(view.messagesScanned, 3);
  });

  test("a pattern RE2 cannot compile (from a setup that skipped validation) never matches and says why", () => {
    const state = new FkmSamplerState("me1", fkm([{ pattern: "(?<=a)b", severity: "CRITICAL" }]), 0);
    state.sample([msg("ab")], 1, 100);
    const view = state.view();
    assert.equal(view.keywords[0]?.matches, 0);
    assert.match(view.samplingStatus, /Invalid keyword pattern/);
  });

  test("keywords changed: kept patterns keep their counters and the whole dataview is sent again", () => {
    const state = new FkmSamplerState("me1", fkm([{ pattern: "A", severity: "CRITICAL" }]), 0);
    state.changes();
    state.sample([msg("A"), msg("A")], 1, 100);
    state.changes();
    state.reconfigure(
      fkm([
        { pattern: "B", severity: "WARNING" },
        { pattern: "A", severity: "WARNING" },
      ]),
    );
    const [change] = state.changes();
    assert.ok(change?.kind === "dataview");
    assert.deepEqual(
      change.rows.map((r) => [r.name, r.cells[2]]),
      [
        ["B", "0"],
        ["A", "2"],
      ],
    );
    assert.equal(change.rows[1]?.cells[1], "WARNING");
  });
});

describe("lastMatchText", () => {
  const cases: [string, Uint8Array | string, number, string][] = [
    ["plain text, one trailing line break removed", "ERROR here\r\n", 100, "ERROR here"],
    [
      "invalid UTF-8 shown as U+FFFD",
      Uint8Array.from([0x45, 0x52, 0x52, 0xff, 0x4f, 0x52]),
      100,
      "ERR\uFFFDOR",
    ],
    ["binary with NUL bytes decoded as is", Uint8Array.from([0x00, 0x41, 0x00]), 100, "\u0000A\u0000"],
    ["long text cut to maxCellLength with an ellipsis", "x".repeat(200), 10, `${"x".repeat(9)}${CUT_MARK}`],
    ["never splits a surrogate pair", `${"x".repeat(8)}😀tail`, 10, `${"x".repeat(8)}${CUT_MARK}`],
  ];
  for (const [what, body, max, shown] of cases) {
    test(what, () => {
      const text = messageText(typeof body === "string" ? Buffer.from(body) : body);
      const cell = cellText(text, max);
      assert.equal(cell, shown);
      assert.ok(cell.length <= max);
    });
  }

  test("a 10 KB message is stored cut to the cell length", () => {
    const state = new FkmSamplerState("me1", fkm([{ pattern: "ERROR", severity: "CRITICAL" }]), 0);
    state.sample([msg(`ERROR ${"y".repeat(10_000)}`)], 1, 64);
    const text = state.view().keywords[0]?.lastMatchText ?? "";
    assert.equal(text.length, 64);
    assert.ok(text.startsWith("ERROR yy") && text.endsWith(CUT_MARK));
  });
});

describe("severities on the link are validated", () => {
  const bounds = frameBounds({ customDataviewMaxRows: 0, maxColumnsPerDataview: 8, maxCellLength: 64 }, 500);
  const address = { managedEntity: "me1", sampler: "errors", samplerType: "", dataview: "errors" };
  const rowChange = (severities: unknown) => ({
    type: "changes",
    seq: 1,
    changes: [{ kind: "row", dataview: address, at: 1, name: "ERROR", cells: ["ERROR"], severities }],
  });
  const dataviewState = (severities: unknown) => ({
    type: "state",
    seq: 1,
    last: true,
    items: [
      {
        kind: "dataview",
        dataview: address,
        at: 1,
        plugin: "fkm",
        columns: ["pattern", "matches"],
        rows: [{ name: "ERROR", cells: ["ERROR", "1"], severities }],
        headlines: [],
      },
    ],
  });
  const cases: [string, unknown, boolean][] = [
    ["a [column, severity] pair", [["matches", "CRITICAL"]], true],
    ["no pairs", [], true],
    ["an unknown severity", [["matches", "BAD"]], false],
    ["a pair of three", [["matches", "OK", "x"]], false],
    ["a column that is not a string", [[3, "OK"]], false],
    ["not an array", "OK", false],
  ];
  for (const [what, severities, ok] of cases) {
    for (const [where, frame] of [
      ["row change", rowChange(severities)],
      ["state row", dataviewState(severities)],
    ] as const) {
      test(`${where}: ${what} is ${ok ? "accepted" : "refused"}`, () => {
        if (ok) assert.doesNotThrow(() => parseProbeFrame(frame, bounds));
        else assert.throws(() => parseProbeFrame(frame, bounds), FrameError);
      });
    }
  }
});

describe("fkm in a running probe", () => {
  const YAML = `
gateway: { name: GW, maxCellLength: 80 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api, bufferSize: 50 }
          - name: errors
            plugin: fkm
            sampleInterval: 5
            source: { sampler: s1, stream: app-log }
            keywords:
              - { pattern: ERROR, severity: CRITICAL }
              - { pattern: WARN, severity: WARNING }
`;
  const setup = parseSetup(YAML);
  const gateway = new FakeGateway(setup);
  const scheduler = new ManualScheduler(Date.UTC(2026, 5, 1, 12));
  const probe = buildProbe({
    name: "p1",
    setup: setup.probes[0] as ProbeSetup,
    link: gateway.connector,
    logger: pino({ level: "silent" }),
    scheduler,
  });
  let base = "";
  before(async () => {
    base = (await probe.start()).http;
    await eventually(() => probe.linkStatus().state === "up", "the link to come up");
  });
  after(() => probe.stop(1000));

  const put = async (stream: string, body: string) => {
    const response = await fetch(`${base}/v1/managedEntity/me1/sampler/s1/stream/${stream}`, {
      method: "PUT",
      body,
    });
    assert.equal(response.status, 200);
    await response.arrayBuffer();
  };
  const fkmChanges = (name = "errors") => gateway.changes.filter((c) => c.dataview.dataview === name);
  const reload = (yaml: string) => {
    const next = parseSetup(yaml);
    probe.updateSetup(next.probes[0] as ProbeSetup, probeLimits(next.gateway));
  };
  /** The last published cells and severities of keyword row `name`. */
  const lastRow = (name: string, dataview = "errors") => {
    let found: { cells: readonly (string | number)[]; severities: unknown } | undefined;
    for (const c of fkmChanges(dataview)) {
      if (c.kind === "row" && c.name === name) found = { cells: c.cells, severities: c.severities };
      if (c.kind === "dataview") {
        const r = c.rows.find((row) => row.name === name);
        if (r !== undefined) found = { cells: r.cells, severities: r.severities };
      }
    }
    return found;
  };

  test("the probe's state carries the fkm dataview from the start", async () => {
    await eventually(() => gateway.frames.some((f) => f.type === "state" && f.last), "the whole state");
    const items = gateway.frames.flatMap((f) => (f.type === "state" ? f.items : []));
    const dataview = items.find((c) => c.kind === "dataview" && c.dataview.dataview === "errors");
    assert.ok(dataview?.kind === "dataview");
    assert.equal(dataview.plugin, "fkm");
    assert.deepEqual(
      dataview.rows.map((r) => [r.name, r.severities]),
      [
        ["ERROR", [["matches", "OK"]]],
        ["WARN", [["matches", "OK"]]],
      ],
    );
  });

  test("messages are scanned at the sample; the matches cell takes the keyword's severity, then OK again", async () => {
    const putAt = scheduler.now();
    await put("app-log", "2026-06-01 ERROR disk full\n");
    await put("app-log", "WARN slow request");
    await put("app-log", "all fine");
    assert.equal(scheduler.advance(5_000), 1);
    const error = await eventually(() => {
      const r = lastRow("ERROR");
      return r?.cells[2] === "1" ? r : undefined;
    }, "ERROR matched");
    assert.deepEqual(error.cells, [
      "ERROR",
      "CRITICAL",
      "1",
      new Date(putAt).toISOString(),
      "2026-06-01 ERROR disk full",
    ]);
    assert.deepEqual(error.severities, [["matches", "CRITICAL"]]);
    assert.deepEqual(lastRow("WARN")?.severities, [["matches", "WARNING"]]);
    const headlines = fkmChanges().filter((c) => c.kind === "headlines");
    assert.deepEqual(headlines.at(-1)?.kind === "headlines" && headlines.at(-1)?.headlines, [
      ["samplingStatus", "OK"],
      ["messagesScanned", "3"],
    ]);
    // The stream's buffer was consumed.
    const stream = await (await fetch(`${base}/v1/managedEntity/me1/sampler/s1/stream/app-log`)).json();
    assert.equal((stream as { currentBufferSize: number }).currentBufferSize, 0);

    scheduler.advance(5_000);
    await eventually(() => {
      const r = lastRow("ERROR");
      return JSON.stringify(r?.severities) === '[["matches","OK"]]' && r?.cells[2] === "1";
    }, "ERROR back to OK, count kept");
  });

  test("GET on the fkm sampler and on its dataview shows its keywords and counters (DESIGN 3.1)", async () => {
    const sampler = (await (await fetch(`${base}/v1/managedEntity/me1/sampler/errors`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(sampler.plugin, "fkm");
    assert.deepEqual(sampler.dataviews, ["errors"]);
    assert.deepEqual(sampler.source, { sampler: "s1", stream: "app-log" });
    const response = await fetch(`${base}/v1/managedEntity/me1/sampler/errors/dataview/errors`);
    assert.equal(response.status, 200);
    const dataview = (await response.json()) as {
      columns: string[];
      rows: { name: string; cells: Record<string, string> }[];
      headlines: Record<string, string>;
    };
    assert.deepEqual(dataview.columns, ["pattern", "severity", "matches", "lastMatchTime", "lastMatchText"]);
    assert.deepEqual(
      dataview.rows.map((r) => [r.name, r.cells.matches]),
      [
        ["ERROR", "1"],
        ["WARN", "1"],
      ],
    );
    assert.equal(dataview.headlines.samplingStatus, "OK");
    assert.equal(dataview.headlines.messagesScanned, "3");
    const other = await fetch(`${base}/v1/managedEntity/me1/sampler/errors/dataview/nope`);
    assert.equal(other.status, 404);
  });

  test("a slow pattern on a 10 KB message does not stall the probe (counted: the sample completes, the probe answers)", async () => {
    reload(YAML.replace("{ pattern: WARN, severity: WARNING }", '{ pattern: "(a+)+$", severity: WARNING }'));
    await put("app-log", `${"a".repeat(10_000)}!`);
    await put("app-log", "a".repeat(10_000));
    scheduler.advance(5_000);
    await eventually(() => lastRow("(a+)+$")?.cells[2] === "1", "one of two messages matched");
    const health = await fetch(`${base}/healthcheck`);
    assert.equal(health.status, 200);
    await health.arrayBuffer();
  });

  test("sampleInterval changed: the sampler samples on the new period", async () => {
    reload(YAML.replace("sampleInterval: 5", "sampleInterval: 60"));
    const before = fkmChanges().length;
    await put("app-log", "ERROR again");
    assert.equal(scheduler.advance(5_000), 0, "no sample after the old interval");
    assert.equal(scheduler.advance(55_000), 1);
    await eventually(
      () => fkmChanges().length > before && lastRow("ERROR")?.cells[2] === "2",
      "the new sample",
    );
  });

  test("an fkm sampler removed is deleted on the gateway and stops consuming; added back it starts afresh", async () => {
    const without = YAML.replace(/ {10}- name: errors[\s\S]*$/, "");
    reload(without);
    await eventually(() => fkmChanges().some((c) => c.kind === "dataviewDelete"), "the fkm dataview deleted");
    assert.equal(scheduler.size, 0, "no sample scheduled any more");
    await put("app-log", "ERROR nobody reads");
    const stream = (await (
      await fetch(`${base}/v1/managedEntity/me1/sampler/s1/stream/app-log`)
    ).json()) as Record<string, number>;
    assert.equal(stream.currentBufferSize, 0, "no consumer: purged at once");
    reload(YAML);
    const recreated = await eventually(() => {
      const last = fkmChanges().at(-1);
      return last?.kind === "dataview" ? last : undefined;
    }, "the fkm dataview created again");
    assert.deepEqual(recreated.kind === "dataview" && recreated.rows.map((r) => r.cells[2]), ["0", "0"]);
  });

  test("two fkm samplers on one stream both see every message", async () => {
    reload(
      `${YAML}          - name: audit
            plugin: fkm
            sampleInterval: 5
            source: { sampler: s1, stream: app-log }
            keywords: [{ pattern: ERROR, severity: WARNING }]
`,
    );
    await put("app-log", "ERROR shared");
    scheduler.advance(5_000);
    await eventually(() => lastRow("ERROR", "audit")?.cells[2] === "1", "audit matched");
    await eventually(() => lastRow("ERROR")?.cells[2] === "1", "errors matched");
  });
});

describe("fkm view for GET", () => {
  test("ProbeStreams.fkmView finds an fkm sampler by name or name(type)", () => {
    const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: me1
        samplers:
          - { name: s1, plugin: rest-api }
          - { name: logs, type: t, plugin: fkm, source: { sampler: s1, stream: x }, keywords: [{ pattern: E, severity: WARNING }] }
`).probes[0] as ProbeSetup;
    const streams = new ProbeStreams({
      registry: new SamplerRegistry(setup),
      setup,
      submit: () => {},
      limits: () => DEFAULT_PROBE_LIMITS,
      logger: pino({ level: "silent" }),
      scheduler: new ManualScheduler(),
    });
    for (const segment of ["logs", "logs(t)"]) {
      const view = streams.fkmView("me1", segment);
      assert.equal(view?.samplingStatus, "OK", segment);
      assert.deepEqual(view?.source, { sampler: "s1", stream: "x" });
      assert.deepEqual(
        view?.keywords.map((k) => [k.name, k.matches, k.matchSeverity]),
        [["E", 0, "OK"]],
      );
    }
    assert.equal(streams.fkmView("me1", "logs(other)"), undefined);
    assert.equal(streams.fkmView("me2", "logs"), undefined);
    streams.stop();
  });
});
