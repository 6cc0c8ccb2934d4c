/**
 * Node versions: vigil's `engines.node` names exactly the Node versions `.ci/run` tests
 * (the machine's Node and scripts/node24.sh's Node 24), and every installed package's own
 * `engines.node` accepts them all. scripts/check-engines.mjs does the checking (also
 * `npm run check:engines`); a failure lists each offending package and what requires it.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
// @ts-expect-error: a plain .mjs script without type declarations
import { checkEngines } from "../../scripts/check-engines.mjs";

interface Findings {
  range: string;
  tested: string[];
  problems: string[];
  offenders: { name: string; version: string; engines: string; excluded: string[]; requiredBy: string[] }[];
}
const check = checkEngines as (options?: { running?: string; root?: string }) => Findings;

describe("engines of vigil and of every installed package", () => {
  const findings = check();

  test("vigil's engines.node admits each Node CI tests and no other major", () => {
    const own = findings.problems.filter((p) => p.startsWith("vigil's engines.node"));
    assert.deepEqual(own, [], own.join("\n"));
    assert.ok(findings.tested.length >= 1);
  });

  test("every installed package's engines.node accepts every Node vigil's engines admits", () => {
    const lines = findings.offenders.map(
      (o) =>
        `${o.name}@${o.version} engines.node "${o.engines}"` +
        `${o.excluded.length > 0 ? ` excludes tested Node ${o.excluded.join(", ")}` : ""}` +
        ` — required by ${o.requiredBy.join(", ") || "vigil"}`,
    );
    if (lines.length > 0)
      console.log(`packages whose engines.node does not accept "${findings.range}":\n${lines.join("\n")}`);
    assert.deepEqual(
      lines,
      [],
      `packages whose engines.node does not accept "${findings.range}":\n${lines.join("\n")}`,
    );
  });
});

describe("check-engines on a made-up install", () => {
  const root = mkdtempSync(join(tmpdir(), "vigil-engines-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, content: unknown) => {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), typeof content === "string" ? content : JSON.stringify(content));
  };
  write("scripts/node24.sh", "#!/usr/bin/env bash\nVERSION=24.21.0\n");
  write("package.json", { name: "app", engines: { node: ">=20.20.0 <21 || >=24.0.0 <25" } });
  write("node_modules/new-only/package.json", {
    name: "new-only",
    version: "2.0.0",
    engines: { node: ">=22" },
  });
  write("node_modules/lib/package.json", {
    name: "lib",
    version: "1.0.0",
    engines: { node: ">=18" },
    dependencies: { "new-only": "^2" },
  });
  write("node_modules/@scope/loose/package.json", {
    name: "@scope/loose",
    version: "1.0.0",
    engines: { node: "*" },
  });
  write("node_modules/lib/node_modules/nested/package.json", {
    name: "nested",
    version: "0.1.0",
    engines: { node: "20 || >=22" },
  });

  test("a package excluding a tested Node is named with what requires it; nested and scoped ones are read", () => {
    const result = check({ running: "v20.20.2", root });
    assert.deepEqual(
      result.offenders.map((o) => [o.name, o.excluded, o.requiredBy]),
      [["new-only", ["20.20.2"], ["lib@1.0.0"]]],
    );
    assert.deepEqual(result.tested, ["20.20.2", "24.21.0"]);
  });

  test("an open-ended engines range admitting untested majors fails", () => {
    write("package.json", { name: "app", engines: { node: ">=20.20" } });
    const result = check({ running: "v20.20.2", root });
    assert.ok(result.problems.some((p) => p.includes("admits Node 22, which CI does not test")));
    assert.ok(result.problems.some((p) => p.includes("admits Node 25, which CI does not test")));
  });
});
