/**
 * Self-metrics with `hub.security.enabled` (DESIGN 5.4): the hub's and the gateway's
 * `/metrics` need a hub-issued bearer token like the rest of their APIs (401 with a Bearer
 * challenge otherwise); the probe's, like its ingest API, needs none.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { parseExposition } from "../helpers/prometheus-text.js";
import { tempDir } from "../helpers/vigil-process.js";

const setup = parseSetup(`
gateway: { name: GW-SEC, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities: [{ name: me, samplers: [{ name: s, plugin: rest-api }] }]
hub:
  port: 0
  security: { enabled: true, appKeys: [{ clientId: prometheus, clientSecret: "scrape s3cret" }] }
`);

describe("self-metrics with security enabled", () => {
  const dir = tempDir("metrics-security");
  let system: RunningService;
  let hub = "";
  let gateway = "";
  let probe = "";

  before(async () => {
    system = await startSystem({
      setup,
      dataDir: dir.path,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
    hub = system.urls.hub as string;
    gateway = system.urls.gateway as string;
    probe = system.urls["probe:p1"] as string;
  });
  after(async () => {
    await system?.stop(5_000);
    dir.remove();
  });

  async function token(): Promise<string> {
    const response = await fetch(`${hub}/token`, {
      headers: { authorization: `Basic ${Buffer.from("prometheus:scrape s3cret").toString("base64")}` },
    });
    assert.equal(response.status, 200);
    return ((await response.json()) as { access_token: string }).access_token;
  }

  test("the hub and the gateway answer 401 with a Bearer challenge without a token", async () => {
    for (const base of [hub, gateway]) {
      const response = await fetch(`${base}/metrics`);
      assert.equal(response.status, 401, base);
      assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer realm="vigil"$/);
      const body = (await response.json()) as { status: number; title: string };
      assert.equal(body.status, 401);
      assert.equal(body.title, "Authorization failed");
      const text = await (await fetch(`${base}/metrics`)).text();
      assert.doesNotMatch(text, /vigil_http_request_duration_seconds/, "no metric leaks in the 401");
    }
  });

  test("a forged or malformed token is refused with invalid_token", async () => {
    for (const base of [hub, gateway]) {
      const forged = await fetch(`${base}/metrics`, { headers: { authorization: "Bearer e30.e30.AAAA" } });
      assert.equal(forged.status, 401);
      assert.match(forged.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
      const basic = await fetch(`${base}/metrics`, { headers: { authorization: "Basic cHJvbWV0aGV1cw==" } });
      assert.equal(basic.status, 401);
    }
  });

  test("a token from the OAuth 2.0 client-credentials grant (Prometheus's `oauth2` scrape setting) opens both", async () => {
    // What Prometheus sends (Go's oauth2 client): id and secret form-encoded (a space is `+`, RFC 6749
    // §2.3.1) in HTTP Basic, the grant in a form body.
    const response = await fetch(`${hub}/oauth2/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from("prometheus:scrape+s3cret").toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    assert.equal(response.status, 200);
    const { access_token: accessToken } = (await response.json()) as { access_token: string };
    for (const base of [hub, gateway]) {
      const scrape = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${accessToken}` } });
      assert.equal(scrape.status, 200, base);
    }
  });

  test("a hub-issued token opens both; the probe serves its metrics without one", async () => {
    const bearer = { authorization: `Bearer ${await token()}` };
    for (const base of [hub, gateway]) {
      const response = await fetch(`${base}/metrics`, { headers: bearer });
      assert.equal(response.status, 200, base);
      const metrics = parseExposition(await response.text());
      // The refused scrapes were requests too: counted under the /metrics route with status 401.
      assert.ok(
        metrics.value("vigil_http_request_duration_seconds_count", { route: "/metrics", status: "401" }) >= 1,
      );
    }
    const open = await fetch(`${probe}/metrics`);
    assert.equal(open.status, 200);
    assert.ok(parseExposition(await open.text()).types.has("vigil_probe_rows_accepted_total"));
  });
});
