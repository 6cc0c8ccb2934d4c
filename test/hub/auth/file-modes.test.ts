/**
 * File permissions of the data dir (docs/security.md): 0700 for it and its folders,
 * 0600 for every file (signing key, DuckDB files, dead letters, sink files), after `vigil up`
 * (startSystem) and after key creation; looser entries are reported at start.
 */
import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { startSystem } from "../../../src/compose/system.js";
import { parseSetup } from "../../../src/config/load-setup.js";
import type { HubSetup } from "../../../src/config/setup.js";
import { looseModes } from "../../../src/fs/private-files.js";
import { createHttpApp } from "../../../src/http/server.js";
import { registerAuth } from "../../../src/hub/auth/auth.js";
import { basicAuthorization } from "../../../src/hub/auth/credentials.js";

const dirs: string[] = [];
after(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "vigil-modes-"));
  dirs.push(dir);
  return dir;
}

/** Every entry under `dir` (itself included) with its permission bits, as `path mode` lines. */
async function modes(dir: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const visit = async (path: string) => {
    const stats = await stat(path);
    found.set(path, stats.mode & 0o777);
    if (stats.isDirectory()) for (const name of await readdir(path)) await visit(join(path, name));
  };
  await visit(dir);
  return found;
}

function assertPrivate(found: Map<string, number>): void {
  for (const [path, mode] of found) {
    assert.equal(mode & 0o077, 0, `${path} is mode 0${mode.toString(8)}`);
  }
}

const security: HubSetup["security"] = {
  enabled: true,
  tokenLifetime: 300,
  appKeys: [{ clientId: "reporting", clientSecret: "s3cret", roles: ["read"] }],
  kerberos: { enabled: false, keytab: "", servicePrincipal: "" },
  kerberosRoles: ["read"],
};

describe("data dir modes", () => {
  test("after vigil up (startSystem) and a token: the data dir 0700, every file in it 0600", async () => {
    const root = await tempDir();
    const dataDir = join(root, "nested", "data");
    const setup = parseSetup(`
gateway:
  name: GW-MODES
  port: 0
  publish: [memory, { file: ./events.ndjson }]
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - { name: web-01, samplers: [{ name: orders, plugin: rest-api }] }
hub:
  port: 0
  security:
    enabled: true
    appKeys: [{ clientId: reporting, clientSecret: s3cret }]
`);
    const system = await startSystem({
      setup,
      dataDir,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
    try {
      const hub = system.urls.hub ?? "";
      const r = await fetch(`${hub}/token`, {
        headers: { authorization: basicAuthorization("reporting", "s3cret") },
      });
      assert.equal(r.status, 200);
      const probe = system.urls["probe:p1"] ?? "";
      const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue/row/r1`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ queued: "5" }),
      });
      assert.ok(put.status < 500, `probe PUT answered ${put.status}`);
      const found = await modes(dataDir);
      assert.equal(found.get(dataDir), 0o700);
      assert.equal(found.get(join(dataDir, "keys", "hub-signing-key.json")), 0o600);
      assert.equal(found.get(join(dataDir, "vigil.duckdb")), 0o600);
      assertPrivate(found);
    } finally {
      await system.stop(5_000);
    }
    assertPrivate(await modes(dataDir));
  });

  test("registerAuth warns about a looser data dir, folder or file, naming the fix", async () => {
    const dataDir = await tempDir();
    await chmod(dataDir, 0o755);
    await mkdir(join(dataDir, "old"));
    await chmod(join(dataDir, "old"), 0o750); // chmod, not a mode at creation: the umask may be 0077
    await writeFile(join(dataDir, "old", "vigil.duckdb"), "");
    await chmod(join(dataDir, "old", "vigil.duckdb"), 0o644);
    const lines: string[] = [];
    const app = createHttpApp({
      logger: pino({ level: "warn" }, { write: (line: string) => void lines.push(line) }),
    });
    try {
      await registerAuth(app, { security, dataDir });
    } finally {
      await app.close();
    }
    const log = lines.join("");
    assert.match(log, new RegExp(`${dataDir} is mode 0755, readable by other users; run chmod 0700 on it`));
    assert.match(log, /old is mode 0750, readable by other users; run chmod 0700 on it/);
    assert.match(log, /vigil\.duckdb is mode 0644, readable by other users; run chmod 0600 on it/);
    // The key the hub just created is private, and nothing was changed behind the operator's back.
    assert.equal((await stat(join(dataDir, "keys", "hub-signing-key.json"))).mode & 0o777, 0o600);
    assert.equal((await stat(dataDir)).mode & 0o777, 0o755);
    assert.equal((await looseModes(dataDir)).length, 3);
  });
});
