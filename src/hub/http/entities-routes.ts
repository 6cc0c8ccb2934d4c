/**
 * Entity endpoints of the hub query API (seed A; DESIGN 5.1). The entity filter arrives in the
 * query parameter `filter` (DESIGN 5.1) in the language of DESIGN 5.2. Query parameters are read
 * through query-params.ts, so a parameter meant once and sent twice is a 400, not a 500.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ColumnSchema } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import type { EntityId } from "../../ids.js";
import { compareCodePoints, compileFilter, FilterSyntaxError } from "../query/filter/filter.js";
import {
  legacyPath,
  type MetricMapping,
  metricList,
  type samplerPluginLookup,
} from "../query/metric-names.js";
import { parseCellReference } from "../query/metric-query.js";
import { asBadRequest } from "../query/metric-query-schema.js";
import { entitySummary, MAX_GROUP_BY, MAX_SAMPLE_ENTITIES } from "../query/summary.js";
import type { CellSelector, EntityRecord, MetricName, Store } from "../store/store.js";
import {
  booleanParam,
  entityIdParam,
  integerParam,
  queryParam,
  queryValues,
  timeParam,
} from "./query-params.js";

export { entityIdParam } from "./query-params.js";

/** Default number of ids in each `sampleEntities` list of the summary. */
const DEFAULT_SAMPLE_ENTITIES = 10; // entity ids

