/**
 * Metric endpoints of the hub query API (seed A "Metric query"; DESIGN 5.1, 5.3). Aggregation runs
 * in the store; this layer validates, resolves the entity filter and shapes the response.
 */
import type { FastifyInstance } from "fastify";
import type { ColumnSchema } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import { AGGREGATIONS } from "../query/aggregations.js";
import { compareCodePoints } from "../query/filter/filter.js";
import { parseMetricQuery } from "../query/metric-query.js";
import { buildMetricResponse } from "../query/metric-response.js";
import type { CellSelector, Store } from "../store/store.js";
import { entityIdParam, selectEntities } from "./entities-routes.js";

/** `/`, `{` and `}` inside a name are escaped so the reference splits back into its segments. */
const escapeSegment = (name: string): string => name.replaceAll("%", "%25").replaceAll("/", "%2F");

/** Registers /v0/metrics/query, /v1alpha/metrics/query, /v0/metrics/aggregations, /v0/entities/{id}/metrics. */
export function registerMetricRoutes(
  app: FastifyInstance,
  store: Store,
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
): void {
  const query = async (request: { body: unknown }) => {
    const parsed = parseMetricQuery(request.body);
    const entities = await selectEntities(store, parsed.entityFilter, false);
    const rows = entities.length === 0 ? [] : await store.queryMetrics({ ...parsed, entities });
    return buildMetricResponse(parsed, rows, columnSchema);
  };
  // The seed shows the metric query under both prefixes; both are served by one handler (DESIGN 5.1).
  resource(app, "/v0/metrics/query", { POST: query });
  resource(app, "/v1alpha/metrics/query", { POST: query });

  resource(app, "/v0/metrics/aggregations", { GET: async () => AGGREGATIONS });

  resource(app, "/v0/entities/:id/metrics", {
    GET: async (request) => {
      const id = entityIdParam(request);
      if ((await store.getEntity(id)) === undefined) throw new VigilError("ENTITY_NOT_FOUND", { id });
      const seen = new Map<string, { name: string; type: string; unit: string }>();
      for (const { series } of await store.listSeries(id)) {
        const sampler =
          series.samplerType === "" ? series.sampler : `${series.sampler}(${series.samplerType})`;
        const row = series.row === "" ? "" : "{rowname}";
        const name = [sampler, series.dataview, row, series.column].map(escapeSegment).join("/");
        if (seen.has(name)) continue;
        const schema = columnSchema({
          sampler: series.sampler,
          samplerType: series.samplerType,
          dataview: series.dataview,
          row: series.row === "" ? "" : null,
          column: series.column,
        });
        seen.set(name, { name, type: schema?.type ?? "float64", unit: schema?.unit ?? "none" });
      }
      return [...seen.values()].sort((a, b) => compareCodePoints(a.name, b.name));
    },
  });
}
