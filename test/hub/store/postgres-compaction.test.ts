/**
 * Compaction of the PostgreSQL store (postgres-compaction.ts): closed hours of sample rows become
 * chunk rows, and every reading path answers exactly as before — listings with the same texts byte
 * for byte in the same order, metric queries with the same numbers — through late samples merged
 * into compacted hours, two stores compacting one database at once, retention cutting a chunk, and
 * a database of the version before chunks.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import postgres from "postgres";
import { CHUNK_MS, compactSamples } from "../../../src/hub/store/postgres/postgres-compaction.js";
import {
  chunkPartitionName,
  partitionName,
  weekOf,
} from "../../../src/hub/store/postgres/postgres-partitions.js";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import type {
  Aggregation,
  EntityKey,
  IngestBatch,
  MetricQueryPlan,
  MetricQueryRow,
  SampleInput,
  SamplePage,
  Store,
} from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const BUDGET_MS = 15_000; // fast-check stops starting new runs after this
/** Larger than any test's life: the store's own compaction stays out of the way unless asked. */
const NEVER_MS = 3_600_000;
const T0 = Date.UTC(2024, 4, 6, 10); // a Monday, 10:00 UTC
const entity: EntityKey = { gateway: "gw", probe: "p", managedEntity: "me" };
const ROWS = ["r1", "r2"];
const PLAIN = "count sum min max avg var stddev first last".split(" ").map((n) => `svc.${n}`);
const AGGREGATIONS: Aggregation[] = [
  ...PLAIN.map((name) => ({ label: name, name: name as Aggregation["name"] })),
  { label: "svc.percentile(0.9)", name: "svc.percentile", p: "0.9" },
];

const sample = (row: string, at: number, text: string, value: number | null, column = "c"): SampleInput => ({
  entity,
  series: { sampler: "s", samplerType: "", dataview: "d", row, column },
  at: asEpochMs(at),
  text,
  value,
});
const batchOf = (samples: SampleInput[]): IngestBatch => ({ entities: [], samples });

/** Every sample of every series of `rows` × columns, as `listSamples` pages (one page each). */
async function listings(store: Store, columns = ["c"]): Promise<Record<string, SamplePage>> {
  const [e] = await store.listEntities({ includeDeleted: false });
  if (e === undefined) return {};
  const out: Record<string, SamplePage> = {};
  for (const row of ROWS)
    for (const column of columns) {
      const cell = { sampler: "s", samplerType: "", dataview: "d", row, column };
      out[`${row}/${column}`] = await store.listSamples({ entity: e.id, cell, skip: 0, limit: 100_000 });
      // A range inside an hour, and one over the hour boundary.
      out[`${row}/${column} part`] = await store.listSamples({
        entity: e.id,
        cell,
        from: asEpochMs(T0 + 30 * 60_000),
        to: asEpochMs(T0 + CHUNK_MS + 10 * 60_000),
        skip: 1,
        limit: 50,
      });
    }
  return out;
}

/** The metric answers over the test's span, in 5-minute, 2-hour and whole-span buckets. */
async function metrics(store: Store, columns = ["c"]): Promise<MetricQueryRow[][]> {
  const entities = await store.listEntities({ includeDeleted: false });
  const answers: MetricQueryRow[][] = [];
  for (const bucket of [
    { kind: "minutes", minutes: 5 },
    { kind: "minutes", minutes: 120 },
    { kind: "count", count: 1 },
  ] as const) {
    const plan: MetricQueryPlan = {
      entities,
      from: asEpochMs(T0 - 2 * CHUNK_MS),
      to: asEpochMs(T0 + 6 * CHUNK_MS),
      zone: "Europe/London",
      bucket,
      metrics: columns.map((column) => ({
        identifier: column,
        include: [{ sampler: "s", samplerType: null, dataview: "d", row: null, column }],
      })),
      aggregations: AGGREGATIONS,
      grouping: ["rowname"],
      timeWindows: [],
    };
    answers.push(await store.queryMetrics(plan));
  }
  return answers;
}

/** Aggregations whose answer does not depend on the order in which the values are added. */
const EXACT = new Set(["svc.count", "svc.min", "svc.max", "svc.first", "svc.last", "svc.percentile(0.9)"]);

/**
 * Listings equal; metric answers equal in buckets, groups and the order-free aggregations, and
 * sums, means, variances and deviations equal up to rounding (rows and chunks are added in
 * different orders).
 */
