/**
 * The DuckDB store's tables (DESIGN 5.5). Every statement is idempotent (`IF NOT EXISTS`), so
 * `migrate()` can run on every start. Ids come from sequences so they stay stable for the life of
 * the file; a deleted entity keeps its row (and id) with `is_deleted` set (DESIGN 5.1).
 *
 * No foreign keys: DuckDB refuses updates of a row that a foreign key references, and entities are
 * updated in place. `samples` has no index: queries narrow it by `ts` (DuckDB's zone maps prune
 * row groups when samples arrive roughly in time order) and hash-join it to the matched series.
 *
 * Version 2 adds `events` (severity, snooze and userassignment history) and the message-id
 * de-duplication tables `message_ranges` and `message_hashes` (DESIGN 1). A version-1 file gains
 * them on its next `migrate()`.
 *
 * Version 3 keeps the digests of messages without an id as 128-bit integers in `message_digests`
 * instead of 64-character hex text in `message_hashes` (the text primary key cost a
 * backfill about 25 µs per message once it held a million); `migrate()` moves a version-2 file's
 * hashes over ({@link MIGRATE_MESSAGE_HASHES}) and drops the old table.
 *
 * Version 4 records in `store_meta` the form of the file's message digests (message-digest.ts):
 * `minute` (led by the message's minute, so a backfill inserts them in order) for a file that holds
 * no digest yet, `sha` for one that does, whose digests must stay recognised
 * ({@link RECORD_DIGEST_FORM}).
 *
 * Version 5 keeps what the hub says of a metric and an entity in the store (DESIGN 5.1):
 * `dataviews` (the store's id of each entity's sampler, type and dataview, with the plug-in and OS
 * type its messages carried last), `dataview_deletes` (rows deleted since their last update),
 * `numeric_series` (the series that have ever held a number) and `probes` (a probe's OS type and
 * host name, no longer copied into each entity's attributes). `migrate()` fills them from a
 * version-4 file ({@link MIGRATE_TO_STORED_NAMES}, then the probe details move out of the
 * attributes, duckdb-store.ts); the plug-in of existing dataviews stays unknown (null) until a
 * message carries it.
 *
 * Version 6 stores a sample's `text` only where it is not the canonical text of its number
 * (core/canonical-number.ts), NULL otherwise: the text took half the bytes of a sample on disk,
 * and every read renders it again from `value` ({@link sampleTextSql}). `migrate()` lets a
 * version-5 file's column hold NULL ({@link MIGRATE_TO_OPTIONAL_TEXT}); its rows keep their text.
 *
 * Version 7 drops the primary key of `message_digests`: its index took 64 bytes a digest on disk
 * (four times the digests' own column) and stayed in memory, while a claim's look-up of minute-led
 * digests reads only the row groups of their minutes (duckdb-claims.ts). `migrate()` rebuilds an
 * indexed table once, its digests in order ({@link UNINDEX_MESSAGE_DIGESTS}).
 */
import { DIGEST_FORM_SETTING, NEW_STORE_DIGEST_FORM } from "../message-digest.js";

/** Bumped when a later release changes the tables; stored in `store_meta`. */
export const DUCKDB_SCHEMA_VERSION = 7;

/** Raised, never lowered: an older release must not mark a newer file as its own version. */
export const RAISE_SCHEMA_VERSION = `INSERT INTO store_meta VALUES ('schema_version', '${DUCKDB_SCHEMA_VERSION}')
   ON CONFLICT (key) DO UPDATE SET value = excluded.value
   WHERE TRY_CAST(store_meta.value AS INTEGER) < ${DUCKDB_SCHEMA_VERSION}`;

