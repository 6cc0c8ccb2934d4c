#!/usr/bin/env node
// Runs every bench/*.bench.ts one after another (never in parallel: they share 2 cores), passes
// their output through, writes every JSON result line to bench/results.json (with the machine and
// the commit) and prints one table of the figures against their baselines and goals at the end.
// Benchmarks print figures; they never fail on time.
//
//   npm run bench                         every bench at its full duration (docs/performance.md)
//   npm run bench -- end-to-end           only the benches whose file name contains the word
//   VIGIL_BENCH_SECONDS=3 npm run bench   a smoke run: every timed part lasts 3 s
//
// Other knobs: VIGIL_BENCH_ROUNDS (A/B rounds), VIGIL_BENCH_E2E=up|nats, VIGIL_BENCH_TIMELINE=1,
// VIGIL_BENCH_CPU_PROF=DIR, VIGIL_BENCH_DRAIN_SECONDS (end-to-end), VIGIL_BENCH_PEERS_ROWS=20,100 and
// VIGIL_BENCH_PEERS_ROUNDS (peers: vigil beside VictoriaMetrics, which scripts/peers.sh installs).
// bench/end-to-end.bench.ts runs the built CLI (dist/), and the others start with the V8 bounds
// read from it: build first.
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { heapGrowthFlag } from "../dist/cli/heap-growth.js";
import { youngGenerationFlag } from "../dist/cli/young-generation.js";

/**
 * The V8 bounds every long-running `vigil` command runs with (src/cli/heap-growth.ts,
 * young-generation.ts), given to each bench's process: the benches that compose vigil's parts in
 * their own process (backfill, probe ingest, store) then measure them as `vigil hub` or `vigil probe`
 * would run them. The end-to-end bench's children are the real commands, which set them themselves.
 */
const V8_BOUNDS = [heapGrowthFlag([]), youngGenerationFlag([], undefined)];

const RESULTS_FILE = join("bench", "results.json");

/**
 * The table's rows for one JSON result line: [figure, subject, baseline, ratio, goal, met].
 * A bench that prints a `table` array of such rows is shown as it says; the others are read here.
 */
const ROWS = {
  "end-to-end": (r) =>
    r.error !== undefined
      ? [[`end to end (${r.configuration})`, `error: ${r.error}`, "", "", "", false]]
      : [
          [
            `end to end (${r.configuration}): cells/s queryable`,
            r.cellsPerSecond,
            "",
            "",
            "≥ 100000",
            r.goals?.cellsPerSecond,
          ],
          [
            `end to end (${r.configuration}): PUT→queryable p50 / p99 ms`,
            `${r.delayP50Ms} / ${r.delayP99Ms}`,
            "",
            "",
            "p99 < 1000",
            r.goals?.delayP99,
          ],
          [
            `end to end (${r.configuration}): peak RSS MiB`,
            Object.entries(r.peakRssMiB ?? {})
              .map(([k, v]) => `${k} ${v}`)
              .join(", "),
            "",
            "",
            r.configuration === "up" ? "< 512" : "< 1024",
            Object.values(r.peakRssMiB ?? {}).every((v) => v < (r.configuration === "up" ? 512 : 1024)),
          ],
        ],
  "probe-ingest": (r) => [
    [
      "PUT row req/s (p99 ms)",
      `${r.vigil_probe_gateway_req_per_s} (${r.vigil_latency_p99_ms})`,
      `${r.baseline_node_http_req_per_s} bare node:http`,
      r.ratio_vs_baseline,
      `≥ ${r.goal?.ratio_at_least}×, p99 < 20`,
      r.goal?.met === true && r.vigil_latency_p99_ms < 20,
    ],
  ],
  "store-ingest": (r) => [
    [
      "Store.ingest() samples/s, DuckDB",
      r.vigil_duckdb_store_samples_per_s,
      `${r.baseline_duckdb_appender_rows_per_s} bare appender`,
      r.ratio_vs_baseline,
      "",
      "",
    ],
    [
      "  … with message-id claims (the ingester's path)",
      r.vigil_duckdb_store_with_claims_samples_per_s,
      "",
      "",
      "",
      "",
    ],
  ],
  "store-query": (r) => [
    [
      "metric query ms, one day × 200 series, DuckDB",
      r.duckdb_store_query_ms,
      `${r.duckdb_handwritten_query_ms} hand SQL`,
      r.duckdb_store_over_handwritten,
      "≤ 1.5×",
      r.duckdb_store_over_handwritten <= 1.5,
    ],
    [
      `metric query ms, ${r.samples_10m} samples, DuckDB`,
      r.duckdb_10m_store_query_ms,
      `${r.duckdb_10m_handwritten_query_ms} hand SQL`,
      r.duckdb_10m_store_over_handwritten,
      "≤ 1.5×",
      r.duckdb_10m_store_over_handwritten <= 1.5,
    ],
    [
      "metric query ms, one day × 200 series, PostgreSQL",
      r.postgres_store_query_ms ?? r.postgres,
      `${r.duckdb_store_query_ms} DuckDB store`,
      r.postgres_over_duckdb_query,
      "≤ 3×",
      typeof r.postgres_over_duckdb_query === "number" ? r.postgres_over_duckdb_query <= 3 : "",
    ],
    [
      "full-aggregation query ms (10 metrics × 10 aggregations by row), DuckDB",
      r.duckdb_grid_store_query_ms,
      `${r.duckdb_grid_handwritten_query_ms} hand SQL`,
      r.duckdb_grid_store_over_handwritten,
      "≤ 1.5×",
      r.duckdb_grid_store_over_handwritten <= 1.5,
    ],
    [
      "full-aggregation query ms through POST /v0/metrics/query, DuckDB",
      r.duckdb_grid_http_query_ms,
      `${r.duckdb_grid_http_handwritten_query_ms} hand SQL`,
      r.duckdb_grid_http_over_handwritten,
      "≤ 1.5×",
      r.duckdb_grid_http_over_handwritten <= 1.5,
    ],
    [
      "full-aggregation query ms, PostgreSQL",
      r.postgres_grid_store_query_ms ?? r.postgres_grid,
      `${r.duckdb_grid_store_query_ms} DuckDB store`,
      r.postgres_over_duckdb_grid_query,
      "≤ 3×",
      typeof r.postgres_over_duckdb_grid_query === "number" ? r.postgres_over_duckdb_grid_query <= 3 : "",
    ],
    [
      "Store.ingest() samples/s, PostgreSQL (5k / 50k per tx)",
      `${r.postgres_backfill_samples_per_s} / ${r.postgres_backfill_50k_batches_samples_per_s}`,
      `${r.postgres_bare_copy_5k_transactions_rows_per_s} bare COPY (5k per tx)`,
      "",
      "",
      "",
    ],
  ],
  backfill: (r) => [
    [
      `backfill POST /v0/messages samples/s, ${r.store === "duckdb" ? "DuckDB" : "PostgreSQL"}`,
      r.backfill_samples_per_s,
      r.baseline_store_ingest_samples_per_s === undefined
        ? ""
        : `${r.baseline_store_ingest_samples_per_s} Store.ingest()`,
      r.ratio_vs_baseline ?? "",
      `≥ ${r.goal_samples_per_s}`,
      r.goal_met,
    ],
  ],
  "nats-publish": (r) => [
    [
      "NATS publish µs CPU per message",
      r.vigil_batch?.cpu_us_per_message,
      `${r.baseline_js_publish?.cpu_us_per_message} js.publish()`,
      r.cpu_ratio,
      "",
      "",
    ],
  ],
  "token-flood": (r) => {
    const phase = (name) => r.results?.find((p) => p.phase.startsWith(name));
    const quiet = phase("baseline");
    return ["flood, one address", "flood, 4064"].map((name) => {
      const p = phase(name);
      return [
        `/v0/entities p99 ms under a token flood (${name.slice(7)})`,
        p?.p99,
        `${quiet?.p99} no flood`,
        "",
        "",
        "",
      ];
    });
  },
};

