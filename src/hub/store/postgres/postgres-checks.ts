/**
 * What PostgreSQL cannot hold beyond data-checks.ts: a `text` value cannot contain U+0000 (the
 * server refuses it with "invalid byte sequence"), where DuckDB stores it. JSON columns are fine:
 * `JSON.stringify` writes it as the escape `\u0000`, which the `json` type keeps as text. Refused
 * before anything is written, as a {@link StoreDataError}, so the transaction stays usable.
 */
import type { EntityKey, EventInput, IngestBatch, SeriesKey } from "../store.js";
import { StoreDataError } from "../store.js";

/** Refuses text holding U+0000; `what` names the field in the message. */
export function checkNoNul(what: string, text: string): void {
  const index = text.indexOf("\u0000");
  if (index !== -1) {
    throw new StoreDataError(
      `${what} holds U+0000 at offset ${index}, which the PostgreSQL store cannot hold in text`,
    );
  }
}

const entityNames = (k: EntityKey): void => {
  checkNoNul("gateway name", k.gateway);
  checkNoNul("probe name", k.probe);
  checkNoNul("managed entity name", k.managedEntity);
};

const seriesNames = (s: SeriesKey): void => {
  checkNoNul("sampler name", s.sampler);
  checkNoNul("sampler type", s.samplerType);
  checkNoNul("dataview name", s.dataview);
  checkNoNul("row name", s.row);
  checkNoNul("column name", s.column);
};

function eventNames(e: EventInput): void {
  if (e.entity !== null) entityNames(e.entity);
  for (const [name, value] of Object.entries(e.target)) {
    if (typeof value === "string") checkNoNul(`event target ${name}`, value);
  }
}

/**
 * Checks every text column value of `batch` (not attributes and payloads, which are JSON). Series
 * names are checked once per distinct series object, so the per-sample cost stays one comparison.
 */
export function checkBatchText(batch: IngestBatch): void {
  for (const u of batch.entities) entityNames(u.key);
  let lastEntity: EntityKey | undefined;
  let lastSeries: SeriesKey | undefined;
  for (const s of batch.samples) {
    if (s.entity !== lastEntity) {
      entityNames(s.entity);
      lastEntity = s.entity;
    }
    if (s.series !== lastSeries) {
      seriesNames(s.series);
      lastSeries = s.series;
    }
    if (s.text.includes("\u0000")) checkNoNul("sample text", s.text);
  }
  for (const e of batch.events ?? []) eventNames(e);
}
