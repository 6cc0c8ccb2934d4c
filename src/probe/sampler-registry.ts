/**
 * The managed entities and rest-api samplers of one probe, and the dataviews pushed to them
 * (DESIGN 3.1). Addressing: a sampler path segment is `name` or `name(type)`; without a type the
 * name must be unambiguous on the entity (a sampler with no type wins over typed ones of that name).
 */
import type { ProbeSetup, RestApiSampler, SamplerSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import type { DataviewModel } from "./dataview-model.js";

export class SamplerState {
  readonly dataviews = new Map<string, DataviewModel>();
  constructor(
    readonly managedEntity: string,
    public setup: RestApiSampler,
  ) {}
}

/** Splits `name(type)` into its parts; a segment without parentheses has type null (any). */
export function parseSamplerSegment(segment: string): { name: string; type: string | null } {
  const match = /^(.*)\(([^()]*)\)$/s.exec(segment);
  return match === null ? { name: segment, type: null } : { name: match[1] ?? "", type: match[2] ?? "" };
}

export class SamplerRegistry {
  private readonly entities = new Map<string, SamplerState[]>();

  constructor(private readonly probe: ProbeSetup) {
    for (const entity of probe.managedEntities) {
      this.entities.set(
        entity.name,
        entity.samplers.filter(isRestApi).map((s) => new SamplerState(entity.name, s)),
      );
    }
  }

  /** Finds the rest-api sampler addressed by a path, or throws the 404/400 of DESIGN 3.2. */
  resolve(managedEntity: string, samplerSegment: string): SamplerState {
    const samplers = this.entities.get(managedEntity);
    if (samplers === undefined) {
      throw new VigilError("MANAGED_ENTITY_NOT_FOUND", { managedEntity, probe: this.probe.name });
    }
    const { name, type } = parseSamplerSegment(samplerSegment);
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
}

function isRestApi(sampler: SamplerSetup): sampler is RestApiSampler {
  return sampler.plugin === "rest-api";
}
