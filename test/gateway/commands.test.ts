/**
 * The gateway's command API through real HTTP (DESIGN 4.2): snooze, unsnooze, assign, unassign on
 * every level of item; every period of the seed with its `until*` fields, released by `system` over
 * a controllable clock; 404, 409 and 400 naming the field; `GET /v1/items`. Data reaches the gateway
 * through a real probe's ingest API; every published message is checked against schema/public-v2.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import type { PublicV2Message, SnoozeMessage, UserAssignmentMessage } from "../../src/messages/types.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually, FakePublisher } from "../link/helpers.js";

const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - { name: me1, samplers: [{ name: s1, plugin: rest-api }] }
rules:
  - name: warn
    target: { sampler: s1, row: "*", column: queued }
    when: { operator: ">", value: 10 }
    severity: WARNING
  - name: crit
    target: { sampler: s1, row: "*", column: queued }
    when: { operator: ">", value: 100 }
    severity: CRITICAL
`);
const T0 = Date.UTC(2026, 0, 1);
let now = T0;
const logger = pino({ level: "silent" });
const publisher = new FakePublisher();
const gateway = buildGateway({ setup, publisher, logger, clock: () => now });
let url = "";
let probeUrl = "";
const probe = buildProbe({ name: "p1", link: gateway.connectInProcess(), setup: setup.probes[0]!, logger });

before(async () => {
  url = await gateway.start(0);
  probeUrl = (await probe.start()).http;
  await eventually(() => gateway.links()[0]?.state === "up", "the link");
  await put("a", "5");
});
after(async () => {
  await probe.stop(1000);
  await gateway.stop(1000);
});

const base = { gateway: "GW", probe: "p1", managedEntity: "me1", type: "", sampler: "s1", dataview: "dv" };
const cell = (row: string) => ({ ...base, row, column: "queued" });

/** PUTs a row through the probe and waits until the gateway has published it. */
async function put(row: string, queued: string): Promise<void> {
  const from = publisher.messages.length;
  const response = await fetch(
    `${probeUrl}/v1/managedEntity/me1/sampler/s1/dataview/dv/row/${encodeURIComponent(row)}`,
    {
      method: "PUT",
      body: JSON.stringify({ name: row, queued }),
    },
  );
  if (response.status === 404) {
    // The first row creates the dataview.
    const created = await fetch(`${probeUrl}/v1/managedEntity/me1/sampler/s1/dataview/dv`, {
      method: "PUT",
      body: JSON.stringify([{ name: row, queued }]),
    });
    assert.equal(created.status, 200);
  } else assert.equal(response.status, 200, await response.text());
  await eventually(
    () =>
      publisher.messages
        .slice(from)
        .some((m) => m.type === "table" && m.data.target.row === row && m.data.row.queued === queued),
    `row ${row}=${queued} at the gateway`,
  );
}