function assertSameAnswers(
  actual: [Record<string, SamplePage>, MetricQueryRow[][]],
  expected: [Record<string, SamplePage>, MetricQueryRow[][]],
): void {
  assert.deepEqual(actual[0], expected[0]);
  const strip = (answers: MetricQueryRow[][]) =>
    answers.map((rows) =>
      rows.map((r) => ({
        ...r,
        values: Object.fromEntries(Object.entries(r.values).filter(([k]) => EXACT.has(k))),
      })),
    );
  assert.deepEqual(strip(actual[1]), strip(expected[1]));
  for (const [i, rows] of actual[1].entries()) {
    for (const [j, row] of rows.entries()) {
      for (const [k, v] of Object.entries(row.values)) {
        const w = expected[1][i]?.[j]?.values[k];
        if (EXACT.has(k) || v === w) continue;
        assert.ok(
          v !== null && w !== null && w !== undefined && Math.abs(v - w) <= 1e-9 * Math.max(1, Math.abs(w)),
          `${k}: ${v} after, ${w} before`,
        );
      }
    }
  }
}

/** Both readings of a store: its listings and its metric answers. */
const answers = async (
  store: Store,
  columns = ["c"],
): Promise<[Record<string, SamplePage>, MetricQueryRow[][]]> => [
  await listings(store, columns),
  await metrics(store, columns),
];

const reachable = await postgresReachable();