function rowsOf(result) {
  if (Array.isArray(result.table)) return result.table;
  if (typeof result.skipped === "string")
    return [[result.bench, `skipped: ${result.skipped}`, "", "", "", ""]];
  const rows = ROWS[result.bench];
  return rows === undefined ? [[result.bench, "(see bench/results.json)", "", "", "", ""]] : rows(result);
}

function printTable(results) {
  const header = ["figure", "vigil", "baseline beside it", "ratio", "goal", "met"];
  const cell = (v) =>
    v === true ? "yes" : v === false ? "NO" : v === undefined || v === null ? "" : String(v);
  const rows = results.flatMap((r) => rowsOf(r).map((row) => row.map(cell)));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (row) => row.map((v, i) => v.padEnd(widths[i])).join(" | ");
  console.log(`\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("-|-")}`);
  for (const row of rows) console.log(line(row));
}

function commit() {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return null;
  }
}

/** Runs one bench, its output passed through; resolves with its exit status and JSON result lines. */
function runBench(file) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...V8_BOUNDS, "--import", "tsx", join("bench", file)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const results = [];
    createInterface({ input: child.stdout }).on("line", (line) => {
      console.log(line);
      if (!line.startsWith("{")) return;
      try {
        results.push(JSON.parse(line));
      } catch {
        // Not a result line.
      }
    });
    child.on("close", (code, signal) => resolve({ status: code ?? signal, results }));
  });
}

const only = process.argv[2];
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".bench.ts") && (only === undefined || f.includes(only)))
  .sort();
const seconds = process.env.VIGIL_BENCH_SECONDS;
if (seconds !== undefined) console.error(`smoke run: VIGIL_BENCH_SECONDS=${seconds}`);
const all = [];
let failed = 0;
for (const file of files) {
  const started = Date.now();
  console.error(`# ${file}`);
  const { status, results } = await runBench(file);
  console.error(`# ${file}: exit ${status} after ${Math.round((Date.now() - started) / 1000)} s`);
  if (status !== 0) failed += 1;
  all.push(...results);
}
const cpu = cpus()[0];
writeFileSync(
  RESULTS_FILE,
  `${JSON.stringify(
    {
      at: new Date().toISOString(),
      commit: commit(),
      smoke: seconds !== undefined,
      machine: {
        cpus: availableParallelism(),
        cpuModel: cpu?.model ?? null,
        memoryMiB: Math.round(totalmem() / 1024 / 1024),
        node: process.version,
        v8Flags: V8_BOUNDS,
      },
      results: all,
    },
    null,
    2,
  )}\n`,
);
printTable(all);
console.error(`\nresults: ${RESULTS_FILE}`);
process.exit(failed === 0 ? 0 : 1);
