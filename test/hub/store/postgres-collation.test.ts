/**
 * The PostgreSQL store answers in the same order whatever the database's locale: on a database
 * whose default collation is ICU's `en-US` (case and punctuation sorted as in English), the texts
 * of one cell at one instant still come back in code point order, as the embedded DuckDB store
 * (and the contract suite) order them.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { createPostgresStore } from "../../../src/hub/store/postgres/postgres-store.js";
import { asEpochMs } from "../../../src/ids.js";
import { needs } from "../../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../../helpers/postgres.js";

const reachable = await postgresReachable();
if (!reachable) {
  describe("PostgreSQL store on an en-US database", { skip: needs(PG_SKIP) }, () => undefined);
} else {
  const db = await PgTestDatabase.create(
    "collation",
    "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'",
  );
  after(() => db.drop());

  describe("PostgreSQL store on an en-US database", () => {
    it("is an en-US database (the case below would pass on a C one)", async () => {
      const [row] = await db.sql<{ lt: boolean }[]>`SELECT 'a' < 'B' AS lt`;
      assert.equal(row?.lt, true);
    });

    it("orders the texts of one cell at one instant by code point", async () => {
      const store = await createPostgresStore({ url: await db.freshUrl() });
      try {
        await store.migrate();
        const entity = { gateway: "gw", probe: "p", managedEntity: "me" };
        const series = { sampler: "s", samplerType: "", dataview: "d", row: "r", column: "c" };
        const at = asEpochMs(Date.parse("2024-05-01T10:00:00Z"));
        const texts = ["a", "B", "_x", "Z", "é", "e"];
        await store.ingest({
          entities: [],
          samples: texts.map((text) => ({ entity, series, at, text, value: null })),
        });
        const [stored] = await store.listEntities({ includeDeleted: false });
        assert.ok(stored !== undefined);
        const page = await store.listSamples({
          entity: stored.id,
          cell: { sampler: "s", samplerType: "", dataview: "d", row: "r", column: "c" },
          skip: 0,
          limit: 100,
        });
        assert.deepEqual(
          page.samples.map((s) => s.text),
          ["B", "Z", "_x", "a", "e", "é"],
        );
      } finally {
        await store.close();
      }
    });
  });
}
