/**
 * The secure-mode flags (DESIGN 1): the seed's single-dash spelling and the `--` one, their checks,
 * and `vigil probe -secure …` end to end (the real command, run from source) serving HTTPS.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Command } from "commander";
import {
  addSecureModeOptions,
  doubleDashSecureFlags,
  type SecureFlagValues,
  secureModeFromFlags,
} from "../../src/probe/tls/secure-flags.js";
import { makeTestCerts, OPENSSL_SKIP, opensslAvailable, type TestCerts } from "../helpers/certs.js";
import { needs } from "../helpers/needs.js";
import { tempDir, VigilProcess, writeFile } from "../helpers/vigil-process.js";

/** The repository: the command runs from source through tsx, which resolves from here. */
const ROOT = join(import.meta.dirname, "..", "..");

/** A command like `vigil probe`: a `--name <name>` option beside the secure-mode flags. */
function probeLike(): Command {
  const command = addSecureModeOptions(new Command("probe")).option("--name <name>");
  command.exitOverride().action(() => {});
  return command;
}

describe("secure-mode flags", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const rewrites: [string, string[], string[]][] = [
    ["the seed's spelling", ["-secure", "-ssl-certificate", "c", "-ssl-certificate-key", "k", "-ssl-certificate-chain", "ch"], ["--secure", "--ssl-certificate", "c", "--ssl-certificate-key", "k", "--ssl-certificate-chain", "ch"]],
    ["the = form", ["-ssl-certificate=c.pem"], ["--ssl-certificate=c.pem"]],
    ["the -- spelling is kept", ["--secure", "--ssl-certificate", "c"], ["--secure", "--ssl-certificate", "c"]],
    ["an option's value is kept", ["--name", "-secure", "-secure"], ["--name", "-secure", "--secure"]],
    ["a certificate path that looks like a flag is kept", ["-ssl-certificate", "-secure"], ["--ssl-certificate", "-secure"]],
    ["everything after -- is kept", ["--", "-secure"], ["--", "-secure"]],
    ["other single-dash words are kept", ["-s", "-securex", "-ssl"], ["-s", "-securex", "-ssl"]],
  ];
  for (const [name, argv, expected] of rewrites) {
    test(`rewrite: ${name}`, () => assert.deepEqual(doubleDashSecureFlags(probeLike(), argv), expected));
  }

  test("commander reads the single-dash flags of a subcommand", () => {
    const program = new Command("vigil").exitOverride();
    const probe = addSecureModeOptions(program.command("probe")).option("--name <name>");
    let seen: SecureFlagValues & { name?: string } = {};
    probe.exitOverride().action((options: typeof seen) => {
      seen = options;
    });
    program.parse(
      ["probe", "--name", "p1", "-secure", "-ssl-certificate", "s.pem", "-ssl-certificate-key=s.key"],
      { from: "user" },
    );
    assert.deepEqual(seen, { name: "p1", secure: true, sslCertificate: "s.pem", sslCertificateKey: "s.key" });
    assert.deepEqual(secureModeFromFlags(seen), { certificate: "s.pem", key: "s.key" });
  });

  // biome-ignore format: one line per case (STYLE 16)
  const checks: [string, SecureFlagValues, unknown][] = [
    ["no flags: no secure mode", {}, undefined],
    ["all flags", { secure: true, sslCertificate: "c", sslCertificateKey: "k", sslCertificateChain: "ch" }, { certificate: "c", key: "k", chain: "ch" }],
    ["-secure without a key", { secure: true, sslCertificate: "c" }, /-secure needs -ssl-certificate FILE and -ssl-certificate-key FILE/],
    ["-secure alone", { secure: true }, /-secure needs/],
    ["a certificate without -secure", { sslCertificate: "c", sslCertificateChain: "ch" }, /-ssl-certificate, -ssl-certificate-chain given without -secure; add -secure/],
  ];
  for (const [name, values, expected] of checks) {
    test(`check: ${name}`, () => {
      if (expected instanceof RegExp) assert.throws(() => secureModeFromFlags(values), expected);
      else assert.deepEqual(secureModeFromFlags(values), expected);
    });
  }
});

