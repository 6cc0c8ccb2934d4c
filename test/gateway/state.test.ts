/**
 * State that survives a gateway restart (DESIGN 4.2, 4.3): the state file is replaced atomically,
 * a damaged one is set aside; snoozes, assignments and the last published severities come back;
 * the restarted gateway republishes its snoozes and assignments as `snapshot` at start and, when
 * the probe's state is back, each item's severity once (`snapshot` when unchanged). Also after a
 * real `kill -9` of a `vigil gateway` process.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { GATEWAY_SEVERITIES_FILE, GATEWAY_STATE_FILE } from "../../src/config/defaults.js";
import { LinkSecret } from "../../src/config/link-secret.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway } from "../../src/gateway/app.js";
import { readStateFile, writeFileAtomic } from "../../src/gateway/state/state-file.js";
import { webSocketConnector } from "../../src/link/websocket.js";
import type { SeverityMessage } from "../../src/messages/types.js";
import { buildProbe } from "../../src/probe/app.js";
import { tempDir, VigilProcess } from "../helpers/vigil-process.js";
import { eventually, FakePublisher, P1_SECRET, summary } from "../link/helpers.js";

const logger = pino({ level: "silent" });
const SETUP = `
gateway: { name: GW, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    linkSecret: ${P1_SECRET}
    managedEntities:
      - { name: me1, samplers: [{ name: s1, plugin: rest-api }] }
rules:
  - name: crit
    target: { sampler: s1, row: "*", column: queued }
    when: { operator: ">", value: 100 }
    severity: CRITICAL
hub: { port: 0, security: { enabled: false } }
`;
const setup = parseSetup(SETUP);
const cell = {
  gateway: "GW",
  probe: "p1",
  managedEntity: "me1",
  type: "",
  sampler: "s1",
  dataview: "dv",
  row: "a",
  column: "queued",
};
const dataviewTarget = {
  gateway: "GW",
  probe: "p1",
  managedEntity: "me1",
  type: "",
  sampler: "s1",
  dataview: "dv",
};

async function post(url: string, name: string, body: unknown): Promise<number> {
  const response = await fetch(`${url}/v1/commands/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the state file", () => {
  const dir = tempDir("gw-state");
  after(() => dir.remove());

  test("is replaced atomically: no temporary file is left, the content is whole", async () => {
    const path = join(dir.path, "nested", "state.json");
    await writeFileAtomic(path, '{"a":1}');
    await writeFileAtomic(path, '{"a":2}');
    assert.equal(readFileSync(path, "utf8"), '{"a":2}');
    assert.deepEqual(readdirSync(join(dir.path, "nested")), ["state.json"]);
  });

  test("a damaged file is set aside and the gateway starts without it", () => {
    const path = join(dir.path, "broken.json");
    writeFileSync(path, '{"version":1,"gat');
    assert.equal(readStateFile(path, "GW", logger), undefined);
    assert.ok(existsSync(`${path}.unreadable`));
    assert.ok(!existsSync(path));
  });

  test("a file of another gateway name is ignored; entries of the wrong shape are skipped", () => {
    const path = join(dir.path, "other.json");
    writeFileSync(
      path,
      JSON.stringify({ version: 1, gateway: "GW2", snoozes: [], assignments: [], severities: [] }),
    );
    assert.equal(readStateFile(path, "GW", logger), undefined);
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        gateway: "GW",
        snoozes: [{ target: 1 }],
        assignments: [],
        severities: [
          ["k", "RED"],
          ["j", "OK"],
        ],
      }),
    );
    assert.deepEqual(readStateFile(path, "GW", logger), {
      snoozes: [],
      assignments: [],
      severities: [["j", "OK"]],
    });
  });
});

describe("a gateway restart keeps snoozes, assignments and last published severities", () => {
  const dir = tempDir("gw-restart");
  after(() => dir.remove());

  test("in-process gateways on one data dir, the probe reconnecting over WebSocket", async () => {
    const port = await freePort();
    const first = new FakePublisher();
    const gateway1 = buildGateway({ setup, publisher: first, logger, dataDir: dir.path });
    const url = await gateway1.start(port, "127.0.0.1");
    const probe = buildProbe({
      name: "p1",
      link: webSocketConnector(url, { secret: new LinkSecret(P1_SECRET) }),
      setup: setup.probes[0]!,
      logger,
      linkTuning: { reconnectMinMs: 10, reconnectMaxMs: 50 },
    });
    const probeUrl = (await probe.start()).http;
    try {
      await eventually(() => gateway1.links()[0]?.state === "up", "the link");
      const put = await fetch(`${probeUrl}/v1/managedEntity/me1/sampler/s1/dataview/dv`, {
        method: "PUT",
        body: JSON.stringify([{ name: "a", queued: "500" }]),
      });
      assert.equal(put.status, 200);
      await eventually(
        () => first.messages.some((m) => m.type === "severity" && m.data.target.row === "a"),
        "the cell's severity",
      );
      assert.equal(
        await post(url, "snooze", {
          target: cell,
          user: "ann",
          comment: "c",
          period: "SeverityTo",
          untilSeverity: "OK",
        }),
        200,
      );
      assert.equal(
        await post(url, "assign", { target: dataviewTarget, user: "ann", assignedTo: "bob" }),
        200,
      );
      // A command's state is on disk when it is answered.
      const saved = JSON.parse(readFileSync(join(dir.path, GATEWAY_STATE_FILE), "utf8")) as {
        snoozes: unknown[];
        assignments: unknown[];
      };
      assert.equal(saved.snoozes.length, 1);
      assert.equal(saved.assignments.length, 1);
      await gateway1.stop(1000);
      const severities = JSON.parse(readFileSync(join(dir.path, GATEWAY_SEVERITIES_FILE), "utf8")) as {
        severities: [string, string][];
      };
      assert.ok(
        severities.severities.some(
          ([key, severity]) => key.includes('"a","queued"') && severity === "CRITICAL",
        ),
        "the cell's last published severity is kept",
      );

      const second = new FakePublisher();
      const gateway2 = buildGateway({ setup, publisher: second, logger, dataDir: dir.path });
      await gateway2.start(port, "127.0.0.1");
      try {
        assert.deepEqual(second.messages.map(summary), ["snooze:snapshot:a", "userassignment:snapshot"]);
        await eventually(() => gateway2.links()[0]?.state === "up", "the probe back");
        const cellSeverity = await eventually(
          () =>
            second.messages.find(
              (m): m is SeverityMessage => m.type === "severity" && m.data.target.row === "a",
            ),
          "the cell's severity republished",
        );
        // Same severity as before the restart: republished as snapshot, snoozed still.
        assert.equal(cellSeverity.operation, "snapshot");
        assert.equal(cellSeverity.data.data.severity, "CRITICAL");
        assert.equal(cellSeverity.data.data.snoozed, true);
        const items = (await (
          await fetch(`${url}/v1/items?probe=p1&managedEntity=me1&type=&sampler=s1&dataview=dv`)
        ).json()) as {
          item: { assignment: { assignedTo: string } };
        };
        assert.equal(items.item.assignment.assignedTo, "bob");
        // The snooze's condition still works after the restart.
        await fetch(`${probeUrl}/v1/managedEntity/me1/sampler/s1/dataview/dv/row/a`, {
          method: "PUT",
          body: JSON.stringify({ name: "a", queued: "1" }),
        });
        await eventually(
          () => second.messages.some((m) => m.type === "snooze" && m.data.data.snoozed === false),
          "the automatic unsnooze",
        );
      } finally {
        await probe.stop(1000);
        await gateway2.stop(1000);
      }
    } finally {
      await probe.stop(0).catch(() => {});
      await gateway1.stop(0).catch(() => {});
    }
  });
});

describe("after kill -9 of a vigil gateway process", () => {
  const dir = tempDir("gw-kill");
  after(() => dir.remove());
  const main = join(import.meta.dirname, "..", "..", "src", "cli", "main.ts");
  const gatewayProcess = (config: string, port: number) =>
    new VigilProcess(
      spawn(
        process.execPath,
        [
          "--import",
          import.meta.resolve("tsx"),
          main,
          "gateway",
          "--config",
          config,
          "--data-dir",
          dir.path,
          "--port",
          String(port),
          "--host",
          "127.0.0.1",
        ],
        {
          cwd: dir.path,
          stdio: ["ignore", "pipe", "pipe"],
        },
      ),
    );

  test("a snooze answered 200 is there after the process is killed", async () => {
    const config = join(dir.path, "setup.yaml");
    writeFileSync(
      config,
      SETUP.replace("publish", "publish").replace(
        "gateway: { name: GW, port: 0 }",
        `gateway: { name: GW, port: 0, publish: [{ file: ./messages.ndjson }] }`,
      ),
    );
    const port = await freePort();
    const first = gatewayProcess(config, port);
    try {
      const url = await first.url("gateway");
      assert.equal(
        await post(url, "snooze", {
          target: { gateway: "GW", probe: "p1" },
          user: "ann",
          comment: "maintenance",
        }),
        200,
      );
      assert.equal(
        await post(url, "assign", {
          target: { gateway: "GW" },
          user: "ann",
          assignedTo: "bob",
          period: "Time",
          untilTime: "2999-01-01T00:00:00Z",
        }),
        200,
      );
    } finally {
      const exit = await first.stop("SIGKILL");
      assert.equal(
        exit.signal,
        "SIGKILL",
        `${JSON.stringify(exit)} ${first.stderr} ${JSON.stringify(first.logs.slice(-3))}`,
      );
    }
    assert.ok(
      readdirSync(dir.path).every((name) => !name.endsWith(".tmp")),
      "no temporary file left",
    );
    const second = gatewayProcess(config, port);
    try {
      const url = await second.url("gateway");
      const items = (await (await fetch(`${url}/v1/items?probe=p1`)).json()) as {
        item: { snoozed: { snoozed: boolean; comment: string } };
      };
      assert.deepEqual([items.item.snoozed.snoozed, items.item.snoozed.comment], [true, "maintenance"]);
      const top = (await (await fetch(`${url}/v1/items`)).json()) as {
        item: { assignment: { assignedTo: string; untilTime: string } };
      };
      assert.deepEqual(
        [top.item.assignment.assignedTo, top.item.assignment.untilTime],
        ["bob", "2999-01-01T00:00:00.000Z"],
      );
      // Republished at start as snapshot, in the NDJSON sink.
      const lines = await eventually(() => {
        const text = existsSync(join(dir.path, "messages.ndjson"))
          ? readFileSync(join(dir.path, "messages.ndjson"), "utf8")
          : "";
        const found = text.split("\n").filter((l) => l.includes('"operation":"snapshot"'));
        return found.length >= 2 ? found : undefined;
      }, "the snapshots in the sink");
      assert.ok(
        lines.some((l) => l.includes('"type":"snooze"')) &&
          lines.some((l) => l.includes('"type":"userassignment"')),
      );
    } finally {
      await second.stop("SIGTERM");
    }
  });
});
