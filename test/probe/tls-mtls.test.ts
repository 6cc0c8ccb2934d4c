/**
 * Secure mode and per-sampler mTLS over real sockets (DESIGN 3.5), with certificates made
 * by `openssl` for this run (test/helpers/certs.ts): HTTPS on restApiHttpsPort beside HTTP with the
 * same routes; samplers with `verifyClientCertificate` take only HTTPS requests whose client
 * certificate chains to their CA (own file, or the -ssl-certificate-chain file); live changes of
 * those settings; startup errors naming the file; certificate changes logged as needing a restart.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { Agent, request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { PROBE_MAX_CLIENT_CA_FILE_BYTES, PROBE_MAX_CLIENT_CA_FILES } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import type { DeploymentSetup, ProbeSetup } from "../../src/config/setup.js";
import { buildProbe, type Probe } from "../../src/probe/app.js";
import { SamplerMtls } from "../../src/probe/tls/sampler-mtls.js";
import type { SecureModeFiles } from "../../src/probe/tls/secure-mode.js";
import { makeTestCerts, OPENSSL_SKIP, opensslAvailable, type TestCerts } from "../helpers/certs.js";
import { eventually, FakeGateway } from "../link/helpers.js";

const skip = opensslAvailable() ? false : OPENSSL_SKIP;

/** Log lines of one probe, parsed. */
class LogLines extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString().split("\n")) if (line !== "") this.lines.push(JSON.parse(line));
    done();
  }
  withMessage(text: string): Record<string, unknown>[] {
    return this.lines.filter((l) => typeof l.msg === "string" && l.msg.includes(text));
  }
}

