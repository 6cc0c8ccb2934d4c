/**
 * What a commit costs the embedded hub, by batch size: a hub on embedded DuckDB fed through the
 * in-process bus (as in `vigil up`) with the `table` messages row PUTs make (one row of 10 numeric
 * cells each, 200 rows of one dataview cycling, a new time each), in batches of 250, 500, 1,000 and
 * 2,000 messages, each size in turn for VIGIL_BENCH_ROUNDS rounds (default 3) of 40,000 messages
 * (a tenth with VIGIL_BENCH_SECONDS set). The gateway hands the hub one link batch per publish batch
 * under a row-PUT load (~500 messages) and ~1,000 under a dataview load.
 *
 * Figures: CPU per message of this process (user + system, every thread: DuckDB's included) and
 * wall time per message, medians over the rounds, per batch size; and the fixed cost of a commit
 * and the cost per message fitted from the 500 and 1,000 sizes. One JSON line.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { MessageIdSource } from "../src/bus/envelope.js";
import { MemoryBus } from "../src/bus/memory-bus.js";
import { parseSetup } from "../src/config/load-setup.js";
import {
  iso,
  type MetricsContext,
  managedEntityMessage,
  probeMessage,
  tableMessage,
} from "../src/gateway/message-builders.js";
import { buildHub } from "../src/hub/app.js";
import { openStore } from "../src/hub/store/open-store.js";
import type { PublicV2Message } from "../src/messages/types.js";
import { median } from "./load.js";
import { benchRounds, SMOKE } from "./settings.js";

const SIZES = [250, 500, 1_000, 2_000];
const MESSAGES = SMOKE ? 4_000 : 40_000; // per size and round
const ROUNDS = benchRounds(3);
const ROWS = 200;

const logger = pino({ level: "silent" });
const setup = parseSetup(`
gateway: { name: GW, port: 0 }
probes:
  - { name: p1, restApiHttpPort: 0, managedEntities: [{ name: me00, samplers: [{ name: s, plugin: rest-api }] }] }
hub: { port: 0, security: { enabled: false } }
`);
const dir = mkdtempSync(join(tmpdir(), "vigil-bench-hub-commit-"));
try {
  const store = await openStore("duckdb", dir);
  await store.migrate();
  const bus = new MemoryBus(logger);
  const hub = await buildHub({ setup, store, consumer: bus, logger, dataDir: dir });
  await hub.start(0);
  const ids = new MessageIdSource("GW");
  let at = Date.now();
  const parameters = { osType: "Linux", HostName: "h", Port: "1", OS: "Linux", Version: "0", ConState: "Up" };
  await bus.publish(
    ids.wrap([
      probeMessage("create", "GW", "p1", parameters, iso(at)),
      managedEntityMessage("create", "GW", "p1", "me00", {}, iso(at)),
    ]),
  );
  const context: MetricsContext = {
    gateway: "GW",
    probe: "p1",
    osType: "Linux",
    plugin: "rest-api",
    address: { managedEntity: "me00", sampler: "s", samplerType: "", dataview: "dv" },
  };
  const rowUpdates = (count: number): PublicV2Message[] => {
    const out: PublicV2Message[] = [];
    for (let i = 0; i < count; i += 1) {
      at += 1;
      const r = i % ROWS;
      const row: Record<string, string> = Object.create(null);
      row.name = `r${r}`;
      for (let k = 0; k < 10; k += 1)
        row[`c${k}`] = String(((at * 7919 + r * 104_729 + k * 31) % 100_000) / 100);
      out.push(tableMessage("update", context, `r${r}`, row, iso(at), iso(at)));
    }
    return out;
  };
  // Warm-up: every series exists and the code is compiled before anything is timed.
  for (let i = 0; i < 10; i += 1) await bus.publish(ids.wrap(rowUpdates(1_000)));

  const cpu = new Map<number, number[]>(SIZES.map((s) => [s, []]));
  const wall = new Map<number, number[]>(SIZES.map((s) => [s, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const size of SIZES) {
      const batches = Array.from({ length: Math.ceil(MESSAGES / size) }, () => ids.wrap(rowUpdates(size)));
      const started = process.cpuUsage();
      const startedAt = performance.now();
      for (const batch of batches) await bus.publish(batch);
      const used = process.cpuUsage(started);
      cpu.get(size)?.push((used.user + used.system) / MESSAGES);
      wall.get(size)?.push(((performance.now() - startedAt) * 1000) / MESSAGES);
    }
  }
  await hub.stop(5_000);
  const round1 = (v: number): number => Math.round(v * 10) / 10;
  const cpuUs = Object.fromEntries(SIZES.map((s) => [s, round1(median(cpu.get(s) ?? []))]));
  const wallUs = Object.fromEntries(SIZES.map((s) => [s, round1(median(wall.get(s) ?? []))]));
  // cost(size) = commit / size + perMessage, from the two sizes the gateway makes.
  const at500 = cpuUs[500] as number;
  const at1000 = cpuUs[1000] as number;
  const commitMs = round1(((at500 - at1000) * 1000) / 1000);
  const perMessageUs = round1(2 * at1000 - at500);
  console.log(
    JSON.stringify({
      bench: "hub-commit",
      messages_per_size: MESSAGES,
      rounds: ROUNDS,
      cpu_us_per_message: cpuUs,
      wall_us_per_message: wallUs,
      commit_cpu_ms: commitMs,
      cpu_us_per_message_beyond_commits: perMessageUs,
      table: [
        ["hub commit: CPU µs per row message, batches of 500", at500, "", "", "", ""],
        ["hub commit: CPU µs per row message, batches of 1000", at1000, "", "", "", ""],
        ["hub commit: fixed CPU ms per commit (fitted)", commitMs, "", "", "", ""],
      ],
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
