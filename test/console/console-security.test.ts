/**
 * The web console with hub security on (DESIGN 5.4), in a real Chromium: the page asks
 * for an application key before it requests any data, refuses a wrong secret in words, works with
 * the right one (every data request carries the bearer token), keeps the token out of storage and
 * cookies, renews it before it expires, and its actions reach the gateway with the token.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  browserSkipReason,
  type ConsoleSystem,
  launchChromium,
  type PageProblems,
  putDataview,
  requireBuiltConsole,
  screenshot,
  startConsoleSystem,
  watchPage,
} from "../helpers/browser.js";
import { needs } from "../helpers/needs.js";

/** Seconds an access token lives here: short, so the test sees the console renew one. */
const TOKEN_LIFETIME = 4;

const SETUP = `
gateway:
  name: GW-SECURE
  port: 0
  publish: [memory]
probes:
  - name: probe-s
    restApiHttpPort: 0
    managedEntities:
      - name: web-01
        attributes: { Environment: prod }
        samplers: [{ name: orders, plugin: rest-api }]
hub:
  port: 0
  security:
    enabled: true
    tokenLifetime: ${TOKEN_LIFETIME}
    appKeys:
      - { clientId: dashboards, clientSecret: "s3cret-console", roles: [read, operate] }
`;

/** A JWT's `exp` in epoch ms (read, not verified). */
function expiryOf(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as {
    exp: number;
  };
  return payload.exp * 1000;
}

const skip = browserSkipReason();
if (skip !== undefined) console.log(skip);

describe("web console with security enabled", { skip: needs(skip) }, () => {
  let system: ConsoleSystem;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;

  before(async () => {
    requireBuiltConsole();
    system = await startConsoleSystem(SETUP);
    await putDataview(system.probe, "web-01", "orders", "queue", [{ name: "EURUSD", latency: 5 }]);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(10_000);
    problems = watchPage(page, system.hub);
  });

  after(async () => {
    await browser?.close();
    await system?.stop();
  });

  const dataRequests = () => problems.requests.filter((r) => new URL(r.url).pathname.startsWith("/v0/"));

  test("the console asks for a key first and refuses a wrong secret in words", async () => {
    await page.goto(system.hub);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.deepEqual(dataRequests(), [], "no data is asked for before signing in");
    await page.getByRole("textbox", { name: "Client id" }).fill("dashboards");
    await page.getByLabel("Client secret").fill("wrong");
    await page.getByRole("button", { name: "Sign in" }).click();
    const refusal = page.getByRole("alert").filter({ hasText: "Refused" });
    await refusal.waitFor();
    assert.match(
      (await refusal.textContent()) ?? "",
      /^Refused: the hub did not accept this client id and secret\. \(Authorization failed: Client authentication failed/,
    );
    await screenshot(page, "sign-in-refused");
    assert.deepEqual(
      problems.errorAnswers.map((a) => a.replace(/http:\/\/[^/]+/, "")),
      ["401 GET /token"],
    );
    assert.deepEqual(dataRequests(), []);
    problems.errorAnswers.length = 0;
    problems.consoleErrors.length = 0; // Chromium logs the 401 as "Failed to load resource"
  });

  test("the right secret shows the data, with the token on every request and nowhere in storage", async () => {
    await page.getByLabel("Client secret").fill("s3cret-console");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Entities" }).waitFor();
    await page.getByRole("rowheader", { name: "web-01" }).waitFor();
    assert.match(
      (await page.getByRole("navigation", { name: "Session" }).textContent()) ?? "",
      /Signed in as dashboards/,
    );
    assert.ok(dataRequests().length > 0);
    for (const request of dataRequests())
      assert.match(request.authorization ?? "", /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    // A string runs in the page (the test's TypeScript has no DOM types).
    const stored = await page.evaluate(
      "({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })",
    );
    assert.deepEqual(stored, { local: 0, session: 0, cookie: "" });
    assert.ok(!page.url().includes("token"), "the token is not in the URL");
    await screenshot(page, "signed-in");
  });

  test("the token is renewed before it expires and the console keeps working", async () => {
    const renewal = await page.waitForResponse((r) => r.url().endsWith("/oauth2/token"), {
      timeout: TOKEN_LIFETIME * 1000 + 5_000,
    });
    assert.equal(renewal.status(), 200);
    // Past the first token's life, data requests still succeed, with a renewed token.
    const first = dataRequests()[0]?.authorization?.slice("Bearer ".length) ?? "";
    const firstExpiry = expiryOf(first);
    await page.waitForTimeout(Math.max(0, firstExpiry - Date.now() + 200));
    const answer = page.waitForResponse((r) => new URL(r.url()).pathname === "/v0/entities");
    await page.getByRole("searchbox", { name: "Filter" }).fill("user.Environment = prod");
    const response = await answer;
    assert.equal(response.status(), 200);
    const sent = (response.request().headers().authorization ?? "").slice("Bearer ".length);
    assert.notEqual(sent, first, "a renewed token, not the expired first one");
    assert.ok(expiryOf(sent) > firstExpiry);
    await page.getByRole("rowheader", { name: "web-01" }).waitFor();
    assert.deepEqual(problems.errorAnswers, []);
  });

  test("actions reach the gateway with the token", async () => {
    await page.getByRole("link", { name: "web-01" }).click();
    const itemState = page.getByLabel("State of the item");
    await itemState.getByText("Not snoozed", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Snooze", exact: true }).click();
    await itemState.getByText(/^Snoozed by dashboards/).waitFor();
    const relayed = problems.requests.filter((r) => r.url.includes("/console/gateway/"));
    assert.ok(relayed.length >= 2);
    for (const request of relayed) assert.match(request.authorization ?? "", /^Bearer /);
    // Without a token the relay refuses, as the gateway would.
    const anonymous = await fetch(
      `${system.hub}/console/gateway/v1/items?gateway=GW-SECURE&probe=probe-s&managedEntity=web-01`,
    );
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { title: string }).title, "Authorization failed");
    assert.deepEqual(problems.errorAnswers, []);
    assert.deepEqual(problems.pageErrors, []);
    assert.deepEqual(problems.failedRequests, []);
    assert.deepEqual(problems.consoleErrors, []);
    assert.deepEqual(problems.foreignRequests, []);
  });

  test("signing out forgets the token and asks again", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    const before = dataRequests().length;
    await page.goto(`${system.hub}/#/entity/1`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.equal(dataRequests().length, before, "no data request without a token");
  });

  test("a pasted token works; a bad one is refused in words", async () => {
    const tokenBox = page.getByRole("textbox", { name: "Access token" });
    await tokenBox.fill("not-a-token");
    await page.getByRole("button", { name: "Use token" }).click();
    await page.getByRole("alert").filter({ hasText: "Refused: the hub did not accept this token" }).waitFor();
    problems.errorAnswers.length = 0;
    problems.consoleErrors.length = 0;
    const basic = `Basic ${Buffer.from("dashboards:s3cret-console").toString("base64")}`;
    const issued = (await (
      await fetch(`${system.hub}/token`, { headers: { authorization: basic } })
    ).json()) as {
      access_token: string;
    };
    await tokenBox.fill(issued.access_token);
    await page.getByRole("button", { name: "Use token" }).click();
    await page.getByRole("heading", { name: "web-01" }).waitFor();
    assert.deepEqual(problems.errorAnswers, []);
  });
});
