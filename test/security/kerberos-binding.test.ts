/**
 * Kerberos either works or the hub does not start (DESIGN 5.4): a setup that enables it on an
 * install whose optional `kerberos` binding is missing (`npm ci` on a machine without the Kerberos
 * headers, where npm drops the optional package whose build failed) stops `vigil hub` and fails
 * `vigil validate`, naming the fix.
 *
 * The missing binding is made for real, not by replacing vigil's loader: the test copies the built
 * `dist/` into a throwaway folder and gives it a `node_modules` of links to every installed package
 * but `kerberos`, the tree such an install leaves. Node's own resolution then fails to find the
 * package from there, as it would on that machine (checked first: the test skips if some folder
 * above the copy still provides one).
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { tempDir, VIGIL_BIN, VigilProcess } from "../helpers/vigil-process.js";

const ROOT = resolve(VIGIL_BIN, "..", "..", "..");
const dir = tempDir("krb-binding");
// Registered first, so the folder goes even when building the install below fails (no dist/ yet)
// or the suite is skipped.
after(() => dir.remove());

/** A copy of the install without the `kerberos` package; returns the path of its CLI. */
function installWithoutKerberos(): string {
  const install = join(dir.path, "install");
  mkdirSync(join(install, "node_modules"), { recursive: true });
  cpSync(join(ROOT, "dist"), join(install, "dist"), { recursive: true });
  cpSync(join(ROOT, "package.json"), join(install, "package.json"));
  const modules = join(ROOT, "node_modules");
  for (const name of readdirSync(modules)) {
    if (name === "kerberos" || name === ".bin") continue;
    symlinkSync(join(modules, name), join(install, "node_modules", name));
  }
  return join(install, "dist", "cli", "main.js");
}

const cli = installWithoutKerberos();
const resolvable =
  spawnSync(process.execPath, ["-e", "require.resolve('kerberos')"], {
    cwd: join(dir.path, "install", "dist"),
  }).status === 0;

const SETUP = `gateway:
  name: G
hub:
  port: 0
  security:
    enabled: true
    kerberos:
      enabled: true
      keytab: ${join(dir.path, "http.keytab")}
      servicePrincipal: HTTP/hub.test@TEST.REALM
`;

describe("a setup that enables Kerberos on an install without the kerberos binding", {
  skip: resolvable ? "a kerberos package is resolvable above the test's folder" : false,
  timeout: 60_000,
}, () => {
  writeFileSync(join(dir.path, "setup.yaml"), SETUP);

  test("vigil hub does not start: exit code 1 and the fix on stderr", async () => {
    const hub = new VigilProcess(
      spawn(process.execPath, [cli, "hub", "--config", "setup.yaml", "--data-dir", "data"], {
        cwd: dir.path,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    // Whichever comes first: the exit, or a hub that listens without Kerberos (the failure this
    // test guards against).
    const listening = hub
      .waitFor((l) => l.msg === "listening")
      .then(
        () => "listening",
        () => "exited",
      );
    const outcome = await Promise.race([hub.exited.then(() => "exited"), listening]);
    const { code } = await hub.stop();
    assert.equal(outcome, "exited", "the hub started with Kerberos enabled and no binding");
    assert.equal(code, 1);
    assert.match(
      hub.stderr,
      /hub\.security\.kerberos is enabled but the optional kerberos package did not load/,
    );
    assert.match(hub.stderr, /libkrb5-dev/);
    assert.match(hub.stderr, /npm ci/);
  });

  test("vigil validate fails naming the fix", () => {
    const run = spawnSync(process.execPath, [cli, "validate", "--config", "setup.yaml"], {
      cwd: dir.path,
      encoding: "utf8",
      timeout: 50_000,
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /setup\.yaml:hub\.security\.kerberos\.enabled: .*libkrb5-dev.*npm ci/);
  });

  test("the same setup passes validate with the installed binding (where it loads)", () => {
    const run = spawnSync(process.execPath, [VIGIL_BIN, "validate", "--config", "setup.yaml"], {
      cwd: dir.path,
      encoding: "utf8",
      timeout: 50_000,
    });
    const loads = spawnSync(process.execPath, ["-e", "require('kerberos')"], { cwd: ROOT }).status === 0;
    assert.equal(run.status, loads ? 0 : 1, run.stderr);
  });
});
