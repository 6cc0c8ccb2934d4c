#!/usr/bin/env node
// Runs every test/**/*.test.ts file with node's own test runner, TypeScript loaded through tsx.
// Node 20's `--test` does not expand globs itself, so the files are listed here.
// Extra arguments are passed through (e.g. `node scripts/run-tests.mjs test/hub` runs one folder).
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path).sort()) collect(join(path, entry), out);
  } else if (path.endsWith(".test.ts")) {
    out.push(path);
  }
  return out;
}

// A test that hangs fails after this long instead of holding CI until its own limit.
const TEST_TIMEOUT_MS = 180_000; // 3 min per test

const roots = process.argv.slice(2);
const files = (roots.length > 0 ? roots : ["test"]).flatMap((root) => collect(root, []));
if (files.length === 0) {
  console.error("no test files found");
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=2", `--test-timeout=${TEST_TIMEOUT_MS}`, ...files],
  {
    stdio: "inherit",
  },
);
process.exit(result.status ?? 1);
