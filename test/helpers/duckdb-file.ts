/** Reading a DuckDB store's file directly in a test, through an instance of its own. */
import { DuckDBInstance } from "@duckdb/node-api";

/** Runs `sql` on the file at `path` and returns its rows (the store must be closed). */
export async function rawRows(path: string, sql: string): Promise<unknown[][]> {
  const instance = await DuckDBInstance.create(path);
  const c = await instance.connect();
  try {
    return (await c.runAndReadAll(sql)).getRowsJS();
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}
