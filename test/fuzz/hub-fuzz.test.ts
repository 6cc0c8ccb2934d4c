/**
 * Hostile input to the hub's HTTP API through a real socket, on a time budget
 * (test/helpers/fuzz-budget.ts): public-v2 backfill (`POST /v0/messages`), metric queries, event
 * record queries, entity filters and every GET listing's query string. The hub is a real one
 * (buildHub listening on port 0) holding seeded data, once on a DuckDB file in a temporary data dir
 * and once on a throwaway PostgreSQL database (skipped, saying why, when PostgreSQL is not reachable).
 *
 * Invariant of every request: an answer below 500, a 4xx with exactly `{status, title, body}`; a
 * request the hub rejects leaves the store as it was (entities, stored-message count, a metric
 * query and an event query over the seeded data answer the same before and after).
 *
 * test/hub/query-fuzz.test.ts fuzzes the query bodies in-process (inject); this file adds the
 * socket, backfill, events, listings and the unchanged-store check rather than repeating it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, test } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import { createPostgresStore } from "../../src/hub/store/postgres/postgres-store.js";
import type { Store } from "../../src/hub/store/store.js";
import { validateMessage } from "../../src/messages/validate.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";
import { needs } from "../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../helpers/postgres.js";
import { type Answer, closeAgent, type Sent, send, sendHostile } from "./fuzz-http.js";

/**
 * Runs of the properties below that have not finished. fast-check's time limit abandons a run that
 * is still going (its outcome is ignored, its code goes on): a backfill run left so could post and
 * commit during the next test, between that test's two snapshots. Each test waits for them.
 */
const inFlight = new Set<Promise<unknown>>();
/** `predicate`, with each of its runs counted in {@link inFlight} until it settles. */
function tracked<A extends unknown[]>(
  predicate: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return (...args) => {
    const run = predicate(...args);
    inFlight.add(run);
    void run.then(
      () => inFlight.delete(run),
      () => inFlight.delete(run),
    );
    return run;
  };
}
/** Waits for the abandoned runs (see {@link inFlight}). */
const settleInFlight = async (): Promise<void> => {
  await Promise.allSettled([...inFlight]);
};

const setup = parseSetup("gateway: { name: GW }\nhub: { security: { enabled: false } }\n");
const dataDir = mkdtempSync(join(tmpdir(), "vigil-hub-fuzz-"));
// The hub under test and its base URL: one backend at a time (the describes below run in turn).
let hub: Hub | undefined;
let base = "";

const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const FROM = iso(-86_400_000);
const TO = iso(2 * 86_400_000);
const filter = { osType: "Linux", pluginName: "rest-api" };
const entityTarget = { gateway: "GW", probe: "p", managedEntity: "me0" };
const tableTarget = { ...entityTarget, type: "", sampler: "s", dataview: "d", row: "r0", filter };

/** One valid message of each of the seven public-v2 types (DESIGN 4.3), the mutation seeds. */
const SEEDS: readonly Record<string, unknown>[] = [
  {
    type: "probe",
    operation: "create",
    data: { timestamp: iso(0), target: { gateway: "GW", probe: "p" }, parameters: { osType: "Linux" } },
  },
  {
    type: "managedEntity",
    operation: "create",
    data: { timestamp: iso(0), target: entityTarget, attributes: { Region: "emea" } },
  },
  {
    type: "headline",
    operation: "update",
    data: {
      sampleTime: iso(0),
      target: { ...entityTarget, type: "", sampler: "s", dataview: "d", filter },
      row: { samplingStatus: "OK", total: "3" },
    },
  },
  {
    type: "table",
    operation: "update",
    data: { sampleTime: iso(0), target: tableTarget, row: { v: "1.5" } },
  },
  {
    type: "severity",
    operation: "update",
    data: {
      timestamp: iso(0),
      target: { ...tableTarget, column: "v" },
      data: { severity: "WARNING", active: true, snoozed: false, snoozedParents: 0, userAssigned: false },
    },
  },
  {
    type: "snooze",
    operation: "update",
    data: {
      timestamp: iso(0),
      target: entityTarget,
      data: { snoozed: true, snoozedBy: "ops", comment: "maintenance", period: "Manual" },
    },
  },
  {
    type: "userassignment",
    operation: "update",
    data: {
      timestamp: iso(0),
      target: entityTarget,
      data: { userAssigned: true, assignedTo: "ann", assignedBy: "bob", comment: "", period: "Manual" },
    },
  },
];