async function command(
  name: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/v1/commands/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const eventsFor = (from: number, row: string) =>
  publisher.messages
    .slice(from)
    .filter(
      (m): m is SnoozeMessage | UserAssignmentMessage =>
        (m.type === "snooze" || m.type === "userassignment") && m.data.target.row === row,
    );

describe("commands", () => {
  test("snooze and unsnooze a cell: messages of the seed's shapes; the parent ignores a snoozed child", async () => {
    await put("s", "50");
    const from = publisher.messages.length;
    const on = await command("snooze", {
      target: cell("s"),
      user: "ann",
      comment: "known issue",
      period: "Manual",
    });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    assert.deepEqual(on.body.snoozed, {
      snoozed: true,
      snoozedBy: "ann",
      comment: "known issue",
      period: "Manual",
      at: new Date(now).toISOString(),
    });
    const [snooze] = eventsFor(from, "s");
    assert.deepEqual(snooze?.data.data, {
      snoozed: true,
      snoozedBy: "ann",
      comment: "known issue",
      period: "Manual",
    });
    assert.equal(snooze?.operation, "update");
    assert.deepEqual(snooze?.data.target, {
      ...cell("s"),
      filter: { osType: snooze?.data.target.filter?.osType ?? "", pluginName: "rest-api" },
    });
    // The dataview's only WARNING child is snoozed: it goes back to OK.
    const dataview = publisher.messages
      .slice(from)
      .find(
        (m) => m.type === "severity" && m.data.target.dataview === "dv" && m.data.target.column === undefined,
      );
    assert.equal(dataview?.type === "severity" && dataview.data.data.severity, "OK");
    assert.equal((await command("snooze", { target: cell("s"), user: "ann" })).status, 409);

    const off = await command("unsnooze", { target: cell("s"), user: "bob", comment: "fixed" });
    assert.equal(off.status, 200);
    assert.deepEqual(off.body.snoozed, { snoozed: false });
    assert.deepEqual(eventsFor(from, "s").at(-1)?.data.data, {
      snoozed: false,
      unsnoozedBy: "bob",
      comment: "fixed",
    });
    const again = await command("unsnooze", { target: cell("s"), user: "bob" });
    assert.equal(again.status, 409);
    assert.deepEqual(Object.keys(again.body).sort(), ["body", "status", "title"]);
  });

  test("assign and unassign a cell", async () => {
    await put("u", "1");
    const from = publisher.messages.length;
    const on = await command("assign", {
      target: cell("u"),
      user: "ann",
      assignedTo: "carl",
      comment: "look",
    });
    assert.equal(on.status, 200);
    assert.deepEqual(eventsFor(from, "u")[0]?.data.data, {
      userAssigned: true,
      assignedTo: "carl",
      assignedBy: "ann",
      comment: "look",
      period: "Manual",
    });
    assert.equal(
      (await command("assign", { target: cell("u"), user: "ann", assignedTo: "dora" })).status,
      409,
    );
    assert.equal((await command("unassign", { target: cell("u"), user: "carl" })).status, 200);
    assert.deepEqual(eventsFor(from, "u").at(-1)?.data.data, { userAssigned: false, unassignedBy: "carl" });
    assert.equal((await command("unassign", { target: cell("u"), user: "carl" })).status, 409);
  });

  // [command, period and until fields, starting value, what happens, released?, the release comment]
  type Step = { put?: string; advanceMs?: number };
  const periods: [string, Record<string, unknown>, string, Step, boolean, string?][] = [
    ["snooze", { period: "Manual" }, "50", { put: "500" }, false],
    [
      "snooze",
      { period: "SeverityTo", untilSeverity: "CRITICAL" },
      "50",
      { put: "500" },
      true,
      "severity reached CRITICAL",
    ],
    ["snooze", { period: "SeverityTo", untilSeverity: "CRITICAL" }, "50", { put: "5" }, false],
    ["snooze", { period: "SeverityFrom" }, "50", { put: "5" }, true, "severity left WARNING"],
    ["snooze", { period: "SeverityFrom", untilSeverityNot: "WARNING" }, "50", { put: "60" }, false],
    ["snooze", { period: "Time", untilTime: "+60" }, "50", { advanceMs: 61_000 }, true, "time passed"],
    ["snooze", { period: "DateTime", untilTime: "+60" }, "50", { advanceMs: 59_000 }, false],
    ["snooze", { period: "ValueChanges" }, "50", { put: "51" }, true, "value changed"],
    ["snooze", { period: "ValueChanges", untilValueNot: "50" }, "50", { put: "50" }, false],
    [
      "snooze",
      { period: "SeverityToOrTime", untilSeverity: "OK", untilTime: "+60" },
      "50",
      { put: "1" },
      true,
      "severity reached OK",
    ],
    [
      "snooze",
      { period: "SeverityToOrTime", untilSeverity: "OK", untilTime: "+60" },
      "50",
      { advanceMs: 60_000 },
      true,
      "time passed",
    ],
    [
      "snooze",
      { period: "Until", untilValueNot: "50", untilSeverity: "CRITICAL" },
      "50",
      { put: "500" },
      true,
      "value changed",
    ],
    ["snooze", { period: "Unknown" }, "50", { put: "500" }, false],
    ["assign", { period: "Manual" }, "50", { put: "5" }, false],
    ["assign", { period: "SeverityToOK" }, "50", { put: "5" }, true, "severity reached OK"],
    [
      "assign",
      { period: "SeverityTo", untilSeverity: "CRITICAL" },
      "50",
      { put: "101" },
      true,
      "severity reached CRITICAL",
    ],
    ["assign", { period: "SeverityFrom" }, "500", { put: "50" }, true, "severity left CRITICAL"],
    ["assign", { period: "Time", untilTime: "+1" }, "50", { advanceMs: 1_000 }, true, "time passed"],
    [
      "assign",
      { period: "SeverityToOrTime", untilSeverity: "OK", untilTime: "+60" },
      "50",
      { advanceMs: 60_001 },
      true,
      "time passed",
    ],
    ["assign", { period: "ValueChanges" }, "x", { put: "y" }, true, "value changed"],
    [
      "assign",
      { period: "Until", untilSeverityNot: "WARNING" },
      "50",
      { put: "500" },
      true,
      "severity left WARNING",
    ],
  ];
  periods.forEach(([name, fields, start, step, released, reason], i) => {
    const what = step.put !== undefined ? `value → ${step.put}` : `${(step.advanceMs ?? 0) / 1000} s pass`;
    test(`${name} ${JSON.stringify(fields)} at ${start}, ${what}: ${released ? `released (${reason})` : "kept"}`, async () => {
      const row = `period-${i}`;
      await put(row, start);
      const body: Record<string, unknown> = { target: cell(row), user: "ann", ...fields };
      if (typeof fields.untilTime === "string")
        body.untilTime = new Date(now + Number(fields.untilTime) * 1000).toISOString();
      if (name === "assign") body.assignedTo = "carl";
      const from = publisher.messages.length;
      const answer = await command(name, body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const on = eventsFor(from, row)[0];
      assert.equal(on?.data.data && "period" in on.data.data && on.data.data.period, fields.period);
      if (step.put !== undefined) await put(row, step.put);
      if (step.advanceMs !== undefined) {
        now += step.advanceMs;
        await gateway.tick();
      }
      const last = eventsFor(from, row).at(-1)?.data.data as unknown as Record<string, unknown>;
      if (released) {
        assert.deepEqual(
          last,
          name === "snooze"
            ? { snoozed: false, unsnoozedBy: "system", comment: reason }
            : { userAssigned: false, unassignedBy: "system", comment: reason },
        );
      } else {
        assert.equal(eventsFor(from, row).length, 1, "no release");
        // Released by hand so the next cases start clean.
        assert.equal(
          (await command(name === "snooze" ? "unsnooze" : "unassign", { target: cell(row), user: "ann" }))
            .status,
          200,
        );
      }
    });
  });

  test("a snooze outlives its item for a while: the row deleted, unsnooze still works", async () => {
    await put("gone", "500");
    assert.equal((await command("snooze", { target: cell("gone"), user: "ann" })).status, 200);
    const from = publisher.messages.length;
    const deleted = await fetch(`${probeUrl}/v1/managedEntity/me1/sampler/s1/dataview/dv/row/gone`, {
      method: "DELETE",
    });
    assert.equal(deleted.status, 200);
    await eventually(
      () => publisher.messages.slice(from).some((m) => m.type === "table" && m.operation === "delete"),
      "the row's delete",
    );
    assert.equal((await command("snooze", { target: cell("gone"), user: "ann" })).status, 404);
    const off = await command("unsnooze", { target: cell("gone"), user: "ann" });
    assert.equal(off.status, 200);
    assert.deepEqual(off.body.snoozed, { snoozed: false });
    assert.equal((await command("unsnooze", { target: cell("gone"), user: "ann" })).status, 404);
  });

  test("every level of item can be snoozed; a cell counts its snoozed parents", async () => {
    await put("lv", "500");
    const levels = [
      { gateway: "GW" },
      { gateway: "GW", probe: "p1" },
      { gateway: "GW", probe: "p1", managedEntity: "me1" },
      { gateway: "GW", probe: "p1", managedEntity: "me1", type: "", sampler: "s1" },
      base,
      { ...base, column: "totalRows" },
      cell("lv"),
    ];
    for (const target of levels) {
      const answer = await command("snooze", { target, user: "ann" });
      assert.equal(answer.status, 200, `${JSON.stringify(target)}: ${JSON.stringify(answer.body)}`);
    }
    const items = await fetch(
      `${url}/v1/items?probe=p1&managedEntity=me1&type=&sampler=s1&dataview=dv&row=lv&column=queued`,
    );
    assert.equal(items.status, 200);
    const view = (await items.json()) as {
      item: { snoozedParents: number; severity: string; value: string };
    };
    assert.equal(view.item.snoozedParents, 5);
    assert.equal(view.item.severity, "CRITICAL");
    assert.equal(view.item.value, "500");
    for (const target of levels)
      assert.equal((await command("unsnooze", { target, user: "ann" })).status, 200);
  });

  test("GET /v1/items: the item and its children", async () => {
    const response = await fetch(`${url}/v1/items?probe=p1&managedEntity=me1&type=&sampler=s1&dataview=dv`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as {
      item: { target: Record<string, string>; severity: string };
      children: { target: Record<string, string> }[];
    };
    assert.equal(body.item.target.dataview, "dv");
    const names = body.children.map((c) => `${c.target.row ?? ""}/${c.target.column}`);
    assert.ok(
      names.includes("/totalRows") && names.includes("a/queued") && names.includes("a/name"),
      names.join(" "),
    );
    const top = (await (await fetch(`${url}/v1/items`)).json()) as {
      item: { target: unknown };
      children: { target: unknown }[];
    };
    assert.deepEqual(top.item.target, { gateway: "GW" });
    assert.deepEqual(
      top.children.map((c) => c.target),
      [{ gateway: "GW", probe: "p1" }],
    );
    assert.equal((await fetch(`${url}/v1/items?probe=nope`)).status, 404);
    assert.equal((await fetch(`${url}/v1/items?__proto__=x`)).status, 400);
    assert.equal((await fetch(`${url}/v1/items?probe=p1&probe=p2`)).status, 400);
    const bad = await fetch(`${url}/v1/items?sampler=s1`);
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { body: string }).body, /^managedEntity: is required with sampler/);
  });

  const errors: [string, string, unknown, number, RegExp][] = [
    ["unknown row", "snooze", { target: cell("nope"), user: "ann" }, 404, /no such item/],
    [
      "unknown probe",
      "assign",
      { target: { gateway: "GW", probe: "zz" }, user: "a", assignedTo: "b" },
      404,
      /no such item/,
    ],
    ["another gateway", "snooze", { target: { gateway: "GW2" }, user: "a" }, 404, /this gateway is 'GW'/],
    [
      "another gateway (unsnooze)",
      "unsnooze",
      { target: { gateway: "GW2" }, user: "a" },
      404,
      /this gateway is 'GW'/,
    ],
    [
      "a name that is a prototype key",
      "snooze",
      { target: { gateway: "GW", probe: "__proto__" }, user: "a" },
      404,
      /no such item/,
    ],
    [
      "unknown column",
      "snooze",
      { target: { ...base, row: "a", column: "zz" }, user: "a" },
      404,
      /no such item/,
    ],
    [
      "ValueChanges on a dataview",
      "snooze",
      { target: base, user: "a", period: "ValueChanges" },
      409,
      /cells and headlines only/,
    ],
    [
      "untilTime in the past",
      "snooze",
      { target: cell("a"), user: "a", period: "Time", untilTime: "2000-01-01T00:00:00Z" },
      409,
      /already passed/,
    ],
    ["no body", "snooze", null, 400, /^body: must be a JSON object/],
    ["no target", "snooze", { user: "a" }, 400, /^target: must be a JSON object/],
    ["no user", "snooze", { target: cell("a") }, 400, /^user: is required/],
    ["empty user", "snooze", { target: cell("a"), user: "" }, 400, /^user: must not be empty/],
    [
      "sampler without type",
      "snooze",
      { target: { gateway: "GW", probe: "p1", managedEntity: "me1", sampler: "s1" }, user: "a" },
      400,
      /^target\.type: is required with target\.sampler/,
    ],
    [
      "row without column",
      "snooze",
      { target: { ...base, row: "a" }, user: "a" },
      400,
      /^target\.column: is required with target\.row/,
    ],
    [
      "a number as a name",
      "snooze",
      { target: { gateway: "GW", probe: 1 }, user: "a" },
      400,
      /^target\.probe: must be a string/,
    ],
    [
      "unknown target field",
      "snooze",
      { target: { gateway: "GW", host: "x" }, user: "a" },
      400,
      /^target\.host: unknown field/,
    ],
    ["unknown field", "snooze", { target: cell("a"), user: "a", until: "x" }, 400, /^until: unknown field/],
    [
      "unknown period",
      "snooze",
      { target: cell("a"), user: "a", period: "Forever" },
      400,
      /^period: must be one of Manual/,
    ],
    [
      "an assignment period on snooze",
      "snooze",
      { target: cell("a"), user: "a", period: "SeverityToOK" },
      400,
      /^period:/,
    ],
    [
      "a snooze period on assign",
      "assign",
      { target: cell("a"), user: "a", assignedTo: "b", period: "DateTime" },
      400,
      /^period:/,
    ],
    [
      "SeverityTo without untilSeverity",
      "snooze",
      { target: cell("a"), user: "a", period: "SeverityTo" },
      400,
      /^untilSeverity: is required with period SeverityTo/,
    ],
    [
      "untilTime with Manual",
      "snooze",
      { target: cell("a"), user: "a", untilTime: "2030-01-01T00:00:00Z" },
      400,
      /^untilTime: is not used with period Manual/,
    ],
    [
      "a bad untilTime",
      "snooze",
      { target: cell("a"), user: "a", period: "Time", untilTime: "tomorrow" },
      400,
      /^untilTime: must be an RFC 3339/,
    ],
    [
      "a bad severity",
      "snooze",
      { target: cell("a"), user: "a", period: "SeverityTo", untilSeverity: "RED" },
      400,
      /^untilSeverity: must be one of/,
    ],
    [
      "SeverityToOK with another severity",
      "assign",
      { target: cell("a"), user: "a", assignedTo: "b", period: "SeverityToOK", untilSeverity: "WARNING" },
      400,
      /^untilSeverity: is OK/,
    ],
    [
      "assign without assignedTo",
      "assign",
      { target: cell("a"), user: "a" },
      400,
      /^assignedTo: is required/,
    ],
    [
      "unsnooze with a period",
      "unsnooze",
      { target: cell("a"), user: "a", period: "Manual" },
      400,
      /^period: unknown field/,
    ],
  ];
  for (const [name, path, body, status, detail] of errors) {
    test(`${path}: ${name} → ${status}`, async () => {
      const answer = await command(path, body);
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.deepEqual(Object.keys(answer.body).sort(), ["body", "status", "title"]);
      assert.equal(answer.body.status, status);
      assert.match(String(answer.body.body), detail);
    });
  }

  test("a wrong method is 405 with Allow", async () => {
    const response = await fetch(`${url}/v1/commands/snooze`);
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "POST");
  });

  test("a setup reload with new rules evaluates the cells again at once", () => {
    const from = publisher.messages.length;
    const stricter = parseSetup(
      `
gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - { name: me1, samplers: [{ name: s1, plugin: rest-api }] }
rules:
  - name: warn
    target: { sampler: s1, row: "*", column: queued }
    when: { operator: ">", value: 1 }
    severity: WARNING
`,
    );
    gateway.updateSetup(stricter);
    const cellA = publisher.messages
      .slice(from)
      .find((m) => m.type === "severity" && m.data.target.row === "a" && m.data.target.column === "queued");
    assert.equal(
      cellA?.type === "severity" && `${cellA.data.data.severity}<${cellA.data.data.previousSeverity}`,
      "WARNING<OK",
    );
  });

  test("every message published so far is valid public-v2 (the fake publisher checks each)", () => {
    const types = new Set(publisher.messages.map((m: PublicV2Message) => m.type));
    for (const type of ["severity", "snooze", "userassignment"]) assert.ok(types.has(type as never), type);
  });
});

