/**
 * The migration of a DuckDB file of schema version 5, whose samples all hold their text (NOT
 * NULL), to the version that leaves out a text that is its number's canonical text: the old rows
 * keep their text and read back as before, beside new rows that leave it out.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { DUCKDB_SCHEMA_VERSION } from "../../../src/hub/store/duckdb/duckdb-schema.js";
import { createDuckDbStore } from "../../../src/hub/store/duckdb/duckdb-store.js";
import type { SampleInput } from "../../../src/hub/store/store.js";
import { asEpochMs } from "../../../src/ids.js";
import { rawRows } from "../../helpers/duckdb-file.js";

/** Version 5's `samples`, as that release created it (the other tables are unchanged since). */
const SAMPLES_V5 =
  "CREATE TABLE samples (series_id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL, value DOUBLE, text VARCHAR NOT NULL)";

const ENTITY = { gateway: "gw", probe: "p", managedEntity: "me" };
const SERIES = { sampler: "cpu", samplerType: "linux", dataview: "cpu", row: "r1", column: "util" };
const AT = Date.UTC(2024, 4, 1, 10);
const sample = (minute: number, text: string): SampleInput => {
  const value = Number(text);
  return {
    entity: ENTITY,
    series: SERIES,
    at: asEpochMs(AT + minute * 60_000),
    text,
    value: Number.isFinite(value) && text.trim() !== "" ? value : null,
  };
};

describe("migration of a DuckDB version-5 file", () => {
  const dir = mkdtemp(join(tmpdir(), "vigil-migrate-text-"));
  after(async () => rm(await dir, { recursive: true, force: true }));

  it("lets samples leave out their text; old rows keep theirs and every text reads back as sent", async () => {
    const path = join(await dir, "v5.duckdb");
    // A version-5 file: the store's tables, then `samples` as version 5 had it, holding every text.
    const first = await createDuckDbStore({ path, memoryLimit: "256MB" });
    await first.migrate();
    await first.ingest({ entities: [], samples: [sample(0, "1")] });
    await first.close();
    const old = ["7", "7.50", "-0", "0.25", "n/a", "1e21", "0.000001", "123456789012345678"];
    // Version 5 wrote every text, "1" too.
    await rawRows(
      path,
      `CREATE TABLE old AS SELECT series_id, ts FROM samples;
       DROP TABLE samples;
       ${SAMPLES_V5};
       INSERT INTO samples SELECT series_id, ts + to_minutes(i - 1), TRY_CAST(t AS DOUBLE), t
         FROM old, unnest(['1', '${old.join("', '")}']) WITH ORDINALITY AS u(t, i);
       DROP TABLE old;
       UPDATE store_meta SET value = '5' WHERE key = 'schema_version';`,
    );

    const store = await createDuckDbStore({ path, memoryLimit: "256MB" });
    try {
      await store.migrate();
      const fresh = ["7", "7.50", "-0", "0.25", "n/a"];
      await store.ingest({
        entities: [],
        samples: fresh.map((text, i) => sample(20 + i, text)),
      });
      const [entity] = await store.listEntities({ includeDeleted: true });
      assert.ok(entity !== undefined);
      const page = await store.listSamples({
        entity: entity.id,
        cell: { ...SERIES },
        skip: 0,
        limit: 100,
      });
      assert.deepEqual(
        page.samples.map((s) => s.text),
        ["1", ...old, ...fresh],
      );
    } finally {
      await store.close();
    }

    assert.deepEqual(await rawRows(path, "SELECT value FROM store_meta WHERE key = 'schema_version'"), [
      [String(DUCKDB_SCHEMA_VERSION)],
    ]);
    // The old rows kept their text; the new ones left out the canonical texts "7" and "0.25".
    assert.deepEqual(await rawRows(path, "SELECT text FROM samples ORDER BY ts"), [
      ["1"],
      ...old.map((t) => [t]),
      [null],
      ["7.50"],
      ["-0"],
      [null],
      ["n/a"],
    ]);
  });
});
