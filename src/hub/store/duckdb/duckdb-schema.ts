/**
 * The DuckDB store's tables (DESIGN 5.5). Every statement is idempotent (`IF NOT EXISTS`), so
 * `migrate()` can run on every start. Ids come from sequences so they stay stable for the life of
 * the file; a deleted entity keeps its row (and id) with `is_deleted` set (DESIGN 5.1).
 *
 * No foreign keys: DuckDB refuses updates of a row that a foreign key references, and entities are
 * updated in place. `samples` has no index: queries narrow it by `ts` (DuckDB's zone maps prune
 * row groups when samples arrive roughly in time order) and hash-join it to the matched series.
 */

/** Bumped when a later release changes the tables; stored in `store_meta`. */
export const DUCKDB_SCHEMA_VERSION = 1;

/** The DDL `migrate()` runs in order; each statement is a no-op when its object exists. */
export const DUCKDB_SCHEMA: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS store_meta (
     key VARCHAR PRIMARY KEY,
     value VARCHAR NOT NULL
   )`,
  `INSERT INTO store_meta VALUES ('schema_version', '${DUCKDB_SCHEMA_VERSION}') ON CONFLICT DO NOTHING`,
  "CREATE SEQUENCE IF NOT EXISTS entity_id_seq START 1",
  `CREATE TABLE IF NOT EXISTS entities (
     id INTEGER PRIMARY KEY DEFAULT nextval('entity_id_seq'),
     gateway VARCHAR NOT NULL,
     probe VARCHAR NOT NULL,
     managed_entity VARCHAR NOT NULL,
     attributes JSON NOT NULL,
     is_deleted BOOLEAN NOT NULL,
     updated_at TIMESTAMPTZ NOT NULL,
     UNIQUE (gateway, probe, managed_entity)
   )`,
  "CREATE SEQUENCE IF NOT EXISTS series_id_seq START 1",
  `CREATE TABLE IF NOT EXISTS series (
     id INTEGER PRIMARY KEY,
     entity_id INTEGER NOT NULL,
     sampler VARCHAR NOT NULL,
     sampler_type VARCHAR NOT NULL,
     dataview VARCHAR NOT NULL,
     row_name VARCHAR NOT NULL,
     column_name VARCHAR NOT NULL,
     UNIQUE (entity_id, sampler, sampler_type, dataview, row_name, column_name)
   )`,
  `CREATE TABLE IF NOT EXISTS samples (
     series_id INTEGER NOT NULL,
     ts TIMESTAMPTZ NOT NULL,
     value DOUBLE,
     text VARCHAR NOT NULL
   )`,
];
