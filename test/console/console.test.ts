/**
 * The web console in a real Chromium, security off: the entities with their severities
 * and counts, the filter narrowing the list and showing a malformed filter's error with its
 * position, grouping, an entity's chart following the chosen aggregation and bucket, and a snooze
 * through the gateway's command API. Data arrives as a user's would: PUTs on the probe's HTTP API,
 * plus backfilled samples at fixed past minutes (`POST /v0/messages`) so bucket values are exact.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  browserSkipReason,
  type ConsoleSystem,
  launchChromium,
  type PageProblems,
  pixelsOfColour,
  published,
  putDataview,
  requireBuiltConsole,
  screenshot,
  startConsoleSystem,
  watchPage,
} from "../helpers/browser.js";
import { needs } from "../helpers/needs.js";
import { eventually } from "../helpers/vigil-process.js";

const SETUP = `
gateway:
  name: GW-CONSOLE
  port: 0
  publish: [memory, { file: ./messages.ndjson }]
probes:
  - name: probe-1
    restApiHttpPort: 0
    managedEntities:
      - name: web-01
        attributes: { Environment: prod, Region: emea }
        samplers:
          - name: orders
            plugin: rest-api
            schema: { columns: { latency: { type: float64, unit: milliseconds } } }
      - name: db-01
        attributes: { Environment: dev, Region: apac }
        samplers:
          - name: orders
            plugin: rest-api
            schema: { columns: { latency: { type: float64, unit: milliseconds } } }
rules:
  - name: queue too long
    target: { sampler: orders, dataview: queue, row: "*", column: queued }
    when: { operator: ">", value: 100 }
    severity: CRITICAL
hub:
  port: 0
  security: { enabled: false }
`;

/** The chart's first series colour (console/src/chart.ts PALETTE[0], #0072B2). */
const FIRST_SERIES_RGB = [0x00, 0x72, 0xb2] as const;
const skip = browserSkipReason();
if (skip !== undefined) console.log(skip);

