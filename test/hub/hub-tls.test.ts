/**
 * HTTPS for the hub (DESIGN 2 `hub.tls`) over real sockets with a certificate the test makes: with
 * both files set the hub answers HTTPS only; plain HTTP on that port gets no answer; a missing or
 * mismatched file stops the start with a message naming the setup key.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { hubTokenVerifier } from "../../src/auth/bearer.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";
import { makeTestCerts, OPENSSL_SKIP, opensslAvailable, type TestCerts } from "../helpers/certs.js";
import { needs } from "../helpers/needs.js";

const available = opensslAvailable();
const silent = pino({ level: "silent" });

const setupWith = (certificate: string, key: string) =>
  parseSetup(`
gateway: { name: GW }
hub:
  security: { enabled: false }
  tls: { certificate: ${JSON.stringify(certificate)}, key: ${JSON.stringify(key)} }
`);

async function hubWith(certificate: string, key: string, dataDir: string): Promise<Hub> {
  return buildHub({
    setup: setupWith(certificate, key),
    store: await createDuckDbStore({ path: ":memory:" }),
    logger: silent,
    dataDir,
  });
}

function get(
  url: string,
  ca?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequest;
    const options = { method: "GET", headers, ...(ca === undefined ? {} : { ca }), timeout: 5_000 };
    const req = send(url, options, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}

describe("hub over HTTPS", { skip: needs(available ? false : OPENSSL_SKIP) }, () => {
  let certs: TestCerts;
  let hub: Hub;
  let url: string;

  before(async () => {
    certs = makeTestCerts();
    hub = await hubWith(certs.server, certs.serverKey, certs.dir);
    url = await hub.start(0, "127.0.0.1");
  });
  after(async () => {
    await hub?.stop();
    certs?.cleanup();
  });

  test("serves its API over HTTPS with the configured certificate", async () => {
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const answer = await get(`${url}/v0/ping`, readFileSync(certs.ca, "utf8"));
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.body), { status: "OK" });
  });

  test("a client that does not trust the certificate is refused by its own TLS check", async () => {
    await assert.rejects(get(`${url}/v0/ping`, readFileSync(certs.otherCa, "utf8")), /certificate/i);
  });

  test("plain HTTP on the HTTPS port gets no API answer", async () => {
    const plain = url.replace("https:", "http:");
    const outcome = await get(`${plain}/v0/ping`).then(
      (answer) => answer.status,
      () => "refused",
    );
    // Node's TLS server answers a plaintext request with a bare 400 and closes, or drops it.
    assert.ok(outcome === "refused" || outcome === 400, `plain HTTP got ${outcome}`);
  });

  test("a missing file or a key that does not match stops the start, naming the setting", async () => {
    await assert.rejects(
      hubWith(`${certs.dir}/absent.pem`, certs.serverKey, certs.dir),
      /hub\.tls\.certificate/,
    );
    await assert.rejects(hubWith(certs.server, certs.clientKey, certs.dir), /cannot be used together/);
  });
});

describe("vigil up with an HTTPS hub and security on", {
  skip: needs(available ? false : OPENSSL_SKIP),
}, () => {
  test("the gateway verifies hub tokens against the HTTPS hub's key set, trusting its certificate", async () => {
    const certs = makeTestCerts();
    const setup = parseSetup(`
gateway: { name: GW-TLS, port: 0 }
hub:
  port: 0
  tls: { certificate: ${JSON.stringify(certs.server)}, key: ${JSON.stringify(certs.serverKey)} }
  security: { enabled: true, appKeys: [{ clientId: reporting, clientSecret: s3cret }] }
`);
    const system = await startSystem({
      setup,
      dataDir: certs.dir,
      demo: false,
      host: "127.0.0.1",
      logger: silent,
    });
    try {
      const hub = system.urls.hub ?? "";
      const gateway = system.urls.gateway ?? "";
      assert.match(hub, /^https:/);
      const ca = readFileSync(certs.ca, "utf8");
      const basic = `Basic ${Buffer.from("reporting:s3cret").toString("base64")}`;
      const issued = await get(`${hub}/token`, ca, { authorization: basic });
      assert.equal(issued.status, 200, issued.body);
      const token = (JSON.parse(issued.body) as { access_token: string }).access_token;
      const items = await get(`${gateway}/v1/items`, undefined, { authorization: `Bearer ${token}` });
      assert.equal(items.status, 200, items.body);
      assert.equal((await get(`${gateway}/v1/items`)).status, 401);
      // A verifier pinned to another certificate (here the CA's) does not trust this hub.
      await assert.rejects(
        hubTokenVerifier(hub, { hubCertificate: ca })(token),
        /neither the configured certificate/,
      );
    } finally {
      await system.stop(5_000);
      certs.cleanup();
    }
  });
});
