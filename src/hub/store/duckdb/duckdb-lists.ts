/**
 * The list types the DuckDB store binds parameters as, named once: statements take many values of
 * one kind as one list parameter (`unnest($ids)`), never as SQL text.
 */
import { BIGINT, INTEGER, LIST, VARCHAR } from "@duckdb/node-api";

/** Names and texts. */
export const TEXT_LIST = LIST(VARCHAR);
/** Entity, series and dataview ids, and small integers. */
export const ID_LIST = LIST(INTEGER);
/** Sequence numbers. */
export const BIGINT_LIST = LIST(BIGINT);
