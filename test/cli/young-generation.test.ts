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
import { SERVICE_COMMANDS, youngGenerationFlag } from "../../src/cli/young-generation.js";
import { MAX_SEMI_SPACE_MB } from "../../src/config/defaults.js";
import { tempDir, VIGIL_BIN, VigilProcess, writeFile } from "../helpers/vigil-process.js";

const FLAG = `--max-semi-space-size=${MAX_SEMI_SPACE_MB}`;
const CAN_EXECVE = typeof (process as { execve?: unknown }).execve === "function";

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
    // Two semi-spaces at most (V8 reports the new space's size, both halves).
    assert.ok(Number(bounded.stdout) <= 2 * MAX_SEMI_SPACE_MB * 2 ** 20, bounded.stdout);
    // The check can fail: a wider bound lets the same program's new space grow past it.
    const wider = spawnSync(process.execPath, ["--max-semi-space-size=64", "-e", script], {
      encoding: "utf8",
    });
    assert.ok(Number(wider.stdout) > 2 * MAX_SEMI_SPACE_MB * 2 ** 20, wider.stdout);
  });

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
    const args = await runHub(env);
    assert.equal(args.includes(FLAG), CAN_EXECVE, args.join(" "));
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
    const args = await runHub({ ...process.env, NODE_OPTIONS: "--max-semi-space-size=8" });
    assert.equal(args.includes(FLAG), false, args.join(" "));
    assert.equal(args[1], VIGIL_BIN);
  });
});
