/**
 * The young-generation bound of long-running commands (young-generation.ts): which flag a
 * process is started again with, that the real `vigil hub` runs with it in the process it was
 * started as (same pid, answering, stopping on SIGTERM) on a Node that has `process.execve` and as
 * started on one that has not (Node 20), that a bound of the user's own is kept, and that the flag
 * bounds this Node's new space. Its effect on RSS is measured by bench/end-to-end.bench.ts.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  MALLOC_TUNABLE,
  mallocTunables,
  SERVICE_COMMANDS,
  serviceEnvironment,
  workersOwnYoungGeneration,
  youngGenerationFlag,
} from "../../src/cli/young-generation.js";
import { MAX_SEMI_SPACE_MB } from "../../src/config/defaults.js";
import { tempDir, VIGIL_BIN, VigilProcess, writeFile } from "../helpers/vigil-process.js";

const FLAG = `--max-semi-space-size=${MAX_SEMI_SPACE_MB}`;
const CAN_EXECVE = typeof (process as { execve?: unknown }).execve === "function";

/** The environment the kernel holds for `pid`, after any exec. */
function environment(pid: number): Map<string, string> {
  const pairs = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").slice(0, -1);
  return new Map(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));
}

/** The arguments the kernel holds for `pid` (what `ps` shows), after any exec. */
function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
}

