/**
 * The heap growth bound of long-running commands (heap-growth.ts): the flag is set unless
 * the process names its own, and the V8 of the Node running the tests knows it (V8 writes
 * "unrecognized flag" to stderr and goes on when it does not, which would leave the bound unset
 * without a word). Its effect on memory is measured by bench/end-to-end.bench.ts, not here.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { heapGrowthFlag } from "../../src/cli/heap-growth.js";
import { HEAP_GROWING_PERCENT } from "../../src/config/defaults.js";

describe("heap growth of long-running commands", () => {
  it("sets --heap-growing-percent unless the process was started with its own", () => {
    assert.equal(heapGrowthFlag([]), `--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    assert.equal(heapGrowthFlag(["--enable-source-maps"], 50), "--heap-growing-percent=50");
    for (const own of ["--heap-growing-percent=30", "--heap_growing_percent=30", "--heap-growing-percent"]) {
      assert.equal(heapGrowthFlag(["--enable-source-maps", own]), undefined, own);
    }
    assert.equal(
      heapGrowthFlag(["--heap-growing-percentage=30"])?.startsWith("--heap-growing-percent="),
      true,
    );
  });

  it("is a flag this Node's V8 knows, set while the process runs", () => {
    const flag = heapGrowthFlag([]);
    assert.ok(flag !== undefined);
    const child = spawnSync(
      process.execPath,
      ["-e", `require("node:v8").setFlagsFromString(${JSON.stringify(flag)}); console.log("ran")`],
      { encoding: "utf8" },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), "ran");
    assert.doesNotMatch(child.stderr, /unrecognized|unknown/i);
    // The check itself can fail: a flag V8 does not know is reported on stderr.
    const unknown = spawnSync(
      process.execPath,
      ["-e", `require("node:v8").setFlagsFromString("--heap-growing-percentage=1")`],
      { encoding: "utf8" },
    );
    assert.match(unknown.stderr, /unrecognized|unknown/i);
  });
});