const VALID_METRIC_QUERY = {
  zoneId: "UTC",
  filter: { entities: "svc.name EXISTS", range: { from: FROM, to: TO } },
  metrics: [{ identifier: "v", include: ["s/d/{rowname}/v"] }],
  aggregations: ["svc.avg", "svc.count"],
  bucketing: { duration: "P1D" },
};
const VALID_RECORDS_QUERY = { filter: { entities: "", range: { from: FROM, to: TO } } };

const postJson = (path: string, body: unknown): Sent => ({
  method: "POST",
  path,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

/** What the store holds, read through the API: equal snapshots mean the store did not change. */
async function snapshot(): Promise<string> {
  const read = async (sent: Sent): Promise<string> => {
    const answer = await send(base, sent);
    assert.equal(answer.status, 200, `${sent.method} ${sent.path} → ${answer.status} ${answer.text}`);
    return answer.text;
  };
  const status = JSON.parse(await read({ method: "GET", path: "/v1/status" })) as {
    ingest: { stored: number };
    deadLettered: number;
  };
  return JSON.stringify({
    stored: status.ingest.stored,
    deadLettered: status.deadLettered,
    entities: await read({ method: "GET", path: "/v0/entities?includeDeleted=true" }),
    metrics: await read(postJson("/v0/metrics/query", VALID_METRIC_QUERY)),
    events: await read(postJson("/v0/events/recordsQuery", VALID_RECORDS_QUERY)),
  });
}

/** Starts a hub on `store`, listening on a port of its own, and backfills the seeds. */
async function startHub(store: Store): Promise<void> {
  hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  base = await hub.start(0, "127.0.0.1");
  for (const seed of SEEDS) assert.equal(validateMessage(seed).ok, true, JSON.stringify(seed));
  const rows = Array.from({ length: 12 }, (_, i) => ({
    ...SEEDS[3],
    data: {
      sampleTime: iso(i * 600_000),
      target: { ...tableTarget, managedEntity: `me${i % 3}`, row: `r${i % 4}` },
      row: { v: String(i) },
    },
  }));
  const answer = await send(base, postJson("/v0/messages", [...SEEDS, ...rows]));
  assert.equal(answer.status, 200, answer.text);
  assert.deepEqual((JSON.parse(answer.text) as { rejected: unknown[] }).rejected, []);
}

/** Values that break parsers: wrong types, huge and odd numbers, prototype keys, deep nesting. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    null,
    "",
    "__proto__",
    1e308,
    -0,
    Number.MAX_SAFE_INTEGER + 2,
    "9999-12-31T23:59:59Z",
    "0000-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:00+99:99",
    "\u0000",
    "\uD800",
    "😀".repeat(50),
    "x".repeat(10_000),
  ),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {}}}') as unknown),
  fc.integer({ min: 1, max: 2_000 }).map((depth) => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`)),
);

/** Every path to a leaf or an inner node of a JSON value, as key lists. */
function pathsOf(value: unknown, prefix: string[] = []): string[][] {
  const out: string[][] = [prefix];
  if (typeof value === "object" && value !== null) {
    for (const [key, child] of Object.entries(value)) out.push(...pathsOf(child, [...prefix, key]));
  }
  return out;
}

/** A copy of `value` with the node at `path` replaced by `replacement`, or removed when `remove`. */
function mutateAt(value: unknown, path: readonly string[], replacement: unknown, remove: boolean): unknown {
  if (path.length === 0) return replacement;
  const copy = structuredClone(value) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = path.at(-1) as string;
  if (remove) delete node[last];
  else Object.defineProperty(node, last, { value: replacement, enumerable: true, writable: true });
  return copy;
}

/** A seed with one node replaced by a hostile value or removed. */
function mutated(seeds: readonly unknown[]): fc.Arbitrary<unknown> {
  return fc
    .constantFrom(...seeds)
    .chain((seed) =>
      fc
        .tuple(fc.constantFrom(...pathsOf(seed)), hostileValue, fc.boolean())
        .map(([path, value, remove]) => mutateAt(seed, path, value, remove && path.length > 0)),
    );
}

/** Bodies that are not JSON at all, or JSON of the wrong shape, or nearly JSON. */
const garbage: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v).slice(0, -1)),
  fc.constantFrom(
    "[",
    "[]",
    "{}",
    "null",
    "[null]",
    "\n\n",
    "[1,]",
    '{"a":1}\n{"b"',
    "\uFEFF[]",
    " ".repeat(64),
  ),
);

const contentType = fc.constantFrom(
  "application/json",
  "application/x-ndjson",
  "text/plain",
  "application/json; charset=utf-16",
  "multipart/form-data; boundary=x",
  "",
);

interface BackfillAnswer {
  accepted: number;
  duplicates: number;
  rejected: { index: number; error: string }[];
}