describe("PostgreSQL store compaction", { skip: needs(reachable ? false : PG_SKIP) }, () => {
  let db: PgTestDatabase | undefined;
  const clients: postgres.Sql[] = [];
  after(async () => {
    for (const c of clients) await c.end({ timeout: 1 });
    await db?.drop();
  });

  /** A fresh migrated schema: a store on it (its own compaction held off) and a client of the test's. */
  const fresh = async (compactDelayMs = NEVER_MS) => {
    db ??= await PgTestDatabase.create("compact");
    const url = await db.freshUrl();
    const store = await createPostgresStore({ url, compactDelayMs });
    await store.migrate();
    const sql = postgres(url, { max: 4, onnotice: () => undefined });
    clients.push(sql);
    const count = async (table: string): Promise<number> =>
      Number((await sql.unsafe<{ n: string }[]>(`SELECT count(*)::text AS n FROM ${table}`))[0]?.n);
    return { url, store, sql, count };
  };

  it("moves closed hours into chunks; listings and metric answers stay exactly the same", async () => {
    const { store, sql, count } = await fresh();
    const samples: SampleInput[] = [];
    for (let i = 0; i < 400; i += 1) {
      const at = T0 - CHUNK_MS + i * 37_000 + (i % 7); // five hours, off the whole seconds
      const v = Math.round(Math.sin(i) * 1e6) / 1e3;
      samples.push(sample(ROWS[i % 2] as string, at, String(v), v));
    }
    // Texts that are not their number's rendering, texts of no number, ties in time.
    samples.push(
      sample("r1", T0, "1.50", 1.5),
      sample("r1", T0, "01", 1),
      sample("r1", T0 + 1, "-0", -0),
      sample("r1", T0, "0", 0),
      sample("r2", T0 + 5, "1e3", 1000),
      sample("r2", T0 + 5, "down", null),
      sample("r2", T0 + 6, " 7", 7),
      sample("r2", T0 + 7, "9007199254740993", 9007199254740992),
      sample("r2", T0 + 8, "1000000000000000.5", 1000000000000000.5),
      sample("r2", T0 + 9, "1e-7", 1e-7),
      sample("r2", T0 + 10, "0.0001", 0.0001),
      sample("r1", T0 + 11, "", null),
      sample("r1", T0 + 12, "ünïcödé ✓", null),
    );
    await store.ingest(batchOf(samples));
    const before = await answers(store);
    const done = await compactSamples(sql, Date.now());
    assert.equal(done.rows, samples.length);
    assert.equal(await count("samples"), 0);
    assert.ok((await count("sample_chunks")) >= 5 * 2);
    assertSameAnswers(await answers(store), before);
    // The view shows every sample with its text.
    assert.equal(await count("stored_samples"), samples.length);
    // Nothing left: a second run does nothing.
    assert.deepEqual(await compactSamples(sql, Date.now()), { chunks: 0, rows: 0 });
    await store.close();
  });

  it("a late sample for a compacted hour is merged into its chunk on the next compaction", async () => {
    const { store, sql, count } = await fresh();
    const first = Array.from({ length: 20 }, (_, i) => sample("r1", T0 + i * 60_000, String(i), i));
    await store.ingest(batchOf(first));
    await compactSamples(sql, Date.now());
    const chunks = await count("sample_chunks");
    // Late: one between two samples, one at an instant already held (a second text), one in r2.
    const late = [sample("r1", T0 + 90_000, "late", null), sample("r1", T0 + 60_000, "1.0", 1)];
    await store.ingest(batchOf([...late, sample("r2", T0 + 1, "2", 2)]));
    const pages = await listings(store);
    assert.equal(pages["r1/c"]?.totalCount, 22);
    const before: [Record<string, SamplePage>, MetricQueryRow[][]] = [pages, await metrics(store)];
    assert.deepEqual(await compactSamples(sql, Date.now()), { chunks: 2, rows: 3 });
    assert.equal(await count("samples"), 0);
    assert.equal(await count("sample_chunks"), chunks + 1);
    const [chunk] = await sql<{ n: number }[]>`SELECT n FROM sample_chunks WHERE n > 1`;
    assert.equal(chunk?.n, 22);
    assertSameAnswers(await answers(store), before);
    await store.close();
  });

  it("two stores compacting one database at once, while writing, lose and double no sample", async () => {
    const { url, store: a, sql, count } = await fresh();
    const b = await createPostgresStore({ url, compactDelayMs: 1 });
    await b.migrate();
    const other = postgres(url, { max: 4, onnotice: () => undefined });
    clients.push(other);
    let written = 0;
    const write = async (store: Store, round: number) => {
      const samples = Array.from({ length: 300 }, (_, i) =>
        sample(
          ROWS[i % 2] as string,
          T0 + ((i * 7919 + round * 104_729) % (4 * CHUNK_MS)),
          `${round}.${i}`,
          i,
        ),
      );
      await store.ingest(batchOf(samples));
      written += samples.length;
    };
    // Store b compacts by itself after each of its commits; the test's two clients compact too.
    await Promise.all([
      (async () => {
        for (let r = 0; r < 6; r += 1) await write(r % 2 === 0 ? a : b, r);
      })(),
      (async () => {
        for (let r = 0; r < 6; r += 1)
          await Promise.all([compactSamples(sql, Date.now()), compactSamples(other, Date.now())]);
      })(),
    ]);
    await Promise.all([compactSamples(sql, Date.now()), compactSamples(other, Date.now())]);
    assert.equal(await count("samples"), 0);
    assert.equal(await count("stored_samples"), written);
    const texts = await sql<{ text: string }[]>`SELECT text FROM stored_samples ORDER BY text`;
    assert.equal(new Set(texts.map((t) => t.text)).size, written, "every text once");
    const [sums] = await sql<{ ok: boolean }[]>`
      SELECT bool_and(n = greatest(cardinality(offsets), cardinality(vals), cardinality(ivals))) AS ok FROM sample_chunks`;
    assert.equal(sums?.ok, true);
    await Promise.all([a.close(), b.close()]);
  });

  it("a store compacts a backfill of closed hours by itself", async () => {
    const { store, sql, count } = await fresh(20);
    await store.ingest(
      batchOf(Array.from({ length: 50 }, (_, i) => sample("r1", T0 + i * 120_000, String(i), i))),
    );
    // Polled until done: compaction runs on the store's own timer, and ends by truncating the
    // emptied row partition of the closed week.
    const heap = async (): Promise<number> =>
      Number((await sql`SELECT pg_relation_size(${partitionName(weekOf(T0))})::text AS b`)[0]?.b);
    for (let tries = 0; (await count("samples")) > 0 || (await heap()) > 0; tries += 1) {
      assert.ok(tries < 600, "the store compacted its closed hours");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await count("stored_samples"), 50);
    await store.close();
  });

  it("a week left untruncated while a reader held it is truncated by a later run with no rows to move", async () => {
    const { url, store, sql, count } = await fresh();
    await store.ingest(
      batchOf(Array.from({ length: 50 }, (_, i) => sample("r1", T0 + i * 60_000, String(i), i))),
    );
    const table = partitionName(weekOf(T0));
    const heap = async (): Promise<number> =>
      Number((await sql`SELECT pg_relation_size(${table})::text AS b`)[0]?.b);
    // A reader's transaction holds the partition past the truncation's lock timeout.
    const reader = postgres(url, { max: 1, onnotice: () => undefined });
    clients.push(reader);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    const reading = reader.begin(async (tx) => {
      await tx.unsafe(`LOCK TABLE ${table} IN ACCESS SHARE MODE`);
      holding();
      await released;
    });
    await held;
    try {
      assert.equal((await compactSamples(sql, Date.now())).rows, 50);
      assert.equal(await count("samples"), 0);
      assert.ok((await heap()) > 0, "the truncation waited for its lock and left the partition");
    } finally {
      release();
      await reading;
    }
    // Nothing left to move; the emptied partition of the closed week is truncated all the same.
    assert.deepEqual(await compactSamples(sql, Date.now()), { chunks: 0, rows: 0 });
    assert.equal(await heap(), 0);
    assert.equal(await count("stored_samples"), 50);
    await store.close();
  });

  it("property: any text of any number reads back byte for byte after compaction", async () => {
    const { store, sql, count } = await fresh();
    let round = 0;
    const texted = fc.oneof(
      fc.double({ noNaN: true }).map((v) => ({ v, t: String(v) })),
      fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((v) => ({ v, t: v.toFixed(3) })),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((v) => ({ v, t: v.toExponential() })),
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map((n) => ({ v: Number(n), t: n.toString() })),
      fc.integer().map((v) => ({ v, t: `0${Math.abs(v)}` })),
      fc
        .string({ unit: "grapheme", maxLength: 8 })
        .filter((t) => !t.includes("\u0000"))
        .map((t) => ({ v: null, t })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(texted, { minLength: 1, maxLength: 40 }), async (cells) => {
        round += 1;
        const column = `c${round}`;
        const samples = cells.map((c, i) => sample("r1", T0 + i * 1000, c.t, c.v, column));
        await store.ingest(batchOf(samples));
        const before = await listings(store, [column]);
        await compactSamples(sql, Date.now());
        assert.equal(await count("samples"), 0);
        assert.deepEqual(await listings(store, [column]), before);
        const texts = (before[`r1/${column}`] as SamplePage).samples.map((s) => s.text).sort();
        assert.deepEqual(texts, cells.map((c) => c.t).sort());
      }),
      { interruptAfterTimeLimit: BUDGET_MS, numRuns: 200 },
    );
    await store.close();
  });

  it("retention cuts through a compacted hour and counts what it deleted", async () => {
    const { store, sql, count } = await fresh();
    await store.ingest(
      batchOf(Array.from({ length: 60 }, (_, i) => sample("r1", T0 + i * 60_000, String(i), i))),
    );
    await compactSamples(sql, Date.now());
    assert.deepEqual(await store.deleteBefore(asEpochMs(T0 + 25 * 60_000)), { samples: 25, events: 0 });
    const page = (await listings(store))["r1/c"] as SamplePage;
    assert.equal(page.totalCount, 35);
    assert.equal(page.samples[0]?.text, "25");
    await compactSamples(sql, Date.now());
    assert.equal(await count("samples"), 0);
    assert.equal(await count("stored_samples"), 35);
    await store.close();
  });

  it("a database of the version before chunks keeps its samples, and compacts them", async () => {
    const { url, store, sql, count } = await fresh();
    const samples = Array.from({ length: 30 }, (_, i) =>
      sample(ROWS[i % 2] as string, T0 + i * 300_000, `${i}.0`, i),
    );
    await store.ingest(batchOf(samples));
    const before = await answers(store);
    await store.close();
    // Back to version 5: no chunks, no view, no rendering function.
    await sql.unsafe("DROP VIEW stored_samples");
    await sql.unsafe("DROP TABLE sample_chunks");
    await sql.unsafe("DROP FUNCTION vigil_sample_text");
    await sql.unsafe("DELETE FROM vigil_migrations WHERE version > 5");
    const upgraded = await createPostgresStore({ url, compactDelayMs: NEVER_MS });
    assert.deepEqual(await upgraded.migrate(), []);
    assert.equal(await count(chunkPartitionName(weekOf(T0))), 0, "a chunk partition for the week");
    assert.equal(await count("samples"), 30);
    assertSameAnswers(await answers(upgraded), before);
    await compactSamples(sql, Date.now());
    assert.equal(await count("samples"), 0);
    assertSameAnswers(await answers(upgraded), before);
    await upgraded.close();
  });
});
