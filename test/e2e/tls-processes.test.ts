/**
 * HTTPS for the gateway (`gateway.tls`) and certificate reload on SIGHUP, on real
 * processes: `vigil gateway` serves HTTPS only; a `vigil probe` reading the same setup links to it
 * over wss, and `vigil hub` relays the console's commands to it, both trusting
 * `gateway.tls.certificate`; a probe that trusts another certificate is refused by
 * its own TLS check. After the certificate files are replaced in place, SIGHUP makes the gateway and
 * the hub present the new certificate to new connections, with no restart; a pair that cannot be
 * used is logged and the certificate in use stays.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connect } from "node:tls";
import { LinkSecret } from "../../src/config/link-secret.js";
import { webSocketConnector } from "../../src/link/websocket.js";
import { makeTestCerts, OPENSSL_SKIP, opensslAvailable, type TestCerts } from "../helpers/certs.js";
import { needs } from "../helpers/needs.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";
import { P1_SECRET } from "../link/helpers.js";

const available = opensslAvailable();

/** The SHA-256 fingerprint of the certificate a new TLS connection to `url` is shown. */
function presented(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on("error", reject);
  });
}

const fingerprint = (path: string) => new X509Certificate(readFileSync(path)).fingerprint256;

function getJson(url: string, ca: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, timeout: 5_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}