describe("young generation of long-running commands", () => {
  let dir: ReturnType<typeof tempDir>;
  let config: string;
  before(() => {
    dir = tempDir("young-generation");
    config = writeFile(
      dir.path,
      "hub.yaml",
      "gateway: { name: GW }\nhub: { port: 0, security: { enabled: false } }\n",
    );
  });
  after(() => dir.remove());

  it("asks for the bound unless the process names its own, in its arguments or NODE_OPTIONS", () => {
    assert.equal(youngGenerationFlag([], undefined), FLAG);
    assert.equal(
      youngGenerationFlag(["--enable-source-maps"], "--no-warnings", 8),
      "--max-semi-space-size=8",
    );
    for (const own of ["--max-semi-space-size=32", "--max_semi_space_size=32", "--max-semi-space-size"]) {
      assert.equal(youngGenerationFlag(["--enable-source-maps", own], undefined), undefined, own);
      assert.equal(youngGenerationFlag([], `--no-warnings  ${own}`), undefined, `NODE_OPTIONS ${own}`);
    }
    assert.equal(youngGenerationFlag(["--min-semi-space-size=4"], "--max-old-space-size=512"), FLAG);
    assert.deepEqual([...SERVICE_COMMANDS].sort(), ["gateway", "hub", "probe", "up"]);
  });

  it("is a flag this Node takes, and it bounds the new space", () => {
    const script = `
      const v8 = require("node:v8");
      const keep = [];
      let most = 0;
      for (let i = 0; i < 2e6; i++) {
        keep.push({ i, text: "x" + i });
        if (keep.length > 200000) keep.splice(0, 100000);
        if (i % 50000 === 0) {
          const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
          most = Math.max(most, space.space_size);
        }
      }
      console.log(most);`;
    const bounded = spawnSync(process.execPath, [FLAG, "-e", script], { encoding: "utf8" });
    assert.equal(bounded.status, 0, bounded.stderr);
    assert.equal(bounded.stderr, "");
    // Two semi-spaces at most (V8 reports the new space's size, both halves), and on Node 24 up to
    // 768 KiB more, which its V8 counts beyond them at times.
    assert.ok(Number(bounded.stdout) <= (2 * MAX_SEMI_SPACE_MB + 1) * 2 ** 20, bounded.stdout);
    // The check can fail: a wider bound lets the same program's new space grow past it.
    const wider = spawnSync(process.execPath, ["--max-semi-space-size=64", "-e", script], {
      encoding: "utf8",
    });
    assert.ok(Number(wider.stdout) > (2 * MAX_SEMI_SPACE_MB + 1) * 2 ** 20, wider.stdout);
  });

  it("sets glibc's mmap threshold unless the environment sets it", () => {
    assert.equal(MALLOC_TUNABLE, "glibc.malloc.mmap_threshold=131072");
    assert.equal(mallocTunables(undefined, "linux"), MALLOC_TUNABLE);
    assert.equal(mallocTunables("", "linux"), MALLOC_TUNABLE);
    assert.equal(
      mallocTunables("glibc.malloc.arena_max=2", "linux"),
      `glibc.malloc.arena_max=2:${MALLOC_TUNABLE}`,
    );
    for (const own of [
      "glibc.malloc.mmap_threshold=65536",
      "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1",
    ])
      assert.equal(mallocTunables(own, "linux"), undefined, own);
    assert.equal(mallocTunables(undefined, "darwin"), undefined);
  });

  it("gives a service's environment the threshold, keeping every other variable", () => {
    const env = { PATH: "/bin", GLIBC_TUNABLES: "glibc.malloc.arena_max=2" };
    assert.deepEqual(serviceEnvironment(env, "linux"), {
      PATH: "/bin",
      GLIBC_TUNABLES: `glibc.malloc.arena_max=2:${MALLOC_TUNABLE}`,
    });
    assert.equal(env.GLIBC_TUNABLES, "glibc.malloc.arena_max=2", "the given environment is not changed");
    const own = { GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=65536" };
    assert.equal(
      serviceEnvironment(own, "linux"),
      own,
      "a threshold of the user's own: the same environment",
    );
    const elsewhere = { PATH: "/bin" };
    assert.equal(serviceEnvironment(elsewhere, "darwin"), elsewhere);
  });

  it("lets a worker take the young generation of its own limits once the process runs", () => {
    assert.equal(workersOwnYoungGeneration([], undefined), false, "no flag: nothing to clear");
    // A process started with the bound: the main isolate keeps it, a worker made after the clear
    // takes its resourceLimits (8 MB of young generation), and without the clear the flag's.
    const module = JSON.stringify(new URL("../../src/cli/young-generation.ts", import.meta.url).href);
    const script = (clear: boolean) => `
      const { getHeapSpaceStatistics } = await import("node:v8");
      const { Worker } = await import("node:worker_threads");
      const { workersOwnYoungGeneration } = await import(${module});
      const cleared = ${clear} ? workersOwnYoungGeneration() : false;
      const churn = \`const keep = []; for (let i = 0; i < 2e6; i++) { keep.push({ i, t: "x" + i }); if (keep.length > 100000) keep.length = 0; }\`;
      const newSpace = \`process.getBuiltinModule("node:v8").getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size\`;
      eval(churn);
      const main = getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
      const worker = new Worker(churn + "; process.getBuiltinModule('node:worker_threads').parentPort.postMessage(" + newSpace + ")", {
        eval: true,
        resourceLimits: { maxYoungGenerationSizeMb: 8 },
      });
      const [inWorker] = await (await import("node:events")).once(worker, "message");
      await worker.terminate();
      console.log(JSON.stringify({ cleared, main, worker: inWorker }));`;
    const run = (clear: boolean) => {
      const r = spawnSync(
        process.execPath,
        [FLAG, "--import", "tsx", "--input-type=module", "-e", script(clear)],
        { encoding: "utf8", cwd: fileURLToPath(new URL("../..", import.meta.url)) },
      );
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as { cleared: boolean; main: number; worker: number };
    };
    const MB = 2 ** 20;
    const cleared = run(true);
    assert.equal(cleared.cleared, true);
    // Two semi-spaces and a page or so (Node 24's V8 counts 32.75 MiB); Node 24 alone sizes it 128.
    assert.ok(cleared.main < 3 * MAX_SEMI_SPACE_MB * MB, `main new space ${cleared.main}`);
    assert.ok(cleared.worker <= 10 * MB, `worker new space ${cleared.worker}`);
    // The check can fail: with the flag left, the worker's new space follows it.
    const kept = run(false);
    assert.ok(kept.worker > 10 * MB, `worker new space with the flag ${kept.worker}`);
  });

  /** GLIBC_TUNABLES of the last hub `runHub` started, as its process holds it. */
  let tunables: string | undefined;

  async function runHub(env: NodeJS.ProcessEnv): Promise<string[]> {
    const child = spawn(process.execPath, [VIGIL_BIN, "hub", "--config", config, "--data-dir", dir.path], {
      cwd: dir.path,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const vigil = new VigilProcess(child);
    try {
      const url = await vigil.url("hub");
      const pid = child.pid;
      assert.ok(pid !== undefined);
      const args = commandLine(pid);
      tunables = environment(pid).get("GLIBC_TUNABLES");
      assert.equal((await fetch(`${url}/v0/entities`)).status, 200);
      return args;
    } finally {
      // The signal reaches the process that was started: a replaced image keeps its pid.
      assert.deepEqual(await vigil.stop(), { code: 0, signal: null }, vigil.stderr);
      assert.equal(vigil.stderr, "");
    }
  }

  it("runs `vigil hub` with the bound in the process it was started as", async () => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    delete env.GLIBC_TUNABLES;
    const args = await runHub(env);
    assert.equal(args.includes(FLAG), CAN_EXECVE, args.join(" "));
    assert.equal(tunables, CAN_EXECVE ? MALLOC_TUNABLE : undefined);
    // The command and its options are as given, after Node's own options.
    assert.deepEqual(args.slice(args.indexOf(VIGIL_BIN)), [
      VIGIL_BIN,
      "hub",
      "--config",
      config,
      "--data-dir",
      dir.path,
    ]);
  });

  it("keeps a bound the process was started with", async () => {
    const own = "glibc.malloc.mmap_threshold=65536";
    const args = await runHub({
      ...process.env,
      NODE_OPTIONS: "--max-semi-space-size=8",
      GLIBC_TUNABLES: own,
    });
    assert.equal(args.includes(FLAG), false, args.join(" "));
    assert.equal(args[1], VIGIL_BIN);
    assert.equal(tunables, own);
  });
});
