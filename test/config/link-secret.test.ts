/**
 * Link secrets in the setup (DESIGN 2, 5.4b): `linkSecret` or `linkSecretFile` (read at load, mode
 * 0600), at most one, at least 16 characters, never shared by two probes; `vigil validate` reports
 * each problem without quoting the secret; the loaded setup keeps the secrets apart from the
 * probes' parts (what `welcome` carries) and never shows one in JSON or `inspect`. `vigil probe`'s
 * own secret comes from `--link-secret-file`, else VIGIL_LINK_SECRET, else its setup entry.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { inspect, isDeepStrictEqual } from "node:util";
import { validateSetupFile } from "../../src/cli/commands/validate.js";
import { LINK_SECRET_ENV, LinkSecret, probeLinkSecret } from "../../src/config/link-secret.js";
import { loadSetupFile, parseSetup } from "../../src/config/load-setup.js";

const dir = mkdtempSync(join(tmpdir(), "vigil-link-secret-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const SECRET_A = "secret-a-0123456789abcdef";
const SECRET_B = "secret-b-0123456789abcdef";

let files = 0;
function setupFile(probes: string): string {
  const path = join(dir, `setup-${files++}.yaml`);
  writeFileSync(path, `gateway: {name: G}\nprobes:\n${probes}`);
  return path;
}
function secretFile(name: string, text: string, mode = 0o600): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

describe("link secrets in the setup", () => {
  secretFile("a.secret", `${SECRET_A}\n`);
  secretFile("open.secret", `${SECRET_B}\n`, 0o644);
  secretFile("short.secret", "short\n");

  // [what it shows, the probes' YAML, the issue after `FILE:` ("" when valid)]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, string][] = [
    ["an inline secret", `  - {name: p1, linkSecret: ${SECRET_A}}\n`, ""],
    ["a secret file, relative to the setup", "  - {name: p1, linkSecretFile: a.secret}\n", ""],
    ["no secret (an in-process or refused probe)", "  - {name: p1}\n", ""],
    ["a secret too short", "  - {name: p1, linkSecret: abc}\n", "probes[0].linkSecret: a link secret needs at least 16 characters; this one has 3 (line 3, column 28)"],
    ["a secret with a space", "  - {name: p1, linkSecret: \"0123456789 abcdefgh\"}\n", "probes[0].linkSecret: a link secret is printable ASCII without spaces (it travels in an HTTP header) (line 3, column 28)"],
    ["both keys", `  - {name: p1, linkSecret: ${SECRET_A}, linkSecretFile: a.secret}\n`, "probes[0].linkSecretFile: give the probe's link secret once: linkSecret or linkSecretFile, not both (line 3, column 71)"],
    ["two probes sharing a secret", `  - {name: p1, linkSecret: ${SECRET_A}, restApiHttpPort: 0, restApiHttpsPort: 0}\n  - {name: p2, linkSecretFile: a.secret, restApiHttpPort: 0, restApiHttpsPort: 0}\n`, "probes[1].linkSecretFile: the same link secret as probes[0].linkSecret; give each probe a secret of its own (line 4, column 32)"],
    ["a secret file others may read", "  - {name: p1, linkSecretFile: open.secret}\n", `probes[0].linkSecretFile: cannot read the link secret file: ${join(dir, "open.secret")} is mode 0644, open to other users; run chmod 600 on it (line 3, column 32)`],
    ["a secret file too short", "  - {name: p1, linkSecretFile: short.secret}\n", `probes[0].linkSecretFile: ${join(dir, "short.secret")}: a link secret needs at least 16 characters; this one has 5 (line 3, column 32)`],
  ];
  for (const [name, yaml, issue] of cases) {
    test(name, () => {
      const path = setupFile(yaml);
      const result = validateSetupFile(path);
      assert.deepEqual(
        result,
        issue === "" ? { ok: true, text: `${path}: OK` } : { ok: false, text: `${path}:${issue}` },
      );
      assert.ok(!result.text.includes(SECRET_A) && !result.text.includes(SECRET_B), "the secret is quoted");
    });
  }

  test("the loaded setup keeps secrets apart from the probes' parts and never shows them", () => {
    const setup = loadSetupFile(setupFile(`  - {name: p1, linkSecretFile: a.secret}\n`));
    assert.equal(setup.linkSecrets.length, 1);
    assert.equal(setup.linkSecrets[0]?.probe, "p1");
    assert.equal(setup.linkSecrets[0]?.secret.reveal(), SECRET_A);
    assert.ok(
      !("linkSecret" in (setup.probes[0] as object)) && !("linkSecretFile" in (setup.probes[0] as object)),
    );
    for (const text of [
      JSON.stringify(setup),
      inspect(setup, { depth: 10 }),
      String(setup.linkSecrets[0]?.secret),
    ]) {
      assert.ok(!text.includes(SECRET_A), text);
    }
  });
});

describe("whose secret files a process reads", () => {
  const probes =
    "  - {name: p1, linkSecretFile: a.secret, restApiHttpPort: 0, restApiHttpsPort: 0}\n" +
    "  - {name: p2, linkSecretFile: elsewhere/p2.secret, restApiHttpPort: 0, restApiHttpsPort: 0}\n";

  test("the gateway (every file) fails on a file missing here; a probe reads its own only; a hub none", () => {
    const path = setupFile(probes);
    assert.throws(() => loadSetupFile(path), /probes\[1\]\.linkSecretFile: cannot read the link secret file/);
    const probe = loadSetupFile(path, { linkSecretFiles: { probe: "p1" } });
    assert.deepEqual(
      probe.linkSecrets.map((s) => [s.probe, s.secret.reveal()]),
      [["p1", SECRET_A]],
    );
    assert.deepEqual(loadSetupFile(path, { linkSecretFiles: "none" }).linkSecrets, []);
  });

  test("two setups that differ only by a secret are not equal, so a reload applies the new one", () => {
    const one = parseSetup(`gateway: {name: G}\nprobes:\n  - {name: p1, linkSecret: ${SECRET_A}}\n`);
    const two = parseSetup(`gateway: {name: G}\nprobes:\n  - {name: p1, linkSecret: ${SECRET_B}}\n`);
    const same = parseSetup(`gateway: {name: G}\nprobes:\n  - {name: p1, linkSecret: ${SECRET_A}}\n`);
    assert.equal(isDeepStrictEqual(one, two), false);
    assert.equal(isDeepStrictEqual(one, same), true);
  });
});

describe("the secret vigil probe presents", () => {
  const saved = process.env[LINK_SECRET_ENV];
  after(() => {
    if (saved === undefined) delete process.env[LINK_SECRET_ENV];
    else process.env[LINK_SECRET_ENV] = saved;
  });
  const file = secretFile("probe.secret", `${SECRET_A}\r\n`);
  const fallback = new LinkSecret("fallback-secret-0123456789");

  test("--link-secret-file first, then VIGIL_LINK_SECRET, then the setup's own", () => {
    process.env[LINK_SECRET_ENV] = SECRET_B;
    assert.equal(probeLinkSecret(file, fallback)?.reveal(), SECRET_A);
    assert.equal(probeLinkSecret(undefined, fallback)?.reveal(), SECRET_B);
    delete process.env[LINK_SECRET_ENV];
    assert.equal(probeLinkSecret(undefined, fallback), fallback);
    assert.equal(probeLinkSecret(undefined), undefined);
  });

  test("an unusable secret is an error naming the fix, without the secret", () => {
    process.env[LINK_SECRET_ENV] = "too-short";
    assert.throws(
      () => probeLinkSecret(undefined),
      /VIGIL_LINK_SECRET: a link secret needs at least 16 characters/,
    );
    delete process.env[LINK_SECRET_ENV];
    assert.throws(() => probeLinkSecret(join(dir, "open.secret")), /chmod 600/);
    assert.throws(() => probeLinkSecret(join(dir, "missing.secret")), /cannot read the link secret file/);
  });
});