describe("commands with security enabled", () => {
  test("the command API and /v1/items need a hub token (401 otherwise)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "vigil-commands-sub-"));
    const published = new FakePublisher();
    const secured = buildGateway({
      setup,
      publisher: published,
      logger,
      dataDir,
      verifyToken: async (token) => {
        if (token !== "good") throw new Error("bad token");
        return { sub: "ops", roles: ["read", "operate"], expiresAt: Date.now() + 60_000 };
      },
    });
    const base = await secured.start(0);
    try {
      const post = (token?: string) =>
        fetch(`${base}/v1/commands/snooze`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          },
          body: JSON.stringify({ target: { gateway: "GW" }, user: "ann" }),
        });
      assert.equal((await post()).status, 401);
      assert.equal((await post("bad")).status, 401);
      const snoozed = await post("good");
      assert.equal(snoozed.status, 200);
      // The token's subject is kept beside the body's user: in the answer and the state file,
      // not in the published message.
      const view = (await snoozed.json()) as { snoozed: { snoozedBy: string; snoozedBySubject: string } };
      assert.deepEqual([view.snoozed.snoozedBy, view.snoozed.snoozedBySubject], ["ann", "ops"]);
      const kept = JSON.parse(readFileSync(join(dataDir, "gateway-state.json"), "utf8")) as {
        snoozes: { state: { snoozedBySubject?: string } }[];
      };
      assert.equal(kept.snoozes[0]?.state.snoozedBySubject, "ops");
      const message = published.messages.find((m: PublicV2Message) => m.type === "snooze");
      assert.ok(message !== undefined);
      assert.doesNotMatch(JSON.stringify(message), /Subject|"ops"/);
      assert.equal((await fetch(`${base}/v1/items`)).status, 401);
      assert.equal(
        (await fetch(`${base}/v1/items`, { headers: { authorization: "Bearer good" } })).status,
        200,
      );
    } finally {
      await secured.stop(1000);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
