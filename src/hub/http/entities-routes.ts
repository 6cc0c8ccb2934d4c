/**
 * Entity endpoints of the hub query API (seed A; DESIGN 5.1). The entity filter arrives in the
 * query parameter `filter` (DESIGN 5.1) in the language of DESIGN 5.2.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import { asEntityId, type EntityId } from "../../ids.js";
import { compareCodePoints, compileFilter, FilterSyntaxError } from "../query/filter/filter.js";
import type { EntityRecord, Store } from "../store/store.js";

interface ListQuery {
  filter?: string;
  includeDeleted?: string;
}

/** `includeDeleted=true` shows deleted entities too; anything but true/false is a 400. */
export function includeDeleted(query: ListQuery): boolean {
  const value = query.includeDeleted;
  if (value === undefined || value === "false") return false;
  if (value === "true") return true;
  throw new VigilError("BAD_REQUEST", {
    detail: `includeDeleted must be 'true' or 'false', not '${value}'.`,
  });
}

/** The entities matching an entity filter text (blank: all), with the filter's syntax errors as 400. */
export async function selectEntities(
  store: Store,
  filter: string | undefined,
  withDeleted: boolean,
): Promise<EntityRecord[]> {
  let matches: (attributes: Readonly<Record<string, string>>) => boolean;
  try {
    matches = compileFilter(filter);
  } catch (error) {
    if (error instanceof FilterSyntaxError) {
      throw new VigilError("INVALID_FILTER", { detail: error.message }, { cause: error });
    }
    throw error;
  }
  const entities = await store.listEntities({ includeDeleted: withDeleted });
  return entities.filter((entity) => matches(entity.attributes));
}

/** The `{id}` path parameter as an entity id; anything but a positive integer is a 400. */
export function entityIdParam(request: FastifyRequest): EntityId {
  const text = (request.params as { id: string }).id;
  if (!/^\d{1,15}$/.test(text)) {
    throw new VigilError("BAD_REQUEST", { detail: `Entity id must be a positive integer, not '${text}'.` });
  }
  return asEntityId(Number(text));
}

/** Registers /v0/entities, /v0/entities/{id}, /v0/entities/attributes[/{name}], /v0/entities/{id}/metrics. */
export function registerEntityRoutes(app: FastifyInstance, store: Store): void {
  resource(app, "/v0/entities", {
    GET: async (request) => {
      const query = request.query as ListQuery;
      const entities = await selectEntities(store, query.filter, includeDeleted(query));
      return entities.map((e) => ({ id: e.id, attributes: e.attributes, isDeleted: e.isDeleted }));
    },
  });

  resource(app, "/v0/entities/attributes", {
    GET: async (request) => {
      const entities = await store.listEntities({
        includeDeleted: includeDeleted(request.query as ListQuery),
      });
      const values = new Map<string, Set<string>>();
      for (const entity of entities) {
        for (const [name, value] of Object.entries(entity.attributes)) {
          const set = values.get(name) ?? new Set<string>();
          set.add(value);
          values.set(name, set);
        }
      }
      return [...values.entries()]
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([name, set]) => ({ name, valueCount: set.size }));
    },
  });

  resource(app, "/v0/entities/attributes/:name", {
    GET: async (request) => {
      const { name } = request.params as { name: string };
      const entities = await store.listEntities({
        includeDeleted: includeDeleted(request.query as ListQuery),
      });
      const values = new Set<string>();
      for (const entity of entities) {
        const value = entity.attributes[name];
        if (value !== undefined && value !== "") values.add(value);
      }
      return [...values].sort(compareCodePoints);
    },
  });

  resource(app, "/v0/entities/:id", {
    GET: async (request) => {
      const id = entityIdParam(request);
      const entity = await store.getEntity(id);
      if (entity === undefined) throw new VigilError("ENTITY_NOT_FOUND", { id });
      return { id: entity.id, attributes: entity.attributes, isDeleted: entity.isDeleted };
    },
  });
}
