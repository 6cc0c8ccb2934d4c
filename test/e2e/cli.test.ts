/**
 * The `vigil` command through its real binary: `validate` (DESIGN 1, the setup editor's check) and
 * `up --demo` (the demo generator pushes through the probe's real HTTP API).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { eventually, startVigil, tempDir, VIGIL_BIN, writeFile } from "../helpers/vigil-process.js";

const dir = tempDir("cli");
after(() => dir.remove());

function validate(yaml: string) {
  const path = writeFile(dir.path, `setup-${Math.random().toString(36).slice(2)}.yaml`, yaml);
  const result = spawnSync(process.execPath, [VIGIL_BIN, "validate", "--config", path], { encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("vigil validate", () => {
  test("a valid setup prints OK and exits 0", () => {
    const result = validate("gateway: { name: GW }\n");
    assert.equal(result.status, 0);
    assert.match(result.stdout, /OK/);
  });

  test("every error is printed with its path, and the exit code is 1", () => {
    const result = validate(`
gateway: { name: GW, prot: 1 }
probes:
  - name: p1
    managedEntities:
      - name: me
        samplers:
          - name: s
            plugin: rest-api
            rowlimit: 5
            clientCaCertificate: { enabled: true, path: "" }
`);
    assert.equal(result.status, 1);
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 3, result.stderr);
    assert.match(result.stderr, /gateway\.prot: unknown key 'prot'; did you mean 'port'\?/);
    assert.match(result.stderr, /samplers\[0\]\.rowlimit: unknown key 'rowlimit'; did you mean 'rowLimit'\?/);
    assert.match(result.stderr, /clientCaCertificate.*Client CA certificate enabled without a path/);
  });

  test("a missing file is an error, not a crash", () => {
    const result = spawnSync(
      process.execPath,
      [VIGIL_BIN, "validate", "--config", join(dir.path, "nope.yaml")],
      {
        encoding: "utf8",
      },
    );
    assert.equal(result.status, 1);
    assert.doesNotMatch(result.stderr, /at .*\.js:\d+/, "no stack trace");
  });
});

describe("a hub-only setup (only hub:)", () => {
  const HUB_ONLY = "hub: { port: 0, security: { enabled: false } }\n";

  test("vigil validate says it is OK, as a hub-only setup", () => {
    const result = validate(HUB_ONLY);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /: OK, a hub-only setup: `vigil hub` runs it;/);
  });

  for (const command of ["gateway", "up"]) {
    test(`vigil ${command} refuses it, saying what it is (exit 1)`, () => {
      const path = writeFile(dir.path, `hub-only-${command}.yaml`, HUB_ONLY);
      const result = spawnSync(
        process.execPath,
        [VIGIL_BIN, command, "--config", path, "--data-dir", join(dir.path, `hub-only-${command}`)],
        { encoding: "utf8" },
      );
      assert.equal(result.status, 1, result.stderr);
      assert.match(
        result.stderr,
        /^vigil: .*:gateway: this is a hub-only setup \('hub' without 'gateway'\), which only `vigil hub` runs;/,
      );
    });
  }
});

describe("vigil up --demo", () => {
  test("the demo generator pushes a demo dataview to every rest-api sampler of the setup", async () => {
    const config = writeFile(
      dir.path,
      "demo.yaml",
      `
gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - { name: a, samplers: [{ name: s1, plugin: rest-api }] }
      - { name: b, samplers: [{ name: s2, type: t, plugin: rest-api }] }
hub: { port: 0, security: { enabled: false } }
`,
    );
    const vigil = startVigil(
      ["up", "--config", config, "--data-dir", join(dir.path, "demo-data"), "--demo"],
      dir.path,
    );
    try {
      const hub = await vigil.url("hub");
      const metrics = await eventually(async () => {
        const response = await fetch(`${hub}/v0/entities/2/metrics`);
        if (response.status !== 200) return undefined;
        const body = (await response.json()) as { name: string }[];
        return body.some((m) => m.name === "s2(t)/demo/{rowname}/value") ? body : undefined;
      });
      assert.ok(metrics.length > 0);
    } finally {
      assert.equal((await vigil.stop()).code, 0);
    }
  });
});
