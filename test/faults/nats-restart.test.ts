/**
 * Fault test: NATS restarted under load. `vigil probe` → `vigil gateway` → NATS JetStream
 * (a server of the test's own, file storage in a temporary folder) → `vigil hub` (DuckDB). While a
 * client keeps pushing into the probe, NATS is stopped. As docs/decisions.md "Hand-offs" documents,
 * the gateway blocks rather than drops: its NATS target reports `failing` and holds at most its
 * bound (2,000 messages), then the gateway stops acknowledging the probe, whose ingest answers 503
 * with `Retry-After`; the hub's consumer reports `retrying`. Once NATS is back, everything the probe
 * acknowledged reaches the hub, each value once.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { LINK_BATCH_CHANGES } from "../../src/config/defaults.js";
import { PrivateNats, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { PRIVATE_NATS_SKIP } from "../helpers/private-services.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";
import {
  duplicatesIn,
  faultSetup,
  missingFrom,
  PUSH,
  Pusher,
  probeArgs,
  storedValues,
  within,
} from "./fault-fixture.js";

const START_MS = 60_000; // how long a process may take to start on a loaded machine
/**
 * The publisher checks for room before it takes a link batch, so a target passes its capacity by
 * at most one batch's messages (sink-channel.ts `offer`); here each change is one row, one message.
 */
const OVERSHOOT = LINK_BATCH_CHANGES;

const skip = needs(PRIVATE_NATS_SKIP === undefined ? false : `no private NATS: ${PRIVATE_NATS_SKIP}`);
if (skip !== false) console.log(`# skipping the NATS restart fault test: ${skip}`);

interface SinkStatus {
  name: string;
  state: string;
  buffered: number;
  capacity: number;
  retries: number;
}

describe("fault: NATS restarted under load", { skip, timeout: 170_000 }, () => {
  const dir = tempDir("fault-nats");
  const names = uniqueNames("faultnats");
  let nats: PrivateNats | undefined;
  const processes: VigilProcess[] = [];
  let pusher: Pusher | undefined;

  before(async () => {
    nats = await PrivateNats.start();
  });

  after(async () => {
    await pusher?.stop();
    for (const p of processes) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) {
        console.log(
          `# ${p.child.spawnargs[2]} exited by itself (${p.child.exitCode ?? p.child.signalCode}): ${p.stderr.slice(0, 3_000)}`,
        );
      }
      await p.stop("SIGKILL").catch(() => undefined);
    }
    await nats?.cleanup();
    dir.remove();
  });

  test("the gateway blocks while NATS is down; nothing acknowledged is lost once it is back", async () => {
    const server = nats as PrivateNats;
    const stream = `{ nats: { url: "${server.url}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} } }`;
    const config = writeFile(dir.path, "setup.yaml", faultSetup({ gatewayPort: 0, publish: [stream] }));
    const start = (args: string[]) => {
      const p = startVigil([...args, "--host", "127.0.0.1"], dir.path);
      processes.push(p);
      return p;
    };
    const hub = start(["hub", "--config", config, "--bus", server.url, "--data-dir", join(dir.path, "hub")]);
    const gateway = start(["gateway", "--config", config, "--data-dir", join(dir.path, "gw")]);
    const hubUrl = await within("the hub", START_MS, hub.url("hub"));
    const gatewayUrl = await within("the gateway", START_MS, gateway.url("gateway"));
    const probe = start(probeArgs(dir.path, gatewayUrl));
    const push = new Pusher(await within("the probe", START_MS, probe.url("probe", "p1")));
    pusher = push;
    await push.start();
    await push.advance(150);

    const natsTarget = async (): Promise<SinkStatus> => {
      const status = (await (await fetch(`${gatewayUrl}/v1/status`)).json()) as {
        publisher: { sinks: SinkStatus[] };
      };
      const sink = status.publisher.sinks.find((s) => s.name.startsWith("nats"));
      assert.ok(sink !== undefined, JSON.stringify(status.publisher));
      return sink;
    };
    const consumerState = async (): Promise<string> => {
      const status = (await (await fetch(`${hubUrl}/v1/status`)).json()) as { consumer: { state: string } };
      return status.consumer.state;
    };

    await server.down();
    // The target fails and retries, holding what it was given up to its bound (plus one batch).
    const failing = await eventually(async () => {
      const sink = await natsTarget();
      return sink.state === "failing" && sink.retries > 0 ? sink : undefined;
    }, 30_000);
    assert.ok(failing.buffered <= failing.capacity + OVERSHOOT, JSON.stringify(failing));
    await eventually(async () => ((await consumerState()) === "retrying" ? true : undefined), 30_000);
    // Back-pressure reaches the client: once the gateway's buffer is full it stops acknowledging
    // the probe, whose buffer fills in turn, and the probe answers 503 with Retry-After.
    await eventually(async () => ((push.refusals.get(503) ?? 0) > 0 ? true : undefined), 90_000).catch(
      async (error: Error) => {
        throw new Error(
          `${error.message}: no 503 from the probe; NATS target ${JSON.stringify(await natsTarget())}`,
        );
      },
    );
    const full = await natsTarget();
    assert.ok(full.buffered <= full.capacity + OVERSHOOT, JSON.stringify(full));
    const acknowledgedWhileDown = push.acknowledged.length;

    await server.up();
    await eventually(async () => ((await natsTarget()).state === "ok" ? true : undefined), 60_000);
    await push.advance(100);
    await push.stop();
    assert.ok(push.acknowledged.length > acknowledgedWhileDown);

    const acknowledged = push.acknowledged;
    let values: number[] = [];
    await eventually(async () => {
      values = await storedValues(hubUrl, PUSH.entity);
      return missingFrom(values, acknowledged).length === 0 ? true : undefined;
    }, 90_000).catch((error: Error) => {
      throw new Error(`${error.message}; missing: ${missingFrom(values, acknowledged).join(", ")}`);
    });
    assert.deepEqual(duplicatesIn(values), [], "no value stored twice");
    await eventually(async () => ((await consumerState()) === "ok" ? true : undefined), 30_000);
    console.log(
      `# NATS restart: ${acknowledged.length} values acknowledged and stored once; probe refusals ${JSON.stringify([...push.refusals])}; NATS target while full ${JSON.stringify(full)}`,
    );
  });
});
