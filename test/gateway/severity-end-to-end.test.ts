/**
 * End to end: a probe PUT that breaks a rule becomes a `severity` message in the NDJSON
 * sink and an event stored by the hub (the `vigil up` composition: probe → in-process link →
 * gateway → memory bus → hub → DuckDB), read back through `Store.listEvents` after a clean stop.
 * Also a snooze through the command API reaches the store, and (with NATS JetStream on
 * 127.0.0.1:4222) the severity message is on the stream's `<prefix>.events` subject.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { pino } from "pino";
import { startSystem } from "../../src/compose/system.js";
import { DEAD_LETTER_FILE } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { openStore } from "../../src/hub/store/open-store.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import { validateMessage } from "../../src/messages/validate.js";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { tempDir } from "../helpers/vigil-process.js";
import { eventually } from "../link/helpers.js";

const setup = parseSetup(`
gateway:
  name: GW-SEV
  port: 0
  publish: [memory, { file: ./events.ndjson }]
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - { name: web-01, samplers: [{ name: orders, plugin: rest-api }] }
rules:
  - name: queue too long
    target: { sampler: orders, dataview: queue, row: "*", column: queued }
    when: { operator: ">", value: 100 }
    severity: CRITICAL
hub:
  port: 0
  security: { enabled: false }
`);

describe("severity end to end", () => {
  const dir = tempDir("sev-e2e");
  after(() => dir.remove());

  test("a PUT breaking a rule: severity message in the NDJSON sink and in the hub's store", async () => {
    const system = await startSystem({
      setup,
      dataDir: dir.path,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
    const file = join(dir.path, "events.ndjson");
    const lines = (): PublicV2Message[] =>
      existsSync(file)
        ? readFileSync(file, "utf8")
            .split("\n")
            .filter((l) => l !== "")
            .map((l) => JSON.parse(l) as PublicV2Message)
        : [];
    try {
      const probe = system.urls["probe:p1"] as string;
      const gateway = system.urls.gateway as string;
      const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue`, {
        method: "PUT",
        body: JSON.stringify([{ name: "EURUSD", queued: "150" }]),
      });
      assert.equal(put.status, 200);
      const cell = await eventually(
        () => lines().find((m) => m.type === "severity" && m.data.target.row === "EURUSD"),
        "the cell's severity in the NDJSON sink",
      );
      assert.ok(validateMessage(cell).ok);
      assert.deepEqual(cell.type === "severity" && cell.data.data, {
        severity: "CRITICAL",
        active: true,
        snoozed: false,
        snoozedParents: 0,
        userAssigned: false,
        value: { cell: "150", number: 150 },
      });
      const snooze = await fetch(`${gateway}/v1/commands/snooze`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          target: { gateway: "GW-SEV", probe: "p1", managedEntity: "web-01" },
          user: "ann",
          comment: "deploy",
        }),
      });
      assert.equal(snooze.status, 200);
      await eventually(() => lines().some((m) => m.type === "snooze"), "the snooze in the sink");
      for (const message of lines()) assert.ok(validateMessage(message).ok, JSON.stringify(message));
    } finally {
      await system.stop(5_000);
    }
    // A clean stop carries everything accepted into the store; the hub refused none of them.
    assert.ok(!existsSync(join(dir.path, DEAD_LETTER_FILE)), "no dead letters");
    const store = await openStore("duckdb:", dir.path);
    try {
      await store.migrate();
      const events = await store.listEvents({ types: ["severity", "snooze"], limit: 100 });
      const cellEvent = events.find((e) => e.type === "severity" && e.target.row === "EURUSD");
      assert.equal(cellEvent?.payload.severity, "CRITICAL");
      const entityEvent = events.find(
        (e) => e.type === "severity" && e.target.managedEntity === "web-01" && e.target.sampler === undefined,
      );
      assert.equal(entityEvent?.payload.severity, "CRITICAL");
      assert.ok(events.some((e) => e.type === "snooze" && e.payload.snoozedBy === "ann"));
    } finally {
      await store.close();
    }
  });
});

const reachable = await natsReachable();

describe("severity end to end over NATS JetStream", { skip: needs(reachable ? false : NATS_SKIP) }, () => {
  const dir = tempDir("sev-nats");
  const names = uniqueNames("sev");
  let admin: NatsAdmin | undefined;
  after(async () => {
    await admin?.cleanup();
    dir.remove();
  });

  test("a PUT breaking a rule: the severity message on <prefix>.events", async () => {
    admin = await NatsAdmin.open();
    admin.track(names.stream);
    const natsSetup = parseSetup(`
gateway:
  name: GW-NATS
  port: 0
  publish:
    - memory
    - nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - { name: web-01, samplers: [{ name: orders, plugin: rest-api }] }
rules:
  - name: slow
    target: { sampler: orders, row: "*", column: latency }
    when: { operator: ">=", value: 250 }
    severity: WARNING
hub:
  port: 0
  security: { enabled: false }
`);
    const system = await startSystem({
      setup: natsSetup,
      dataDir: dir.path,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
    try {
      const probe = system.urls["probe:p1"] as string;
      const put = await fetch(`${probe}/v1/managedEntity/web-01/sampler/orders/dataview/lat`, {
        method: "PUT",
        body: JSON.stringify([{ name: "EURUSD", latency: "250.0" }]),
      });
      assert.equal(put.status, 200);
      const stored = await eventually(async () => {
        if (!(await admin?.exists(names.stream))) return undefined;
        const messages = (await admin?.read(names.stream)) ?? [];
        return messages.find(
          (m) => m.subject === `${names.subjectPrefix}.events` && m.string().includes('"row":"EURUSD"'),
        );
      }, "the severity message on the events subject");
      const message = JSON.parse(stored.string()) as PublicV2Message;
      assert.ok(validateMessage(message).ok);
      assert.equal(message.type, "severity");
      assert.equal(message.type === "severity" && message.data.data.severity, "WARNING");
      assert.ok(stored.header?.get("Nats-Msg-Id"), "a Nats-Msg-Id for de-duplication");
    } finally {
      await system.stop(5_000);
    }
  });
});