describe("an HTTPS gateway, a wss probe link, and certificates reloaded on SIGHUP", {
  skip: needs(available ? false : OPENSSL_SKIP),
}, () => {
  const dir = tempDir("tls-processes");
  let certs: TestCerts;
  let gateway: VigilProcess;
  let probe: VigilProcess;
  let hub: VigilProcess;
  let gatewayUrl = "";
  let hubUrl = "";
  let ca = "";
  // The files the setup names; the test replaces their content as a certificate renewal would.
  const gatewayCert = join(dir.path, "gateway.pem");
  const gatewayKey = join(dir.path, "gateway.key");
  const hubCert = join(dir.path, "hub.pem");
  const hubKey = join(dir.path, "hub.key");

  before(async () => {
    certs = makeTestCerts();
    ca = readFileSync(certs.ca, "utf8");
    for (const [from, to] of [
      [certs.server, gatewayCert],
      [certs.serverKey, gatewayKey],
      [certs.server, hubCert],
      [certs.serverKey, hubKey],
    ] as const)
      copyFileSync(from, to);
    // The probe reads the setup too, so it presents the secret its own entry names.
    writeFileSync(join(dir.path, "p1.secret"), `${P1_SECRET}\n`, { mode: 0o600 });
    const config = writeFile(
      dir.path,
      "setup.yaml",
      `gateway:
  name: GW-TLS
  port: 0
  tls: { certificate: gateway.pem, key: gateway.key }
  publish: [{ file: messages.ndjson }]
probes:
  - name: p1
    restApiHttpPort: 0
    linkSecretFile: p1.secret
    managedEntities:
      - name: me1
        samplers:
          - { name: s, plugin: rest-api }
hub:
  port: 0
  tls: { certificate: hub.pem, key: hub.key }
  security: { enabled: false }
`,
    );
    gateway = startVigil(
      ["gateway", "--config", config, "--data-dir", join(dir.path, "gw"), "--host", "127.0.0.1"],
      dir.path,
    );
    gatewayUrl = await gateway.url("gateway");
    // The hub relays the web console's commands to this gateway, trusting gateway.tls.certificate.
    hub = startVigil(
      ["hub", "--config", config, "--data-dir", join(dir.path, "hub"), "--host", "127.0.0.1"].concat([
        "--gateway",
        gatewayUrl,
      ]),
      dir.path,
    );
    hubUrl = await hub.url("hub");
    // The setup's gateway port is 0, so the probe is told where the gateway listens.
    probe = startVigil(
      ["probe", "--config", config, "--name", "p1", "--gateway", gatewayUrl, "--host", "127.0.0.1"],
      dir.path,
    );
    await probe.url("probe", "p1");
  });

  after(async () => {
    await Promise.all([probe?.stop("SIGKILL"), gateway?.stop("SIGKILL"), hub?.stop("SIGKILL")]);
    certs?.cleanup();
    dir.remove();
  });

  test("the gateway serves HTTPS only, and the probe links over wss trusting gateway.tls.certificate", async () => {
    assert.match(gatewayUrl, /^https:\/\//);
    const links = await eventually(async () => {
      const status = await getJson(`${gatewayUrl}/v1/status`, ca);
      const up = (status.body as { links: { probe?: string; state: string }[] }).links.filter(
        (l) => l.probe === "p1" && l.state === "up",
      );
      return up.length === 1 ? up : undefined;
    }, 20_000);
    assert.equal(links.length, 1);
    const plain = await fetch(`${gatewayUrl.replace("https:", "http:")}/v1/healthcheck`).then(
      (r) => r.status,
      () => "refused",
    );
    assert.ok(plain === "refused" || plain === 400, `plain HTTP got ${plain}`);
    // The hub reaches the HTTPS gateway for the console's actions.
    const items = await getJson(`${hubUrl}/console/gateway/v1/items`, ca);
    assert.equal(items.status, 200, JSON.stringify(items.body));
  });

  test("a probe that trusts another certificate does not link; over wss the secret is checked", async () => {
    const secret = new LinkSecret(P1_SECRET);
    const other = readFileSync(certs.otherCa, "utf8");
    await assert.rejects(
      webSocketConnector(gatewayUrl, { gatewayCertificate: other, secret }).connect(),
      /certificate/i,
    );
    const gatewayCertificate = readFileSync(certs.server, "utf8");
    // Over wss as over ws: a wrong secret is a 401 before the upgrade.
    await assert.rejects(
      webSocketConnector(gatewayUrl, {
        gatewayCertificate,
        secret: new LinkSecret("not-the-secret-of-any-probe"),
      }).connect(),
      /HTTP 401/,
    );
    // With the gateway's own certificate pinned and p1's secret the connector links (closed at once).
    const end = await webSocketConnector(gatewayUrl, { gatewayCertificate, secret }).connect();
    end.close(1000, "test done");
  });

  test("SIGHUP serves renewed certificate files to new connections; an unusable pair keeps the old one", async () => {
    assert.equal(await presented(gatewayUrl), fingerprint(certs.server));
    assert.equal(await presented(hubUrl), fingerprint(certs.server));
    // Renewal in place: same paths, new certificate and key.
    for (const [from, to] of [
      [certs.serverOnly, gatewayCert],
      [certs.serverOnlyKey, gatewayKey],
      [certs.serverOnly, hubCert],
      [certs.serverOnlyKey, hubKey],
    ] as const)
      copyFileSync(from, to);
    gateway.child.kill("SIGHUP");
    hub.child.kill("SIGHUP");
    await gateway.waitFor((l) => l.msg === "the gateway certificate was reloaded");
    await hub.waitFor((l) => l.msg === "the hub certificate was reloaded");
    assert.equal(await presented(gatewayUrl), fingerprint(certs.serverOnly));
    assert.equal(await presented(hubUrl), fingerprint(certs.serverOnly));
    // The renewed certificate is still one the clients' CA vouches for: the API answers.
    assert.equal((await getJson(`${hubUrl}/v0/ping`, ca)).status, 200);

    // A key that does not match: logged, and the renewed certificate stays in use.
    copyFileSync(certs.clientKey, gatewayKey);
    gateway.child.kill("SIGHUP");
    const refused = await gateway.waitFor((l) =>
      String(l.msg).startsWith("the gateway certificate was not reloaded"),
    );
    assert.match(JSON.stringify(refused), /cannot be used together/);
    assert.equal(await presented(gatewayUrl), fingerprint(certs.serverOnly));
    assert.equal(gateway.child.exitCode, null, "the gateway keeps running");
    // The probe's link, opened before the renewals, is still up.
    const status = await getJson(`${gatewayUrl}/v1/status`, ca);
    const links = (status.body as { links: { probe?: string; state: string }[] }).links;
    assert.ok(links.some((l) => l.probe === "p1" && l.state === "up"));
  });
});
