/**
 * Nothing a client sends crashes the probe or answers 5xx: random bodies, content types and path
 * segments on every ingest endpoint get a 2xx or a documented 4xx with the one error body.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildProbe } from "../../src/probe/app.js";
import { fuzzBudget } from "../helpers/fuzz-budget.js";

const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - { name: me, samplers: [{ name: s, plugin: rest-api, rowLimit: 5 }] }
`);
// Never started: the link stays down and every change is coalesced into the (unsent) state.
const probe = buildProbe({
  name: "p1",
  setup: setup.probes[0]!,
  link: { description: "none", connect: () => Promise.reject(new Error("no gateway in this test")) },
  logger: pino({ level: "silent" }),
});
after(() => probe.http.close());

const segment = fc.oneof(
  fc.constantFrom("me", "s", "dv", "Streams Dataview", "s()", "a(b)"),
  fc.string({ maxLength: 12 }),
);
const body = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.string({ maxLength: 200 }),
  fc
    .array(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })), { maxLength: 8 })
    .map((v) => JSON.stringify(v)),
);

test("random ingest requests never answer 5xx and always use the error body", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom("PUT", "DELETE", "GET", "POST"),
      fc.tuple(segment, segment, segment, fc.option(segment, { nil: undefined })),
      body,
      fc.constantFrom(
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "",
        "application/octet-stream",
      ),
      async (method, [me, sampler, dataview, row], payload, contentType) => {
        const path = `/v1/managedEntity/${encodeURIComponent(me)}/sampler/${encodeURIComponent(sampler)}/dataview/${encodeURIComponent(dataview)}${row === undefined ? "" : `/row/${encodeURIComponent(row)}`}`;
        const response = await probe.http.inject({
          method: method as "PUT",
          url: path,
          payload,
          headers: contentType === "" ? {} : { "content-type": contentType },
        });
        assert.ok(response.statusCode < 500, `${method} ${path} → ${response.statusCode} ${response.body}`);
        if (response.statusCode >= 400) {
          const error = response.json() as Record<string, unknown>;
          assert.deepEqual(Object.keys(error).sort(), ["body", "status", "title"]);
          assert.equal(error.status, response.statusCode);
        }
      },
    ),
    fuzzBudget(400),
  );
});
