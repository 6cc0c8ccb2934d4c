/**
 * Metric endpoints of the hub query API (seed A "Metric query"; DESIGN 5.1, 5.3). Aggregation runs
 * in the store; this layer validates, resolves the entity filter and shapes the response.
 */
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ColumnSchema } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import { AGGREGATIONS } from "../query/aggregations.js";
import { parseCellReference, parseMetricQuery } from "../query/metric-query.js";
import { asBadRequest, checkMetricQueryShape } from "../query/metric-query-schema.js";
import { metricResponseBytes } from "../query/metric-response.js";
import type { CellSelector, Store } from "../store/store.js";
import { selectEntities } from "./entities-routes.js";
import { entityIdParam, integerParam, queryParam, timeParam } from "./query-params.js";

/** Samples `…/metrics/data` returns when `limit` is absent. */
export const DEFAULT_DATA_LIMIT = 1_000; // samples
/** The largest `limit` of `…/metrics/data`. */
export const MAX_DATA_LIMIT = 10_000; // samples
/** The largest `skip` of `…/metrics/data`: beyond it a client should narrow `from`/`to` instead. */
export const MAX_DATA_SKIP = 10_000_000; // samples

/** Registers /v0/metrics/query, /v1alpha/metrics/query, /v0/metrics/aggregations, /v0/entities/{id}/metrics/data. */
export function registerMetricRoutes(
  app: FastifyInstance,
  store: Store,
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
): void {
  const query = async (request: FastifyRequest, reply: FastifyReply) => {
    // The shape first, against the schema the OpenAPI document publishes; then the meaning.
    checkMetricQueryShape(request.body);
    const parsed = parseMetricQuery(request.body);
    const entities = await selectEntities(store, parsed.entityFilter, false);
    const batches = entities.length === 0 ? [] : await store.queryMetricBatches({ ...parsed, entities });
    // The store has answered (its errors are answered as such above); the response is written as it
    // is made, a piece at a time as the connection takes it, never held whole.
    reply.type("application/json; charset=utf-8");
    return Readable.from(metricResponseBytes(parsed, batches, columnSchema), { objectMode: false });
  };
  // The seed shows the metric query under both prefixes; both are served by one handler (DESIGN 5.1).
  resource(app, "/v0/metrics/query", { POST: query });
  resource(app, "/v1alpha/metrics/query", { POST: query });

  resource(app, "/v0/metrics/aggregations", { GET: async () => AGGREGATIONS });

  // Raw values of one concrete cell or headline (DESIGN 5.1): values as published, as strings.
  resource(app, "/v0/entities/:id/metrics/data", {
    GET: async (request) => {
      const id = entityIdParam(request);
      const path = queryParam(request, "path");
      if (path === undefined || path === "") {
        throw new VigilError("BAD_REQUEST", {
          detail:
            "path is required: one cell <sampler>/<dataview>/<row>/<column> (an empty row for a headline).",
        });
      }
      const cell = asBadRequest(() => parseCellReference(path, "path"));
      if (cell.row === null) {
        throw new VigilError("BAD_REQUEST", {
          detail: "path: {rowname} selects many rows; name one row (list them with …/metrics/rows).",
        });
      }
      const from = timeParam(request, "from");
      const to = timeParam(request, "to");
      const skip = integerParam(request, "skip", 0, MAX_DATA_SKIP);
      // 0 means "default", as for a Go client that leaves the field at its zero value.
      const limit = integerParam(request, "limit", DEFAULT_DATA_LIMIT, MAX_DATA_LIMIT) || DEFAULT_DATA_LIMIT;
      if ((await store.getEntity(id)) === undefined) throw new VigilError("ENTITY_NOT_FOUND", { id });
      const page = await store.listSamples({
        entity: id,
        cell,
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
        skip,
        limit,
      });
      return {
        totalCount: page.totalCount,
        values: page.samples.map((s) => ({ timestamp: new Date(s.at).toISOString(), value: s.text })),
      };
    },
  });
}
