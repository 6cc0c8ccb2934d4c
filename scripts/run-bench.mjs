#!/usr/bin/env node
// Runs every bench/*.bench.ts one after another (never in parallel: they share 2 cores) and
// prints their JSON result lines. Benchmarks print figures; they never fail on time.
//
//   npm run bench                         every bench at its full duration (docs/performance.md)
//   npm run bench -- end-to-end           only the benches whose file name contains the word
//   VIGIL_BENCH_SECONDS=3 npm run bench   a smoke run: every timed part lasts 3 s
//
// Other knobs: VIGIL_BENCH_ROUNDS (A/B rounds of probe-ingest), VIGIL_BENCH_E2E=up|nats,
// VIGIL_BENCH_TIMELINE=1, VIGIL_BENCH_CPU_PROF=DIR, VIGIL_BENCH_DRAIN_SECONDS (end-to-end).
// bench/end-to-end.bench.ts runs the built CLI (dist/): build first.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const only = process.argv[2];
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".bench.ts") && (only === undefined || f.includes(only)))
  .sort();
const seconds = process.env.VIGIL_BENCH_SECONDS;
if (seconds !== undefined) console.error(`smoke run: VIGIL_BENCH_SECONDS=${seconds}`);
let failed = 0;
for (const file of files) {
  const started = Date.now();
  console.error(`# ${file}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", join("bench", file)], { stdio: "inherit" });
  console.error(
    `# ${file}: exit ${result.status ?? result.signal} after ${Math.round((Date.now() - started) / 1000)} s`,
  );
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
