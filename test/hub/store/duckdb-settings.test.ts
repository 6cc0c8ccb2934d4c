import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DuckDBInstance } from "@duckdb/node-api";
import {
  cgroupMemoryLimit,
  duckDbMachineSettings,
  olderFormat,
} from "../../../src/hub/store/duckdb/duckdb-settings.js";

const GIB = 1024 ** 3;

describe("DuckDB settings from the machine", () => {
  it("takes an eighth of the memory, between 128 and 384 MiB, and the CPUs given", () => {
    assert.deepEqual(duckDbMachineSettings(24 * GIB, 2), { memoryLimit: "384MB", threads: 2 });
    assert.deepEqual(duckDbMachineSettings(2 * GIB, 8), { memoryLimit: "256MB", threads: 8 });
    assert.deepEqual(duckDbMachineSettings(512 * 1024 ** 2, 1), { memoryLimit: "128MB", threads: 1 });
    assert.equal(duckDbMachineSettings(GIB, 0).threads, 1);
  });

  it("reads a cgroup v2 limit, then v1, and ignores 'max' and missing files", () => {
    const files = (map: Record<string, string>) => (path: string) => {
      const text = map[path];
      if (text === undefined) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
      return text;
    };
    assert.equal(cgroupMemoryLimit(files({ "/sys/fs/cgroup/memory.max": "1073741824\n" })), GIB);
    assert.equal(cgroupMemoryLimit(files({ "/sys/fs/cgroup/memory.max": "max\n" })), undefined);
    assert.equal(
      cgroupMemoryLimit(files({ "/sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648" })),
      2 * GIB,
    );
    assert.equal(
      cgroupMemoryLimit(files({ "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712" })),
      undefined,
    );
    assert.equal(cgroupMemoryLimit(files({})), undefined);
  });

  it("gives values DuckDB accepts and reports back", async () => {
    const settings = duckDbMachineSettings();
    const instance = await DuckDBInstance.create(":memory:", {
      memory_limit: settings.memoryLimit,
      threads: String(settings.threads),
    });
    const c = await instance.connect();
    const rows = await (
      await c.runAndReadAll(
        "SELECT current_setting('threads')::INTEGER AS t, current_setting('memory_limit') AS m",
      )
    ).getRowObjectsJS();
    assert.equal(rows[0]?.t, settings.threads);
    assert.match(String(rows[0]?.m), /MiB$/);
    c.closeSync();
    instance.closeSync();
  });

  it("tells an older storage format from the store's by version, and never calls an unreadable one older", () => {
    // biome-ignore format: one line per case (STYLE 16)
    const cases: [string, string, boolean][] = [
      ["v1.0.0+", "v1.2.0", true],
      ["v0.10.2+", "v1.2.0", true],
      ["v1.2.0+", "v1.2.0", false],
      ["v1.5.0+", "v1.2.0", false],
      ["v1.10.0+", "v1.2.0", false],
      ["v2.0.0", "v1.2.0", false],
      ["unknown", "v1.2.0", false],
    ];
    for (const [version, than, older] of cases) assert.equal(olderFormat(version, than), older, version);
  });
});
