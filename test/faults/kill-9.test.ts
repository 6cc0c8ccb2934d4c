/**
 * Fault test: `kill -9` of each process mid-ingest, then a restart. `vigil probe` →
 * `vigil gateway` → NATS JetStream (a server of the test's own) → `vigil hub` with its DuckDB file,
 * while a client keeps pushing numbered values into the probe (and, for the hub, backfills). What
 * each process's acknowledgement promises (DESIGN 1 "Durability", docs/architecture.md "The
 * hand-offs") is what is checked after the restart:
 * - hub: a 200 from `POST /v0/messages` means committed, and everything the gateway published to
 *   JetStream is delivered again until a hub commits it: every such value is there, once;
 * - probe: a 200 means accepted in the probe's memory; a crash may lose what had not been passed on,
 *   but what was passed on arrives in order (no gap, no value twice), and everything after the
 *   restart arrives;
 * - gateway: it acknowledges the probe once its targets have room, so a crash may lose what it held;
 *   the probe's state sent on reconnect carries the current value (published again as a snapshot),
 *   nothing is stored that was never acknowledged, and everything after the restart arrives once.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PrivateNats, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { PRIVATE_NATS_SKIP } from "../helpers/private-services.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";
import {
  BACKFILL_ENTITY,
  Backfiller,
  duplicatesIn,
  faultSetup,
  missingFrom,
  PUSH,
  Pusher,
  probeArgs,
  storedValues,
  within,
} from "./fault-fixture.js";

const BATCH = 100; // messages per backfill request
const START_MS = 60_000; // how long a process may take to start on a loaded machine

const skip = needs(PRIVATE_NATS_SKIP === undefined ? false : `no private NATS: ${PRIVATE_NATS_SKIP}`);
if (skip !== false) console.log(`# skipping the kill -9 fault tests: ${skip}`);

describe("fault: kill -9 of each process mid-ingest, then a restart", { skip, timeout: 170_000 }, () => {
  const dir = tempDir("fault-kill");
  const names = uniqueNames("faultkill");
  let nats: PrivateNats | undefined;
  let config = "";
  const processes = new Set<VigilProcess>();
  const pushers: Pusher[] = [];
  let hub: VigilProcess;
  let gateway: VigilProcess;
  let probe: VigilProcess;
  let hubUrl = "";
  let gatewayUrl = "";

  const start = (args: string[]): VigilProcess => {
    const p = startVigil([...args, "--host", "127.0.0.1"], dir.path);
    processes.add(p);
    return p;
  };
  const startHub = async (): Promise<void> => {
    hub = start([
      "hub",
      "--config",
      config,
      "--bus",
      (nats as PrivateNats).url,
      "--data-dir",
      join(dir.path, "hub"),
    ]);
    hubUrl = await within("the hub", START_MS, hub.url("hub"));
  };
  const startGateway = async (): Promise<void> => {
    gateway = start(["gateway", "--config", config, "--data-dir", join(dir.path, "gw")]);
    gatewayUrl = await within("the gateway", START_MS, gateway.url("gateway"));
  };
  const startProbe = async (): Promise<string> => {
    probe = start(probeArgs(dir.path, gatewayUrl));
    return within("the probe", START_MS, probe.url("probe", "p1"));
  };
  const kill9 = async (p: VigilProcess): Promise<void> => {
    await p.stop("SIGKILL");
    assert.equal((await p.exited).signal, "SIGKILL");
    processes.delete(p);
  };
  /** Waits until the hub holds every value of `expected` for `dataview` and returns what it holds. */
  const arrived = async (entity: string, expected: readonly number[], dataview?: string) => {
    let values: number[] = [];
    return eventually(async () => {
      values = await storedValues(hubUrl, entity, dataview);
      return missingFrom(values, expected).length === 0 ? values : undefined;
    }, 90_000).catch((error: Error) => {
      throw new Error(`${error.message}; missing: ${missingFrom(values, expected).join(", ")}`);
    });
  };

  before(async () => {
    nats = await PrivateNats.start();
    const stream = `{ nats: { url: "${(nats as PrivateNats).url}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} } }`;
    config = writeFile(dir.path, "setup.yaml", faultSetup({ gatewayPort: 0, publish: [stream] }));
    await startHub();
    await startGateway();
    // The gateway's port goes into the file, so a restarted gateway is where the probe looks.
    writeFileSync(config, faultSetup({ gatewayPort: Number(new URL(gatewayUrl).port), publish: [stream] }));
    await startProbe();
  });

  after(async () => {
    for (const pusher of pushers) await pusher.stop();
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

  const pusherFor = async (dataview: string): Promise<Pusher> => {
    const pusher = new Pusher(await probe.url("probe", "p1"), dataview);
    pushers.push(pusher);
    await pusher.start();
    return pusher;
  };

  test("probe: what it passed on arrives once and in order; everything after its restart arrives", async () => {
    const pusher = await pusherFor("probekill");
    await pusher.advance(150);
    await kill9(probe);
    const beforeKill = pusher.acknowledged.length;
    pusher.probeUrl = await startProbe();
    await pusher.advance(100);
    await pusher.stop();

    const acknowledged = pusher.acknowledged;
    const afterRestart = acknowledged.slice(beforeKill);
    const values = await arrived(PUSH.entity, afterRestart, "probekill");
    // The PUT in flight at the kill got no answer and was sent again to the new probe; the old one
    // may have passed it on first, so that one value may be there twice. Nothing else may.
    const inFlight = (acknowledged[beforeKill - 1] ?? 0) + 1;
    assert.deepEqual(
      duplicatesIn(values).filter((v) => v !== inFlight),
      [],
      "no value stored twice",
    );
    assert.ok(values.filter((v) => v === inFlight).length <= 2);
    const known = new Set([0, ...acknowledged]);
    assert.deepEqual(
      values.filter((v) => !known.has(v)),
      [],
      "nothing stored that the probe did not acknowledge",
    );
    // Before the kill, what reached the hub is a prefix of what was pushed: lost only at the end.
    const early = values.filter((v) => v < inFlight).sort((a, b) => a - b);
    assert.deepEqual(
      early,
      Array.from({ length: early.length }, (_, i) => i),
      "no gap in what reached the hub",
    );
    console.log(
      `# probe kill -9: ${beforeKill} acknowledged before, ${early.length - 1} of them stored; ${afterRestart.length} after, all stored`,
    );
  });

  test("gateway: the current value and everything after its restart arrive once, nothing unacknowledged", async () => {
    const pusher = await pusherFor("gatewaykill");
    await pusher.advance(150);
    await kill9(gateway);
    const beforeKill = pusher.acknowledged.length;
    await startGateway();
    // The probe reconnects by itself; values it takes meanwhile reach the new gateway in its state.
    await eventually(async () => {
      const status = (await (await fetch(`${gatewayUrl}/v1/status`)).json()) as {
        links: { probe?: string; state: string }[];
      };
      return status.links.some((l) => l.probe === "p1" && l.state === "up") ? true : undefined;
    }, 60_000);
    await pusher.advance(150);
    await pusher.stop();

    const acknowledged = pusher.acknowledged;
    const lastBeforeKill = acknowledged[beforeKill - 1] as number;
    const values = await arrived(PUSH.entity, [acknowledged.at(-1) as number], "gatewaykill");
    const known = new Set([0, ...acknowledged]);
    assert.deepEqual(
      values.filter((v) => !known.has(v)),
      [],
      "nothing stored that the probe did not acknowledge",
    );
    // What is stored is two runs of consecutive values: 0…m, what the killed gateway had published
    // (in order, so without a gap), then s…last, from the snapshot of the probe's state at the
    // reconnect (the row's value then, at least the last one acknowledged before the kill) on.
    // Lost in between: what the gateway held unpublished, and what the probe took while its link
    // was down (coalesced into the snapshot). With no loss, the two runs meet.
    const unique = [...new Set(values)].sort((a, b) => a - b);
    let m = 0;
    while (unique[m + 1] === m + 1) m += 1;
    const rest = unique.slice(m + 1);
    assert.ok(
      rest.every((v, i) => i === 0 || v === (rest[i - 1] as number) + 1),
      `every value from the reconnect on is stored: ${rest.slice(0, 20).join(", ")}…`,
    );
    assert.equal(rest.at(-1) ?? m, acknowledged.at(-1), "the last value is stored");
    const snapshot = rest[0] ?? m;
    assert.ok(
      snapshot >= lastBeforeKill || rest.length === 0,
      `the gap ends at the reconnect: ${m} → ${snapshot}`,
    );
    // Only the snapshot may repeat a value the old gateway had published.
    const twice = duplicatesIn(values);
    assert.ok(
      twice.length <= 1 && values.filter((v) => v === twice[0]).length <= 2,
      `at most one value twice: ${twice.join(", ")}`,
    );
    console.log(
      `# gateway kill -9: ${beforeKill} acknowledged before (last ${lastBeforeKill}), stored 0…${m} and ${snapshot}…${acknowledged.at(-1)}; twice: ${twice.join(",") || "none"}`,
    );
  });

  test("hub: every backfill answered 200 and every published value is stored once after its restart", async () => {
    const pusher = await pusherFor("hubkill");
    const backfiller = new Backfiller(() => hubUrl, BATCH, 100);
    const backfilled = backfiller.values;
    await pusher.advance(150);
    await eventually(async () => (backfilled.length >= 3 * BATCH ? true : undefined), 60_000);
    await kill9(hub);
    const beforeKill = { probe: pusher.acknowledged.length, backfill: backfilled.length };
    await startHub();
    await pusher.advance(100);
    await eventually(async () => (backfilled.length > beforeKill.backfill ? true : undefined), 60_000);
    await backfiller.stop();
    await pusher.stop();

    // Published values the killed hub held unacknowledged come back after the consumer's ack wait.
    const values = await arrived(PUSH.entity, pusher.acknowledged, "hubkill");
    assert.deepEqual(duplicatesIn(values), [], "no published value stored twice");
    const backfillStored = await storedValues(hubUrl, BACKFILL_ENTITY);
    assert.deepEqual(missingFrom(backfillStored, backfilled), [], "every backfill answered 200 is stored");
    assert.deepEqual(duplicatesIn(backfillStored), [], "no backfilled value stored twice");
    console.log(
      `# hub kill -9: ${pusher.acknowledged.length} probe values and ${backfilled.length} backfilled (${beforeKill.backfill} before the kill), each stored once`,
    );
  });
});