/** Version 5's tables (see the module comment). */
const STORED_NAMES_SCHEMA: readonly string[] = [
  "CREATE SEQUENCE IF NOT EXISTS dataview_id_seq START 1",
  `CREATE TABLE IF NOT EXISTS dataviews (
     id INTEGER PRIMARY KEY DEFAULT nextval('dataview_id_seq'),
     entity_id INTEGER NOT NULL,
     sampler VARCHAR NOT NULL,
     sampler_type VARCHAR NOT NULL,
     dataview VARCHAR NOT NULL,
     plugin VARCHAR,
     os_type VARCHAR,
     UNIQUE (entity_id, sampler, sampler_type, dataview)
   )`,
  // No key: a row deleted, updated and deleted again in one transaction would meet DuckDB's false
  // unique-key violation of an index (see message_ranges); writes delete a row's entry first.
  `CREATE TABLE IF NOT EXISTS dataview_deletes (
     dataview_id INTEGER NOT NULL,
     row_name VARCHAR NOT NULL
   )`,
  // A series is here once it has held a number; never removed (retention keeps the flag).
  "CREATE TABLE IF NOT EXISTS numeric_series (series_id INTEGER PRIMARY KEY)",
  `CREATE TABLE IF NOT EXISTS probes (
     gateway VARCHAR NOT NULL,
     probe VARCHAR NOT NULL,
     os_type VARCHAR,
     hostname VARCHAR,
     updated_ms BIGINT NOT NULL,
     PRIMARY KEY (gateway, probe)
   )`,
];

/** The `updated_ms` of a probe row made from metrics or moved out of attributes: older than any message. */
export const FALLBACK_PROBE_MS = -8_640_000_000_000_000;

/** Whether the file holds data of a version before 5 (its `store_meta` says so); run before the schema. */
export const READ_SCHEMA_VERSION = `SELECT TRY_CAST(value AS INTEGER) AS v FROM store_meta WHERE key = 'schema_version'`;
export const HAS_STORE_META =
  "SELECT count(*) AS n FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'store_meta'";

/**
 * Fills version 5's tables from a version-4 file's series and samples: a dataview row for each
 * dataview of the series (ids in name order), and the numeric flag of every series that holds a
 * numeric sample.
 */
export const MIGRATE_TO_STORED_NAMES: readonly string[] = [
  `INSERT INTO dataviews (entity_id, sampler, sampler_type, dataview)
   SELECT entity_id, sampler, sampler_type, dataview FROM series
   GROUP BY ALL ORDER BY entity_id, sampler, sampler_type, dataview
   ON CONFLICT DO NOTHING`,
  `INSERT INTO numeric_series SELECT DISTINCT series_id FROM samples WHERE value IS NOT NULL
   ON CONFLICT DO NOTHING`,
];

/**
 * A version-5 file's `samples.text` was NOT NULL; DuckDB drops the constraint in place, so the
 * existing rows keep their text (which {@link sampleTextSql} reads first).
 */
export const MIGRATE_TO_OPTIONAL_TEXT = "ALTER TABLE samples ALTER COLUMN text DROP NOT NULL";

/**
 * The text of a sample of `samples` row `x`: the stored text, else the canonical text of the
 * number (core/canonical-number.ts) rendered again: a safe integer through BIGINT (a DOUBLE is
 * written with ".0"), any other double as DuckDB writes it, the shortest digits that read back as
 * it (fixed notation from 1e-4 up). Each branch runs on its own rows only, so the cast to BIGINT
 * never meets a double out of its range.
 */
export const sampleTextSql = (x: string): string =>
  `CASE WHEN ${x}.text IS NOT NULL THEN ${x}.text
        WHEN abs(${x}.value) <= ${Number.MAX_SAFE_INTEGER} AND ${x}.value = trunc(${x}.value)
          THEN CAST(CAST(${x}.value AS BIGINT) AS VARCHAR)
        ELSE CAST(${x}.value AS VARCHAR) END`;

