/**
 * The gateway's JetStream publishing (src/bus/nats/jetstream-batch.ts) beside the baseline it
 * replaced: `jetstream().publish()` per message with every acknowledgement awaited, the way the NATS
 * client documents it. Both publish the same 1,000-message batches of ~900-byte table-message-sized
 * payloads with `Nats-Msg-Id` to a throwaway memory stream on 127.0.0.1:4222, alternating A B A B
 * for VIGIL_BENCH_ROUNDS rounds (default 3) of VIGIL_BENCH_SECONDS seconds (default 5) each.
 *
 * Figures: CPU time per message of this process (user + system, `process.cpuUsage`: what the
 * gateway's share of 2 cores pays) and messages per second, the median over the rounds, and the
 * ratio batch / baseline. One JSON line. Skips (exit 0, a line saying why) without NATS.
 */
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { JetStreamBatchPublisher, type JetStreamItem } from "../src/bus/nats/jetstream-batch.js";
import { benchRounds, benchSeconds } from "./settings.js";

const URL = "nats://127.0.0.1:4222";
const BATCH = 1_000;
const SECONDS = benchSeconds(5);
const ROUNDS = benchRounds(3);

const encoder = new TextEncoder();
const row: Record<string, string> = Object.create(null);
for (let c = 0; c < 11; c += 1) row[`c${c}`] = String(c * 1234.5);
const body = JSON.stringify({ type: "table", operation: "update", data: { row }, pad: "x".repeat(600) });

let nc: Awaited<ReturnType<typeof connect>>;
try {
  nc = await connect({ servers: URL, noAsyncTraces: true, timeout: 2_000, reconnect: false });
} catch {
  console.log(JSON.stringify({ bench: "nats-publish", skipped: `NATS not reachable on ${URL}` }));
  process.exit(0);
}
const jsm = await jetstreamManager(nc);
const stream = `BENCH_PUBLISH_${process.pid}`;
const subject = `bench.${stream}.metrics`;
await jsm.streams.add({
  name: stream,
  subjects: [`bench.${stream}.>`],
  storage: StorageType.Memory,
  max_msgs: 200_000,
});

let id = 0;
const nextBatch = (): JetStreamItem[] =>
  Array.from({ length: BATCH }, () => ({ subject, payload: encoder.encode(body), msgId: `bench.${++id}` }));

const baseline = async (): Promise<void> => {
  const js = jetstream(nc, { timeout: 5_000 });
  const batch = nextBatch();
  const acks = batch.map((item) =>
    js.publish(item.subject, item.payload, { msgID: item.msgId, timeout: 5_000 }),
  );
  await Promise.all(acks);
};
const publisher = new JetStreamBatchPublisher(nc);
const batched = async (): Promise<void> => {
  await publisher.publish(nextBatch(), 5_000);
};

interface Round {
  readonly cpuUsPerMessage: number;
  readonly messagesPerSecond: number;
}
async function round(run: () => Promise<void>, seconds: number): Promise<Round> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let messages = 0;
  while (performance.now() - start < seconds * 1000) {
    await run();
    messages += BATCH;
  }
  const used = process.cpuUsage(cpu);
  const elapsed = (performance.now() - start) / 1000;
  return { cpuUsPerMessage: (used.user + used.system) / messages, messagesPerSecond: messages / elapsed };
}
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

try {
  await round(baseline, 1); // warm-up of both
  await round(batched, 1);
  const a: Round[] = [];
  const b: Round[] = [];
  for (let r = 0; r < ROUNDS; r += 1) {
    a.push(await round(baseline, SECONDS));
    await jsm.streams.purge(stream);
    b.push(await round(batched, SECONDS));
    await jsm.streams.purge(stream);
  }
  const cpuA = median(a.map((x) => x.cpuUsPerMessage));
  const cpuB = median(b.map((x) => x.cpuUsPerMessage));
  const rateA = median(a.map((x) => x.messagesPerSecond));
  const rateB = median(b.map((x) => x.messagesPerSecond));
  console.log(
    JSON.stringify({
      bench: "nats-publish",
      batch: BATCH,
      rounds: ROUNDS,
      seconds: SECONDS,
      baseline_js_publish: { cpu_us_per_message: +cpuA.toFixed(1), messages_per_second: Math.round(rateA) },
      vigil_batch: { cpu_us_per_message: +cpuB.toFixed(1), messages_per_second: Math.round(rateB) },
      cpu_ratio: +(cpuB / cpuA).toFixed(2),
      rate_ratio: +(rateB / rateA).toFixed(2),
    }),
  );
} finally {
  publisher.close();
  await jsm.streams.delete(stream).catch(() => undefined);
  await nc.close();
}
