/**
 * `GET /v1/managedEntity/<me>/sampler/<sampler>` (DESIGN 3.1): a rest-api sampler with its custom
 * dataviews and its streams, or an fkm sampler with its keywords (DESIGN 3.4).
 */
import type { FastifyInstance } from "fastify";
import { resource } from "../../http/routes.js";
import type { IngestPathNames } from "../ingest-limits.js";
import type { SamplerRegistry, SamplerState } from "../sampler-registry.js";
import type { ProbeStreams } from "../streams/probe-streams.js";
import { samplerStreamsPart } from "../streams/stream-routes.js";

/** Sampling info of rest-api samplers (seed B): options inactive, this status text. */
export const SAMPLING_STATUS_TEXT = "Sampling dependent on 3rd Party Application";

/** What the sampler route needs from the probe. */
export interface SamplerRouteDeps {
  readonly registry: SamplerRegistry;
  readonly streams: ProbeStreams;
  /** Refuses a name of the path beyond `limits.nameBytes` (ingest-limits.ts). */
  readonly checkNames: (params: IngestPathNames) => void;
}

/** Registers GET on a sampler path. */
export function registerSamplerRoutes(app: FastifyInstance, deps: SamplerRouteDeps): void {
  const { registry, streams } = deps;
  resource(app, "/v1/managedEntity/:me/sampler/:sampler", {
    GET: async (request) => {
      const params = request.params as { me: string; sampler: string };
      deps.checkNames(params);
      const fkm = streams.fkmView(params.me, params.sampler);
      if (fkm !== undefined) {
        const { sampler: name, type, ...state } = fkm;
        return {
          managedEntity: params.me,
          sampler: name,
          type,
          plugin: "fkm",
          samplingInfo: { samplingOptionsActive: true, status: state.samplingStatus },
          dataviews: [name],
          ...state,
        };
      }
      const sampler = registry.resolve(params.me, params.sampler);
      return {
        ...samplerView(sampler),
        ...samplerStreamsPart(streams, sampler),
      };
    },
  });
}

/** What GET on a sampler path shows of the sampler itself and its dataviews (DESIGN 3.1). */
export interface SamplerView {
  readonly managedEntity: string;
  readonly sampler: string;
  readonly type: string;
  readonly plugin: string;
  readonly samplingInfo: { readonly samplingOptionsActive: boolean; readonly status: string };
  /** The names of its custom dataviews, sorted. */
  readonly dataviews: readonly string[];
}

/**
 * The sampler part of GET on a sampler path (DESIGN 3.1): sampling options inactive with the seed's
 * status text, and its dataviews. The route adds the streams part beside it.
 */
export function samplerView(sampler: SamplerState): SamplerView {
  return {
    managedEntity: sampler.managedEntity,
    sampler: sampler.setup.name,
    type: sampler.setup.type,
    plugin: sampler.setup.plugin,
    samplingInfo: { samplingOptionsActive: false, status: SAMPLING_STATUS_TEXT },
    dataviews: [...sampler.dataviews.keys()].sort(),
  };
}
