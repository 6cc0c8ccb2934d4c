import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { DuckDBInstance } from "@duckdb/node-api";
import { decimalFraction } from "../../../src/hub/store/core/percentile-rank.js";
import { parseZone } from "../../../src/hub/store/core/zone-offsets.js";
import { digestOf } from "../../../src/hub/store/duckdb/duckdb-claims.js";
import {
  buildZoneOffsetsQuery,
  percentileDecimals,
  scanWindow,
} from "../../../src/hub/store/duckdb/duckdb-metrics-sql.js";
import { DUCKDB_SCHEMA_VERSION } from "../../../src/hub/store/duckdb/duckdb-schema.js";
import { DUCKDB_STORAGE_VERSION } from "../../../src/hub/store/duckdb/duckdb-settings.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import { openStore } from "../../../src/hub/store/open-store.js";
import type { IngestBatch } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { rawRows } from "../../helpers/duckdb-file.js";
import { storeContract } from "./store-contract.js";

const dir = await mkdtemp(join(tmpdir(), "vigil-duckdb-"));
after(() => rm(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = (): string => {
  files += 1;
  return join(dir, `nested-${files}`, "store.duckdb");
};

storeContract(
  "duckdb file",
  (options) => createDuckDbStore({ ...options, path: freshFile(), memoryLimit: "256MB" }),
  () => {
    const path = freshFile();
    return (options) => createDuckDbStore({ ...options, path, memoryLimit: "256MB" });
  },
);
storeContract("duckdb :memory:", (options) => createDuckDbStore({ ...options, path: ":memory:" }));

const batch: IngestBatch = {
  entities: [
    {
      key: { gateway: "gw", probe: "p", managedEntity: "me" },
      attributes: { "svc.name": "me" },
      deleted: false,
      at: asEpochMs(Date.parse("2024-05-01T00:00:00Z")),
    },
  ],
  samples: [
    {
      entity: { gateway: "gw", probe: "p", managedEntity: "me" },
      series: { sampler: "s", samplerType: "", dataview: "d", row: "r", column: "c" },
      at: asEpochMs(Date.parse("2024-05-01T10:00:00Z")),
      text: "2.5",
      value: 2.5,
    },
  ],
};

describe("DuckDB store", () => {
  it("keeps entities, series and samples across a reopen, and resumes ids", async () => {
    const path = freshFile();
    const first = await createDuckDbStore({ path });
    await first.migrate();
    await first.ingest(batch);
    await first.close();

    const second = await createDuckDbStore({ path });
    await second.migrate();
    await second.ingest({
      entities: [{ ...batch.entities[0]!, key: { gateway: "gw", probe: "p", managedEntity: "other" } }],
      samples: batch.samples,
    });
    const entities = await second.listEntities({ includeDeleted: false });
    assert.deepEqual(
      entities.map((e) => e.id),
      [1, 2],
    );
    assert.equal((await second.listSeries(entities[0]!.id)).length, 1);
    const rows = await second.queryMetrics({
      entities,
      from: asEpochMs(Date.parse("2024-05-01T00:00:00Z")),
      to: asEpochMs(Date.parse("2024-05-02T00:00:00Z")),
      zone: "UTC",
      bucket: { kind: "day" },
      metrics: [
        {
          identifier: "m",
          include: [{ sampler: "s", samplerType: null, dataview: "d", row: "r", column: "c" }],
        },
      ],
      aggregations: [{ label: "n", name: "svc.count" }],
      grouping: [],
      timeWindows: [],
    });
    assert.deepEqual(
      rows.map((r) => r.values.n),
      [2],
    );
    await second.close();
  });

  it("migrate is idempotent", async () => {
    const store = await createDuckDbStore({ path: ":memory:" });
    await store.migrate();
    await store.ingest(batch);
    await store.migrate();
    assert.equal((await store.listEntities({ includeDeleted: false })).length, 1);
    await store.close();
  });

  it("rejects calls after close", async () => {
    const store = await createDuckDbStore({ path: ":memory:" });
    await store.migrate();
    await store.close();
    await assert.rejects(store.listEntities({ includeDeleted: false }), /closed/);
    await assert.rejects(store.ping(), /closed/);
    await assert.rejects(
      store.transaction(async () => undefined),
      /closed/,
    );
  });

  it("creates its file in storage format v1.2.0 (DUCKDB_STORAGE_VERSION), not DuckDB's default", async () => {
    const path = freshFile();
    const store = await createDuckDbStore({ path });
    await store.migrate();
    await store.close();
    const [[tags]] = (await rawRows(
      path,
      "SELECT tags FROM duckdb_databases() WHERE NOT internal AND database_name NOT IN ('memory', 'temp')",
    )) as [[{ key: string; value: string }[]]];
    assert.deepEqual(tags, [{ key: "storage_version", value: `${DUCKDB_STORAGE_VERSION}+` }]);
  });

  it("warns at migrate about a file of an older storage format, not about its own", async () => {
    const path = freshFile();
    await mkdir(dirname(path), { recursive: true });
    const old = await DuckDBInstance.create(path); // DuckDB's default format
    old.closeSync();
    const store = await createDuckDbStore({ path });
    const notices = await store.migrate();
    await store.close();
    assert.equal(notices.length, 1);
    assert.match(notices[0] ?? "", /is in storage format v1\.0\.0\+, older than v1\.2\.0: each checkpoint/);
    const fresh = await createDuckDbStore({ path: freshFile() });
    assert.deepEqual(await fresh.migrate(), []);
    await fresh.close();
    const memory = await createDuckDbStore({ path: ":memory:" });
    assert.deepEqual(await memory.migrate(), []);
    await memory.close();
  });

  it("keeps one message_ranges row per origin for in-order delivery, and merges a filled gap", async () => {
    const path = freshFile();
    const store = await createDuckDbStore({ path });
    await store.migrate();
    const claim = (origin: string, from: number, to: number) =>
      store.transaction((tx) =>
        tx.claim(Array.from({ length: to - from + 1 }, (_, i) => ({ kind: "seq", origin, seq: from + i }))),
      );
    for (let start = 1; start <= 10_000; start += 2_000) await claim("in-order", start, start + 1_999);
    await claim("gappy", 1, 10);
    await claim("gappy", 21, 30);
    await claim("gappy", 11, 20);
    await store.close();
    assert.deepEqual(
      await rawRows(path, "SELECT origin, first_seq, last_seq FROM message_ranges ORDER BY origin"),
      [
        ["gappy", 1n, 30n],
        ["in-order", 1n, 10_000n],
      ],
    );
  });

  it("migrates a version-1 file to the current version, and never lowers a newer version", async () => {
    const path = freshFile();
    const first = await createDuckDbStore({ path });
    await first.migrate();
    await first.close();
    await rawRows(path, "DROP TABLE events; DROP TABLE message_ranges; DROP TABLE message_digests");
    await rawRows(path, "DELETE FROM store_meta WHERE key <> 'schema_version'");
    await rawRows(path, "UPDATE store_meta SET value = '1' WHERE key = 'schema_version'");
    const second = await createDuckDbStore({ path });
    await second.migrate();
    assert.deepEqual(await second.transaction((tx) => tx.claim([{ kind: "hash", hash: "h" }])), [true]);
    assert.deepEqual(await second.listEvents({ limit: 1 }), []);
    await second.close();
    const meta = "SELECT key, value FROM store_meta ORDER BY key";
    // No digest was stored before: the file takes the form led by the minute.
    assert.deepEqual(await rawRows(path, meta), [
      ["message_digest_form", "minute"],
      ["schema_version", String(DUCKDB_SCHEMA_VERSION)],
    ]);
    const newer = String(DUCKDB_SCHEMA_VERSION + 1);
    await rawRows(path, `UPDATE store_meta SET value = '${newer}' WHERE key = 'schema_version'`);
    const third = await createDuckDbStore({ path });
    await third.migrate();
    await third.close();
    assert.deepEqual(await rawRows(path, meta), [
      ["message_digest_form", "minute"],
      ["schema_version", newer],
    ]);
  });

  it("keeps the digest form of a version-3 file that holds digests, so its messages stay duplicates", async () => {
    const path = freshFile();
    const first = await createDuckDbStore({ path });
    await first.migrate();
    await first.close();
    // A version-3 file: digests of the first 128 bits of the SHA-256, no form recorded.
    const sha = createHash("sha256").update('{"m":1}').digest("hex");
    await rawRows(
      path,
      `DELETE FROM store_meta WHERE key = 'message_digest_form';
       UPDATE store_meta SET value = '3' WHERE key = 'schema_version';
       INSERT INTO message_digests VALUES (${digestOf({ hash: sha }, "sha")})`,
    );
    const second = await createDuckDbStore({ path });
    await second.migrate();
    const at = Date.UTC(2025, 0, 1);
    assert.deepEqual(
      await second.transaction((tx) =>
        tx.claim([
          { kind: "hash", hash: sha, at },
          { kind: "hash", hash: "b".repeat(64), at },
        ]),
      ),
      [false, true],
    );
    await second.close();
    assert.deepEqual(await rawRows(path, "SELECT value FROM store_meta WHERE key = 'message_digest_form'"), [
      ["sha"],
    ]);
    assert.deepEqual(
      (await rawRows(path, "SELECT digest FROM message_digests ORDER BY digest")).map(([d]) => d),
      [digestOf({ hash: sha }, "sha"), digestOf({ hash: "b".repeat(64) }, "sha")].sort((a, b) =>
        a < b ? -1 : a > b ? 1 : 0,
      ),
    );
  });

  it("rebuilds a version-6 file's indexed digests without the key: stored messages stay duplicates", async () => {
    const path = freshFile();
    const first = await createDuckDbStore({ path });
    await first.migrate();
    await first.close();
    // A version-6 file: digests under a primary key, in no order.
    const at = Date.UTC(2025, 0, 1);
    const keys = ["c", "a", "b"].map((x) => ({ kind: "hash" as const, hash: x.repeat(64), at }));
    await rawRows(
      path,
      `DROP TABLE message_digests; CREATE TABLE message_digests (digest HUGEINT PRIMARY KEY);
       UPDATE store_meta SET value = '6' WHERE key = 'schema_version';
       INSERT INTO message_digests VALUES ${keys.map((k) => `(${digestOf(k, "minute")})`).join(", ")}`,
    );
    const second = await createDuckDbStore({ path });
    await second.migrate();
    assert.deepEqual(
      await second.transaction((tx) => tx.claim([...keys, { kind: "hash", hash: "d".repeat(64), at }])),
      [false, false, false, true],
    );
    await second.close();
    const constraints = `SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'message_digests'
      AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')`;
    assert.deepEqual(await rawRows(path, constraints), [[0n]]);
    const stored = [...keys, { hash: "d".repeat(64), at }].map((k) => digestOf(k, "minute"));
    assert.deepEqual(
      (await rawRows(path, "SELECT digest FROM message_digests")).map(([d]) => d),
      // In order: the rebuilt table first, then the new digest as it was appended.
      [...stored.slice(0, 3).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), stored[3]],
    );
    assert.deepEqual(await rawRows(path, "SELECT value FROM store_meta WHERE key = 'schema_version'"), [
      ["7"],
    ]);
  });

  it("claims digests once across transactions without an index, whichever claim finds them", async () => {
    const path = freshFile();
    const store = await createDuckDbStore({ path });
    await store.migrate();
    const at = Date.UTC(2025, 0, 1);
    const key = (x: string, minute = 0) => ({
      kind: "hash" as const,
      hash: x.repeat(64),
      at: at + minute * 60_000,
    });
    // Optimistic (all new), then a conflict (rolled back and run again carefully), then careful
    // until a transaction is all new again.
    assert.deepEqual(await store.transaction((tx) => tx.claim([key("a"), key("b", 5), key("a")])), [
      true,
      true,
      false,
    ]);
    assert.deepEqual(await store.transaction((tx) => tx.claim([key("c", 2), key("b", 5)])), [true, false]);
    assert.deepEqual(await store.transaction((tx) => tx.claim([key("c", 2), key("d", 9)])), [false, true]);
    assert.deepEqual(await store.transaction((tx) => tx.claim([key("e", 1)])), [true]);
    assert.deepEqual(await store.transaction((tx) => tx.claim([key("e", 1), key("a")])), [false, false]);
    await store.close();
    assert.deepEqual(await rawRows(path, "SELECT count(*), count(DISTINCT digest) FROM message_digests"), [
      [5n, 5n],
    ]);
  });

  it("refuses to open a file whose digests are of a form this release does not know", async () => {
    const path = freshFile();
    const first = await createDuckDbStore({ path });
    await first.migrate();
    await first.close();
    await rawRows(path, "UPDATE store_meta SET value = 'hour' WHERE key = 'message_digest_form'");
    const second = await createDuckDbStore({ path });
    await assert.rejects(
      second.migrate(),
      /message digests are of a form this release does not know \("hour"\)/,
    );
    await second.close();
  });

  it("moves a version-2 file's message hashes to 128-bit digests: a stored message stays a duplicate", async () => {
    const path = freshFile();
    const first = await createDuckDbStore({ path });
    await first.migrate();
    await first.close();
    // A version-2 file: hex SHA-256 text in message_hashes, no message_digests.
    const hashes = [
      "ffffffffffffffff0123456789abcdef00112233445566778899aabbccddeeff", // high bit set: negative
      "0000000000000000ffffffffffffffff00112233445566778899aabbccddeeff",
      createHash("sha256").update('{"m":1}').digest("hex"),
    ];
    await rawRows(
      path,
      `DROP TABLE message_digests; CREATE TABLE message_hashes (hash VARCHAR PRIMARY KEY);
       INSERT INTO message_hashes VALUES ${hashes.map((h) => `('${h}')`).join(", ")};
       DELETE FROM store_meta WHERE key = 'message_digest_form';
       UPDATE store_meta SET value = '2' WHERE key = 'schema_version'`,
    );
    const second = await createDuckDbStore({ path });
    await second.migrate();
    const claimed = await second.transaction((tx) =>
      tx.claim([...hashes, "a".repeat(64)].map((hash) => ({ kind: "hash" as const, hash }))),
    );
    assert.deepEqual(claimed, [false, false, false, true]);
    await second.close();
    assert.deepEqual(
      await rawRows(
        path,
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'message_hashes' UNION ALL SELECT count(*) FROM message_digests",
      ),
      [[0n], [4n]],
    );
    assert.deepEqual(
      (await rawRows(path, "SELECT digest FROM message_digests ORDER BY digest")).map(([d]) => d),
      [...hashes, "a".repeat(64)]
        .map((hash) => digestOf({ hash }, "sha"))
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    // It holds digests, so it keeps their form.
    assert.deepEqual(await rawRows(path, "SELECT value FROM store_meta WHERE key = 'message_digest_form'"), [
      ["sha"],
    ]);
  });

  it("stores each digest as digestOf gives it, at the edges of the signed range too, by either claim", async () => {
    const dir = await mkdtemp(join(tmpdir(), "vigil-digests-"));
    const path = join(dir, "digests.duckdb");
    try {
      // A new file leads digests with the minute: times at the edges of its 32 bits (the top bit
      // set makes the HUGEINT negative), none, and beyond either end.
      const minute = 60_000;
      const times = [
        undefined,
        0,
        0x7fff_ffff * minute,
        0x8000_0000 * minute,
        0xffff_ffff * minute,
        -1,
        8.64e15,
      ];
      const keys = times.map((at, i) => {
        const hash = i === 1 ? "not hex, hashed first" : String(i).repeat(64);
        return at === undefined ? { kind: "hash" as const, hash } : { kind: "hash" as const, hash, at };
      });
      keys.push({ kind: "hash", hash: "f".repeat(64), at: 0xffff_ffff * minute + minute - 1 });
      const store = await createDuckDbStore({ path });
      await store.migrate();
      // The optimistic claim stores them; the careful one (after a stored digest) finds each again.
      assert.deepEqual(await store.transaction((tx) => tx.claim(keys.slice(0, 5))), [
        true,
        true,
        true,
        true,
        true,
      ]);
      assert.deepEqual(
        await store.transaction((tx) => tx.claim(keys)),
        keys.map((_, i) => i >= 5),
      );
      await store.close();
      const stored = (await rawRows(path, "SELECT digest FROM message_digests ORDER BY digest")).map(
        ([d]) => d,
      );
      assert.deepEqual(
        stored,
        keys.map((key) => digestOf(key, "minute")).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      );
      assert.ok(
        stored.some((d) => typeof d === "bigint" && d < 0n),
        "a digest with the top bit set is negative",
      );
      assert.deepEqual(
        await rawRows(path, "SELECT value FROM store_meta WHERE key = 'message_digest_form'"),
        [["minute"]],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("claims digests optimistically: a stored one reruns the work with the careful claim, until a batch is all new", async () => {
    const store = await createDuckDbStore({ path: ":memory:" });
    await store.migrate();
    const hash = (n: number) => ({
      kind: "hash" as const,
      hash: createHash("sha256").update(String(n)).digest("hex"),
    });
    let runs = 0;
    const claim = (keys: ReturnType<typeof hash>[]) =>
      store.transaction((tx) => {
        runs += 1;
        return tx.claim(keys);
      });
    // All new, a repeat within the batch included: one run.
    assert.deepEqual(await claim([hash(1), hash(2), hash(1)]), [true, true, false]);
    assert.equal(runs, 1);
    // One stored already: the optimistic insert conflicts, the work runs again carefully.
    runs = 0;
    assert.deepEqual(await claim([hash(3), hash(2)]), [true, false]);
    assert.equal(runs, 2);
    // Careful while batches hold stored digests (a replay): one run each.
    runs = 0;
    assert.deepEqual(await claim([hash(1), hash(4)]), [false, true]);
    assert.equal(runs, 1);
    // An all-new batch under the careful claim turns optimism back on: the next all-new one runs once.
    assert.deepEqual(await claim([hash(5)]), [true]);
    runs = 0;
    assert.deepEqual(await claim([hash(6), hash(7)]), [true, true]);
    assert.equal(runs, 1);
    // Nothing the conflicting attempt wrote survived it.
    assert.deepEqual(await claim([hash(3)]), [false]);
    await store.close();
  });

  it("runs nothing of a transaction whose queued BEGIN failed, so nothing is stored outside one", async () => {
    const store = await createDuckDbStore({ path: ":memory:" });
    await store.migrate();
    const key = { kind: "hash" as const, hash: createHash("sha256").update("begin").digest("hex") };
    // Fault injection: the writer's next BEGIN fails; every other statement is DuckDB's own.
    const writer = (store as unknown as { db: { writer: { run: (...a: unknown[]) => Promise<unknown> } } }).db
      .writer;
    const run = writer.run.bind(writer);
    let failBegin = true;
    writer.run = (sql: unknown, ...rest: unknown[]) => {
      if (failBegin && sql === "BEGIN TRANSACTION") {
        failBegin = false;
        return Promise.reject(new Error("injected: BEGIN failed"));
      }
      return run(sql, ...rest);
    };
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.claim([key]);
        await tx.write({ entities: [], samples: [] });
      }),
      /injected: BEGIN failed/,
    );
    // Without a transaction the claim's insert would have committed on its own: the key is still new.
    assert.deepEqual(await store.transaction((tx) => tx.claim([key])), [true]);
    assert.deepEqual(await store.transaction((tx) => tx.claim([key])), [false]);
    await store.close();
  });

  it("refuses bad tuning options", async () => {
    await assert.rejects(createDuckDbStore({ path: ":memory:", maxSeriesPerEntity: 0 }), RangeError);
    await assert.rejects(createDuckDbStore({ path: ":memory:", seriesCacheEntries: -1 }), RangeError);
  });

  // Why data-checks.ts refuses lone surrogates instead of letting DuckDB decide: the binding alters
  // them silently. If this starts failing, DuckDB changed and the check can be revisited.
  it("(the reason for the surrogate check) DuckDB's binding turns a lone surrogate into U+FFFD", async () => {
    const instance = await DuckDBInstance.create(":memory:");
    const c = await instance.connect();
    const r = await c.runAndReadAll("SELECT $v::VARCHAR", { v: "a\uD800" });
    assert.deepEqual(r.getRowsJS(), [["a\uFFFD"]]);
    c.closeSync();
    instance.closeSync();
  });
});

describe("parseZone", () => {
  const cases: [string, string, ReturnType<typeof parseZone>][] = [
    ["an IANA name is named", "Europe/London", { kind: "named", name: "Europe/London" }],
    ["an alias is named", "Asia/Calcutta", { kind: "named", name: "Asia/Calcutta" }],
    ["Etc/GMT-5 is named (ICU knows it)", "Etc/GMT-5", { kind: "named", name: "Etc/GMT-5" }],
    ["+05:30 is a fixed offset", "+05:30", { kind: "fixed", offsetSeconds: 19_800 }],
    ["-0800 is a fixed offset", "-0800", { kind: "fixed", offsetSeconds: -28_800 }],
    ["+05 is a fixed offset", "+05", { kind: "fixed", offsetSeconds: 18_000 }],
    ["UTC+01:00 is a fixed offset", "UTC+01:00", { kind: "fixed", offsetSeconds: 3_600 }],
    ["Z is UTC", "Z", { kind: "fixed", offsetSeconds: 0 }],
  ];
  for (const [name, zone, expected] of cases) it(name, () => assert.deepEqual(parseZone(zone), expected));
  it("an offset beyond ±18:00 is refused", () => assert.throws(() => parseZone("+19:00"), RangeError));
});

describe("decimalFraction", () => {
  const cases: [string, string, bigint, bigint][] = [
    ["0.07 is 7/100", "0.07", 7n, 100n],
    ["0.070 reduces to 7/100", "0.070", 7n, 100n],
    ["0.5 is 1/2", "0.5", 1n, 2n],
    [".25 is 1/4", ".25", 1n, 4n],
    ["0 is 0/1", "0", 0n, 1n],
    ["1 is 1/1", "1", 1n, 1n],
    ["1.0 is 1/1", "1.0", 1n, 1n],
    ["5e-2 is 1/20", "5e-2", 1n, 20n],
    ["0.123456789 stays exact", "0.123456789", 123456789n, 1000000000n],
  ];
  for (const [name, p, num, den] of cases) {
    it(name, () => assert.deepEqual(decimalFraction(p), { numerator: num, denominator: den }));
  }
  const bad: [string, string][] = [
    ["above 1", "1.5"],
    ["negative", "-0.1"],
    ["not a number", "abc"],
    ["empty", ""],
    ["a lone dot", "."],
    ["more than 24 places", "0.1234567890123456789012345"],
  ];
  for (const [name, p] of bad)
    it(`refuses ${name}`, () => assert.throws(() => decimalFraction(p), RangeError));
});

describe("percentileDecimals", () => {
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string[], number, bigint[]][] = [
    ["0.95 and 0.5 share two decimal places", ["0.95", "0.5"], 2, [95n, 50n]],
    ["1 alone needs none", ["1"], 0, [1n]],
    ["0 alone needs none", ["0"], 0, [0n]],
    ["a trailing zero adds no place", ["0.070"], 2, [7n]],
    [".5 beside 0.125 takes three places", [".5", "0.125"], 3, [500n, 125n]],
    ["24 places are kept exactly", ["0.123456789012345678901234"], 24, [123456789012345678901234n]],
  ];
  for (const [name, ps, scale, values] of cases) {
    it(name, () => {
      const got = percentileDecimals(ps);
      assert.equal(got.scale, scale);
      assert.deepEqual(
        got.values.map((v) => [v.value, v.width, v.scale]),
        values.map((v) => [v, 38, scale]),
      );
    });
  }
});

describe("scanWindow and the zone-offset query", () => {
  const ms = (iso: string) => asEpochMs(Date.parse(iso));
  const plan = { from: ms("2024-03-01T00:00:00Z"), to: ms("2024-04-01T00:00:00Z") };
  it("narrows the range to the stored samples, in µs", () =>
    assert.deepEqual(
      scanWindow(plan, { firstMs: ms("2024-03-10T00:00:00Z"), lastMs: ms("2024-03-20T00:00:00Z") }),
      {
        fromUs: BigInt(ms("2024-03-10T00:00:00Z")) * 1000n,
        toUs: (BigInt(ms("2024-03-20T00:00:00Z")) + 1n) * 1000n,
      },
    ));
  it("keeps the range when nothing is known of the samples", () =>
    assert.deepEqual(scanWindow(plan), { fromUs: BigInt(plan.from) * 1000n, toUs: BigInt(plan.to) * 1000n }));
  it("is undefined when no stored sample can be in the range", () =>
    assert.equal(
      scanWindow(plan, { firstMs: ms("2024-05-01T00:00:00Z"), lastMs: ms("2024-06-01T00:00:00Z") }),
      undefined,
    ));
  it("asks the same question for ranges within the same days (one cache entry)", () => {
    const at = (from: string, to: string) =>
      buildZoneOffsetsQuery("Europe/London", {
        fromUs: BigInt(ms(from)) * 1000n,
        toUs: BigInt(ms(to)) * 1000n,
      });
    const a = at("2024-03-31T00:10:00Z", "2024-03-31T05:00:00Z");
    const b = at("2024-03-31T09:00:00Z", "2024-03-31T21:00:00Z");
    assert.equal(a.key, b.key);
    assert.deepEqual(a.values, b.values);
    // 33 days before the day of `from`, to the end of the day of `to` plus an hour.
    assert.equal(a.values.scan_from_us, BigInt(ms("2024-02-27T00:00:00Z")) * 1000n);
    assert.equal(a.values.scan_to_us, BigInt(ms("2024-04-01T00:00:00Z")) * 1000n);
    assert.notEqual(at("2024-03-31T00:10:00Z", "2024-03-31T23:30:00Z").key, a.key);
  });
});

describe("openStore", () => {
  const cases: [string, string][] = [
    ["duckdb:relative/x.duckdb resolves against the data dir", "duckdb:relative/x.duckdb"],
    ["plain duckdb uses <dataDir>/vigil.duckdb", "duckdb"],
    ["an empty URL uses <dataDir>/vigil.duckdb", ""],
    ["duckdb::memory: is in memory", "duckdb::memory:"],
  ];
  for (const [name, url] of cases) {
    it(name, async () => {
      const store = await openStore(url, join(dir, "open-store"));
      assert.equal(store.kind, "duckdb");
      await store.migrate();
      await store.close();
    });
  }
  it("places files where the URL says", async () => {
    const { access } = await import("node:fs/promises");
    await access(join(dir, "open-store", "relative", "x.duckdb"));
    await access(join(dir, "open-store", "vigil.duckdb"));
  });
  it("refuses an unknown scheme without echoing the URL", async () => {
    await assert.rejects(
      openStore("mysql://u:secret@h/db", dir),
      (e: Error) => !e.message.includes("secret"),
    );
  });
});
