import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { validateSetupFile } from "../../src/cli/commands/validate.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const dir = mkdtempSync(join(tmpdir(), "vigil-validate-"));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** Writes `yaml` to a new file of the temp folder and returns its path. */
function setupFile(yaml: string): string {
  const path = join(dir, `setup-${files++}.yaml`);
  writeFileSync(path, yaml);
  return path;
}

describe("vigil validate: the new limits and lone surrogates are reported like every other issue", () => {
  // [what it shows, YAML, the issue line without the `FILE:` prefix]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, string][] = [
    ["gateway.maxColumnsPerDataview below 1", "gateway:\n  name: G\n  maxColumnsPerDataview: 0\n", "gateway.maxColumnsPerDataview: 0 is out of range; must be at least 1 (distinct columns per dataview) (line 3, column 26)"],
    ["gateway.maxCellLength not an integer", "gateway:\n  name: G\n  maxCellLength: 1.5\n", "gateway.maxCellLength: expected an integer, got 1.5 (UTF-16 code units per cell) (line 3, column 18)"],
    ["gateway.memoryProtection.limitMb below 1", "gateway:\n  name: G\n  memoryProtection: {limitMb: 0}\n", "gateway.memoryProtection.limitMb: 0 is out of range; must be at least 1 (line 3, column 31)"],
    ["gateway.memoryProtection.ratio above 1", "gateway:\n  name: G\n  memoryProtection: {ratio: 2}\n", "gateway.memoryProtection.ratio: 2 is out of range; must be greater than 0 and at most 1 (line 3, column 29)"],
    ["hub.maxSeriesPerEntity below 1", "gateway: {name: G}\nhub:\n  maxSeriesPerEntity: -5\n", "hub.maxSeriesPerEntity: -5 is out of range; must be at least 1 (series per entity) (line 3, column 23)"],
    ["hub.memoryProtection.ratio 0", "gateway: {name: G}\nhub:\n  memoryProtection:\n    ratio: 0\n", "hub.memoryProtection.ratio: 0 is out of range; must be greater than 0 and at most 1 (line 4, column 12)"],
    ["hub.memoryProtection with an unknown key", "gateway: {name: G}\nhub:\n  memoryProtection: {limit: 5}\n", "hub.memoryProtection.limit: unknown key 'limit'; did you mean 'limitMb'? (line 3, column 22)"],
    ["a lone surrogate in an attribute value", 'gateway: {name: G}\nprobes:\n  - name: p\n    managedEntities:\n      - name: m\n        attributes: {Region: "\\uD800"}\n', "probes[0].managedEntities[0].attributes.Region: the text is not well-formed Unicode: it holds a lone UTF-16 surrogate (\\ud800 at index 0); remove it or write the whole character (line 6, column 30)"],
  ];
  for (const [name, yaml, line] of cases) {
    test(name, () => {
      const path = setupFile(yaml);
      assert.deepEqual(validateSetupFile(path), { ok: false, text: `${path}:${line}` });
    });
  }

  test("a valid file with every new key is OK", () => {
    const path = setupFile(
      "gateway: {name: G, maxColumnsPerDataview: 10, maxCellLength: 100, memoryProtection: {limitMb: 512, ratio: 0.8}}\n" +
        "hub: {maxSeriesPerEntity: 1000, memoryProtection: {limitMb: 4096, ratio: 1}}\n",
    );
    assert.deepEqual(validateSetupFile(path), { ok: true, text: `${path}: OK` });
  });

  test("an application key without roles: OK, with a note on the default", () => {
    const path = setupFile(
      "gateway: {name: G}\nhub:\n  security:\n    appKeys:\n" +
        "      - {clientId: dash, clientSecret: s}\n" +
        "      - {clientId: ops, clientSecret: s, roles: [read, operate]}\n",
    );
    assert.deepEqual(validateSetupFile(path), {
      ok: true,
      text:
        `${path}: OK\n` +
        `${path}:hub.security.appKeys[0]: note: application key 'dash' has no roles, so it gets the default [read] (queries only); add roles: [read, write, operate] as it needs (line 5, column 9)`,
    });
  });
});

describe("vigil validate: a hub-only setup", () => {
  test("only `hub:` is OK, and the report says that only `vigil hub` runs it", () => {
    const path = setupFile("hub:\n  port: 0\n  security: {enabled: false}\n");
    assert.deepEqual(validateSetupFile(path), {
      ok: true,
      text: `${path}: OK, a hub-only setup: \`vigil hub\` runs it; \`vigil gateway\`, \`vigil up\` and \`vigil probe --config\` need the deployment's setup, with its 'gateway' section`,
    });
  });

  test("probes without a gateway are an error", () => {
    const path = setupFile("hub: {}\nprobes: []\n");
    const report = validateSetupFile(path);
    assert.equal(report.ok, false);
    assert.match(report.text, /:probes: 'probes' needs the 'gateway' section that uses it/);
  });
});

describe("vigil validate as a command", () => {
  // Runs the real `validate` subcommand in a child process, without the rest of the CLI.
  const script =
    `import { Command } from "commander";\n` +
    `import { registerValidate } from ${JSON.stringify(pathToFileURL(join(ROOT, "src/cli/commands/validate.ts")).href)};\n` +
    `const program = new Command("vigil");\nregisterValidate(program);\n` +
    `await program.parseAsync(process.argv.slice(1), { from: "user" });\n`;
  const run = (path: string) =>
    spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script, "validate", "--config", path],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );

  test("an invalid file: every issue on stderr, exit 1", () => {
    const path = setupFile("gateway: {name: G, maxCellLength: 0}\nhub: {maxSeriesPerEntity: 0}\n");
    const child = run(path);
    assert.equal(child.status, 1, child.stderr);
    assert.equal(child.stdout, "");
    assert.deepEqual(child.stderr.trimEnd().split("\n"), [
      `${path}:gateway.maxCellLength: 0 is out of range; must be at least 1 (UTF-16 code units per cell) (line 1, column 35)`,
      `${path}:hub.maxSeriesPerEntity: 0 is out of range; must be at least 1 (series per entity) (line 2, column 27)`,
    ]);
  });

  test("a valid file: OK on stdout, exit 0", () => {
    const path = setupFile("gateway: {name: G}\n");
    const child = run(path);
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout, `${path}: OK\n`);
  });
});
