/**
 * The PostgreSQL client's own sockets (src/hub/store/postgres/postgres-socket.ts): a store opened on
 * a URL connects through them and works (its queries and COPY run on them); a multi-host URL skips a
 * host that refuses and uses the next; no reachable host is the last host's error, on its socket; a
 * store whose server refuses rejects each query with the refusal (it hung before). The point of the
 * module, TCP_NODELAY, is measured by `npm run bench -- store-query` (PostgreSQL backfill), not here.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { noDelaySocket } from "../../../src/hub/store/postgres/postgres-socket.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const reachable = await postgresReachable();

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the PostgreSQL client's sockets", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  let db: PgTestDatabase;
  before(async () => {
    db = await PgTestDatabase.create("socket");
  });
  after(async () => {
    await db?.drop();
  });

  test("a store on a URL migrates and writes samples by COPY through them", async () => {
    const url = await db.freshUrl();
    const store = await createPostgresStore({ url });
    try {
      await store.migrate();
      const entity = { gateway: "gw", probe: "p", managedEntity: "me" };
      const samples = Array.from({ length: 2_000 }, (_, i) => ({
        entity,
        series: { sampler: "s", samplerType: "", dataview: "d", row: `r${i % 10}`, column: "c" },
        at: asEpochMs(Date.UTC(2024, 4, 1) + i * 1_000),
        text: String(i),
        value: i,
      }));
      await store.transaction((tx) => tx.write({ entities: [], samples }));
      const schema = new URL(url).searchParams.get("search_path") ?? "";
      const [row] = await db.sql.unsafe(
        `SELECT count(*)::int AS n, sum(value) AS total FROM ${schema}.samples`,
      );
      assert.deepEqual([row?.n, Number(row?.total)], [2_000, (1_999 * 2_000) / 2]);
    } finally {
      await store.close();
    }
  });

  test("the first host that accepts is used; none accepting is the last refusal, on the socket", async () => {
    const refused = await closedPort();
    const socket = await noDelaySocket({ host: ["127.0.0.1", "127.0.0.1"], port: [refused, 5432] });
    if (socket.connecting) await once(socket, "connect"); // the last host comes back connecting
    assert.equal(socket.remotePort, 5432);
    // A host before the last is tried to the end: the one that accepts comes back connected.
    const first = await noDelaySocket({ host: ["127.0.0.1", "127.0.0.1"], port: [5432, refused] });
    assert.equal(first.remotePort, 5432);
    first.destroy();
    socket.destroy();
    // Never a rejected factory (see postgres-socket.ts): the refusal is the socket's error event.
    const last = await noDelaySocket({ host: ["127.0.0.1"], port: [refused] });
    const [refusal] = (await once(last, "error")) as [Error];
    assert.match(refusal.message, /ECONNREFUSED/);
    const none = await noDelaySocket({ host: [], port: [] });
    const [noHost] = (await once(none, "error")) as [Error];
    assert.match(noHost.message, /names no host/);
  });

  test("a store whose server refuses answers each query with the refusal, again and again", async () => {
    const refused = await closedPort();
    const store = await createPostgresStore({ url: `postgres://postgres@127.0.0.1:${refused}/none` });
    try {
      for (let round = 0; round < 2; round += 1) {
        // Bounded: with a rejected socket factory these never settled (and the next write crashed).
        // The client waits between attempts to connect (its backoff, growing per attempt): ~9 s a
        // round here, more on a loaded machine, so the bound only tells a hang from a wait.
        const outcomes = await Promise.race([
          Promise.allSettled(Array.from({ length: 10 }, () => store.ping())),
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error("the queries did not settle within 60 s")), 60_000).unref(),
          ),
        ]);
        for (const outcome of outcomes) {
          assert.equal(outcome.status, "rejected");
          assert.match(String((outcome as PromiseRejectedResult).reason), /ECONNREFUSED/);
        }
      }
    } finally {
      await store.close();
    }
  });
});
