/**
 * The PostgreSQL store against the shared Store contract, plus what only PostgreSQL has:
 * migrations under concurrency, partitions, and two stores (two hubs) on one database.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { partitionName, weekOf } from "../../../src/hub/store/postgres/postgres-partitions.js";
import { MIGRATIONS } from "../../../src/hub/store/postgres/postgres-schema.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import { SampleRowsBuilder } from "../../../src/hub/store/sample-rows.js";
import { type IngestBatch, type MessageKey, StoreDataError } from "../../../src/hub/store/store.js";
import { asEntityId, asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";
import { storeContract } from "./store-contract.js";
import { storeContractApi } from "./store-contract-api.js";

const reachable = await postgresReachable();
if (!reachable) {
  describe("PostgreSQL store", { skip: needs(PG_SKIP) }, () => undefined);
} else {
  const db = await PgTestDatabase.create("contract");
  after(() => db.drop());

  storeContract(
    "postgres",
    async (options) => createPostgresStore({ ...options, url: await db.freshUrl() }),
    () => {
      const url = db.freshUrl();
      return async (options) => createPostgresStore({ ...options, url: await url });
    },
  );

  storeContractApi("postgres", async (options) =>
    createPostgresStore({ ...options, url: await db.freshUrl() }),
  );

  const entity = { gateway: "gw", probe: "p", managedEntity: "me" };
  const batch = (at: string, value: number, row = "r"): IngestBatch => ({
    entities: [],
    samples: [
      {
        entity,
        series: { sampler: "s", samplerType: "", dataview: "d", row, column: "c" },
        at: asEpochMs(Date.parse(at)),
        text: String(value),
        value,
      },
    ],
  });

  describe("PostgreSQL store", () => {
    let url = "";
    before(async () => {
      url = await db.freshUrl();
    });

    it("two stores migrating one database at once apply each migration once", async () => {
      const stores = await Promise.all(Array.from({ length: 4 }, () => createPostgresStore({ url })));
      await Promise.all(stores.map((s) => s.migrate()));
      const rows = await db.sql.unsafe(
        `SELECT version FROM ${new URL(url).searchParams.get("search_path")}.vigil_migrations`,
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        MIGRATIONS.map((m) => m.version),
      );
      await Promise.all(stores.map((s) => s.close()));
    });

    /** A fresh schema migrated to the newest version, then taken back to what `version` made. */
    const atVersion = async (version: 1 | 2 | 3): Promise<{ url: string; schema: string | null }> => {
      const url = await db.freshUrl();
      const schema = new URL(url).searchParams.get("search_path");
      const first = await createPostgresStore({ url });
      await first.migrate();
      await first.close();
      if (version < 2) await db.sql.unsafe(`DROP INDEX ${schema}.samples_ts_brin`);
      await db.sql.unsafe(
        `DROP TABLE ${schema}.dataview_deletes, ${schema}.dataviews, ${schema}.numeric_series, ${schema}.probes`,
      );
      await db.sql.unsafe(`DROP TABLE ${schema}.vigil_settings`);
      if (version < 3) {
        await db.sql.unsafe(`DROP TABLE ${schema}.message_digests`);
        await db.sql.unsafe(`CREATE TABLE ${schema}.message_hashes (hash text COLLATE "C" PRIMARY KEY)`);
      }
      await db.sql.unsafe(`DELETE FROM ${schema}.vigil_migrations WHERE version > ${version}`);
      return { url, schema };
    };

    it("a database at version 1 gains the block-range index of sample times", async () => {
      const { url: fresh, schema } = await atVersion(1);
      const brin = async () =>
        (
          await db.sql.unsafe(
            `SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
             JOIN pg_am a ON a.oid = i.relam WHERE n.nspname = $1 AND t.relname = 'samples' AND a.amname = 'brin'`,
            [schema],
          )
        ).map((r) => r.relname);
      assert.deepEqual(await brin(), []);
      const upgraded = await createPostgresStore({ url: fresh });
      await upgraded.migrate();
      await upgraded.close();
      assert.deepEqual(await brin(), ["samples_ts_brin"]);
    });

    it("a database at version 2 keeps its message hashes as digests: those messages stay claimed", async () => {
      const { url: fresh, schema } = await atVersion(2);
      // Two hashes stored by version 2: a SHA-256 and a text of another form.
      const sha = "0123456789abcdef".repeat(4);
      const other = "id:not-a-digest ü";
      await db.sql.unsafe(`INSERT INTO ${schema}.message_hashes VALUES ($1), ($2)`, [sha, other]);
      const upgraded = await createPostgresStore({ url: fresh });
      await upgraded.migrate();
      const tables = await db.sql.unsafe(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name LIKE 'message_%' ORDER BY 1`,
        [schema],
      );
      assert.deepEqual(
        tables.map((t) => t.table_name),
        ["message_digests", "message_origins", "message_ranges"],
      );
      const claimed = await upgraded.transaction((tx) =>
        tx.claim([
          { kind: "hash", hash: sha },
          { kind: "hash", hash: other },
          { kind: "hash", hash: "f".repeat(64) },
        ]),
      );
      assert.deepEqual(claimed, [false, false, true]);
      await upgraded.close();
      // It held digests when the form was recorded, so it keeps theirs.
      assert.deepEqual(
        [...(await db.sql.unsafe(`SELECT key, value FROM ${schema}.vigil_settings`))],
        [{ key: "message_digest_form", value: "sha" }],
      );
    });

    it("a database at version 3 with no digest takes digests led by the minute", async () => {
      const { url: fresh, schema } = await atVersion(3);
      const upgraded = await createPostgresStore({ url: fresh });
      await upgraded.migrate();
      const sha = "0123456789abcdef".repeat(4);
      const at = Date.UTC(2025, 0, 1, 12, 34, 56, 789);
      const keys = [
        { kind: "hash" as const, hash: sha, at },
        { kind: "hash" as const, hash: "fedcba9876543210".repeat(4), at: at + 60_000 }, // the next minute
        { kind: "hash" as const, hash: "id:abc" }, // no time: led by zero
      ];
      assert.deepEqual(await upgraded.transaction((tx) => tx.claim(keys)), [true, true, true]);
      assert.deepEqual(await upgraded.transaction((tx) => tx.claim(keys)), [false, false, false]);
      await upgraded.close();
      assert.deepEqual(
        [...(await db.sql.unsafe(`SELECT key, value FROM ${schema}.vigil_settings`))],
        [{ key: "message_digest_form", value: "minute" }],
      );
      const minute = Math.floor(at / 60_000);
      const stored = await db.sql.unsafe(
        `SELECT replace(digest::text, '-', '') AS d FROM ${schema}.message_digests ORDER BY digest`,
      );
      assert.deepEqual(
        stored.map((r) => r.d),
        [
          `00000000${createHash("sha256").update("id:abc").digest("hex").slice(0, 24)}`,
          `${minute.toString(16).padStart(8, "0")}${sha.slice(0, 24)}`,
          `${(minute + 1).toString(16).padStart(8, "0")}${"fedcba9876543210".repeat(2).slice(0, 24)}`,
        ],
      );
    });

    it("samples go into weekly partitions created on demand", async () => {
      const fresh = await db.freshUrl();
      const schema = new URL(fresh).searchParams.get("search_path");
      const store = await createPostgresStore({ url: fresh });
      await store.migrate();
      await store.ingest(batch("2024-05-01T10:00:00Z", 1));
      await store.ingest(batch("2024-05-08T10:00:00Z", 2));
      await store.ingest(batch("1900-01-01T00:00:00Z", 3));
      await store.ingest(batch("2024-05-02T10:00:00Z", 4));
      // One batch over two weeks (COPY into `samples`, which routes each row).
      await store.ingest({
        ...batch("2024-05-09T10:00:00Z", 5),
        samples: [...batch("2024-05-09T10:00:00Z", 5).samples, ...batch("2024-05-03T10:00:00Z", 6).samples],
      });
      await store.close();
      const rows = await db.sql.unsafe(
        `SELECT c.relname AS partition, x.text FROM ${schema}.samples x JOIN pg_class c ON c.oid = x.tableoid ORDER BY x.ts_ms`,
      );
      const week = (iso: string) => partitionName(weekOf(Date.parse(iso)));
      assert.deepEqual(
        rows.map((r) => [r.partition, r.text]),
        [
          [week("1900-01-01T00:00:00Z"), "3"],
          [week("2024-05-01T10:00:00Z"), "1"],
          [week("2024-05-02T10:00:00Z"), "4"],
          [week("2024-05-03T10:00:00Z"), "6"],
          [week("2024-05-08T10:00:00Z"), "2"],
          [week("2024-05-09T10:00:00Z"), "5"],
        ],
      );
      assert.notEqual(week("2024-05-02T10:00:00Z"), week("2024-05-08T10:00:00Z"));
    });

    it("a week's partition dropped behind a store's cache fails one write; the retry recreates it", async () => {
      const shared = await db.freshUrl();
      const a = await createPostgresStore({ url: shared });
      const b = await createPostgresStore({ url: shared });
      await a.migrate();
      await b.ingest(batch("2024-05-01T10:00:00Z", 1)); // b now knows the week's partition
      assert.deepEqual(await a.deleteBefore(asEpochMs(Date.parse("2024-06-01T00:00:00Z"))), {
        samples: 1,
        events: 0,
      });
      await assert.rejects(b.ingest(batch("2024-05-01T10:00:01Z", 2)), { code: "42P01" });
      await b.ingest(batch("2024-05-01T10:00:01Z", 2));
      const schema = new URL(shared).searchParams.get("search_path");
      const texts = await db.sql.unsafe(`SELECT text FROM ${schema}.samples ORDER BY ts_ms`);
      assert.deepEqual(
        texts.map((r) => r.text),
        ["2"],
      );
      await a.close();
      await b.close();
    });

    it("two stores on one database write one entity and one series once, and each sees the other's", async () => {
      const shared = await db.freshUrl();
      const a = await createPostgresStore({ url: shared });
      const b = await createPostgresStore({ url: shared });
      await a.migrate();
      await b.migrate();
      await Promise.all([
        a.ingest(batch("2024-05-01T10:00:00Z", 1)),
        b.ingest(batch("2024-05-01T10:00:01Z", 2)),
        a.ingest(batch("2024-05-01T10:00:02Z", 3, "r2")),
        b.ingest(batch("2024-05-01T10:00:03Z", 4, "r2")),
      ]);
      const entities = await b.listEntities({ includeDeleted: false });
      assert.equal(entities.length, 1);
      assert.equal((await a.listSeries(entities[0]!.id)).length, 2);
      const claims = await Promise.all([
        a.transaction((tx) => tx.claim([{ kind: "seq", origin: "o", seq: 1 }])),
        b.transaction((tx) => tx.claim([{ kind: "seq", origin: "o", seq: 1 }])),
      ]);
      assert.deepEqual(claims.flat().sort(), [false, true]);
      await a.close();
      await b.close();
    });

    it("two stores consuming the same messages concurrently store each exactly once", async () => {
      const shared = await db.freshUrl();
      const hubs = [await createPostgresStore({ url: shared }), await createPostgresStore({ url: shared })];
      for (const hub of hubs) await hub.migrate();
      const MESSAGES = 3_000;
      // Each message: one sample of one of 3 entities × 5 rows; seq ids of one gateway run, plus
      // every 7th message known only by a hash (a backfilled file).
      const keyOf = (i: number): MessageKey =>
        i % 7 === 0 ? { kind: "hash", hash: `h${i}` } : { kind: "seq", origin: "gw.run1", seq: i + 1 };
      const sampleOf = (i: number) => ({
        entity: { gateway: "gw", probe: "p", managedEntity: `me${i % 3}` },
        series: { sampler: "s", samplerType: "", dataview: "d", row: `r${i % 5}`, column: "c" },
        at: asEpochMs(Date.parse("2024-05-01T00:00:00Z") + i * 1000),
        text: String(i),
        value: i,
      });
      // Both hubs get every message (a redelivering bus), in batches of different sizes and order.
      const consume = async (hub: (typeof hubs)[number], batchSize: number, reverse: boolean) => {
        const order = Array.from({ length: MESSAGES }, (_, i) => (reverse ? MESSAGES - 1 - i : i));
        let stored = 0;
        for (let start = 0; start < MESSAGES; start += batchSize) {
          const items = order.slice(start, start + batchSize);
          stored += await hub.transaction(async (tx) => {
            const fresh = await tx.claim(items.map(keyOf));
            const kept = items.filter((_, k) => fresh[k]);
            await tx.write({ entities: [], samples: kept.map(sampleOf) });
            return kept.length;
          });
        }
        return stored;
      };
      const [a, b] = await Promise.all([consume(hubs[0]!, 97, false), consume(hubs[1]!, 131, true)]);
      assert.equal(a + b, MESSAGES, "each message claimed by exactly one hub");
      const [row] = await db.sql.unsafe(
        `SELECT count(*)::int AS n, count(DISTINCT text)::int AS d FROM ${new URL(shared).searchParams.get("search_path")}.samples`,
      );
      assert.deepEqual([row?.n, row?.d], [MESSAGES, MESSAGES]);
      assert.equal((await hubs[0]!.listEntities({ includeDeleted: false })).length, 3);
      for (const hub of hubs) await hub.close();
    });

    it("COPY keeps text, times and values exactly as written", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      await store.migrate();
      const texts = ["tab\there", "line\nbreak\r\n", "back\\slash", "", "ok \u{1F600} é", "x".repeat(70_000)];
      const times = [-62_135_596_800_000, -1, 0, 2 ** 40, 1_714_557_600_123, 8.64e15 - 1]; // ascending
      const base = batch("2024-05-01T10:00:00Z", 1).samples[0]!;
      await store.ingest({
        entities: [],
        samples: texts.map((text, i) => ({
          ...base,
          at: asEpochMs(times[i]!),
          text,
          value: i === 3 ? null : -i / 3,
        })),
      });
      const [me] = await store.listEntities({ includeDeleted: false });
      const page = await store.listSamples({
        entity: me!.id,
        cell: { sampler: "s", samplerType: null, dataview: "d", row: "r", column: "c" },
        skip: 0,
        limit: 10,
      });
      assert.equal(page.totalCount, texts.length);
      assert.deepEqual(
        page.samples.map((x) => [x.at, x.text]),
        texts.map((text, i) => [times[i], text]),
      );
      await store.close();
    });

    it("text holding U+0000 is a StoreDataError, and the transaction stays usable", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      await store.migrate();
      await store.transaction(async (tx) => {
        const bad = batch("2024-05-01T10:00:00Z", 1);
        await assert.rejects(
          tx.write({ ...bad, samples: bad.samples.map((s) => ({ ...s, text: "a\u0000b" })) }),
          StoreDataError,
        );
        await tx.write(batch("2024-05-01T10:00:00Z", 1));
      });
      assert.equal((await store.listEntities({ includeDeleted: false })).length, 1);
      await store.close();
    });

    it("U+0000 in a cell text, column or row name of rows in columns is a StoreDataError", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      await store.migrate();
      const rows = (column: string, text: string, row = "r") => {
        const out = new SampleRowsBuilder();
        out.cell("ok", "1", 1);
        out.cell(column, text, null);
        out.endRow(
          entity,
          { sampler: "s", samplerType: "", dataview: "d", row: row },
          asEpochMs(Date.parse("2024-05-01T10:00:00Z")),
        );
        return out;
      };
      await store.transaction(async (tx) => {
        for (const bad of [rows("c", "a\u0000b"), rows("c\u0000", "x"), rows("c", "x", "r\u0000")]) {
          await assert.rejects(tx.write({ entities: [], samples: [], rows: bad }), StoreDataError);
        }
        await tx.write({ entities: [], samples: [], rows: rows("c", "x") });
      });
      const [stored] = await store.listEntities({ includeDeleted: false });
      assert.equal((await store.listSeries(stored?.id ?? asEntityId(0))).length, 2);
      await store.close();
    });

    it("ids beyond the integer range name nothing", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      await store.migrate();
      assert.equal(await store.getEntity(asEntityId(2_147_483_648)), undefined);
      assert.deepEqual(await store.listSeries(asEntityId(2_147_483_648)), []);
      assert.deepEqual(await store.listEvents({ entity: asEntityId(2_147_483_648), limit: 5 }), []);
      await store.close();
    });

    it("migrate is idempotent, and a zone PostgreSQL does not know is a 400 on zoneId", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      await store.migrate();
      await store.ingest(batch("2024-05-01T10:00:00Z", 1));
      await store.migrate();
      const entities = await store.listEntities({ includeDeleted: false });
      assert.equal(entities.length, 1);
      await assert.rejects(
        store.queryMetrics({
          entities,
          from: asEpochMs(Date.parse("2024-05-01T00:00:00Z")),
          to: asEpochMs(Date.parse("2024-05-02T00:00:00Z")),
          zone: "Mars/Olympus_Mons",
          bucket: { kind: "day" },
          metrics: [
            {
              identifier: "m",
              include: [{ sampler: "s", samplerType: null, dataview: "d", row: null, column: "c" }],
            },
          ],
          aggregations: [{ label: "n", name: "svc.count" }],
          grouping: [],
          timeWindows: [],
        }),
        (e: Error) => e.name === "VigilError" && /zoneId|time zone/.test(e.message),
      );
      await store.close();
    });

    it("rejects calls after close", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      await store.migrate();
      await store.close();
      await assert.rejects(store.listEntities({ includeDeleted: false }), /closed/);
      await assert.rejects(store.ping(), /closed/);
      await assert.rejects(
        store.transaction(async () => undefined),
        /closed/,
      );
    });
  });
}
