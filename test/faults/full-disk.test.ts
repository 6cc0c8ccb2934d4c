/**
 * Fault test: a full disk under the gateway's NDJSON file target, the hub's dead-letter
 * file and the hub's DuckDB file. Each lives on a small tmpfs the test mounts (a real file system
 * that really runs out of space: ENOSPC, partial writes), filled up while data flows, then given
 * space again. Expected: a clear error (status and logs say the disk is full; backfill answers 503),
 * no corruption (every line of the NDJSON and dead-letter files is whole JSON, the DuckDB file opens
 * again), and recovery by itself once there is space, with nothing acknowledged lost or doubled.
 *
 * Mounting needs root with CAP_SYS_ADMIN (CI's container has it); without it the file skips and
 * prints why.
 */
import assert from "node:assert/strict";
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { countSamples } from "../helpers/hub-query.js";
import { PrivateNats, tableMessage, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { mountTmpfs, PRIVATE_NATS_SKIP, type Tmpfs } from "../helpers/private-services.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";
import {
  BACKFILL_ENTITY,
  backfillValues,
  duplicatesIn,
  faultSetup,
  missingFrom,
  PUSH,
  Pusher,
  postBackfill,
  probeArgs,
  storedValues,
  within,
} from "./fault-fixture.js";

const START_MS = 60_000; // how long a process may take to start on a loaded machine

/** Mounts a probe tmpfs once, to learn whether this machine allows it. */
function mountSkipReason(): string | undefined {
  const probe = mountTmpfs(64 * 1024);
  if (!probe.ok) return probe.reason;
  probe.unmount();
  return undefined;
}
const mountSkip = mountSkipReason();
if (mountSkip !== undefined) {
  console.log(
    `# skipping the full-disk fault tests: ${mountSkip} (they need a real file system that runs out of space)`,
  );
}

/**
 * Fills the file system holding `dir` with a file `filler` until a write fails with ENOSPC, in
 * ever smaller writes, so less than 512 bytes stay free. Returns the filler's path.
 */
function fillUp(dir: string): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "a");
  try {
    for (const size of [256 * 1024, 16 * 1024, 4 * 1024, 512]) {
      const chunk = Buffer.alloc(size, 0x78);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

/** Every line of an NDJSON file parsed; fails naming the first line that is not whole JSON. */
function ndjsonLines(path: string): unknown[] {
  const text = readFileSync(path, "utf8");
  assert.ok(text === "" || text.endsWith("\n"), `${path} ends in the middle of a line`);
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line, i) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return assert.fail(`line ${i + 1} of ${path} is not whole JSON: ${line.slice(0, 200)}`);
      }
    });
}

