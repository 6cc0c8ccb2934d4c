/**
 * Hostile input to the probe's and the gateway's HTTP APIs through real sockets, on a time budget
 * (test/helpers/fuzz-budget.ts), in the `vigil up` composition (startSystem: probe,
 * gateway and hub in one process, DESIGN 1).
 *
 * Probe: random methods, raw paths (odd segments, malformed percent-escapes, dot segments) on the
 * dataview, row, stream and sampler endpoints, random `Column-Order` and content types, random
 * bodies. Gateway: the command API (`POST /v1/commands/*`, `GET /v1/items`) given mutated and garbage
 * bodies and query strings.
 *
 * Invariant: never a 5xx, a 4xx with exactly `{status, title, body}`; a refused request changes
 * nothing (the probe's sampler and dataview as GET shows them; the gateway's view of the commanded
 * cell). test/probe/ingest-fuzz.test.ts fuzzes the probe's ingest in-process (inject); this file
 * adds the socket, raw paths, streams, headers, the unchanged-state check and the gateway.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";
import { eventually, tempDir } from "../helpers/vigil-process.js";
import { closeAgent, type Sent, send, sendHostile } from "./fuzz-http.js";

const setup = parseSetup(`
gateway:
  name: GW
  port: 0
  publish: [memory]
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities:
      - name: me
        samplers:
          - { name: s, plugin: rest-api, rowLimit: 5 }
          - { name: s, type: t, plugin: rest-api }
          - { name: other, plugin: rest-api }
      # The gateway command fuzz's item: no probe fuzz request names it, so only commands change it.
      - name: commanded
        samplers: [{ name: cmd, plugin: rest-api }]
hub:
  port: 0
  security: { enabled: false }
`);

const DATAVIEW = "/v1/managedEntity/me/sampler/other/dataview/dv";
const dir = tempDir("fuzz-system");
let system: RunningService;
let probe = "";
let gateway = "";

async function read(baseUrl: string, path: string): Promise<string> {
  const answer = await send(baseUrl, { method: "GET", path });
  assert.equal(answer.status, 200, `GET ${path} → ${answer.status} ${answer.text}`);
  return answer.text;
}

before(async () => {
  system = await startSystem({
    setup,
    dataDir: dir.path,
    demo: false,
    host: "127.0.0.1",
    logger: pino({ level: "silent" }),
  });
  probe = system.urls["probe:p1"] as string;
  gateway = system.urls.gateway as string;
  const seeded = await send(probe, {
    method: "PUT",
    path: DATAVIEW,
    headers: { "content-type": "application/json" },
    body: JSON.stringify([
      { name: "r1", v: 1, w: "x" },
      { name: "r2", v: "2.5" },
    ]),
  });
  assert.equal(seeded.status, 200, seeded.text);
  const commanded = await send(probe, {
    method: "PUT",
    path: "/v1/managedEntity/commanded/sampler/cmd/dataview/dv",
    headers: { "content-type": "application/json" },
    body: JSON.stringify([{ name: "r1", v: 1 }]),
  });
  assert.equal(commanded.status, 200, commanded.text);
  // The gateway knows the cell the command fuzz targets once the probe's change reached it.
  await eventually(async () => {
    const answer = await send(gateway, { method: "GET", path: ITEMS_PATH });
    return answer.status === 200 ? true : undefined;
  });
});
after(async () => {
  closeAgent();
  await system?.stop(5_000);
  dir.remove();
});

/** The probe's state as its GET endpoints show it: unchanged by every refused request. */
async function probeState(): Promise<string> {
  const parts = await Promise.all(
    [
      "/v1/managedEntity/me/sampler/s()",
      "/v1/managedEntity/me/sampler/s(t)",
      "/v1/managedEntity/me/sampler/other",
      DATAVIEW,
    ].map(async (path) => {
      // The fuzz may have deleted the dataview (a 200): its 404 is then part of the state.
      const answer = await send(probe, { method: "GET", path });
      return `${answer.status} ${answer.text}`;
    }),
  );
  return parts.join("\n");
}

