import { DuckDBInstance } from "@duckdb/node-api";
const db = await DuckDBInstance.create(process.argv[2], { access_mode: "READ_ONLY" });
const c = await db.connect();
const show = async (sql) => { const r = await c.runAndReadAll(sql); console.log(r.columnNames().join("\t")); for (const row of r.getRowsJS()) console.log(row.join("\t")); };
await show("SELECT * FROM pragma_database_size()");
const tables = (await c.runAndReadAll("SELECT table_name FROM duckdb_tables()")).getRowsJS().map((r) => r[0]);
for (const t of tables) { const r = await c.runAndReadAll(`SELECT count(DISTINCT block_id), count(*) FROM pragma_storage_info('${t}') WHERE block_id >= 0`); console.log(t, r.getRowsJS()[0].join(" ")); }
await show(`SELECT column_name, compression, count(*) segs, count(DISTINCT block_id) blocks, sum(count) n FROM pragma_storage_info('samples') GROUP BY ALL ORDER BY 1`);
await show(`SELECT column_name, compression, count(*) segs, count(DISTINCT block_id) blocks, sum(count) n FROM pragma_storage_info('message_digests') GROUP BY ALL ORDER BY 1`);
for (const t of ["samples", "message_digests"]) {
  await show(`WITH s AS (SELECT column_name, column_path, compression, block_id, block_offset FROM pragma_storage_info('${t}') WHERE block_id >= 0),
  z AS (SELECT *, coalesce(lead(block_offset) OVER (PARTITION BY block_id ORDER BY block_offset), 262144) - block_offset AS bytes FROM s)
  SELECT column_name, column_path, compression, sum(bytes) AS bytes, round(sum(bytes)/1728000, 3) AS per_sample FROM z GROUP BY ALL ORDER BY 1, 2`);
}
