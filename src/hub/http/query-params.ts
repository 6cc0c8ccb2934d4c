/**
 * Query-string and path parameters of the hub query API, read strictly: Fastify's query parser
 * turns a repeated key into an array, so a parameter meant once (`filter`, `path`, `from`…) given
 * twice is a 400 naming it, never a value of the wrong type further down (`filter` twice
 * was a 500). Parameter names are data: they are looked up with `Object.hasOwn`, so `constructor`
 * or `__proto__` in a query string is an ordinary unknown name.
 */
import type { FastifyRequest } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { asEntityId, asEpochMs, type EntityId, type EpochMs } from "../../ids.js";
import { parseDateTime } from "../query/metric-query.js";

/** The largest entity id: ids are 32-bit signed integers in both stores (DESIGN 5.1). */
export const MAX_ENTITY_ID = 2_147_483_647;

type RawQuery = Readonly<Record<string, unknown>>;

function rawQuery(request: FastifyRequest): RawQuery {
  const query = request.query;
  return typeof query === "object" && query !== null ? (query as RawQuery) : {};
}

function bad(detail: string): VigilError {
  return new VigilError("BAD_REQUEST", { detail });
}

/** The values of a parameter as sent: none, one, or several when repeated. */
export function queryValues(request: FastifyRequest, name: string): string[] {
  const query = rawQuery(request);
  if (!Object.hasOwn(query, name)) return [];
  const value = query[name];
  if (Array.isArray(value)) return value.map(String);
  return value === undefined ? [] : [String(value)];
}

/** A parameter that may be given at most once; a repeat is a 400 naming it. */
export function queryParam(request: FastifyRequest, name: string): string | undefined {
  const values = queryValues(request, name);
  if (values.length > 1) {
    throw bad(`The query parameter '${name}' is given ${values.length} times; give it once.`);
  }
  return values[0];
}

/** A `true`/`false` parameter, `fallback` when absent or empty; anything else is a 400. */
export function booleanParam(request: FastifyRequest, name: string, fallback = false): boolean {
  const value = queryParam(request, name);
  if (value === undefined || value === "") return fallback;
  if (value === "true") return true;
  if (value === "false") return false;
  throw bad(`${name} must be 'true' or 'false', not '${shorten(value)}'.`);
}

/** A non-negative integer parameter within [0, max], `fallback` when absent or empty. */
export function integerParam(request: FastifyRequest, name: string, fallback: number, max: number): number {
  const value = queryParam(request, name);
  if (value === undefined || value === "") return fallback;
  if (!/^\d{1,16}$/.test(value) || Number(value) > max) {
    throw bad(`${name} must be an integer from 0 to ${max}, not '${shorten(value)}'.`);
  }
  return Number(value);
}

/** An ISO 8601 date-time parameter with an offset (as in the metric query), or undefined. */
export function timeParam(request: FastifyRequest, name: string): EpochMs | undefined {
  const value = queryParam(request, name);
  if (value === undefined || value === "") return undefined;
  try {
    return asEpochMs(parseDateTime(value, name));
  } catch (error) {
    if (error instanceof VigilError) throw bad(error.body);
    throw error;
  }
}

/**
 * The `{id}` path parameter as an entity id: decimal digits naming 1 … {@link MAX_ENTITY_ID}.
 * Anything else (a sign, a fraction, `2147483648`) is a 400 that says so; an id in range that no
 * entity has is the caller's 404.
 */
export function entityIdParam(request: FastifyRequest): EntityId {
  const text = String((request.params as { id?: unknown }).id ?? "");
  if (!/^\d{1,10}$/.test(text) || Number(text) < 1 || Number(text) > MAX_ENTITY_ID) {
    throw bad(`Entity id must be an integer from 1 to ${MAX_ENTITY_ID}, not '${shorten(text)}'.`);
  }
  return asEntityId(Number(text));
}

function shorten(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}
