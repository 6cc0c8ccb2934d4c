/**
 * Event history in the PostgreSQL store (DESIGN 5.1 recordsQuery): one multi-row insert per write
 * (events are few next to samples), read back in time order and, within one instant, in arrival
 * order (the identity `id`, assigned in the order of the insert's rows).
 */
import type { Sql, TransactionSql } from "postgres";
import { asEntityId, asEpochMs, type EntityId } from "../../../ids.js";
import type { EventTarget, MetricsFilter, Operation } from "../../../messages/types.js";
import type { EventInput, EventQuery, EventRecord, EventType } from "../store.js";

/** The largest id an `integer` column holds; a larger entity id names no entity. */
export const MAX_INT4 = 2_147_483_647;

/** Inserts `events`, `entities[i]` the entity id of `events[i]` (or null). */
export async function insertEvents(
  sql: TransactionSql,
  events: readonly EventInput[],
  entities: readonly (EntityId | null)[],
): Promise<void> {
  if (events.length === 0) return;
  const col = (pick: (e: EventInput) => string | null | undefined): (string | null)[] =>
    events.map((e) => pick(e) ?? null);
  // Nullable text columns travel as text[] with a separate "present" mask (1/0): the client
  // sends neither a SQL NULL inside an array parameter nor boolean arrays.
  const texts = [
    col((e) => e.type),
    col((e) => e.operation),
    col((e) => e.target.gateway),
    col((e) => e.target.probe),
    col((e) => e.target.managedEntity),
    col((e) => e.target.type),
    col((e) => e.target.sampler),
    col((e) => e.target.dataview),
    col((e) => e.target.row),
    col((e) => e.target.column),
    col((e) => (e.target.filter === undefined ? null : JSON.stringify(e.target.filter))),
    col((e) => JSON.stringify(e.payload)),
  ];
  const values = texts.map((c) => c.map((v) => v ?? ""));
  const present = texts.map((c) => c.map((v) => (v === null ? 0 : 1)));
  const v = (i: number) => values[i] as string[];
  const p = (i: number) => present[i] as number[];
  await sql`
    INSERT INTO events (at_ms, type, operation, entity_id, gateway, probe, managed_entity, target_type,
                        sampler, dataview, row_name, column_name, target_filter, payload)
    SELECT at_ms, type, operation, NULLIF(entity_id, 0), gateway,
           CASE WHEN p3 = 1 THEN probe END, CASE WHEN p4 = 1 THEN managed_entity END,
           CASE WHEN p5 = 1 THEN target_type END, CASE WHEN p6 = 1 THEN sampler END,
           CASE WHEN p7 = 1 THEN dataview END, CASE WHEN p8 = 1 THEN row_name END,
           CASE WHEN p9 = 1 THEN column_name END, CASE WHEN p10 = 1 THEN target_filter::json END, payload::json
    FROM unnest(${events.map((e) => e.at)}::bigint[], ${v(0)}::text[], ${v(1)}::text[],
                ${entities.map((id) => id ?? 0)}::int[], ${v(2)}::text[], ${v(3)}::text[], ${v(4)}::text[],
                ${v(5)}::text[], ${v(6)}::text[], ${v(7)}::text[], ${v(8)}::text[], ${v(9)}::text[],
                ${v(10)}::text[], ${v(11)}::text[], ${p(3)}::int[], ${p(4)}::int[], ${p(5)}::int[],
                ${p(6)}::int[], ${p(7)}::int[], ${p(8)}::int[], ${p(9)}::int[], ${p(10)}::int[])
      WITH ORDINALITY AS e(at_ms, type, operation, entity_id, gateway, probe, managed_entity, target_type,
                           sampler, dataview, row_name, column_name, target_filter, payload,
                           p3, p4, p5, p6, p7, p8, p9, p10, ord)
    ORDER BY ord`;
}

