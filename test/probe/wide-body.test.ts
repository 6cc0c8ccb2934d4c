/**
 * The body that crashed the previous build (heap out of memory): a ~727 KB PUT dataview of 200
 * rows whose 300 distinct column names are spread over the rows. With the default limits
 * (256 columns per dataview) it is a 400 naming the limit, nothing reaches the gateway, and the
 * probe keeps serving.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { pino } from "pino";
import { DEFAULT_MAX_COLUMNS_PER_DATAVIEW } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import { buildProbe } from "../../src/probe/app.js";
import { eventually, FakePublisher } from "../link/helpers.js";

const logger = pino({ level: "silent" });
const setup = parseSetup(`
gateway: { name: GW }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }] }
`);
const publisher = new FakePublisher();
const gateway = buildGateway({ setup, publisher, logger });
const probe = buildProbe({ name: "p1", link: gateway.connectInProcess(), setup: setup.probes[0]!, logger });
await probe.start();
after(async () => {
  await probe.stop(1000);
  await gateway.stop(1000);
});

/** 200 rows: 3 shared columns, and 297 extra ones, 1 or 2 per row, each value padded. */
function wideBody(): string {
  const rows: Record<string, string>[] = [];
  let extra = 0;
  for (let i = 0; i < 200; i += 1) {
    const row: Record<string, string> = { name: `row-${i}`, host: `host-${i % 7}`, status: "OK" };
    const extras = i < 97 ? 2 : 1;
    for (let k = 0; k < extras; k += 1) row[`metric_${extra++}_${"m".repeat(20)}`] = "v".repeat(2378);
    rows.push(row);
  }
  assert.equal(extra, 297);
  return JSON.stringify(rows);
}

test("a 727 KB PUT with 300 distinct columns over 200 rows is a 400 and the probe keeps serving", async () => {
  const body = wideBody();
  assert.ok(body.length > 700_000 && body.length < 760_000, `body is ${body.length} bytes`);
  await eventually(() => {
    const status = probe.linkStatus();
    return status.state === "up" && status.inFlightBatches === 0;
  }, "the link, its state acknowledged");
  const before = publisher.messages.length;
  const url = "/v1/managedEntity/me/sampler/s/dataview/wide";
  const response = await probe.http.inject({ method: "PUT", url, payload: body });
  assert.equal(response.statusCode, 400);
  const error = response.json() as { title: string; body: string };
  assert.equal(error.title, "Too many columns");
  assert.match(error.body, new RegExp(`more than ${DEFAULT_MAX_COLUMNS_PER_DATAVIEW} distinct columns`));
  assert.equal((await probe.http.inject({ method: "GET", url })).statusCode, 404, "nothing was stored");

  // Still serving: a health check and a normal PUT, whose messages reach the publisher.
  assert.equal((await probe.http.inject({ method: "GET", url: "/healthcheck" })).statusCode, 200);
  const ok = await probe.http.inject({ method: "PUT", url, payload: '[{"name":"a","v":"1"}]' });
  assert.equal(ok.statusCode, 200);
  await eventually(() => publisher.messages.length === before + 2, "the normal PUT's messages");
  assert.deepEqual(publisher.since(before), ["headline:create", "table:create:a"]);
});