/** `includeDeleted=true` shows deleted entities too; anything but true/false is a 400. */
export function includeDeleted(request: FastifyRequest): boolean {
  return booleanParam(request, "includeDeleted");
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

/** An attribute's value, "" when absent; names are data (`constructor` is an ordinary name). */
function attributeOf(entity: EntityRecord, name: string): string {
  return Object.hasOwn(entity.attributes, name) ? (entity.attributes[name] ?? "") : "";
}

/**
 * The `path` parameter of the row-name endpoints: a cell reference whose row is `{rowname}`
 * (`orders/queue/{rowname}/latency`), or `<sampler>/<dataview>` for the rows of every column.
 */
function rowsPath(request: FastifyRequest): CellSelector & { readonly columnGiven: boolean } {
  const text = queryParam(request, "path");
  if (text === undefined || text === "") {
    throw new VigilError("BAD_REQUEST", {
      detail: "path is required: <sampler>/<dataview>/{rowname}/<column> or <sampler>/<dataview>.",
    });
  }
  const twoSegments = text.split("/").length === 2;
  const selector = asBadRequest(() => parseCellReference(twoSegments ? `${text}/{rowname}/-` : text, "path"));
  if (selector.row !== null) {
    throw new VigilError("BAD_REQUEST", {
      detail: `path: the row segment must be {rowname} to list row names, not '${selector.row}'.`,
    });
  }
  return { ...selector, columnGiven: !twoSegments };
}

export interface EntityRouteOptions {
  readonly columnSchema: (selector: CellSelector) => ColumnSchema | undefined;
  readonly samplerPlugin: ReturnType<typeof samplerPluginLookup>;
}

/**
 * Registers /v0/entities, /v0/entities/summary, /v0/entities/attributes[/{name}],
 * /v0/entities/metrics, /v0/entities/metrics/rows, /v0/entities/{id} and
 * /v0/entities/{id}/metrics[/rows].
 */
export function registerEntityRoutes(app: FastifyInstance, store: Store, options: EntityRouteOptions): void {
  resource(app, "/v0/entities", {
    GET: async (request) => {
      const entities = await selectEntities(store, queryParam(request, "filter"), includeDeleted(request));
      return entities.map((e) => ({ id: e.id, attributes: e.attributes, isDeleted: e.isDeleted }));
    },
  });

  resource(app, "/v0/entities/summary", {
    GET: async (request) => {
      const groupBy = queryValues(request, "groupBy");
      if (groupBy.length > MAX_GROUP_BY) {
        throw new VigilError("BAD_REQUEST", {
          detail: `groupBy is given ${groupBy.length} times; at most ${MAX_GROUP_BY} attributes.`,
        });
      }
      const twin = groupBy.findIndex((name, i) => groupBy.indexOf(name) !== i);
      if (twin >= 0) {
        throw new VigilError("BAD_REQUEST", { detail: `groupBy names '${groupBy[twin]}' twice.` });
      }
      if (groupBy.includes(""))
        throw new VigilError("BAD_REQUEST", { detail: "groupBy names an empty attribute." });
      const samples = integerParam(
        request,
        // The parameter's name in the seed's hub API (cordial's gwhub sends it as `nrSamples`).
        "nrSamples",
        DEFAULT_SAMPLE_ENTITIES,
        MAX_SAMPLE_ENTITIES,
      );
      const entities = await selectEntities(store, queryParam(request, "filter"), includeDeleted(request));
      const severities = new Map<EntityId, string>();
      for (const s of await store.latestSeverities()) severities.set(s.entityId, s.severity);
      return entitySummary(entities, groupBy, (e) => severities.get(e.id), attributeOf, samples);
    },
  });

  // The entity filter applies here too (DESIGN 5.1; cordial's gwhub sends `filter`): the names and
  // values of the attributes of the entities it selects.
  resource(app, "/v0/entities/attributes", {
    GET: async (request) => {
      const entities = await selectEntities(store, queryParam(request, "filter"), includeDeleted(request));
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
      const entities = await selectEntities(store, queryParam(request, "filter"), includeDeleted(request));
      const values = new Set<string>();
      for (const entity of entities) {
        const value = attributeOf(entity, name);
        if (value !== "") values.add(value);
      }
      return [...values].sort(compareCodePoints);
    },
  });

  /** The metrics of some entities, numeric ones unless asked, of one plug-in when `plugin` is given. */
  const metricsOf = async (request: FastifyRequest, entities: readonly EntityRecord[]) => {
    const plugin = queryParam(request, "plugin");
    const names = await store.listMetricNames({
      entities: entities.map((e) => e.id),
      includeNonNumeric: booleanParam(request, "includeNonNumeric"),
    });
    const byId = new Map(entities.map((e) => [e.id, e]));
    const mappingOf = booleanParam(request, "includeMappings")
      ? (name: MetricName): MetricMapping | undefined => {
          const entity = byId.get(name.entityId);
          if (entity === undefined) return undefined;
          return {
            legacyPath: legacyPath({
              gateway: attributeOf(entity, "svc.gateway"),
              probe: attributeOf(entity, "svc.probe"),
              managedEntity: attributeOf(entity, "svc.name"),
              ...name,
            }),
            dataviewId: name.dataviewId,
            isDeleted: name.dataviewDeleted,
          };
        }
      : undefined;
    if (plugin === undefined || plugin === "")
      return metricList(names, options.columnSchema, undefined, mappingOf);
    // The plug-in the messages carried (kept per dataview by the store); the setup's only when the
    // store does not know it (data stored before it kept plug-ins).
    const keep = (name: MetricName): boolean => {
      if (name.plugin !== null) return name.plugin === plugin;
      const entity = byId.get(name.entityId);
      if (entity === undefined) return false;
      const found = options.samplerPlugin(
        attributeOf(entity, "svc.probe"),
        attributeOf(entity, "svc.name"),
        name.sampler,
        name.samplerType,
      );
      return found === plugin;
    };
    return metricList(names, options.columnSchema, keep, mappingOf);
  };

  resource(app, "/v0/entities/metrics", {
    GET: async (request) => {
      const entities = await selectEntities(store, queryParam(request, "filter"), includeDeleted(request));
      return metricsOf(request, entities);
    },
  });

  /** Row names of `path` on some entities, sorted by code point. */
  const rowsOf = async (request: FastifyRequest, entities: readonly EntityRecord[]) => {
    const path = rowsPath(request);
    const since = timeParam(request, "updatedSince");
    const rows = await store.listRowNames({
      entities: entities.map((e) => e.id),
      sampler: path.sampler,
      samplerType: path.samplerType,
      dataview: path.dataview,
      column: path.columnGiven ? path.column : null,
      ...(since === undefined ? {} : { updatedSince: since }),
    });
    return rows.sort(compareCodePoints);
  };

  resource(app, "/v0/entities/metrics/rows", {
    GET: async (request) => {
      const entities = await selectEntities(store, queryParam(request, "filter"), includeDeleted(request));
      return rowsOf(request, entities);
    },
  });

  /** The entity of the `{id}` path parameter; 404 when no entity has that id. */
  const entityOf = async (request: FastifyRequest): Promise<EntityRecord> => {
    const id = entityIdParam(request);
    const entity = await store.getEntity(id);
    if (entity === undefined) throw new VigilError("ENTITY_NOT_FOUND", { id });
    return entity;
  };

  resource(app, "/v0/entities/:id", {
    GET: async (request) => {
      const entity = await entityOf(request);
      return { id: entity.id, attributes: entity.attributes, isDeleted: entity.isDeleted };
    },
  });

  resource(app, "/v0/entities/:id/metrics", {
    GET: async (request) => metricsOf(request, [await entityOf(request)]),
  });

  resource(app, "/v0/entities/:id/metrics/rows", {
    GET: async (request) => rowsOf(request, [await entityOf(request)]),
  });
}
