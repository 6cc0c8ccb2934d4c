import { DuckDBInstance, DuckDBDataChunk, INTEGER } from "@duckdb/node-api";
const inst = await DuckDBInstance.create("/tmp/tmp-app.duckdb");
const c = await inst.connect();
const other = await inst.connect();
await c.run("CREATE OR REPLACE TABLE t (x INTEGER)");
const app = await c.createAppender("t");
const chunk = (v: number) => { const ch = DuckDBDataChunk.create([INTEGER], 3); ch.setColumnValues(0, [v, v, v]); return ch; };
const count = async () => (await other.runAndReadAll("SELECT count(*), coalesce(sum(x),0) FROM t")).getRowsJS()[0];
await c.run("BEGIN TRANSACTION");
app.appendDataChunk(chunk(1)); app.flushSync();
console.log("in tx, other sees", await count(), "self sees", (await c.runAndReadAll("SELECT count(*) FROM t")).getRowsJS()[0]);
await c.run("ROLLBACK");
console.log("after rollback", await count());
await c.run("BEGIN TRANSACTION");
app.appendDataChunk(chunk(2)); app.flushSync();
await c.run("COMMIT");
console.log("after commit", await count());
for (let i = 0; i < 3; i++) { await c.run("BEGIN TRANSACTION"); app.appendDataChunk(chunk(10)); app.flushSync(); await c.run("COMMIT"); }
await c.run("CHECKPOINT");
await c.run("BEGIN TRANSACTION"); app.appendDataChunk(chunk(100)); app.flushSync(); await c.run("COMMIT");
console.log("after more + checkpoint", await count());
// error inside: a chunk of wrong type
await c.run("BEGIN TRANSACTION");
try { const bad = DuckDBDataChunk.create([INTEGER, INTEGER], 1); bad.setColumnValues(0, [1]); bad.setColumnValues(1, [1]); app.appendDataChunk(bad); app.flushSync(); } catch (e) { console.log("bad chunk:", (e as Error).message); }
await c.run("ROLLBACK");
await c.run("BEGIN TRANSACTION"); app.appendDataChunk(chunk(1000)); app.flushSync(); await c.run("COMMIT");
console.log("after error", await count());
app.closeSync();