const word = fc.oneof(
  fc.constantFrom("me", "s", "s()", "s(t)", "s(", "other", "dv", "r1", "Streams%20Dataview", "app-log", "x"),
  fc.string({ unit: "binary", maxLength: 10 }).map(encodeURIComponent),
  fc.constantFrom("", ".", "..", "%", "%zz", "%E0%A4", "%00", "%2F", "%25", "a%20b", "(", ")", ";", "~", "*"),
);

/** A raw path: one of the probe's route shapes with any segment anything, or an unknown path. */
const probePath = fc.oneof(
  fc
    .tuple(word, word, word, fc.constantFrom("dataview", "stream"))
    .map(([me, sampler, name, kind]) => `/v1/managedEntity/${me}/sampler/${sampler}/${kind}/${name}`),
  fc
    .tuple(word, word, word, word)
    .map(([me, sampler, dv, row]) => `/v1/managedEntity/${me}/sampler/${sampler}/dataview/${dv}/row/${row}`),
  fc.tuple(word, word).map(([me, sampler]) => `/v1/managedEntity/${me}/sampler/${sampler}`),
  fc.tuple(word, word).map(([a, b]) => `/v1/managedEntity/me/sampler/other/dataview/dv/${a}/${b}`),
  fc.array(word, { maxLength: 8 }).map((segments) => `/${segments.join("/")}`),
  fc.constantFrom(
    "/v1/healthcheck",
    "/healthcheck",
    "/metrics",
    "//",
    "/v1//managedEntity",
    `${DATAVIEW}?x=%`,
  ),
);

const probeBody = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc
    .array(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })), { maxLength: 8 })
    .map((rows) => JSON.stringify(rows)),
  fc
    .array(
      fc.record({
        name: fc.oneof(fc.constantFrom("r1", "r2", "r3", ""), fc.string({ maxLength: 4 })),
        v: fc.jsonValue(),
      }),
      { maxLength: 8 },
    )
    .map((rows) => JSON.stringify(rows)),
  fc.constantFrom("[]", "{}", "null", "[null]", '[{"name":"r1","name":"r2"}]', "\uFEFF[]", "[".repeat(3_000)),
);

/** Header values the HTTP client can send (visible ASCII). */
const asciiHeader = fc
  .array(fc.integer({ min: 0x20, max: 0x7e }), { maxLength: 40 })
  .map((codes) => String.fromCharCode(...codes));

describe("probe HTTP API under hostile input", () => {
  test("random methods, raw paths, headers and bodies: 2xx or a 4xx, and a refusal changes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("PUT", "PUT", "GET", "DELETE", "POST", "PATCH", "OPTIONS"),
        probePath,
        fc.option(probeBody, { nil: undefined }),
        fc.constantFrom(
          "application/json",
          "text/plain",
          "",
          "application/octet-stream",
          "weird",
          "application/json; charset=latin1",
        ),
        fc.option(fc.oneof(asciiHeader, fc.constantFrom("v,w", "w", ",", "v,v", "name")), { nil: undefined }),
        async (method, path, body, contentType, columnOrder) => {
          const before = await probeState();
          const sent: Sent = {
            method,
            path,
            headers: {
              ...(contentType === "" ? {} : { "content-type": contentType }),
              ...(columnOrder === undefined ? {} : { "column-order": columnOrder }),
            },
            ...(body === undefined ? {} : { body }),
          };
          const answer = await sendHostile(probe, sent);
          if (answer.status >= 400)
            assert.equal(await probeState(), before, `${method} ${path} changed the probe`);
        },
      ),
      fuzzBudget(300),
    );
  });

  test("row endpoints of an existing dataview: random row names and bodies", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("PUT", "GET", "DELETE"),
        word,
        fc.option(probeBody, { nil: undefined }),
        async (method, row, body) => {
          const before = await probeState();
          const sent: Sent = {
            method,
            path: `${DATAVIEW}/row/${row}`,
            headers: { "content-type": "application/json" },
            ...(body === undefined ? {} : { body }),
          };
          const answer = await sendHostile(probe, sent);
          if (answer.status >= 400)
            assert.equal(await probeState(), before, `${method} row ${row} changed the probe`);
        },
      ),
      fuzzBudget(300),
    );
  });
});

