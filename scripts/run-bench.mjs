#!/usr/bin/env node
// Runs every bench/*.bench.ts one after another (never in parallel: they share 2 cores) and
// prints their JSON result lines. Benchmarks print figures; they never fail on time.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const only = process.argv[2];
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".bench.ts") && (only === undefined || f.includes(only)))
  .sort();
let failed = 0;
for (const file of files) {
  const result = spawnSync(process.execPath, ["--import", "tsx", join("bench", file)], { stdio: "inherit" });
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