describe("fault: a full disk", {
  skip: needs(mountSkip === undefined ? false : mountSkip),
  timeout: 170_000,
}, () => {
  const dir = tempDir("fault-disk");
  const mounts: Tmpfs[] = [];
  const processes: VigilProcess[] = [];
  const pushers: Pusher[] = [];
  let nats: PrivateNats | undefined;

  const mount = (bytes: number): string => {
    const tmpfs = mountTmpfs(bytes);
    assert.ok(tmpfs.ok, tmpfs.ok ? "" : tmpfs.reason);
    mounts.push(tmpfs);
    return tmpfs.path;
  };
  const start = (args: string[]): VigilProcess => {
    const p = startVigil([...args, "--host", "127.0.0.1"], dir.path);
    processes.push(p);
    return p;
  };

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
    for (const m of mounts) if (m.ok) m.unmount();
    await nats?.cleanup();
    dir.remove();
  });

  test("the gateway's NDJSON file: the target fails and blocks, the file keeps whole lines, nothing lost", async () => {
    const disk = mount(2 * 1024 * 1024);
    const file = join(disk, "messages.ndjson");
    const config = writeFile(
      dir.path,
      "file-setup.yaml",
      faultSetup({ gatewayPort: 0, publish: [`{ file: "${file}" }`] }),
    );
    const gateway = start(["gateway", "--config", config, "--data-dir", join(dir.path, "gw")]);
    const gatewayUrl = await within("the gateway", START_MS, gateway.url("gateway"));
    const probe = start(probeArgs(dir.path, gatewayUrl));
    const pusher = new Pusher(await within("the probe", START_MS, probe.url("probe", "p1")), "filesink");
    pushers.push(pusher);
    await pusher.start();
    await pusher.advance(100);

    const fileTarget = async () => {
      const status = (await (await fetch(`${gatewayUrl}/v1/status`)).json()) as {
        publisher: { sinks: { name: string; state: string; buffered: number; lastError?: string }[] };
      };
      return status.publisher.sinks.find((s) => s.name.startsWith("file:")) as {
        state: string;
        buffered: number;
        lastError?: string;
      };
    };

    const filler = fillUp(disk);
    const failing = await eventually(async () => {
      const sink = await fileTarget();
      return sink.state === "failing" ? sink : undefined;
    }, 30_000);
    assert.match(failing.lastError ?? "", /ENOSPC|no space/i, "the error says the disk is full");
    // Blocked, not dropping: the probe is refused once the buffers up to it are full.
    await eventually(async () => ((pusher.refusals.get(503) ?? 0) > 0 ? true : undefined), 90_000);
    const whileFull = pusher.acknowledged.length;

    rmSync(filler);
    await eventually(async () => ((await fileTarget()).state === "ok" ? true : undefined), 30_000);
    await pusher.advance(50);
    await pusher.stop();
    assert.ok(pusher.acknowledged.length > whileFull);
    await eventually(async () => ((await fileTarget()).buffered === 0 ? true : undefined), 30_000);

    // Every line whole; every acknowledged value there once (no probe reconnect here: no snapshot).
    // The last values the probe acknowledged may still be on their way to the gateway when its file
    // target is empty, so the file is read until they are there (or the wait ends and it fails).
    const fileValues = () =>
      ndjsonLines(file)
        .map(
          (m) => m as { type: string; data: { target: { dataview?: string }; row?: Record<string, string> } },
        )
        .filter(
          (m) => m.type === "table" && m.data.target.dataview === "filesink" && m.data.row !== undefined,
        )
        .map((m) => Number(m.data.row?.[PUSH.column]));
    await eventually(
      async () => (missingFrom(fileValues(), pusher.acknowledged).length === 0 ? true : undefined),
      30_000,
    ).catch(() => undefined);
    const values = fileValues();
    assert.deepEqual(missingFrom(values, pusher.acknowledged), [], "every acknowledged value is in the file");
    assert.deepEqual(duplicatesIn(values), [], "no value written twice");
    console.log(
      `# NDJSON target on a full disk: ${pusher.acknowledged.length} values, each once; error "${failing.lastError}"; probe refusals ${JSON.stringify([...pusher.refusals])}`,
    );
  });

  test("the hub's dead-letter file: the batch waits, the file keeps whole lines, each letter once", async (t) => {
    if (PRIVATE_NATS_SKIP !== undefined) {
      t.skip(needs(`no private NATS: ${PRIVATE_NATS_SKIP}`) || "");
      return;
    }
    nats = await PrivateNats.start();
    const server = nats as PrivateNats;
    const names = uniqueNames("faultdlq");
    const disk = mount(1024 * 1024);
    const stream = `{ nats: { url: "${server.url}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} } }`;
    const config = writeFile(dir.path, "dlq-setup.yaml", faultSetup({ gatewayPort: 0, publish: [stream] }));
    // The data dir (keys, dead letters) on the small disk; the DuckDB file elsewhere.
    const hub = start([
      "hub",
      "--config",
      config,
      "--bus",
      server.url,
      "--data-dir",
      disk,
      "--store",
      `duckdb:${join(dir.path, "dlq.duckdb")}`,
    ]);
    const hubUrl = await within("the hub", START_MS, hub.url("hub"));
    // The hub creates the stream (nothing else publishes here): wait for it.
    await within(
      "the hub's JetStream consumer",
      START_MS,
      hub.waitFor((l) => l.msg === "created the durable JetStream consumer"),
    );

    const nc = await connect({ servers: server.url });
    const js = jetstream(nc, { timeout: 5_000 });
    let seq = 0;
    /** Publishes `count` messages, every `badEvery`th of them not public-v2, with gateway-style ids. */
    const publish = async (count: number, badEvery: number): Promise<{ good: string[]; bad: string[] }> => {
      const out = { good: [] as string[], bad: [] as string[] };
      for (let i = 0; i < count; i += 1) {
        seq += 1;
        const id = `GWF-dlq-test.${seq}`;
        const bad = seq % badEvery === 0;
        const body = bad
          ? { type: "table", operation: "update", data: { note: `not public-v2 ${seq}` } }
          : tableMessage(`row-${seq}`, String(seq));
        await js.publish(`${names.subjectPrefix}.metrics`, JSON.stringify(body), { msgID: id });
        (bad ? out.bad : out.good).push(String(seq));
      }
      return out;
    };
    const status = async () =>
      (await (await fetch(`${hubUrl}/v1/status`)).json()) as {
        deadLettered: number;
        consumer: { state: string; lastError?: string };
      };
    const deadLetterFile = join(disk, "dead-letter.ndjson");

    try {
      const first = await publish(50, 10);
      await eventually(
        async () => ((await status()).deadLettered >= first.bad.length ? true : undefined),
        30_000,
      );

      const filler = fillUp(disk);
      const second = await publish(300, 3);
      const stuck = await eventually(async () => {
        const s = await status();
        return s.consumer.state === "retrying" ? s : undefined;
      }, 30_000);
      assert.match(stuck.consumer.lastError ?? "", /ENOSPC|no space/i, "the error says the disk is full");

      rmSync(filler);
      const all = [...first.bad, ...second.bad];
      await eventually(async () => {
        const s = await status();
        return s.consumer.state === "ok" && s.deadLettered >= all.length ? true : undefined;
      }, 60_000);
      const letters = ndjsonLines(deadLetterFile) as { id: string; reason: string }[];
      const lettered = letters.map((l) => l.id.split(".").at(-1) as string);
      assert.deepEqual(duplicatesIn(lettered.map(Number)), [], "each message dead-lettered once");
      assert.deepEqual(
        missingFrom(lettered.map(Number), all.map(Number)),
        [],
        "every bad message dead-lettered",
      );
      // The good messages went on being stored around the bad ones, each once.
      const goodCount = first.good.length + second.good.length;
      const day = { from: "2024-05-01T00:00:00Z", to: "2024-05-02T00:00:00Z" };
      const counted = await eventually(async () => {
        const n = await countSamples(hubUrl, {
          entity: "web-01",
          include: "orders/queue/{rowname}/queued",
          ...day,
        });
        return n >= goodCount ? n : undefined;
      }, 30_000);
      assert.equal(counted, goodCount, "each good message stored once");
      console.log(
        `# dead-letter file on a full disk: ${all.length} letters, each once, file whole; consumer error "${stuck.consumer.lastError}"`,
      );
    } finally {
      await nc.close();
    }
  });

  test("the hub's DuckDB file: backfill answers 503, the file is not corrupted, ingest resumes", async () => {
    // DuckDB writes in 256 KiB blocks and checkpoints its WAL: a few MiB for the empty schema.
    const disk = mount(24 * 1024 * 1024);
    const config = writeFile(
      dir.path,
      "duck-setup.yaml",
      faultSetup({ gatewayPort: 0, publish: ["memory"] }),
    );
    const args = [
      "hub",
      "--config",
      config,
      "--data-dir",
      join(dir.path, "duck-hub"),
      "--store",
      `duckdb:${join(disk, "hub.duckdb")}`,
    ];
    let hub = start(args);
    let hubUrl = await within("the hub", START_MS, hub.url("hub"));
    const BATCH = 500;
    const backfilled: number[] = [];
    let batch = 0;
    const post = async () => {
      const answer = await postBackfill(hubUrl, batch, BATCH);
      if (answer.status === 200) {
        backfilled.push(...backfillValues(batch, BATCH));
        batch += 1;
      }
      return answer;
    };
    for (let i = 0; i < 4; i += 1) assert.equal((await post()).status, 200);

    const filler = fillUp(disk);
    const refused = await eventually(async () => {
      const answer = await post();
      return answer.status !== 200 ? answer : undefined;
    }, 60_000);
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.match(JSON.stringify(refused.body), /space|ENOSPC/i, "the answer says the disk is full");

    rmSync(filler);
    // Recovery by itself, without a restart.
    await eventually(async () => ((await post()).status === 200 ? true : undefined), 60_000).catch(
      async (error: Error) => {
        throw new Error(
          `${error.message}: after space returned, backfill answers ${JSON.stringify(await postBackfill(hubUrl, batch, 1))}`,
        );
      },
    );
    const values = await storedValues(hubUrl, BACKFILL_ENTITY);
    assert.deepEqual(missingFrom(values, backfilled), [], "every backfill answered 200 is stored");
    assert.deepEqual(duplicatesIn(values), [], "nothing stored twice");

    // The file opens again after a clean stop and holds the same.
    assert.deepEqual(await hub.stop("SIGTERM"), { code: 0, signal: null });
    processes.splice(processes.indexOf(hub), 1);
    hub = start(args);
    hubUrl = await within("the hub again", START_MS, hub.url("hub"));
    const again = await storedValues(hubUrl, BACKFILL_ENTITY);
    assert.equal(again.length, values.length);
    assert.ok(existsSync(join(disk, "hub.duckdb")));
    console.log(
      `# DuckDB file on a full disk: 503 ${JSON.stringify(refused.body)}; ${backfilled.length} values stored once`,
    );
  });
});