/** Whether the hub took nothing from a backfill answer (a 4xx, or a 200 accepting no message). */
function tookNothing(answer: Answer): boolean {
  if (answer.status >= 400) return true;
  return (JSON.parse(answer.text) as BackfillAnswer).accepted === 0;
}

const pgReachable = await postgresReachable();
const pg = { db: undefined as PgTestDatabase | undefined };
after(async () => {
  closeAgent();
  await pg.db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

// The same properties against each store (STYLE 2): the filter and query SQL differ between them.
// [name, the store, why the backend is skipped (false: it runs)]
const BACKENDS: [string, () => Promise<Store>, string | false][] = [
  ["DuckDB", () => createDuckDbStore({ path: join(dataDir, "vigil.duckdb") }), false],
  [
    "PostgreSQL",
    async () => {
      pg.db = await PgTestDatabase.create("fuzz");
      return createPostgresStore({ url: pg.db.url });
    },
    needs(pgReachable ? false : PG_SKIP),
  ],
];

for (const [name, createStore, skip] of BACKENDS) {
  describe(`hub on ${name}`, { skip }, () => {
    before(async () => {
      await startHub(await createStore());
      // The first backfill starts the parse workers (seconds on a busy machine, from TypeScript
      // source): started here rather than inside the first run of a property's time budget.
      const warm = await fetch(`${base}/v0/messages`, { method: "POST", body: "{}" });
      assert.equal(warm.status, 200);
    });
    afterEach(settleInFlight);
    after(async () => {
      await hub?.stop();
    });

    describe("POST /v0/messages under hostile input", () => {
      test("mutated public-v2 messages: 200 or a 4xx; a message rejected or a request refused stores nothing", async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(mutated(SEEDS), { minLength: 1, maxLength: 3 }),
            fc.constantFrom("array", "ndjson"),
            tracked(async (messages, framing) => {
              const body =
                framing === "array"
                  ? JSON.stringify(messages)
                  : messages.map((m) => JSON.stringify(m) ?? "null").join("\n");
              const before = await snapshot();
              const sent: Sent = { method: "POST", path: "/v0/messages", headers: {}, body };
              const answer = await sendHostile(base, sent);
              // Each message the validator refuses must be among the rejected ones.
              if (answer.status === 200) {
                const result = JSON.parse(answer.text) as BackfillAnswer;
                // A body whose text starts with `[` is one JSON array, whatever the framing meant
                // (docs/hub-api.md): one NDJSON line `[]` is an empty array, no message.
                const read =
                  framing === "ndjson" && body.trimStart().startsWith("[")
                    ? (JSON.parse(body) as unknown[])
                    : messages;
                const refused = read.flatMap((m, i) => (validateMessage(m).ok ? [] : [i]));
                const rejected = new Set(result.rejected.map((r) => r.index));
                for (const index of refused) assert.ok(rejected.has(index), `message ${index} is rejected`);
              }
              if (tookNothing(answer)) assert.equal(await snapshot(), before);
            }),
          ),
          fuzzBudget(200),
        );
      });

      test("garbage bodies with any content type: 200 or a 4xx, and nothing stored when nothing is accepted", async () => {
        await fc.assert(
          fc.asyncProperty(
            garbage,
            contentType,
            tracked(async (body, type) => {
              const before = await snapshot();
              const sent: Sent = {
                method: "POST",
                path: "/v0/messages",
                headers: type === "" ? {} : { "content-type": type },
                body,
              };
              const answer = await sendHostile(base, sent);
              if (tookNothing(answer)) assert.equal(await snapshot(), before);
            }),
          ),
          fuzzBudget(200),
        );
      });
    });

    describe("queries under hostile input", () => {
      let stored = "";
      before(async () => {
        stored = await snapshot();
      });
      after(async () => {
        // Queries never write: the store is exactly as seeded once every query property has run.
        assert.equal(await snapshot(), stored);
      });

      test("POST /v0/metrics/query: a node replaced or removed answers 200 or a 4xx", async () => {
        await fc.assert(
          fc.asyncProperty(mutated([VALID_METRIC_QUERY]), async (query) => {
            const answer = await sendHostile(base, postJson("/v0/metrics/query", query));
            assert.ok(answer.status === 200 || answer.status === 400, answer.text);
          }),
          fuzzBudget(200),
        );
      });

      test("POST /v0/events/recordsQuery: a node replaced or removed answers 200 or a 4xx", async () => {
        const full = {
          ...VALID_RECORDS_QUERY,
          events: ["severity", "snooze"],
          metrics: ["s/d/{rowname}/v"],
          zoneId: "Europe/Paris",
          skip: 0,
          limit: 10,
        };
        await fc.assert(
          fc.asyncProperty(mutated([VALID_RECORDS_QUERY, full]), async (query) => {
            const answer = await sendHostile(base, postJson("/v0/events/recordsQuery", query));
            assert.ok(answer.status === 200 || answer.status === 400, answer.text);
          }),
          fuzzBudget(200),
        );
      });

      test("query endpoints given garbage bodies and content types answer a 4xx", async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom("/v0/metrics/query", "/v1alpha/metrics/query", "/v0/events/recordsQuery"),
            garbage,
            contentType,
            async (path, body, type) => {
              const answer = await sendHostile(base, {
                method: "POST",
                path,
                headers: type === "" ? {} : { "content-type": type },
                body,
              });
              assert.ok(answer.status >= 400, `${path} ${JSON.stringify(body)} → ${answer.status}`);
            },
          ),
          fuzzBudget(200),
        );
      });

      const filterText = fc.oneof(
        fc.string({ unit: "binary", maxLength: 40 }),
        fc
          .array(
            fc.constantFrom(
              "svc.name",
              "user.Region",
              "=",
              "!=",
              "<",
              ">=",
              "IN",
              "NOT",
              "EXISTS",
              "AND",
              "OR",
              "(",
              ")",
              ",",
              '"',
              '"me0"',
              "\\",
              "emea",
              " ",
            ),
            { maxLength: 12 },
          )
          .map((tokens) => tokens.join(" ")),
        fc.integer({ min: 1, max: 5_000 }).map((depth) => `${"(".repeat(depth)}a EXISTS${")".repeat(depth)}`),
        fc
          .integer({ min: 1, max: 3_000 })
          .map((n) => Array.from({ length: n }, (_, i) => `a${i} EXISTS`).join(" OR ")),
      );

      test("entity filters on every endpoint that takes one answer 200 or a 4xx", async () => {
        await fc.assert(
          fc.asyncProperty(
            filterText,
            fc.constantFrom(
              "/v0/entities",
              "/v0/entities/summary",
              "/v0/entities/metrics",
              "/v0/entities/metrics/rows",
              "events",
              "metrics",
            ),
            async (text, where) => {
              const sent =
                where === "events"
                  ? postJson("/v0/events/recordsQuery", {
                      filter: { entities: text, range: VALID_RECORDS_QUERY.filter.range },
                    })
                  : where === "metrics"
                    ? postJson("/v0/metrics/query", {
                        ...VALID_METRIC_QUERY,
                        filter: { ...VALID_METRIC_QUERY.filter, entities: text },
                      })
                    : { method: "GET", path: `${where}?filter=${encodeURIComponent(text)}` };
              const answer = await sendHostile(base, sent);
              assert.ok(answer.status === 200 || answer.status === 400, answer.text);
            },
          ),
          fuzzBudget(300),
        );
      });

      /** Query-string text sent raw: malformed escapes, repeated and prototype keys, odd bytes. */
      const queryString = fc
        .array(
          fc.tuple(
            fc.constantFrom(
              "filter",
              "includeDeleted",
              "groupBy",
              "nrSamples",
              "plugin",
              "from",
              "to",
              "path",
              "limit",
              "__proto__",
              "constructor",
              "",
            ),
            fc.oneof(
              fc.string({ maxLength: 12 }).map(encodeURIComponent),
              fc.constantFrom(
                "%",
                "%zz",
                "%E0%A4",
                "%00",
                "true",
                "-1",
                "1e99",
                "99999999999999999999",
                "a&b",
              ),
            ),
          ),
          { maxLength: 4 },
        )
        .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("&"));

      test("GET listings with random query strings and ids answer 200 or a 4xx", async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(
              "/v0/entities",
              "/v0/entities/summary",
              "/v0/entities/attributes",
              "/v0/entities/attributes/svc.name",
              "/v0/entities/attributes/%ZZ",
              "/v0/entities/metrics",
              "/v0/entities/metrics/rows",
              "/v0/entities/{id}",
              "/v0/entities/{id}/metrics",
              "/v0/entities/{id}/metrics/rows",
              "/v0/entities/{id}/metrics/data",
              "/v0/metrics/aggregations",
            ),
            fc.oneof(
              fc.constantFrom(
                "1",
                "0",
                "-1",
                "2147483648",
                "1.5",
                "0x10",
                "%20",
                "%",
                "a",
                "__proto__",
                "1e3",
              ),
              fc.nat().map(String),
            ),
            queryString,
            async (template, id, query) => {
              const path = template.replace("{id}", id);
              await sendHostile(base, { method: "GET", path: query === "" ? path : `${path}?${query}` });
            },
          ),
          fuzzBudget(300),
        );
      });
    });
  });
}
