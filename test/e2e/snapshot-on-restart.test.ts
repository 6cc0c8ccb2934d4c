/**
 * Kept snoozes and assignments are republished at gateway start (DESIGN 4.3 `snapshot`): `vigil up`
 * with a snoozed cell and an assigned dataview is stopped and started again on its data dir, and
 * its NDJSON publish target then holds a `snooze` and a `userassignment` snapshot of each.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

const SETUP = `
gateway:
  name: GW-SNAP
  port: 0
  publish:
    - memory
    - file: ./out/messages.ndjson
probes:
  - name: probe-snap
    restApiHttpPort: 0
    managedEntities:
      - name: web-01
        samplers:
          - name: orders
            plugin: rest-api
hub:
  port: 0
  security: { enabled: false }
`;

interface Published {
  type: string;
  operation: string;
  data: {
    target: Record<string, string>;
    data: { snoozed?: boolean; snoozedBy?: string; userAssigned?: boolean; assignedTo?: string };
  };
}

describe("vigil up restarted with kept snoozes and assignments", () => {
  const dir = tempDir("snapshot-restart");
  let vigil: VigilProcess | undefined;
  after(async () => {
    await vigil?.stop("SIGKILL");
    if (process.env.KEEP) console.log(readFileSync(join(dir.path, "out", "messages.ndjson"), "utf8"));
    if (process.env.KEEP)
      for (const l of vigil?.logs ?? []) console.log("LOG", JSON.stringify(l).slice(0, 300));
    dir.remove();
  });

  const published = (): Published[] =>
    readFileSync(join(dir.path, "out", "messages.ndjson"), "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Published);

  test("the snooze and the assignment are published again as snapshot", async () => {
    const config = writeFile(dir.path, "setup.yaml", SETUP);
    const start = () =>
      startVigil(["up", "--config", config, "--data-dir", join(dir.path, "data")], dir.path);
    vigil = start();
    const probe = await vigil.url("probe", "probe-snap");
    const gateway = await vigil.url("gateway");
    const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue`, {
      method: "PUT",
      body: JSON.stringify([{ name: "EURUSD", latency: 5 }]),
    });
    assert.equal(put.status, 200);
    const base = {
      gateway: "GW-SNAP",
      probe: "probe-snap",
      managedEntity: "web-01",
      type: "",
      sampler: "orders",
      dataview: "queue",
    };
    const command = async (name: string, body: object) => {
      const response = await fetch(`${gateway}/v1/commands/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(response.status, 200, `${name}: ${await response.text()}`);
    };
    // The gateway knows the cell once the probe's PUT has reached it.
    await eventually(async () =>
      published().some((m) => m.type === "table" && m.data.target.row === "EURUSD") ? true : undefined,
    );
    await command("snooze", {
      target: { ...base, row: "EURUSD", column: "latency" },
      user: "alice",
      comment: "deploy",
    });
    await command("assign", { target: base, user: "alice", assignedTo: "bob", comment: "look" });
    assert.deepEqual(await vigil.stop("SIGTERM"), { code: 0, signal: null });
    const before = published().length;
    if (process.env.KEEP) console.log(readFileSync(join(dir.path, "data", "gateway-state.json"), "utf8"));

    vigil = start();
    await vigil.url("hub");
    const snapshots = await eventually(async () => {
      const again = published().slice(before);
      const snooze = again.find((m) => m.type === "snooze" && m.operation === "snapshot");
      const assignment = again.find((m) => m.type === "userassignment" && m.operation === "snapshot");
      return snooze !== undefined && assignment !== undefined ? { snooze, assignment } : undefined;
    }, 15_000);
    assert.equal(snapshots.snooze.data.target.row, "EURUSD");
    assert.equal(snapshots.snooze.data.target.column, "latency");
    assert.deepEqual(
      [snapshots.snooze.data.data.snoozed, snapshots.snooze.data.data.snoozedBy],
      [true, "alice"],
    );
    assert.equal(snapshots.assignment.data.target.dataview, "queue");
    assert.deepEqual(
      [snapshots.assignment.data.data.userAssigned, snapshots.assignment.data.data.assignedTo],
      [true, "bob"],
    );
  });
});
