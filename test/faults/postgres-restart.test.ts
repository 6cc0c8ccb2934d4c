/**
 * Fault test: PostgreSQL restarted under load. `vigil probe` → `vigil gateway` → NATS
 * JetStream → `vigil hub --store postgres://… --bus nats://…`, all on servers of the test's own
 * (the shared ones serve other tests). While data flows through the probe and through backfill,
 * PostgreSQL is stopped: backfill and queries answer 503 with `Retry-After`, the JetStream consumer
 * reports retrying; once PostgreSQL is back the hub reconnects by itself, the consumer resumes, and
 * every value the probe or a backfill acknowledged is stored exactly once (counted in PostgreSQL).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import postgres from "postgres";
import { PrivateNats, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { PRIVATE_NATS_SKIP, PrivatePostgres } from "../helpers/private-services.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";
import {
  BACKFILL_ENTITY,
  Backfiller,
  duplicatesIn,
  faultSetup,
  missingFrom,
  PUSH,
  Pusher,
  postBackfill,
  probeArgs,
  within,
} from "./fault-fixture.js";

const BATCH = 200; // messages per backfill request

const skip = needs(
  PrivatePostgres.skipReason !== undefined
    ? `no private PostgreSQL: ${PrivatePostgres.skipReason}`
    : PRIVATE_NATS_SKIP !== undefined
      ? `no private NATS: ${PRIVATE_NATS_SKIP}`
      : false,
);
if (skip !== false) console.log(`# skipping the PostgreSQL restart fault test: ${skip}`);

describe("fault: PostgreSQL restarted under load", { skip, timeout: 170_000 }, () => {
  const dir = tempDir("fault-pg");
  const names = uniqueNames("faultpg");
  let pg: PrivatePostgres | undefined;
  let nats: PrivateNats | undefined;
  let sql: postgres.Sql | undefined;
  const processes: VigilProcess[] = [];
  let storeUrl = "";
  let pusher: Pusher | undefined;
  let backfiller: Backfiller | undefined;

  before(async () => {
    pg = await PrivatePostgres.start();
    nats = await PrivateNats.start();
    storeUrl = await (pg as PrivatePostgres).createDatabase("vigil");
  });

  after(async () => {
    void backfiller?.stop();
    await pusher?.stop();
    for (const p of processes) {
      // A process that died by itself is a finding: show how.
      if (p.child.exitCode !== null || p.child.signalCode !== null) {
        console.log(
          `# ${p.child.spawnargs[2]} exited by itself (${p.child.exitCode ?? p.child.signalCode}): ${p.stderr.slice(0, 3_000)} ${JSON.stringify(p.logs.slice(-5))}`,
        );
      }
      await p.stop("SIGKILL").catch(() => undefined);
    }
    await sql?.end({ timeout: 1 }).catch(() => undefined);
    await pg?.cleanup();
    await nats?.cleanup();
    dir.remove();
  });

  test("503 while it is down, reconnects, the consumer resumes, every acknowledged value stored once", async () => {
    const natsUrl = (nats as PrivateNats).url;
    const stream = `{ nats: { url: "${natsUrl}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} } }`;
    const config = writeFile(dir.path, "setup.yaml", faultSetup({ gatewayPort: 0, publish: [stream] }));
    const start = (args: string[]) => {
      const p = startVigil([...args, "--host", "127.0.0.1"], dir.path);
      processes.push(p);
      return p;
    };
    const hub = start([
      "hub",
      "--config",
      config,
      "--store",
      storeUrl,
      "--bus",
      natsUrl,
      "--data-dir",
      join(dir.path, "hub"),
    ]);
    const gateway = start(["gateway", "--config", config, "--data-dir", join(dir.path, "gw")]);
    const hubUrl = await within("the hub", 60_000, hub.url("hub"));
    const gatewayUrl = await within("the gateway", 60_000, gateway.url("gateway"));
    const probe = start(probeArgs(dir.path, gatewayUrl));
    const push = new Pusher(await within("the probe", 60_000, probe.url("probe", "p1")));
    pusher = push;
    await push.start();

    // Backfill runs beside the probe's data: each batch is posted until it gets a 200.
    const backfill = new Backfiller(() => hubUrl, BATCH, 200);
    backfiller = backfill;
    const backfilled = backfill.values;
    const backfillStatuses = backfill.statuses;

    await push.advance(200);
    /** What the hub said last, for a failure message. */
    const lastWords = () =>
      `backfill answers ${JSON.stringify(backfillStatuses.slice(-5))}; hub log ${JSON.stringify(
        hub.logs
          .slice(-4)
          .map((l) => ({ msg: l.msg, err: (l.err as { message?: string } | undefined)?.message })),
      )}`;
    await eventually(async () => (backfilled.length >= 4 * BATCH ? true : undefined), 60_000).catch(
      (error: Error) => {
        throw new Error(`before the outage: ${error.message}; ${lastWords()}`);
      },
    );

    // PostgreSQL goes away, as in `pg_ctl restart -m fast`.
    await (pg as PrivatePostgres).down("fast");
    let last: unknown;
    const refused = await eventually(async () => {
      const answer = await postBackfill(hubUrl, 1_000_000, 1);
      last = answer;
      return answer.status === 503 ? answer : undefined;
    }, 30_000).catch((error: Error) => {
      throw new Error(`${error.message}: backfill while PostgreSQL is down answered ${JSON.stringify(last)}`);
    });
    assert.equal(refused.retryAfter !== null, true, "a 503 says when to retry");
    assert.equal((refused.body as { status: number }).status, 503, JSON.stringify(refused.body));
    const query = await fetch(`${hubUrl}/v0/entities`);
    assert.equal(query.status, 503, await query.text());
    await eventually(async () => {
      const status = (await (await fetch(`${hubUrl}/v1/status`)).json()) as { consumer: { state: string } };
      return status.consumer.state === "retrying" ? true : undefined;
    }, 30_000);
    // The probe and the gateway keep taking data meanwhile (JetStream holds it) until their bounds.
    const duringOutage = push.acknowledged.length;

    await (pg as PrivatePostgres).up();
    // Back without a hub restart: backfill is answered 200 again and the consumer is ok.
    const backfilledBefore = backfilled.length;
    await eventually(async () => (backfilled.length > backfilledBefore ? true : undefined), 60_000).catch(
      (error: Error) => {
        throw new Error(`after the outage: ${error.message}; ${lastWords()}`);
      },
    );
    await push.advance(100);
    await push.stop();
    await backfill.stop();
    assert.ok(push.acknowledged.length > duringOutage, "the probe took data again after the outage");

    // Every acknowledged value arrives, once: counted in PostgreSQL itself.
    sql = postgres(storeUrl, { max: 1, onnotice: () => undefined });
    const valuesOf = async (entity: string): Promise<number[]> => {
      const rows = await (sql as postgres.Sql)<{ text: string }[]>`
        SELECT s.text FROM stored_samples s JOIN series r ON r.id = s.series_id JOIN entities e ON e.id = r.entity_id
        WHERE e.managed_entity = ${entity} AND r.column_name = ${PUSH.column}`;
      return rows.map((r) => Number(r.text));
    };
    const acknowledged = push.acknowledged;
    const probeValues = await eventually(async () => {
      const values = await valuesOf(PUSH.entity);
      return missingFrom(values, acknowledged).length === 0 ? values : undefined;
    }, 90_000).catch(async (error: Error) => {
      const values = await valuesOf(PUSH.entity);
      throw new Error(
        `${error.message}; missing probe values: ${missingFrom(values, acknowledged).join(", ")}`,
      );
    });
    assert.deepEqual(duplicatesIn(probeValues), [], "no probe value stored twice");
    const backfillValuesStored = await valuesOf(BACKFILL_ENTITY);
    assert.deepEqual(
      missingFrom(backfillValuesStored, backfilled),
      [],
      "every backfill answered 200 is stored",
    );
    assert.deepEqual(duplicatesIn(backfillValuesStored), [], "no backfilled value stored twice");
    const status = (await (await fetch(`${hubUrl}/v1/status`)).json()) as { consumer: { state: string } };
    assert.equal(status.consumer.state, "ok");
    console.log(
      `# PostgreSQL restart: ${acknowledged.length} probe values, ${backfilled.length} backfilled; backfill answers ${JSON.stringify(
        Object.fromEntries(
          [...new Set(backfillStatuses)].map((s) => [s, backfillStatuses.filter((x) => x === s).length]),
        ),
      )}; probe refusals ${JSON.stringify([...push.refusals])}`,
    );
  });
});
