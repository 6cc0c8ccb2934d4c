/**
 * The managed entities and rest-api samplers of one probe, and the dataviews pushed to them
 * (DESIGN 3.1). Addressing: a sampler path segment is `name` or `name(type)` (`parseSamplerRef`);
 * without a type the name must be unambiguous on the entity (a sampler with no type wins over typed
 * ones of that name). The setup can change while the probe runs (DESIGN 3.5: sampler changes apply
 * without a restart): `update()` keeps the dataviews of samplers that stay.
 */
import { parseSamplerRef } from "../config/sampler-ref.js";
import type { ProbeSetup, RestApiSampler, SamplerSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import type { DataviewModel } from "./dataview-model.js";

/** One rest-api sampler of the probe and the dataviews pushed to it. */
export class SamplerState {
  readonly dataviews = new Map<string, DataviewModel>();
  constructor(
    readonly managedEntity: string,
    public setup: RestApiSampler,
  ) {}
}

/** Most resolved path segments kept (a client can spell one sampler in only a few ways). */
const RESOLVED_CACHE_LIMIT = 4096; // segments

const samplerKey = (managedEntity: string, sampler: { name: string; type: string }): string =>
  JSON.stringify([managedEntity, sampler.name, sampler.type]);

/** The probe's rest-api samplers by managed entity, resolved from ingest paths. */
export class SamplerRegistry {
  private entities = new Map<string, SamplerState[]>();
  /**
   * Path segments already resolved, by managed entity then sampler segment (an ingest
   * request does not parse its sampler segment again). Emptied by `update()`; only segments that
   * resolved are kept, and at most RESOLVED_CACHE_LIMIT of them.
   */
  private resolved = new Map<string, Map<string, SamplerState>>();
  private resolvedCount = 0;

  constructor(private probe: ProbeSetup) {
    this.entities = this.build(probe, new Map());
  }

  /** The probe's name, as its setup gives it. */
  get probeName(): string {
    return this.probe.name;
  }

  /**
   * Applies a new setup of this probe: samplers that stay (same entity, name and type, still
   * rest-api) keep their dataviews and take the new settings; returns those that went, whose
   * dataviews the caller deletes.
   */
  update(probe: ProbeSetup): SamplerState[] {
    const previous = new Map<string, SamplerState>();
    for (const sampler of this.all()) previous.set(samplerKey(sampler.managedEntity, sampler.setup), sampler);
    this.entities = this.build(probe, previous);
    this.probe = probe;
    this.resolved = new Map();
    this.resolvedCount = 0;
    return [...previous.values()];
  }

  /** Finds the rest-api sampler addressed by a path, or throws the 404/400 of DESIGN 3.2. */
  resolve(managedEntity: string, samplerSegment: string): SamplerState {
    const known = this.resolved.get(managedEntity)?.get(samplerSegment);
    if (known !== undefined) return known;
    const state = this.find(managedEntity, samplerSegment);
    if (this.resolvedCount >= RESOLVED_CACHE_LIMIT) {
      this.resolved = new Map();
      this.resolvedCount = 0;
    }
    let segments = this.resolved.get(managedEntity);
    if (segments === undefined) {
      segments = new Map();
      this.resolved.set(managedEntity, segments);
    }
    segments.set(samplerSegment, state);
    this.resolvedCount += 1;
    return state;
  }

  private find(managedEntity: string, samplerSegment: string): SamplerState {
    const samplers = this.entities.get(managedEntity);
    if (samplers === undefined) {
      throw new VigilError("MANAGED_ENTITY_NOT_FOUND", { managedEntity, probe: this.probe.name });
    }
    const { name, type } = parseSamplerRef(samplerSegment);
    const named = samplers.filter((s) => s.setup.name === name);
    const exact = named.filter((s) => s.setup.type === (type ?? ""));
    if (exact.length === 1 && exact[0] !== undefined) return exact[0];
    if (type === null && named.length === 1 && named[0] !== undefined) return named[0];
    if (type === null && named.length > 1) {
      throw new VigilError("AMBIGUOUS_SAMPLER", {
        managedEntity,
        sampler: name,
        candidates: named.map((s) => `${name}(${s.setup.type})`).join(" or "),
      });
    }
    throw new VigilError("SAMPLER_NOT_FOUND", { managedEntity, sampler: samplerSegment });
  }

  /** Every sampler, for status pages and snapshots. */
  all(): SamplerState[] {
    return [...this.entities.values()].flat();
  }

  /** Builds the entity map; samplers found in `previous` are reused and removed from it. */
  private build(probe: ProbeSetup, previous: Map<string, SamplerState>): Map<string, SamplerState[]> {
    const entities = new Map<string, SamplerState[]>();
    for (const entity of probe.managedEntities) {
      const samplers = entity.samplers.filter(isRestApi).map((setup) => {
        const key = samplerKey(entity.name, setup);
        const kept = previous.get(key);
        if (kept === undefined) return new SamplerState(entity.name, setup);
        previous.delete(key);
        kept.setup = setup;
        return kept;
      });
      entities.set(entity.name, samplers);
    }
    return entities;
  }
}

function isRestApi(sampler: SamplerSetup): sampler is RestApiSampler {
  return sampler.plugin === "rest-api";
}
