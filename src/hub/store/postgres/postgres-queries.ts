/**
 * The PostgreSQL statements behind the hub's listing endpoints (DESIGN 5.1), the same answers as
 * duckdb-queries.ts: the latest severity of each entity (`/v0/entities/summary`), raw samples of
 * one cell (`…/metrics/data`), the metric names of a set of entities (`/v0/entities/metrics`) and
 * row names (`…/metrics/rows`). Every value from a request is a bound parameter; entity ids beyond
 * the `integer` range are dropped before they reach a statement (they name no entity).
 */

import type { Sql } from "postgres";
import { asEntityId, asEpochMs, type EntityId } from "../../../ids.js";
import { METRIC_NAMES_CTE } from "../dataviews.js";
import type { EntitySeverity, MetricName, RowNameQuery, SamplePage, SampleQuery } from "../store.js";
import { CHUNK_MS } from "./postgres-compaction.js";
import { MAX_INT4 } from "./postgres-events.js";
import { chunkTimeSql, chunkUnnestSql, chunkValueSql } from "./postgres-schema.js";

/** The ids an `integer` column can hold; others name no entity. */
export const storableIds = (ids: readonly number[]): number[] =>
  ids.filter((id) => Number.isSafeInteger(id) && id >= 1 && id <= MAX_INT4);

/**
 * Per entity, its latest severity event targeting the managed entity itself (no sampler): latest
 * by time, then by arrival (`id`). `data.severity` is read from the stored payload.
 */
export async function latestSeverities(sql: Sql): Promise<EntitySeverity[]> {
  const rows = await sql<{ entity_id: number; severity: string | null; at_ms: string }[]>`
    SELECT DISTINCT ON (entity_id) entity_id, payload->>'severity' AS severity, at_ms
    FROM events
    WHERE type = 'severity' AND entity_id IS NOT NULL AND sampler IS NULL
    ORDER BY entity_id, at_ms DESC, id DESC`;
  return rows.map((r) => ({
    entityId: asEntityId(r.entity_id),
    severity: r.severity ?? "UNDEFINED",
    at: asEpochMs(Number(r.at_ms)),
  }));
}

/**
 * Raw samples of one cell of one entity: time, then sampler type, then text (one order in every
 * store). Rows and chunks (postgres-compaction.ts) alike: a chunk is unnested only when its span
 * meets the range, and a text it left out is rendered from the value.
 */
export async function listSamples(sql: Sql, query: SampleQuery): Promise<SamplePage> {
  if (storableIds([query.entity]).length === 0) return { totalCount: 0, samples: [] };
  const c = query.cell;
  const from = query.from ?? Number.MIN_SAFE_INTEGER;
  const to = query.to ?? Number.MAX_SAFE_INTEGER;
  const cell = sql`cell AS MATERIALIZED (
    SELECT s.id, s.sampler_type FROM series s
    WHERE s.entity_id = ${query.entity} AND s.sampler = ${c.sampler}
      AND (${c.samplerType === null}::boolean OR s.sampler_type = ${c.samplerType ?? ""})
      AND s.dataview = ${c.dataview} AND s.row_name = ${c.row ?? ""} AND s.column_name = ${c.column}
  )`;
  const rows = sql`SELECT r.series_id, r.ts_ms, r.text FROM samples r
    WHERE r.series_id IN (SELECT id FROM cell) AND r.ts_ms >= ${from}::bigint AND r.ts_ms < ${to}::bigint`;
  const chunks = sql`sample_chunks k ${sql.unsafe(chunkUnnestSql("k", true))}
    WHERE k.series_id IN (SELECT id FROM cell) AND k.last_ms >= ${from}::bigint AND k.first_ms < ${to}::bigint
      AND k.chunk_start_ms > ${from - CHUNK_MS}::bigint AND k.chunk_start_ms < ${to}::bigint
      AND ${sql.unsafe(chunkTimeSql("k"))} >= ${from}::bigint AND ${sql.unsafe(chunkTimeSql("k"))} < ${to}::bigint`;
  const [total] = await sql<{ n: string }[]>`
    WITH ${cell}
    SELECT (SELECT count(*) FROM (${rows}) AS r) + (SELECT count(*) FROM ${chunks}) AS n`;
  // Texts of one instant are ordered by code point (COLLATE "C", as DuckDB orders them), not by
  // the database's locale: both stores answer a page alike whatever locale the database has.
  const page = await sql<{ ts_ms: string; text: string }[]>`
    WITH ${cell},
    x AS (
      ${rows}
      UNION ALL
      SELECT k.series_id, ${sql.unsafe(chunkTimeSql("k"))},
             coalesce(u.text, vigil_sample_text(${sql.unsafe(chunkValueSql("k"))})) FROM ${chunks}
    )
    SELECT x.ts_ms, x.text FROM x JOIN cell s ON s.id = x.series_id
    ORDER BY x.ts_ms, s.sampler_type, x.text COLLATE "C" LIMIT ${query.limit} OFFSET ${query.skip}`;
  return {
    totalCount: Number(total?.n ?? 0),
    samples: page.map((r) => ({ at: asEpochMs(Number(r.ts_ms)), text: r.text })),
  };
}

