/**
 * Log lines a person can read: the long-running commands write pino-pretty lines with
 * `--log-format pretty` and by default on a terminal (a real pseudo-terminal from `script`), JSON
 * lines when stdout is not a terminal or with `--log-format json`; an unknown format is refused.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { prettyLogs } from "../../src/cli/logger.js";
import { needs } from "../helpers/needs.js";
import { startVigil, tempDir, VIGIL_BIN, writeFile } from "../helpers/vigil-process.js";

const SETUP = "gateway: {name: GW-LOGS}\nhub: {port: 0, security: {enabled: false}}\n";

describe("log format", () => {
  test("auto is pretty on a terminal only; json and pretty are what they say", () => {
    assert.equal(prettyLogs("auto", true), true);
    assert.equal(prettyLogs("auto", false), false);
    assert.equal(prettyLogs("json", true), false);
    assert.equal(prettyLogs("pretty", false), true);
  });

  test("--log-format pretty writes readable lines; without it, piped output is JSON", async () => {
    const dir = tempDir("log-format");
    try {
      const config = writeFile(dir.path, "setup.yaml", SETUP);
      for (const [format, readable] of [
        ["pretty", true],
        ["auto", false],
      ] as const) {
        const hub = startVigil(
          ["hub", "--config", config, "--data-dir", dir.path, "--host", "127.0.0.1", "--log-format", format],
          dir.path,
        );
        const line = await hub.waitFor((l) => /vigil is up/.test(l.msg ?? ""));
        assert.deepEqual(await hub.stop(), { code: 0, signal: null });
        if (readable) {
          assert.equal(line.level, undefined, "not a JSON line");
          assert.match(line.msg ?? "", /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] INFO: /);
        } else {
          assert.equal(line.level, 30, "a JSON line at info level");
        }
      }
    } finally {
      dir.remove();
    }
  });

  test("an unknown format is refused", () => {
    const result = spawnSync(
      process.execPath,
      [VIGIL_BIN, "hub", "--config", "x.yaml", "--log-format", "xml"],
      {
        encoding: "utf8",
      },
    );
    assert.notEqual(result.status, 0);
    assert.match(
      result.stderr,
      /--log-format <format>' argument 'xml' is invalid\. Allowed choices are auto, json, pretty/,
    );
  });

  const script = spawnSync("script", ["--version"]).status === 0;
  test("on a terminal the default is readable lines", {
    skip: needs(script ? false : "script (util-linux) is not installed"),
  }, async () => {
    const dir = tempDir("log-tty");
    try {
      const config = writeFile(dir.path, "setup.yaml", SETUP);
      const command = [
        process.execPath,
        VIGIL_BIN,
        "hub",
        "--config",
        config,
        "--data-dir",
        dir.path,
        "--host",
        "127.0.0.1",
      ]
        .map((a) => `'${a}'`)
        .join(" ");
      // `script` runs the hub on a pseudo-terminal and copies what it writes to our pipe.
      const child = spawn("script", ["-qfec", command, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
      let output = "";
      const listening = new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (/vigil is up/.test(output)) resolve();
        });
        child.on("exit", () => reject(new Error(`the hub exited: ${output}`)));
      });
      await listening;
      child.kill("SIGTERM");
      await new Promise((resolve) => child.on("exit", resolve));
      assert.match(output, /INFO/);
      assert.doesNotMatch(output, /"level":30/);
    } finally {
      dir.remove();
    }
  });
});
