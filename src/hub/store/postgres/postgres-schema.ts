/**
 * The PostgreSQL store's tables (DESIGN 5.5), as numbered migrations applied at `migrate()`.
 *
 * `vigil_migrations` records each version applied. `migrate()` runs in one transaction under a
 * transaction-scoped advisory lock, so two hubs starting at once on one database apply each
 * migration exactly once (the second waits, then finds the versions recorded and does nothing).
 * A database already at a newer version than this release knows is left as it is.
 *
 * Layout choices (docs: /tmp decisions of hub-pg):
 * - Times are `bigint` epoch milliseconds, not `timestamptz`: the store receives whole
 *   milliseconds (data-checks.ts) over the whole JavaScript Date range (±8.64e15 ms, years before
 *   4713 BC included, which `timestamptz` cannot hold), COPY writes them without parsing dates,
 *   and `svc.first`/`svc.last` compare them exactly as float8 (|ms| < 2^53).
 * - `samples` is range-partitioned on `ts_ms`, one partition per ISO week (Monday 00:00 UTC to
 *   the next), created on demand by postgres-partitions.ts: a day of 200 series at 10 s is 1.7 M
 *   rows; a week keeps partitions at a few tens of millions of rows and a decade at ~520 of them.
 * - Every text column is `COLLATE "C"`: ordering is by code point (UTF-8 byte order), as DESIGN
 *   5.1 and 5.3 ask and as DuckDB sorts, whatever the database's default collation.
 * - Attributes, event targets' filters and payloads are `json` (kept as written, key order
 *   included), not `jsonb`, so both stores return them alike.
 * - Samples are rows of `samples` as written until compaction moves each series's closed hour into
 *   one `sample_chunks` row (version 6, postgres-compaction.ts); the `stored_samples` view shows both.
 * - Message ids: `message_origins` holds one row per gateway run that a claim locks (`FOR
 *   UPDATE`), so two hubs claiming seqs of one origin take turns, and `message_ranges` the runs of
 *   seqs (src/hub/store/seq-ranges.ts); hashes are rows of `message_digests` (a uuid of the first
 *   128 bits, since version 3), whose primary key makes a concurrent duplicate wait for the first
 *   writer's commit and then lose; `vigil_settings` (version 4) records their form.
 */

import { DIGEST_FORM_SETTING, NEW_STORE_DIGEST_FORM } from "../message-digest.js";

/** One schema change; `statements` run in order inside the migration transaction. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly string[];
}

/** The advisory lock key of `migrate()` and of partition creation: "vigil" in ASCII, then 1 and 2. */
export const MIGRATE_LOCK_KEY = 0x76_69_67_69_6c_01;
export const PARTITION_LOCK_KEY = 0x76_69_67_69_6c_02;
/** The advisory lock key of compaction (postgres-compaction.ts): one compacting session at a time. */
export const COMPACT_LOCK_KEY = 0x76_69_67_69_6c_03;

/**
 * The text PostgreSQL renders a stored double as, for a sample whose text a chunk leaves out: the
 * integer's digits up to 2^53 − 1, else the shortest digits that read back as the double (`float8`
 * output with `extra_float_digits` ≥ 1). A chunk keeps a sample's text as NULL only when it is
 * exactly this rendering, so reading it back gives the text byte for byte. `v` is an SQL expression.
 */
export const sampleTextSql = (v: string): string =>
  `CASE WHEN ${v} = trunc(${v}) AND abs(${v}) <= 9007199254740991 THEN (${v})::bigint::text ELSE (${v})::text END`;

/**
 * The samples of a chunk row `k` (migration 6) as rows of `u`, in the chunk's order: `u.off`
 * (listed time, or NULL), `u.val` (a double, or NULL), `u.ival` (a scaled integer, or NULL), with
 * `texts` also `u.text`, and `u.ord`. {@link chunkTimeSql} and {@link chunkValueSql} read a sample's
 * time and value from them.
 */