/** A whole UTC hour three to four hours ago: the backfilled samples' base, inside "Last 6 hours". */
const BASE = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
/** The hub's bucket label of `ms` in UTC (DESIGN 5.3: ISO 8601 with the zone's offset). */
const label = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}+00:00`;

describe("web console", { skip: needs(skip) }, () => {
  let system: ConsoleSystem;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;

  before(async () => {
    requireBuiltConsole();
    system = await startConsoleSystem(SETUP);
    await putDataview(system.probe, "web-01", "orders", "queue", [
      { name: "EURUSD", latency: 5, queued: 150 },
      { name: "GBPUSD", latency: 7, queued: 3 },
    ]);
    await putDataview(system.probe, "db-01", "orders", "queue", [{ name: "JPYUSD", latency: 1, queued: 2 }]);
    // Backfilled samples of web-01 at BASE, BASE+1 min and BASE+5 min, with the target the gateway
    // publishes (copied from its NDJSON target), so they are the same series as the probe's.
    const ndjson = join(system.dataDir, "messages.ndjson");
    const published_ = await published(
      ndjson,
      (m) => m.type === "table" && m.data.target.managedEntity === "web-01" && m.data.target.row === "EURUSD",
    );
    assert.equal(published_.type, "table");
    const target = published_.type === "table" ? published_.data.target : undefined;
    const sample = (row: string, latency: string, at: number) => ({
      type: "table",
      operation: "update",
      data: {
        sampleTime: new Date(at).toISOString(),
        target: { ...target, row },
        row: { name: row, latency, queued: "1" },
      },
    });
    const backfill = await fetch(`${system.hub}/v0/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        sample("EURUSD", "10", BASE),
        sample("EURUSD", "30", BASE + 60_000),
        sample("EURUSD", "50", BASE + 5 * 60_000),
        sample("GBPUSD", "20", BASE),
      ]),
    });
    assert.deepEqual(await backfill.json(), { accepted: 4, duplicates: 0, rejected: [] });
    // The severities reached the hub: web-01 CRITICAL (queued 150 > 100), db-01 OK.
    await eventually(async () => {
      const summary = (await (await fetch(`${system.hub}/v0/entities/summary`)).json()) as {
        counts: { states: { severity: string }; count: number }[];
      }[];
      const states = summary[0]?.counts.map((c) => `${c.states.severity}:${c.count}`).join(",");
      return states === "OK:1,CRITICAL:1" ? states : undefined;
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    problems = watchPage(page, system.hub);
  });

  after(async () => {
    await browser?.close();
    await system?.stop();
  });

  const rowOf = (name: string) =>
    page.getByRole("row").filter({ has: page.getByRole("rowheader", { name }) });

  test("the page loads cleanly and shows the entities with their severities and counts", async () => {
    const response = await page.goto(system.hub);
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()["cache-control"] ?? "", /no-cache/);
    assert.match(response?.headers()["content-security-policy"] ?? "", /connect-src 'self'/);
    await page.getByRole("heading", { name: "Entities" }).waitFor();
    await rowOf("web-01").getByRole("img", { name: "Severity CRITICAL" }).waitFor();
    await rowOf("db-01").getByRole("img", { name: "Severity OK" }).waitFor();
    assert.equal(await rowOf("web-01").getByRole("cell", { name: "probe-1" }).count(), 1);
    const counts = page.getByRole("list", { name: "Entities by severity" });
    const count = (severity: string) =>
      counts.getByRole("listitem").filter({ has: page.getByRole("img", { name: `Severity ${severity}` }) });
    assert.equal((await count("CRITICAL").textContent())?.replace(/\s+/g, ""), "CRITICAL1");
    assert.equal((await count("OK").textContent())?.replace(/\s+/g, ""), "OK1");
    assert.equal((await count("WARNING").textContent())?.replace(/\s+/g, ""), "WARNING0");
    await screenshot(page, "entities");
    // A hashed asset is cached for a year.
    const script = problems.requests.find((r) => /\/assets\/console-.*\.js$/.test(r.url));
    assert.ok(script, "the console's script was loaded from /assets/");
    const asset = await fetch(script.url);
    await asset.arrayBuffer();
    assert.match(
      asset.headers.get("cache-control") ?? "",
      /max-age=31536000.*immutable|immutable.*max-age=31536000/,
    );
    assert.deepEqual(problems.consoleErrors, []);
    assert.deepEqual(problems.pageErrors, []);
    assert.deepEqual(problems.failedRequests, []);
    assert.deepEqual(problems.errorAnswers, []);
    assert.deepEqual(problems.foreignRequests, []);
  });

  test("the filter narrows the list as one types; a malformed one shows the hub's error with its position", async () => {
    const filter = page.getByRole("searchbox", { name: "Filter" });
    await filter.fill("user.Environment = prod");
    await eventually(async () => ((await rowOf("db-01").count()) === 0 ? true : undefined));
    assert.equal(await rowOf("web-01").count(), 1);
    assert.match(page.url(), /filter=user\.Environment/);

    await filter.fill("user.Environment = prod AND");
    const alert = page.getByRole("alert").filter({ hasText: "Invalid entity filter" });
    await alert.waitFor();
    const text = (await alert.textContent()) ?? "";
    assert.match(text, /at position 27/);
    // The position is marked under the filter text, and the last good list stays.
    assert.match(text, /\n {27}\^/);
    assert.equal(await filter.getAttribute("aria-invalid"), "true");
    assert.equal(await rowOf("web-01").count(), 1);
    await screenshot(page, "filter-error");
    // The only error answers are the hub's 400s for the malformed filter.
    assert.ok(problems.errorAnswers.length > 0);
    for (const answer of problems.errorAnswers) assert.match(answer, /^400 GET .*filter=user\.Environment/);
    problems.errorAnswers.length = 0;
    problems.consoleErrors.length = 0; // Chromium logs each 400 answer as "Failed to load resource"

    await filter.fill("user.Region IN (emea, apac)");
    await eventually(async () => ((await rowOf("db-01").count()) === 1 ? true : undefined));
    assert.equal(await alert.count(), 0);
    assert.deepEqual(problems.errorAnswers, []);
  });

  test("grouping by an attribute shows a group per value with its counts", async () => {
    await page.getByRole("combobox", { name: "Group by" }).selectOption("user.Region");
    await page.getByRole("rowheader", { name: /user\.Region: apac/ }).waitFor();
    const emea = (await page.getByRole("rowheader", { name: /user\.Region: emea/ }).textContent()) ?? "";
    assert.match(emea, /1 \(1 CRITICAL\)/);
    await screenshot(page, "grouped");
    await page.getByRole("combobox", { name: "Group by" }).selectOption("");
  });

  test("an entity's chart draws its data and follows the chosen aggregation and bucket", async () => {
    await page.getByRole("link", { name: "web-01" }).click();
    await page.getByRole("heading", { name: /web-01/ }).waitFor();
    const tree = page.getByRole("region", { name: "Samplers and dataviews" });
    await tree.getByText("Dataview queue").waitFor();
    assert.match(
      (await tree.textContent()) ?? "",
      /Sampler orders.*Dataview queue — columns: latency \(milliseconds\), name, queued/s,
    );
    const query = async (change: () => Promise<unknown>) => {
      const request = page.waitForRequest(
        (r) => r.url().endsWith("/v0/metrics/query") && (r.postData() ?? "").includes('"identifier":"m"'),
      );
      await change();
      const sent = await request;
      await (await sent.response())?.finished();
      return JSON.parse(sent.postData() ?? "{}") as {
        aggregations: string[];
        bucketing: { duration: string };
        zoneId: string;
        metrics: { include: string[] }[];
      };
    };
    await query(() =>
      page.getByRole("combobox", { name: "Metric" }).selectOption("orders/queue/{rowname}/latency"),
    );
    const zone = page.getByRole("combobox", { name: "Time zone" });
    assert.equal(
      await zone.inputValue(),
      await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone),
    );
    // A zone other than the browser's (this machine's may be UTC already), written as an offset in labels.
    const utc = (await zone.inputValue()) === "UTC" ? "Etc/UTC" : "UTC";
    await query(() => zone.fill(utc).then(() => zone.press("Enter")));
    assert.equal(await page.getByRole("combobox", { name: "Aggregation" }).inputValue(), "svc.avg");
    const avg = await query(() =>
      page.getByRole("combobox", { name: "Time range" }).selectOption({ label: "Last 6 hours" }),
    );
    assert.deepEqual(avg.aggregations, ["svc.avg"]);
    assert.equal(avg.bucketing.duration, "PT1M");
    assert.equal(avg.zoneId, utc);
    assert.deepEqual(avg.metrics[0]?.include, ["orders/queue/{rowname}/latency"]);

    const values = page.getByRole("table", { name: /per bucket/ });
    const bucketRow = (ms: number) =>
      values.getByRole("row").filter({ has: page.getByRole("rowheader", { name: label(ms) }) });
    await page.getByText("Values drawn").click();
    await bucketRow(BASE).waitFor();
    assert.deepEqual(await bucketRow(BASE).getByRole("cell").allTextContents(), ["10", "20"]);
    assert.deepEqual(
      await bucketRow(BASE + 60_000)
        .getByRole("cell")
        .allTextContents(),
      ["30", ""],
    );
    assert.deepEqual(await values.getByRole("columnheader").allTextContents(), [
      "Bucket",
      "EURUSD",
      "GBPUSD",
    ]);
    // The chart is drawn: the first series' colour is on the canvas.
    assert.ok(
      (await pixelsOfColour(page, ".plot canvas", FIRST_SERIES_RGB)) > 20,
      "the EURUSD line is drawn",
    );

    const max = await query(() =>
      page.getByRole("combobox", { name: "Aggregation" }).selectOption("svc.max"),
    );
    assert.deepEqual(max.aggregations, ["svc.max"]);
    const fiveMinutes = await query(() =>
      page.getByRole("combobox", { name: "Bucket" }).selectOption({ label: "5 minutes" }),
    );
    assert.equal(fiveMinutes.bucketing.duration, "PT5M");
    assert.deepEqual(fiveMinutes.aggregations, ["svc.max"]);
    await bucketRow(BASE + 5 * 60_000).waitFor();
    assert.deepEqual(await bucketRow(BASE).getByRole("cell").allTextContents(), ["30", "20"]);
    assert.deepEqual(
      await bucketRow(BASE + 5 * 60_000)
        .getByRole("cell")
        .allTextContents(),
      ["50", ""],
    );
    assert.equal(await bucketRow(BASE + 60_000).count(), 0, "no 1-minute bucket is left");

    // One row only, picked from the row list: the request names it instead of {rowname}.
    const one = await query(() => page.getByRole("listbox", { name: "Rows" }).selectOption("GBPUSD"));
    assert.deepEqual(one.metrics[0]?.include, ["orders/queue/GBPUSD/latency"]);
    await eventually(async () =>
      (await values.getByRole("columnheader").allTextContents()).join() === "Bucket,GBPUSD"
        ? true
        : undefined,
    );
    const all = await query(() => page.getByRole("listbox", { name: "Rows" }).selectOption([]));
    assert.deepEqual(all.metrics[0]?.include, ["orders/queue/{rowname}/latency"]);
    await page
      .getByRole("status")
      .filter({ hasText: /buckets\.$/ })
      .waitFor();
    await screenshot(page, "entity");

    // The x-axis spans the range asked for (the last 6 hours), with two buckets and with one.
    const plot = page.locator(".plot");
    const span = async () => {
      const [min, max] = await Promise.all([
        plot.getAttribute("data-x-min"),
        plot.getAttribute("data-x-max"),
      ]);
      return Number(max) - Number(min);
    };
    assert.equal(await span(), 6 * 3_600);
    // The probe's PUTs of this run, all within seconds: one 1-hour bucket in the last 15 minutes,
    // which starts before the range does: the axis runs from its start to the range's end.
    await page.getByRole("combobox", { name: "Bucket" }).selectOption({ label: "1 hour" });
    const lone = await query(() =>
      page.getByRole("combobox", { name: "Time range" }).selectOption({ label: "Last 15 minutes" }),
    );
    assert.equal(lone.bucketing.duration, "PT1H");
    await page
      .getByRole("status")
      .filter({ hasText: /: 1 buckets\.$/ })
      .waitFor();
    const lonely = await span();
    assert.ok(lonely >= 15 * 60 && lonely <= 75 * 60, `one bucket: the axis spans ${lonely} s, not years`);
    assert.ok(
      (await pixelsOfColour(page, ".plot canvas", FIRST_SERIES_RGB)) > 5,
      "the lone bucket's point is drawn",
    );
    await screenshot(page, "entity-one-bucket");
    assert.deepEqual(problems.pageErrors, []);
    assert.deepEqual(problems.failedRequests, []);
    assert.deepEqual(problems.errorAnswers, []);
    assert.deepEqual(problems.consoleErrors, []);
  });

  test("snooze, unsnooze, assign and unassign change the item's state, through the gateway's command API", async () => {
    await page.getByLabel("State of the item").getByText("Not snoozed", { exact: true }).waitFor();
    await page.getByRole("textbox", { name: "Comment" }).fill("deploy in progress");
    await page.getByRole("button", { name: "Snooze", exact: true }).click();
    const itemState = page.getByLabel("State of the item");
    await itemState.getByText("Snoozed by console — “deploy in progress”").waitFor();
    assert.equal(await page.getByRole("status").filter({ hasText: "Snoozed." }).count(), 1);
    // The gateway itself says so.
    const items = (await (
      await fetch(`${system.gateway}/v1/items?gateway=GW-CONSOLE&probe=probe-1&managedEntity=web-01`)
    ).json()) as { item: { snoozed: { snoozed: boolean; snoozedBy?: string } } };
    assert.deepEqual([items.item.snoozed.snoozed, items.item.snoozed.snoozedBy], [true, "console"]);
    // The snooze reaches the hub's event history, shown on the page.
    await eventually(
      async () =>
        (await page.getByRole("cell", { name: /^Snoozed by console/ }).count()) > 0 ? true : undefined,
      20_000,
    );
    await screenshot(page, "snoozed");
    await page.getByRole("button", { name: "Unsnooze" }).click();
    await itemState.getByText("Not snoozed", { exact: true }).waitFor();
    // Assign and unassign a dataview.
    await page.getByRole("combobox", { name: "Item" }).selectOption({ label: "Dataview orders/queue" });
    await itemState.getByText("Not assigned", { exact: true }).waitFor();
    await page.getByRole("textbox", { name: "Assign to" }).fill("bob");
    await page.getByRole("button", { name: "Assign", exact: true }).click();
    await itemState.getByText("Assigned to bob by console — “deploy in progress”").waitFor();
    await page.getByRole("button", { name: "Unassign" }).click();
    await itemState.getByText("Not assigned", { exact: true }).waitFor();
    assert.deepEqual(problems.errorAnswers, []);
    assert.deepEqual(problems.foreignRequests, []);
  });
});