/** The distinct cell and headline names of some entities; numeric ones only unless asked. */
export async function listMetricNames(
  sql: Sql,
  query: { readonly entities: readonly EntityId[]; readonly includeNonNumeric: boolean },
): Promise<MetricName[]> {
  const ids = storableIds(query.entities);
  if (ids.length === 0) return [];
  const rows = await sql.unsafe<
    {
      entity_id: number;
      sampler: string;
      sampler_type: string;
      dataview: string;
      headline: boolean;
      column_name: string;
      is_numeric: boolean;
      dv: number;
      plugin: string | null;
      os_type: string | null;
      deleted: boolean;
    }[]
  >(
    `${METRIC_NAMES_CTE("s.entity_id = ANY($1::int[])")}
     SELECT w.entity_id, w.sampler, w.sampler_type, w.dataview, w.row_name = '' AS headline, w.column_name,
            bool_or(w.is_numeric) AS is_numeric, w.dv, w.plugin, w.os_type,
            bool_or(w.dv_deleted OR e.is_deleted) AS deleted
     FROM w JOIN entities e ON e.id = w.entity_id
     GROUP BY w.entity_id, w.sampler, w.sampler_type, w.dataview, w.row_name = '', w.column_name,
              w.dv, w.plugin, w.os_type
     HAVING $2::boolean OR bool_or(w.is_numeric)`,
    [ids, query.includeNonNumeric],
  );
  return rows.map((r) => ({
    entityId: asEntityId(r.entity_id),
    sampler: r.sampler,
    samplerType: r.sampler_type,
    dataview: r.dataview,
    headline: r.headline,
    column: r.column_name,
    plugin: r.plugin,
    osType: r.os_type,
    numeric: r.is_numeric,
    dataviewId: r.dv,
    dataviewDeleted: r.deleted,
  }));
}

/** The distinct row names a {@link RowNameQuery} selects (never "", the headline row). */
export async function listRowNames(sql: Sql, query: RowNameQuery): Promise<string[]> {
  const ids = storableIds(query.entities);
  if (ids.length === 0) return [];
  const since =
    query.updatedSince === undefined
      ? sql``
      : sql`AND (EXISTS (SELECT 1 FROM samples x WHERE x.series_id = s.id AND x.ts_ms >= ${query.updatedSince}::bigint)
             OR EXISTS (SELECT 1 FROM sample_chunks k WHERE k.series_id = s.id AND k.last_ms >= ${query.updatedSince}::bigint))`;
  const rows = await sql<{ row_name: string }[]>`
    SELECT DISTINCT s.row_name FROM series s
    WHERE s.entity_id = ANY(${ids}::int[]) AND s.sampler = ${query.sampler}
      AND (${query.samplerType === null}::boolean OR s.sampler_type = ${query.samplerType ?? ""})
      AND s.dataview = ${query.dataview}
      AND (${query.column === null}::boolean OR s.column_name = ${query.column ?? ""})
      AND s.row_name <> '' ${since}`;
  return rows.map((r) => r.row_name);
}
