/**
 * `POST /v0/events/recordsQuery` (DESIGN 5.1): stored severity, snooze and user-assignment history
 * of the entities a filter selects, paged with skip/limit over the whole ordered list (oldest
 * first, then by arrival) and grouped by entity id. docs/hub-api.md documents the shape.
 */
import type { FastifyInstance } from "fastify";
import { resource } from "../../http/routes.js";
import { parseRecordsQuery, recordsResponse } from "../query/records-query.js";
import type { Store } from "../store/store.js";
import { selectEntities } from "./entities-routes.js";

/** Registers /v0/events/recordsQuery. */
export function registerEventRoutes(app: FastifyInstance, store: Store): void {
  resource(app, "/v0/events/recordsQuery", {
    POST: async (request) => {
      const query = parseRecordsQuery(request.body);
      const entities = await selectEntities(store, query.entityFilter, false);
      if (entities.length === 0) return {};
      const events = await store.listEvents({
        from: query.from,
        to: query.to,
        entities: entities.map((e) => e.id),
        ...(query.types === undefined ? {} : { types: query.types }),
        ...(query.cells === undefined ? {} : { cells: query.cells }),
        skip: query.skip,
        limit: query.limit,
      });
      return recordsResponse(events, query.zone);
    },
  });
}