export const chunkUnnestSql = (k: string, texts: boolean): string =>
  `CROSS JOIN LATERAL unnest(${k}.offsets, ${k}.vals, ${k}.ivals${texts ? `, ${k}.texts` : ""}) WITH ORDINALITY
     AS u(off, val, ival${texts ? ", text" : ""}, ord)`;
/** A chunk sample's time (epoch ms): listed, or on the chunk's regular step from its first time. */
export const chunkTimeSql = (k: string): string =>
  `${k}.chunk_start_ms + coalesce(u.off, (${k}.first_ms - ${k}.chunk_start_ms)::int + (u.ord::int - 1) * ${k}.step)`;
/** A chunk sample's value: the double, or the integer over the chunk's power of ten (exact). */
export const chunkValueSql = (k: string): string => `coalesce(u.val, u.ival / ${k}.scale)`;

export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS vigil_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/** The `updated_ms` of a probe row made from metrics or moved out of attributes: older than any message. */
export const FALLBACK_PROBE_MS = -8_640_000_000_000_000;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "entities, series, partitioned samples, events, message ids",
    statements: [
      `CREATE TABLE entities (
         id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
         gateway text COLLATE "C" NOT NULL,
         probe text COLLATE "C" NOT NULL,
         managed_entity text COLLATE "C" NOT NULL,
         attributes json NOT NULL,
         is_deleted boolean NOT NULL,
         updated_ms bigint NOT NULL,
         UNIQUE (gateway, probe, managed_entity)
       )`,
      `CREATE TABLE series (
         id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
         entity_id integer NOT NULL REFERENCES entities (id),
         sampler text COLLATE "C" NOT NULL,
         sampler_type text COLLATE "C" NOT NULL,
         dataview text COLLATE "C" NOT NULL,
         row_name text COLLATE "C" NOT NULL,
         column_name text COLLATE "C" NOT NULL,
         UNIQUE (entity_id, sampler, sampler_type, dataview, row_name, column_name)
       )`,
      `CREATE TABLE samples (
         series_id integer NOT NULL,
         ts_ms bigint NOT NULL,
         value double precision,
         text text NOT NULL
       ) PARTITION BY RANGE (ts_ms)`,
      // On the parent: every partition gets it. Serves queries of a few series over a long range;
      // a query over most series of a week scans the partition instead.
      "CREATE INDEX samples_series_ts ON samples (series_id, ts_ms)",
      `CREATE TABLE events (
         id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
         at_ms bigint NOT NULL,
         type text COLLATE "C" NOT NULL,
         operation text COLLATE "C" NOT NULL,
         entity_id integer,
         gateway text COLLATE "C" NOT NULL,
         probe text COLLATE "C",
         managed_entity text COLLATE "C",
         target_type text COLLATE "C",
         sampler text COLLATE "C",
         dataview text COLLATE "C",
         row_name text COLLATE "C",
         column_name text COLLATE "C",
         target_filter json,
         payload json NOT NULL
       )`,
      "CREATE INDEX events_at ON events (at_ms, id)",
      "CREATE INDEX events_entity_at ON events (entity_id, at_ms, id)",
      'CREATE TABLE message_origins (origin text COLLATE "C" PRIMARY KEY)',
      `CREATE TABLE message_ranges (
         origin text COLLATE "C" NOT NULL REFERENCES message_origins (origin),
         first_seq bigint NOT NULL,
         last_seq bigint NOT NULL,
         PRIMARY KEY (origin, first_seq)
       )`,
      'CREATE TABLE message_hashes (hash text COLLATE "C" PRIMARY KEY)',
    ],
  },
  {
    version: 2,
    name: "block-range index of sample times",
    statements: [
      // Samples arrive roughly in time order, so each block range holds a narrow stretch of time:
      // a query over part of a week reads only the blocks of its stretch (a bitmap scan) instead
      // of the whole partition — the two halves of a split metric query each read their half.
      // Summarised as ranges fill (autosummarize); ranges not yet summarised are always read.
      "CREATE INDEX samples_ts_brin ON samples USING brin (ts_ms) WITH (pages_per_range = 32, autosummarize = on)",
    ],
  },
  {
    version: 3,
    name: "message digests as uuid",
    statements: [
      // A hash key is kept as the first 128 bits of its SHA-256 (message-digest.ts), 16 bytes in a
      // uuid, instead of its 64-character hex text: the primary key every backfill claim inserts
      // into is a third of the size, and a 10,000-message claim a third faster. The
      // stored hashes are converted as message-digest.ts converts a key: 64 hex digits are cut to
      // 32, any other text is hashed first.
      "CREATE TABLE message_digests (digest uuid PRIMARY KEY)",
      `INSERT INTO message_digests
         SELECT DISTINCT (CASE WHEN hash ~ '^[0-9a-f]{64}$' THEN left(hash, 32)
                               ELSE left(encode(sha256(convert_to(hash, 'UTF8')), 'hex'), 32) END)::uuid
         FROM message_hashes`,
      "DROP TABLE message_hashes",
    ],
  },
  {
    version: 4,
    name: "message digest form",
    statements: [
      // The form of the database's message digests (message-digest.ts), recorded once: `minute`
      // (led by the message's minute, so a backfill inserts into the index in order) when it holds
      // no digest yet; `sha` when it does, so the messages it stored stay recognised.
      `CREATE TABLE vigil_settings (
         key text COLLATE "C" PRIMARY KEY,
         value text NOT NULL
       )`,
      `INSERT INTO vigil_settings
         SELECT '${DIGEST_FORM_SETTING}',
                CASE WHEN EXISTS (SELECT 1 FROM message_digests) THEN 'sha' ELSE '${NEW_STORE_DIGEST_FORM}' END`,
    ],
  },
  {
    version: 5,
    name: "dataviews, numeric series and probes kept in the store",
    statements: [
      // What the hub says of a metric comes from what it stored (DESIGN 5.1): the store's id of
      // each dataview with the plug-in and OS type its messages carried last (null: not known,
      // e.g. stored before this version, until a message carries it) ...
      `CREATE TABLE dataviews (
         id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
         entity_id integer NOT NULL REFERENCES entities (id),
         sampler text COLLATE "C" NOT NULL,
         sampler_type text COLLATE "C" NOT NULL,
         dataview text COLLATE "C" NOT NULL,
         plugin text COLLATE "C",
         os_type text COLLATE "C",
         UNIQUE (entity_id, sampler, sampler_type, dataview)
       )`,
      // ... the rows ("" the headlines) deleted since their last update ...
      `CREATE TABLE dataview_deletes (
         dataview_id integer NOT NULL REFERENCES dataviews (id),
         row_name text COLLATE "C" NOT NULL,
         PRIMARY KEY (dataview_id, row_name)
       )`,
      // ... the series that have ever held a number (retention keeps the flag) ...
      "CREATE TABLE numeric_series (series_id integer PRIMARY KEY)",
      // ... and each probe's OS type and host name, which every entity of the probe shows
      // (`svc.os-type`, `svc.hostname`), whichever hub received the probe message.
      `CREATE TABLE probes (
         gateway text COLLATE "C" NOT NULL,
         probe text COLLATE "C" NOT NULL,
         os_type text COLLATE "C",
         hostname text COLLATE "C",
         updated_ms bigint NOT NULL,
         PRIMARY KEY (gateway, probe)
       )`,
      `INSERT INTO dataviews (entity_id, sampler, sampler_type, dataview)
         SELECT entity_id, sampler, sampler_type, dataview FROM series
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
      `INSERT INTO numeric_series
         SELECT s.id FROM series s
         WHERE EXISTS (SELECT 1 FROM samples x WHERE x.series_id = s.id AND x.value IS NOT NULL)`,
      // Probe details move out of the attributes: the values of the entity updated last, per probe,
      // as old as can be (a probe message replaces them).
      `INSERT INTO probes (gateway, probe, os_type, hostname, updated_ms)
         SELECT DISTINCT ON (gateway, probe) gateway, probe,
                nullif(attributes->>'svc.os-type', ''), nullif(attributes->>'svc.hostname', ''),
                ${FALLBACK_PROBE_MS}
         FROM entities
         WHERE attributes->>'svc.os-type' IS NOT NULL OR attributes->>'svc.hostname' IS NOT NULL
         ORDER BY gateway, probe, updated_ms DESC, id DESC`,
      // Key order kept (json, not jsonb).
      `UPDATE entities SET attributes = coalesce(
           (SELECT json_object_agg(key, value ORDER BY ord)
            FROM json_each(attributes) WITH ORDINALITY AS a(key, value, ord)
            WHERE key NOT IN ('svc.os-type', 'svc.hostname')),
           '{}'::json)
         WHERE attributes->>'svc.os-type' IS NOT NULL OR attributes->>'svc.hostname' IS NOT NULL`,
    ],
  },
  {
    version: 6,
    name: "samples compacted into chunks per series and hour",
    statements: [
      // Fresh samples stay rows of `samples` (COPY writes them); compaction
      // (postgres-compaction.ts) moves the rows of each series and closed hour into one chunk row.
      // Every statement can run again on a database that has its objects.
      // The rendering of sampleTextSql, with the float output setting fixed whatever the session's.
      `CREATE OR REPLACE FUNCTION vigil_sample_text(v double precision) RETURNS text
         LANGUAGE sql IMMUTABLE PARALLEL SAFE SET extra_float_digits = 1
         AS $$ SELECT ${sampleTextSql("v")} $$`,
      // One row per series and hour (by sample time) in which it has samples, in time order: their
      // count and first and last time; their times as ms after the hour (`offsets`), or NULL when
      // they are `step` ms apart from the first; their values as doubles (`vals`, NULL: no
      // number), or, when every number is an integer over the power of ten `scale` exactly, those
      // integers (`ivals`); their texts (NULL: the value's rendering; the whole array NULL when
      // every text is); and the count of numbers.
      `CREATE TABLE IF NOT EXISTS sample_chunks (
         series_id integer NOT NULL,
         chunk_start_ms bigint NOT NULL,
         n integer NOT NULL,
         first_ms bigint NOT NULL,
         last_ms bigint NOT NULL,
         step integer,
         offsets integer[],
         scale double precision,
         vals double precision[],
         ivals integer[],
         texts text[],
         v_count integer NOT NULL,
         PRIMARY KEY (series_id, chunk_start_ms)
       ) PARTITION BY RANGE (chunk_start_ms)`,
      // lz4 compresses the arrays faster than pglz and better; a server built without it keeps
      // pglz (the partitions take the parent's setting).
      `DO $$ BEGIN
         EXECUTE 'ALTER TABLE sample_chunks ALTER COLUMN offsets SET COMPRESSION lz4,
                    ALTER COLUMN vals SET COMPRESSION lz4, ALTER COLUMN ivals SET COMPRESSION lz4,
                    ALTER COLUMN texts SET COMPRESSION lz4';
       EXCEPTION WHEN OTHERS THEN NULL;
       END $$`,
      // A chunk partition for each week that has a row partition.
      `DO $$ DECLARE p record; BEGIN
         FOR p IN SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
                  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                  WHERE i.inhparent = 'samples'::regclass AND c.relname ~ '^samples_wm?[0-9]+$'
         LOOP
           EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF sample_chunks %s',
                          'sample_chunks_' || substr(p.relname, 9), p.bound);
         END LOOP;
       END $$`,
      // Every stored sample, one row each, from either form.
      `CREATE OR REPLACE VIEW stored_samples AS
         SELECT series_id, ts_ms, value, text FROM samples
         UNION ALL
         SELECT c.series_id, ${chunkTimeSql("c")}, ${chunkValueSql("c")},
                coalesce(u.text, vigil_sample_text(${chunkValueSql("c")}))
         FROM sample_chunks c ${chunkUnnestSql("c", true)}`,
    ],
  },
];

/** The database's digest form (migration 4). */
export const READ_DIGEST_FORM = `SELECT value FROM vigil_settings WHERE key = '${DIGEST_FORM_SETTING}'`;

/** The newest version this release knows. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;