interface Client {
  /** PEM paths of the client certificate (and chain) and key; none: no client certificate. */
  cert?: string;
  key?: string;
  agent?: Agent;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One request over a fresh connection (or `client.agent`'s); `base` decides HTTP or HTTPS. */
function call(
  certs: TestCerts,
  base: string,
  method: string,
  path: string,
  client: Client = {},
  body?: string,
) {
  return new Promise<Answer>((resolve, reject) => {
    const url = new URL(path, base);
    const options = {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      ...(url.protocol === "https:"
        ? {
            ca: readFileSync(certs.ca),
            ...(client.cert === undefined ? {} : { cert: readFileSync(client.cert) }),
            ...(client.key === undefined ? {} : { key: readFileSync(client.key) }),
            agent: client.agent ?? false,
          }
        : { agent: false }),
    };
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, body: text === "" ? {} : JSON.parse(text) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const FORBIDDEN = (sampler: string) => ({
  status: 403,
  title: "Client certificate required",
  body: `Sampler '${sampler}' accepts only HTTPS requests with a client certificate signed by its client CA.`,
});

/** The setup of these tests; `own` trusts `ownCa` and verifies client certificates when `ownVerify`. */
function setupOf(certs: TestCerts, ownCa = certs.ca, ownVerify = true): DeploymentSetup {
  return parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: open, plugin: rest-api }
          - { name: own, plugin: rest-api, verifyClientCertificate: ${ownVerify}, clientCaCertificate: { enabled: true, path: '${ownCa}' } }
          - { name: chain, plugin: rest-api, verifyClientCertificate: true }
          - { name: other, plugin: rest-api, verifyClientCertificate: true, clientCaCertificate: { enabled: true, path: '${certs.otherCa}' } }
          - { name: both, plugin: rest-api, verifyClientCertificate: true, clientCaCertificate: { enabled: true, path: '${certs.bothCas}' } }
`);
}

interface Running {
  probe: Probe;
  http: string;
  https: string;
  logs: LogLines;
}

async function startProbe(setup: DeploymentSetup, secure: SecureModeFiles | undefined): Promise<Running> {
  const logs = new LogLines();
  const probe = buildProbe({
    name: "p1",
    setup: setup.probes[0] as ProbeSetup,
    link: new FakeGateway(setup).connector,
    logger: pino({ level: "debug" }, logs),
    ...(secure === undefined ? {} : { secure }),
  });
  const { http, https } = await probe.start();
  await eventually(() => probe.linkStatus().state === "up", "the link to come up");
  return { probe, http, https: https ?? "", logs };
}

const DV = (sampler: string) => `/v1/managedEntity/me1/sampler/${sampler}/dataview/dv`;
const ROWS = JSON.stringify([{ name: "r1", v: 1 }]);

describe("secure mode and per-sampler mTLS", { skip }, () => {
  let certs: TestCerts;
  let running: Running;
  before(async () => {
    certs = makeTestCerts();
    running = await startProbe(setupOf(certs), {
      certificate: certs.server,
      key: certs.serverKey,
      chain: certs.ca,
    });
  });
  after(async () => {
    await running?.probe.stop(1_000);
    certs?.cleanup();
  });

  test("HTTPS listens beside HTTP, on another port, with the same routes", async () => {
    assert.match(running.http, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(running.https, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(running.http).port, new URL(running.https).port);
    for (const base of [running.http, running.https]) {
      assert.equal((await call(certs, base, "GET", "/v1/healthcheck")).status, 200);
      assert.deepEqual(await call(certs, base, "PUT", DV("open"), {}, ROWS), {
        status: 200,
        body: { rows: 1, duplicates: 0, dropped: 0 },
      });
      const wrongMethod = await call(certs, base, "PATCH", DV("open"));
      assert.equal(wrongMethod.status, 405);
    }
  });

  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, "http" | "https", string, (c: TestCerts) => Client, number][] = [
    ["plain HTTP to an mTLS sampler", "http", "own", () => ({}), 403],
    ["HTTPS without a client certificate", "https", "own", () => ({}), 403],
    ["a client certificate signed by the sampler's CA", "https", "own", (c) => ({ cert: c.client, key: c.clientKey }), 200],
    ["a client certificate signed by another CA", "https", "own", (c) => ({ cert: c.wrongClient, key: c.wrongClientKey }), 403],
    ["a client certificate sent with its intermediate CA", "https", "own", (c) => ({ cert: c.clientViaIntermediateChain, key: c.clientViaIntermediateKey }), 200],
    ["a client certificate whose intermediate CA is not sent", "https", "own", (c) => ({ cert: c.clientViaIntermediate, key: c.clientViaIntermediateKey }), 403],
    ["a certificate of the right CA for serverAuth only", "https", "own", (c) => ({ cert: c.serverOnly, key: c.serverOnlyKey }), 403],
    ["chain-file fallback: a certificate of the chain's CA", "https", "chain", (c) => ({ cert: c.client, key: c.clientKey }), 200],
    ["chain-file fallback: a certificate of another CA", "https", "chain", (c) => ({ cert: c.wrongClient, key: c.wrongClientKey }), 403],
    ["chain-file fallback over plain HTTP", "http", "chain", () => ({}), 403],
    ["a sampler trusting the other CA takes its certificate", "https", "other", (c) => ({ cert: c.wrongClient, key: c.wrongClientKey }), 200],
    ["a sampler trusting the other CA refuses the first CA's", "https", "other", (c) => ({ cert: c.client, key: c.clientKey }), 403],
    ["a CA file of two CAs: the first", "https", "both", (c) => ({ cert: c.client, key: c.clientKey }), 200],
    ["a CA file of two CAs: the second", "https", "both", (c) => ({ cert: c.wrongClient, key: c.wrongClientKey }), 200],
    ["a sampler without mTLS takes any client certificate", "https", "open", (c) => ({ cert: c.wrongClient, key: c.wrongClientKey }), 200],
  ];
  for (const [name, scheme, sampler, client, status] of cases) {
    test(`PUT dataview: ${name} → ${status}`, async () => {
      const base = scheme === "http" ? running.http : running.https;
      const answer = await call(certs, base, "PUT", DV(sampler), client(certs), ROWS);
      if (status === 403) assert.deepEqual(answer, { status, body: FORBIDDEN(sampler) });
      else assert.equal(answer.status, status, JSON.stringify(answer.body));
    });
  }

  test("every path of an mTLS sampler is guarded: GET sampler, row, stream, wrong method", async () => {
    const paths: [string, string][] = [
      ["GET", "/v1/managedEntity/me1/sampler/own"],
      ["PUT", `${DV("own")}/row/r1`],
      ["PUT", "/v1/managedEntity/me1/sampler/own/stream/s"],
      ["DELETE", DV("own")],
      ["PATCH", DV("own")],
    ];
    for (const [method, path] of paths) {
      assert.deepEqual(
        await call(certs, running.http, method, path, {}, method === "PUT" ? "{}" : undefined),
        {
          status: 403,
          body: FORBIDDEN("own"),
        },
      );
    }
    const good = { cert: certs.client, key: certs.clientKey };
    assert.equal(
      (await call(certs, running.https, "GET", "/v1/managedEntity/me1/sampler/own", good)).status,
      200,
    );
  });

  test("an unknown sampler is still a 404 on both ports", async () => {
    for (const base of [running.http, running.https]) {
      assert.equal((await call(certs, base, "PUT", DV("nope"), {}, ROWS)).status, 404);
    }
  });

  test("the chain-file fallback is logged once per sampler, naming the file", () => {
    const warnings = running.logs.withMessage("verified against the -ssl-certificate-chain file");
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.sampler, "chain");
    assert.equal(warnings[0]?.chainFile, certs.ca);
    assert.equal(warnings[0]?.level, 40);
  });

  test("a refused certificate is logged with the reason", () => {
    const refused = running.logs.withMessage("client certificate refused");
    assert.ok(refused.some((l) => String(l.reason).includes("does not chain to a trusted CA")));
    assert.ok(refused.some((l) => String(l.reason).includes("does not allow client authentication")));
  });
});

describe("mTLS settings change without a restart", { skip }, () => {
  let certs: TestCerts;
  let running: Running;
  let liveCa: string;
  let setup: DeploymentSetup;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  before(async () => {
    certs = makeTestCerts();
    liveCa = join(certs.dir, "live-ca.pem");
    copyFileSync(certs.ca, liveCa);
    for (const [from, to] of [
      [certs.server, "live-server.pem"],
      [certs.serverKey, "live-server.key"],
    ] as const)
      copyFileSync(from, join(certs.dir, to));
    setup = setupOf(certs, liveCa);
    running = await startProbe(setup, {
      certificate: join(certs.dir, "live-server.pem"),
      key: join(certs.dir, "live-server.key"),
    });
  });
  after(async () => {
    agent.destroy();
    await running?.probe.stop(1_000);
    certs?.cleanup();
  });

  const good = () => ({ cert: certs.client, key: certs.clientKey, agent });
  const wrong = () => ({ cert: certs.wrongClient, key: certs.wrongClientKey });
  const put = (client: Client, base = running.https) => call(certs, base, "PUT", DV("own"), client, ROWS);
  const reload = (next: DeploymentSetup) => running.probe.updateSetup(next.probes[0] as ProbeSetup);

  test("a new CA path applies at once, also on a kept-alive connection", async () => {
    assert.equal((await put(good())).status, 200);
    assert.equal((await put(good())).status, 200); // same connection, cached verification
    reload(setupOf(certs, certs.otherCa));
    assert.equal((await put(good())).status, 403);
    assert.equal((await put(wrong())).status, 200);
    reload(setup);
    assert.equal((await put(good())).status, 200);
  });

  test("a CA file replaced on disk applies at the next reload", async () => {
    writeFileSync(liveCa, readFileSync(certs.otherCa));
    reload(setup);
    assert.equal((await put(good())).status, 403);
    assert.equal((await put(wrong())).status, 200);
    copyFileSync(certs.ca, liveCa);
    reload(setup);
    assert.equal((await put(good())).status, 200);
  });

  test("turning verifyClientCertificate off opens plain HTTP at once; on closes it again", async () => {
    assert.equal((await put({}, running.http)).status, 403);
    reload(setupOf(certs, liveCa, false));
    assert.equal((await put({}, running.http)).status, 200);
    reload(setup);
    assert.equal((await put({}, running.http)).status, 403);
  });

  test("a CA file that cannot be read refuses the sampler's requests and is logged", async () => {
    const missing = join(certs.dir, "missing-ca.pem");
    reload(setupOf(certs, missing));
    assert.equal((await put(good())).status, 403);
    assert.ok(
      running.logs.withMessage("client CA file unusable").some((l) => l.file === missing),
      "the unreadable CA file is logged",
    );
    reload(setup);
    assert.equal((await put(good())).status, 200);
  });

  test("changed server certificate files are logged as needing a restart", async () => {
    const cert = join(certs.dir, "live-server.pem");
    writeFileSync(cert, `${readFileSync(cert, "utf8")}\n`);
    reload(setup);
    const logged = running.logs.withMessage("take effect at the next probe restart");
    assert.deepEqual(logged.at(-1)?.files, [cert]);
    // The server keeps its certificate: HTTPS still answers.
    assert.equal((await put(good())).status, 200);
  });
});

describe("secure mode startup and plain mode", { skip }, () => {
  let certs: TestCerts;
  before(() => {
    certs = makeTestCerts();
  });
  after(() => certs?.cleanup());

  // biome-ignore format: one line per case (STYLE 16)
  const startErrors: [string, (c: TestCerts) => SecureModeFiles, RegExp][] = [
    ["a missing certificate file", (c) => ({ certificate: join(c.dir, "nope.pem"), key: c.serverKey }), /cannot read the -ssl-certificate file '.*nope\.pem': ENOENT/],
    ["a missing key file", (c) => ({ certificate: c.server, key: join(c.dir, "nope.key") }), /cannot read the -ssl-certificate-key file '.*nope\.key'/],
    ["a missing chain file", (c) => ({ certificate: c.server, key: c.serverKey, chain: join(c.dir, "chain.pem") }), /cannot read the -ssl-certificate-chain file '.*chain\.pem'/],
    ["a certificate file that is not PEM", (c) => ({ certificate: join(c.dir, "ca.ext"), key: c.serverKey }), /-ssl-certificate file '.*ca\.ext': not a PEM file/],
    ["a key that does not match the certificate", (c) => ({ certificate: c.server, key: c.clientKey }), /-ssl-certificate file '.*server\.pem' and the -ssl-certificate-key file '.*client\.key' cannot be used together/],
  ];
  for (const [name, files, message] of startErrors) {
    test(`start fails on ${name}, naming the file`, async () => {
      const setup = setupOf(certs);
      const probe = buildProbe({
        name: "p1",
        setup: setup.probes[0] as ProbeSetup,
        link: new FakeGateway(setup).connector,
        logger: pino({ level: "silent" }),
        secure: files(certs),
      });
      await assert.rejects(probe.start(), message);
      await probe.stop(0);
    });
  }

  test("without secure mode there is no HTTPS listener, and mTLS samplers refuse everything", async () => {
    const running = await startProbe(setupOf(certs), undefined);
    try {
      assert.equal(running.https, "");
      assert.equal((await call(certs, running.http, "PUT", DV("open"), {}, ROWS)).status, 200);
      assert.deepEqual(await call(certs, running.http, "PUT", DV("own"), {}, ROWS), {
        status: 403,
        body: FORBIDDEN("own"),
      });
      const warned = running.logs.withMessage("not in secure mode");
      assert.deepEqual(warned.map((l) => l.sampler).sort(), ["both", "chain", "other", "own"]);
      assert.equal(
        running.logs.withMessage("no -ssl-certificate-chain was given").length,
        1,
        "the chain fallback without a chain file is logged once",
      );
    } finally {
      await running.probe.stop(1_000);
    }
  });
});

describe("client CA files are bounded", () => {
  const probeWith = (paths: string[]): ProbeSetup => ({
    name: "p1",
    hostname: "127.0.0.1",
    restApiHttpPort: 0,
    restApiHttpsPort: 0,
    memoryProtection: { limitMb: 2048, ratio: 0.9 },
    managedEntities: [
      {
        name: "me1",
        attributes: {},
        samplers: paths.map((path, i) => ({
          name: `s${i}`,
          type: "",
          plugin: "rest-api" as const,
          bufferSize: 1,
          rowLimit: 1,
          verifyClientCertificate: true,
          clientCaCertificate: { enabled: true, path },
          schema: { columns: {} },
        })),
      },
    ],
  });

  test(`at most ${PROBE_MAX_CLIENT_CA_FILES} distinct files; the rest are refused and logged`, () => {
    const logs = new LogLines();
    const mtls = new SamplerMtls({ secure: true, logger: pino(logs) });
    const paths = Array.from({ length: PROBE_MAX_CLIENT_CA_FILES + 2 }, (_, i) => `/nonexistent/ca-${i}.pem`);
    mtls.configure(probeWith(paths));
    assert.equal(logs.withMessage("too many distinct client CA files").length, 2);
    assert.equal(logs.withMessage("client CA file unusable").length, PROBE_MAX_CLIENT_CA_FILES);
  });

  test(`a CA file larger than ${PROBE_MAX_CLIENT_CA_FILE_BYTES} bytes is not read`, () => {
    const dir = mkdtempSync(join(tmpdir(), "vigil-ca-"));
    try {
      const big = join(dir, "big.pem");
      writeFileSync(big, Buffer.alloc(PROBE_MAX_CLIENT_CA_FILE_BYTES + 1, "A"));
      const logs = new LogLines();
      const mtls = new SamplerMtls({ secure: true, logger: pino(logs) });
      mtls.configure(probeWith([big]));
      assert.match(
        String(logs.withMessage("client CA file unusable")[0]?.reason),
        /larger than 1048576 bytes/,
      );
      assert.equal(mtls.counters().caFileReads, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