/** The DDL `migrate()` runs in order; each statement is a no-op when its object exists. */
export const DUCKDB_SCHEMA: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS store_meta (
     key VARCHAR PRIMARY KEY,
     value VARCHAR NOT NULL
   )`,
  RAISE_SCHEMA_VERSION,
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
     text VARCHAR
   )`,
  "CREATE SEQUENCE IF NOT EXISTS event_id_seq START 1",
  // One row per severity, snooze or userassignment message. `id` orders events of one instant by
  // arrival; target fields are NULL when the target does not name them; `entity_id` is NULL when
  // the target names no managed entity.
  `CREATE TABLE IF NOT EXISTS events (
     id BIGINT NOT NULL,
     ts TIMESTAMPTZ NOT NULL,
     type VARCHAR NOT NULL,
     operation VARCHAR NOT NULL,
     entity_id INTEGER,
     gateway VARCHAR NOT NULL,
     probe VARCHAR,
     managed_entity VARCHAR,
     target_type VARCHAR,
     sampler VARCHAR,
     dataview VARCHAR,
     row_name VARCHAR,
     column_name VARCHAR,
     target_filter JSON,
     payload JSON NOT NULL
   )`,
  // The seqs stored per message origin, as disjoint runs (src/hub/store/seq-ranges.ts). No index on
  // purpose: DuckDB executes an UPDATE of an indexed column as delete + insert and can then report
  // a false unique-key violation within one transaction; in-order delivery keeps one row per
  // origin, so the scan per claim stays small.
  `CREATE TABLE IF NOT EXISTS message_ranges (
     origin VARCHAR NOT NULL,
     first_seq BIGINT NOT NULL,
     last_seq BIGINT NOT NULL
   )`,
  // The digests of messages that carry no id (backfilled files; message-digest.ts), as signed
  // integers (duckdb-claims.ts `digestOf`). No index: a claim looks its digests up by range
  // (duckdb-claims.ts), and the store alone writes them, one transaction at a time.
  "CREATE TABLE IF NOT EXISTS message_digests (digest HUGEINT NOT NULL)",
  ...STORED_NAMES_SCHEMA,
];

/**
 * Records the file's digest form once, after a version-2 file's hashes have moved
 * ({@link MIGRATE_MESSAGE_HASHES}); never changed afterwards.
 */
export const RECORD_DIGEST_FORM = `INSERT INTO store_meta
  SELECT '${DIGEST_FORM_SETTING}',
         CASE WHEN EXISTS (SELECT 1 FROM message_digests) THEN 'sha' ELSE '${NEW_STORE_DIGEST_FORM}' END
  ON CONFLICT (key) DO NOTHING`;

/** The file's digest form, once recorded. */
export const READ_DIGEST_FORM = `SELECT value FROM store_meta WHERE key = '${DIGEST_FORM_SETTING}'`;

/** Whether a version-2 file still holds its `message_hashes` table. */
export const HAS_MESSAGE_HASHES =
  "SELECT count(*) AS n FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'message_hashes'";

/**
 * Moves a version-2 file's hashes into `message_digests`, in one transaction with dropping the old
 * table: the first 32 hex digits as two unsigned 64-bit halves, the high one taken as signed, which
 * is `digestOf` in duckdb-claims.ts (a hash that is not 64 hex digits cannot be in a version-2
 * file: the ingester wrote only SHA-256 hex).
 */
export const MIGRATE_MESSAGE_HASHES: readonly string[] = [
  `INSERT INTO message_digests
   SELECT DISTINCT
     (CASE WHEN hi >= 9223372036854775808 THEN hi::HUGEINT - 18446744073709551616::HUGEINT ELSE hi::HUGEINT END)
       * 18446744073709551616::HUGEINT + lo::HUGEINT
   FROM (SELECT ('0x' || substr(hash, 1, 16))::UBIGINT AS hi, ('0x' || substr(hash, 17, 16))::UBIGINT AS lo
         FROM message_hashes)
   WHERE NOT EXISTS (SELECT 1 FROM message_digests)`,
  "DROP TABLE message_hashes",
];

/** Whether `message_digests` still has the primary key of versions 3 to 6. */
export const HAS_INDEXED_DIGESTS = `SELECT count(*) AS n FROM duckdb_constraints()
  WHERE schema_name = 'main' AND table_name = 'message_digests' AND constraint_type = 'PRIMARY KEY'`;

/**
 * Version 7 (see the module comment): the digests move, in order, into a table without the key, in
 * one transaction with dropping the indexed one.
 */
export const UNINDEX_MESSAGE_DIGESTS: readonly string[] = [
  "CREATE TABLE message_digests_unindexed (digest HUGEINT NOT NULL)",
  "INSERT INTO message_digests_unindexed SELECT digest FROM message_digests ORDER BY digest",
  "DROP TABLE message_digests",
  "ALTER TABLE message_digests_unindexed RENAME TO message_digests",
];
