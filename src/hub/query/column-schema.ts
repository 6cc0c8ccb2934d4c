/**
 * Units and types of metrics come from the samplers' data schemas in the setup (DESIGN 5.3):
 * the user-defined data schema the seed says the hub needs.
 */
import type { ColumnSchema, Setup } from "../../config/setup.js";
import type { CellSelector } from "../store/store.js";

/** A lookup from a cell selector to its column's declared schema (first matching sampler wins). */
export function columnSchemaLookup(setup: Setup): (selector: CellSelector) => ColumnSchema | undefined {
  const schemas = new Map<string, ColumnSchema>();
  for (const probe of setup.probes) {
    for (const entity of probe.managedEntities) {
      for (const sampler of entity.samplers) {
        if (sampler.plugin !== "rest-api") continue;
        for (const [column, schema] of Object.entries(sampler.schema.columns)) {
          for (const type of [sampler.type, null]) {
            const key = JSON.stringify([sampler.name, type, column]);
            if (!schemas.has(key)) schemas.set(key, schema);
          }
        }
      }
    }
  }
  return (selector) => schemas.get(JSON.stringify([selector.sampler, selector.samplerType, selector.column]));
}
