/**
 * Event history in the DuckDB store (DESIGN 5.1 recordsQuery): rows of the `events` table written by
 * the appender, read back by {@link listEventsSql} and {@link eventRecord}.
 */
import {
  BIGINT,
  type DuckDBType,
  type DuckDBValue,
  INTEGER,
  type JS,
  listValue,
  TIMESTAMPTZ,
  VARCHAR,
} from "@duckdb/node-api";
import { asEntityId, asEpochMs, type EntityId } from "../../../ids.js";
import type { EventTarget, MetricsFilter, Operation } from "../../../messages/types.js";
import type { EventInput, EventQuery, EventRecord, EventType } from "../store.js";
import { timestampTz, toNumber, whereTimeRange } from "./duckdb-append.js";
import { ID_LIST, TEXT_LIST } from "./duckdb-lists.js";

/** Column types of `events`, in table order (payload and filter go in as JSON text). */
export const EVENT_COLUMN_TYPES: readonly DuckDBType[] = [
  BIGINT,
  TIMESTAMPTZ,
  VARCHAR,
  VARCHAR,
  INTEGER,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
  VARCHAR,
];

/** The `events` row of one event, `id` drawn from `event_id_seq`. */
export function eventRow(id: number, event: EventInput, entity: EntityId | null): DuckDBValue[] {
  const t = event.target;
  return [
    BigInt(id),
    timestampTz(event.at),
    event.type,
    event.operation,
    entity,
    t.gateway,
    t.probe ?? null,
    t.managedEntity ?? null,
    t.type ?? null,
    t.sampler ?? null,
    t.dataview ?? null,
    t.row ?? null,
    t.column ?? null,
    t.filter === undefined ? null : JSON.stringify(t.filter),
    JSON.stringify(event.payload),
  ];
}

/** The statement and parameters of one {@link EventQuery}. */
export function listEventsSql(query: EventQuery): {
  sql: string;
  values: Record<string, DuckDBValue>;
  types: Record<string, DuckDBType>;
} {
  const where: string[] = [];
  const values: Record<string, DuckDBValue> = { limit: query.limit };
  const types: Record<string, DuckDBType> = { limit: BIGINT };
  whereTimeRange("ts", query, where, values);
  if (query.entity !== undefined) {
    where.push("entity_id = $entity");
    values.entity = query.entity;
    types.entity = INTEGER;
  }
  if (query.types !== undefined) {
    where.push("list_contains($types, type)");
    values.types = listValue([...query.types]);
    types.types = TEXT_LIST;
  }
  if (query.entities !== undefined) {
    where.push("list_contains($entities, entity_id)");
    values.entities = listValue([...query.entities]);
    types.entities = ID_LIST;
  }
  if (query.cells !== undefined) {
    // A row NULL in the list is the {rowname} wildcard, "" a headline (whose target has no row).
    where.push(`EXISTS (
      SELECT 1 FROM (SELECT unnest($c_sampler) AS s, unnest($c_type) AS t, unnest($c_dataview) AS d,
                            unnest($c_row) AS r, unnest($c_column) AS c) sel
      WHERE events.sampler = sel.s AND events.dataview = sel.d AND events.column_name = sel.c
        AND (sel.t IS NULL OR events.target_type = sel.t)
        AND CASE WHEN sel.r IS NULL THEN events.row_name IS NOT NULL
                 WHEN sel.r = '' THEN events.row_name IS NULL
                 ELSE events.row_name = sel.r END)`);
    const cells = query.cells;
    const list = (pick: (c: (typeof cells)[number]) => string | null) => listValue(cells.map(pick));
    values.c_sampler = list((c) => c.sampler);
    values.c_type = list((c) => c.samplerType);
    values.c_dataview = list((c) => c.dataview);
    values.c_row = list((c) => c.row);
    values.c_column = list((c) => c.column);
    for (const name of ["c_sampler", "c_type", "c_dataview", "c_row", "c_column"]) types[name] = TEXT_LIST;
  }
  values.skip = query.skip ?? 0;
  types.skip = BIGINT;
  const sql = `SELECT epoch_ms(ts), type, operation, entity_id, gateway, probe, managed_entity,
      target_type, sampler, dataview, row_name, column_name, CAST(target_filter AS VARCHAR),
      CAST(payload AS VARCHAR)
    FROM events ${where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`}
    ORDER BY ts, id LIMIT $limit OFFSET $skip`;
  return { sql, values, types };
}

/** An {@link EventRecord} from a row of {@link listEventsSql}. */
export function eventRecord(row: JS[]): EventRecord {
  const [at, type, operation, entity, gateway, ...rest] = row;
  const [probe, managedEntity, targetType, sampler, dataview, rowName, column, filter, payload] = rest;
  const target: EventTarget = { gateway: String(gateway) };
  const optional: [keyof EventTarget, JS | undefined][] = [
    ["probe", probe],
    ["managedEntity", managedEntity],
    ["type", targetType],
    ["sampler", sampler],
    ["dataview", dataview],
    ["row", rowName],
    ["column", column],
  ];
  for (const [name, value] of optional) {
    if (value !== null && value !== undefined && name !== "filter") target[name] = String(value);
  }
  if (filter !== null && filter !== undefined) target.filter = JSON.parse(String(filter)) as MetricsFilter;
  const entityId = toNumber(entity ?? null);
  return {
    type: String(type) as EventType,
    operation: String(operation) as Operation,
    at: asEpochMs(toNumber(at ?? null) ?? 0),
    entityId: entityId === null ? null : asEntityId(entityId),
    target,
    payload: JSON.parse(String(payload)) as Record<string, unknown>,
  };
}