const ITEMS_PATH = "/v1/items?probe=p1&managedEntity=commanded&type=&sampler=cmd&dataview=dv&row=r1&column=v";
const target = {
  gateway: "GW",
  probe: "p1",
  managedEntity: "commanded",
  type: "",
  sampler: "cmd",
  dataview: "dv",
  row: "r1",
  column: "v",
};
const COMMANDS: Record<string, Record<string, unknown>> = {
  snooze: { target, user: "ann", comment: "c", period: "Manual" },
  unsnooze: { target, user: "ann", comment: "c" },
  assign: { target, user: "ann", assignedTo: "bob", comment: "c", period: "Manual" },
  unassign: { target, user: "bob" },
};

/** A command body with one field (or one target field) replaced by anything, or removed. */
const commandBody = fc
  .tuple(
    fc.constantFrom(...Object.keys(COMMANDS)),
    fc.constantFrom(
      "user",
      "comment",
      "period",
      "assignedTo",
      "untilTime",
      "untilSeverity",
      "target",
      ...Object.keys(target).map((k) => `target.${k}`),
    ),
    fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom("__proto__", "", "x".repeat(10_000), "2026-13-01T00:00:00Z"),
    ),
    fc.boolean(),
  )
  .map(([name, field, value, remove]) => {
    const body = structuredClone(COMMANDS[name]) as Record<string, unknown>;
    const [head, tail] = field.split(".") as [string, string | undefined];
    const node = tail === undefined ? body : (body.target as Record<string, unknown>);
    const key = tail ?? head;
    if (remove) delete node[key];
    else Object.defineProperty(node, key, { value, enumerable: true, writable: true });
    return { name, body: JSON.stringify(body) };
  });

describe("gateway command API under hostile input", () => {
  test("mutated commands and garbage bodies: 200 or a 4xx; a refused command changes no item", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          commandBody,
          fc
            .tuple(fc.constantFrom(...Object.keys(COMMANDS)), fc.string({ unit: "binary", maxLength: 80 }))
            .map(([name, body]) => ({ name, body })),
          fc
            .tuple(fc.constantFrom(...Object.keys(COMMANDS)), fc.jsonValue({ maxDepth: 3 }))
            .map(([name, v]) => ({ name, body: JSON.stringify(v) })),
        ),
        fc.constantFrom("application/json", "text/plain", ""),
        async ({ name, body }, contentType) => {
          const before = await read(gateway, ITEMS_PATH);
          const sent: Sent = {
            method: "POST",
            path: `/v1/commands/${name}`,
            headers: contentType === "" ? {} : { "content-type": contentType },
            body,
          };
          const answer = await sendHostile(gateway, sent);
          if (answer.status >= 400)
            assert.equal(await read(gateway, ITEMS_PATH), before, `${name} changed the item`);
        },
      ),
      fuzzBudget(300),
    );
  });

  test("GET /v1/items with random query strings answers 200 or a 4xx", async () => {
    const key = fc.constantFrom(
      "gateway",
      "probe",
      "managedEntity",
      "type",
      "sampler",
      "dataview",
      "row",
      "column",
      "__proto__",
      "constructor",
      "",
    );
    const value = fc.oneof(
      fc.string({ unit: "binary", maxLength: 10 }).map(encodeURIComponent),
      fc.constantFrom("p1", "me", "other", "dv", "r1", "v", "", "%", "%zz", "GW"),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(key, value), { maxLength: 8 }), async (pairs) => {
        await sendHostile(gateway, {
          method: "GET",
          path: `/v1/items?${pairs.map(([k, v]) => `${k}=${v}`).join("&")}`,
        });
      }),
      fuzzBudget(300),
    );
  });
});
