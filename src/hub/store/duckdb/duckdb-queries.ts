/**
 * The DuckDB statements behind the hub's listing endpoints (DESIGN 5.1): the latest severity of each
 * entity (`/v0/entities/summary`), raw samples of one cell (`…/metrics/data`), the metric names of
 * a set of entities (`/v0/entities/metrics`) and row names (`…/metrics/rows`). Every value from a
 * request is a bound parameter; results never depend on insertion order or on dense ids, so the
 * PostgreSQL store can answer the same contract with plain SQL.
 */
import {
  BIGINT,
  type DuckDBType,
  type DuckDBValue,
  INTEGER,
  type JS,
  listValue,
  VARCHAR,
} from "@duckdb/node-api";
import { asEntityId, asEpochMs } from "../../../ids.js";
import { METRIC_NAMES_CTE } from "../dataviews.js";
import type { EntitySeverity, MetricName, RowNameQuery, SampleQuery } from "../store.js";
import { timestampTz, toNumber, whereTimeRange } from "./duckdb-append.js";
import { ID_LIST } from "./duckdb-lists.js";
import { sampleTextSql } from "./duckdb-schema.js";

/** A statement with named parameters, ready for `connection.runAndReadAll(sql, values, types)`. */
export interface Statement {
  readonly sql: string;
  readonly values: Record<string, DuckDBValue>;
  readonly types: Record<string, DuckDBType>;
}

/**
 * Per entity, its latest severity event targeting the managed entity itself (no sampler): latest
 * by time, then by arrival (`id`). `data.severity` is read from the stored payload.
 */
export const LATEST_SEVERITIES_SQL = `
  SELECT entity_id, severity, at_ms FROM (
    SELECT entity_id, json_extract_string(payload, '$.severity') AS severity, epoch_ms(ts) AS at_ms,
           row_number() OVER (PARTITION BY entity_id ORDER BY ts DESC, id DESC) AS n
    FROM events
    WHERE type = 'severity' AND entity_id IS NOT NULL AND sampler IS NULL
  ) latest WHERE n = 1`;

export function entitySeverity(row: JS[]): EntitySeverity {
  const [entity, severity, at] = row;
  return {
    entityId: asEntityId(toNumber(entity ?? null) ?? 0),
    severity: String(severity ?? "UNDEFINED"),
    at: asEpochMs(toNumber(at ?? null) ?? 0),
  };
}

/** The series of one cell of one entity, and the time bounds, shared by count and page. */
function sampleWhere(query: SampleQuery): Statement & { readonly where: string } {
  const values: Record<string, DuckDBValue> = {
    entity: query.entity,
    sampler: query.cell.sampler,
    sampler_type: query.cell.samplerType,
    dataview: query.cell.dataview,
    row: query.cell.row ?? "",
    column: query.cell.column,
  };
  const types: Record<string, DuckDBType> = {
    entity: INTEGER,
    sampler: VARCHAR,
    sampler_type: VARCHAR,
    dataview: VARCHAR,
    row: VARCHAR,
    column: VARCHAR,
  };
  const where = [
    "s.entity_id = $entity",
    "s.sampler = $sampler",
    "($sampler_type IS NULL OR s.sampler_type = $sampler_type)",
    "s.dataview = $dataview",
    "s.row_name = $row",
    "s.column_name = $column",
  ];
  whereTimeRange("x.ts", query, where, values);
  return { sql: "", values, types, where: where.join(" AND ") };
}

/** How many samples {@link SampleQuery} matches, before skip and limit. */
export function countSamplesSql(query: SampleQuery): Statement {
  const { values, types, where } = sampleWhere(query);
  return {
    sql: `SELECT count(*) FROM samples x JOIN series s ON s.id = x.series_id WHERE ${where}`,
    values,
    types,
  };
}

/** One page of samples: time, then sampler type, then text, so ties have one order in every store. */
export function pageSamplesSql(query: SampleQuery): Statement {
  const { values, types, where } = sampleWhere(query);
  return {
    sql: `SELECT epoch_ms(x.ts), ${sampleTextSql("x")} AS sample_text FROM samples x JOIN series s ON s.id = x.series_id
          WHERE ${where} ORDER BY x.ts, s.sampler_type, sample_text LIMIT $limit OFFSET $skip`,
    values: { ...values, limit: query.limit, skip: query.skip },
    types: { ...types, limit: BIGINT, skip: BIGINT },
  };
}

/** The distinct cell and headline names of some entities; numeric ones only unless asked. */
export function metricNamesSql(entities: readonly number[], includeNonNumeric: boolean): Statement {
  return {
    sql: `${METRIC_NAMES_CTE("list_contains($entities, s.entity_id)")}
          SELECT w.entity_id, w.sampler, w.sampler_type, w.dataview, w.row_name = '' AS headline, w.column_name,
                 bool_or(w.is_numeric), w.dv, w.plugin, w.os_type, bool_or(w.dv_deleted OR e.is_deleted)
          FROM w JOIN entities e ON e.id = w.entity_id
          GROUP BY w.entity_id, w.sampler, w.sampler_type, w.dataview, w.row_name = '', w.column_name,
                   w.dv, w.plugin, w.os_type
          HAVING $include OR bool_or(w.is_numeric)`,
    values: { entities: listValue([...entities]), include: includeNonNumeric },
    types: { entities: ID_LIST },
  };
}

export function metricName(row: JS[]): MetricName {
  const [entity, sampler, samplerType, dataview, headline, column, numeric, dv, plugin, osType, deleted] =
    row;
  return {
    entityId: asEntityId(toNumber(entity ?? null) ?? 0),
    sampler: String(sampler),
    samplerType: String(samplerType),
    dataview: String(dataview),
    headline: headline === true,
    column: String(column),
    plugin: plugin === null || plugin === undefined ? null : String(plugin),
    osType: osType === null || osType === undefined ? null : String(osType),
    numeric: numeric === true,
    dataviewId: toNumber(dv ?? null) ?? 0,
    dataviewDeleted: deleted === true,
  };
}

/** The distinct row names a {@link RowNameQuery} selects. */
export function rowNamesSql(query: RowNameQuery): Statement {
  const values: Record<string, DuckDBValue> = {
    entities: listValue([...query.entities]),
    sampler: query.sampler,
    sampler_type: query.samplerType,
    dataview: query.dataview,
    column: query.column,
  };
  const types: Record<string, DuckDBType> = {
    entities: ID_LIST,
    sampler: VARCHAR,
    sampler_type: VARCHAR,
    dataview: VARCHAR,
    column: VARCHAR,
  };
  let since = "";
  if (query.updatedSince !== undefined) {
    since = "AND EXISTS (SELECT 1 FROM samples x WHERE x.series_id = s.id AND x.ts >= $since)";
    values.since = timestampTz(query.updatedSince);
  }
  return {
    sql: `SELECT DISTINCT s.row_name FROM series s
          WHERE list_contains($entities, s.entity_id) AND s.sampler = $sampler
            AND ($sampler_type IS NULL OR s.sampler_type = $sampler_type) AND s.dataview = $dataview
            AND ($column IS NULL OR s.column_name = $column) AND s.row_name <> '' ${since}`,
    values,
    types,
  };
}