describe("vigil probe -secure, end to end", {
  skip: needs(opensslAvailable() ? false : OPENSSL_SKIP),
}, () => {
  let certs: TestCerts;
  let dir: ReturnType<typeof tempDir>;
  let vigil: VigilProcess | undefined;
  before(() => {
    certs = makeTestCerts();
    dir = tempDir("probe-tls");
  });
  after(async () => {
    await vigil?.stop("SIGKILL");
    certs?.cleanup();
    dir?.remove();
  });

  test("serves HTTPS on restApiHttpsPort and mTLS for a sampler", async () => {
    const config = writeFile(
      dir.path,
      "setup.yaml",
      `gateway: { name: GW, port: 1 }
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: s, plugin: rest-api, verifyClientCertificate: true }
`,
    );
    const main = join(ROOT, "src", "cli", "main.ts");
    const args = ["probe", "--config", config, "--name", "p1", "--host", "127.0.0.1"];
    const secure = ["-secure", "-ssl-certificate", certs.server, "-ssl-certificate-key", certs.serverKey];
    const tls = ["-ssl-certificate-chain", certs.ca];
    vigil = new VigilProcess(
      spawn(process.execPath, ["--import", "tsx", main, ...args, ...secure, ...tls], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    const line = await vigil.waitFor((l) => l.msg === "listening" && l.service === "probe");
    const https = String(line.https);
    assert.match(https, /^https:\/\/127\.0\.0\.1:\d+$/);
    const put = (client: { cert?: string; key?: string }) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          new URL("/v1/managedEntity/me1/sampler/s/dataview/d", https),
          {
            method: "PUT",
            agent: false,
            ca: readFileSync(certs.ca),
            ...(client.cert === undefined ? {} : { cert: readFileSync(client.cert) }),
            ...(client.key === undefined ? {} : { key: readFileSync(client.key) }),
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify([{ name: "r", v: 1 }]));
      });
    assert.equal(await put({ cert: certs.client, key: certs.clientKey }), 200);
    assert.equal(await put({ cert: certs.wrongClient, key: certs.wrongClientKey }), 403);
    assert.equal(await put({}), 403);
    assert.ok(
      vigil.logs.some((l) => String(l.msg).includes("-ssl-certificate-chain file") && l.sampler === "s"),
      "the chain-file fallback is logged",
    );
  });

  test("vigil up -secure serves HTTPS on each probe's restApiHttpsPort", async () => {
    const config = writeFile(
      dir.path,
      "up.yaml",
      `gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities: [{ name: me1, samplers: [{ name: s, plugin: rest-api }] }]
hub: { port: 0, security: { enabled: false } }
`,
    );
    const up = new VigilProcess(
      spawn(
        process.execPath,
        // biome-ignore format: the command line reads best on one line
        ["--import", "tsx", join(ROOT, "src", "cli", "main.ts"), "up", "--config", config, "--data-dir", join(dir.path, "data"), "-secure", "-ssl-certificate", certs.server, "-ssl-certificate-key", certs.serverKey],
        { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
      ),
    );
    try {
      const line = await up.waitFor((l) => l.msg === "listening" && l.service === "probe");
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          new URL("/v1/healthcheck", String(line.https)),
          { agent: false, ca: readFileSync(certs.ca) },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end();
      });
      assert.equal(status, 200);
      const { code } = await up.stop("SIGTERM");
      assert.equal(code, 0, up.stderr);
    } finally {
      await up.stop("SIGKILL");
    }
  });

  test("a missing certificate file stops the command with a message naming it", async () => {
    const main = join(ROOT, "src", "cli", "main.ts");
    const config = join(dir.path, "setup.yaml");
    const missing = join(dir.path, "missing.pem");
    const failing = new VigilProcess(
      spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          main,
          "probe",
          "--config",
          config,
          "--name",
          "p1",
          "-secure",
          "-ssl-certificate",
          missing,
          "-ssl-certificate-key",
          certs.serverKey,
        ],
        { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
      ),
    );
    const { code } = await failing.exited;
    assert.notEqual(code, 0);
    const text = failing.stderr + JSON.stringify(failing.logs);
    assert.ok(text.includes(`cannot read the -ssl-certificate file '${missing}'`), text);
  });
});