interface EventRow {
  at_ms: string;
  type: string;
  operation: string;
  entity_id: number | null;
  gateway: string;
  probe: string | null;
  managed_entity: string | null;
  target_type: string | null;
  sampler: string | null;
  dataview: string | null;
  row_name: string | null;
  column_name: string | null;
  target_filter: string | null;
  payload: string;
}

/** The events `query` selects, earliest first, then by arrival. */
export async function listEvents(sql: Sql, query: EventQuery): Promise<EventRecord[]> {
  if (query.entity !== undefined && (query.entity < 1 || query.entity > MAX_INT4)) return [];
  const where = [sql`TRUE`];
  if (query.from !== undefined) where.push(sql`at_ms >= ${query.from}`);
  if (query.to !== undefined) where.push(sql`at_ms < ${query.to}`);
  if (query.entity !== undefined) where.push(sql`entity_id = ${query.entity}`);
  if (query.types !== undefined) where.push(sql`type = ANY(${[...query.types]}::text[])`);
  if (query.entities !== undefined) {
    const ids = query.entities.filter((id) => Number.isSafeInteger(id) && id >= 1 && id <= MAX_INT4);
    where.push(sql`entity_id = ANY(${ids}::int[])`);
  }
  if (query.cells !== undefined) {
    // Row: "any" is the {rowname} wildcard (a row, not a headline), "headline" a target without row.
    const cells = query.cells;
    const rowKind = cells.map((c) => (c.row === null ? "any" : c.row === "" ? "headline" : "row"));
    where.push(sql`EXISTS (
      SELECT 1 FROM unnest(${cells.map((c) => c.sampler)}::text[], ${cells.map((c) => c.samplerType ?? "")}::text[],
                           ${cells.map((c) => (c.samplerType === null ? 1 : 0))}::int[],
                           ${cells.map((c) => c.dataview)}::text[], ${cells.map((c) => c.row ?? "")}::text[],
                           ${rowKind}::text[], ${cells.map((c) => c.column)}::text[])
        AS sel(s, t, any_type, d, r, kind, c)
      WHERE events.sampler = sel.s AND events.dataview = sel.d AND events.column_name = sel.c
        AND (sel.any_type = 1 OR events.target_type = sel.t)
        AND CASE sel.kind WHEN 'any' THEN events.row_name IS NOT NULL
                          WHEN 'headline' THEN events.row_name IS NULL
                          ELSE events.row_name = sel.r END)`);
  }
  const skip = query.skip ?? 0;
  if (!Number.isSafeInteger(skip) || skip < 0) {
    throw new RangeError(`listEvents skip must be a non-negative integer, got ${skip}`);
  }
  const condition = where.reduce((a, b) => sql`${a} AND ${b}`);
  const rows = await sql<EventRow[]>`
    SELECT at_ms, type, operation, entity_id, gateway, probe, managed_entity, target_type, sampler,
           dataview, row_name, column_name, target_filter::text AS target_filter, payload::text AS payload
    FROM events WHERE ${condition} ORDER BY at_ms, id LIMIT ${query.limit} OFFSET ${skip}`;
  return rows.map(eventRecord);
}

function eventRecord(r: EventRow): EventRecord {
  const target: EventTarget = { gateway: r.gateway };
  const optional: [keyof EventTarget, string | null][] = [
    ["probe", r.probe],
    ["managedEntity", r.managed_entity],
    ["type", r.target_type],
    ["sampler", r.sampler],
    ["dataview", r.dataview],
    ["row", r.row_name],
    ["column", r.column_name],
  ];
  for (const [name, value] of optional) {
    if (value !== null && name !== "filter") target[name] = value;
  }
  if (r.target_filter !== null) target.filter = JSON.parse(r.target_filter) as MetricsFilter;
  return {
    type: r.type as EventType,
    operation: r.operation as Operation,
    at: asEpochMs(Number(r.at_ms)),
    entityId: r.entity_id === null ? null : asEntityId(r.entity_id),
    target,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
  };
}
