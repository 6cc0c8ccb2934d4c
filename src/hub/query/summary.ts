/**
 * `GET /v0/entities/summary` (DESIGN 5.1): entities grouped by the values of the `groupBy`
 * attributes, counted by severity, in the shape ITRS's Go client `cordial/pkg/gwhub` decodes:
 * `[{attributes, count, sampleEntityCount, counts: [{states: {severity}, count, sampleEntities}]}]`.
 *
 * An entity's severity is that of its latest `severity` event targeting the managed entity itself
 * (Store.latestSeverities); an entity without one is UNDEFINED.
 */
import type { EntityId } from "../../ids.js";
import type { EntityRecord } from "../store/store.js";
import { compareCodePoints } from "./filter/filter.js";

/** The most `groupBy` attributes one request may name. */
export const MAX_GROUP_BY = 16; // attributes
/** The largest `sampleEntityCount` a request may ask for. */
export const MAX_SAMPLE_ENTITIES = 1_000; // entity ids per state

/** Severities in the order `counts` lists them (the seed's order of severity states). */
export const SEVERITY_ORDER = ["UNDEFINED", "OK", "WARNING", "CRITICAL", "UNKNOWN"] as const;

export interface SummaryGroup {
  /** groupBy attribute → value ("" when the entity lacks it); {} without groupBy. */
  readonly attributes: Record<string, string>;
  /** Entities in the group. */
  readonly count: number;
  /** Entity ids listed across this group's `sampleEntities` (equal to `count` when all are listed). */
  readonly sampleEntityCount: number;
  readonly counts: {
    readonly states: { readonly severity: string };
    readonly count: number;
    /** The smallest ids of the state's entities, at most the requested number. */
    readonly sampleEntities: EntityId[];
  }[];
}

function severityRank(severity: string): number {
  const index = (SEVERITY_ORDER as readonly string[]).indexOf(severity);
  return index < 0 ? SEVERITY_ORDER.length : index;
}

/**
 * Groups `entities` by the values of `groupBy` (in request order) and counts each group's entities
 * per severity. Without `groupBy` there is one group, `attributes: {}`, even when it is empty.
 * Groups are ordered by their values, attribute by attribute in code-point order; `counts` by
 * {@link SEVERITY_ORDER} (an unknown severity text last, by code point), states without entities
 * left out.
 */
export function entitySummary(
  entities: readonly EntityRecord[],
  groupBy: readonly string[],
  severityOf: (entity: EntityRecord) => string | undefined,
  attributeOf: (entity: EntityRecord, name: string) => string,
  samplesPerState: number,
): SummaryGroup[] {
  const groups = new Map<string, { values: string[]; members: Map<string, EntityId[]> }>();
  if (groupBy.length === 0) groups.set("[]", { values: [], members: new Map() });
  for (const entity of entities) {
    const values = groupBy.map((name) => attributeOf(entity, name));
    const key = JSON.stringify(values);
    const group = groups.get(key) ?? { values, members: new Map<string, EntityId[]>() };
    groups.set(key, group);
    const severity = severityOf(entity) ?? "UNDEFINED";
    const ids = group.members.get(severity) ?? [];
    ids.push(entity.id);
    group.members.set(severity, ids);
  }
  const compareValues = (a: readonly string[], b: readonly string[]): number => {
    for (let i = 0; i < a.length; i += 1) {
      const order = compareCodePoints(a[i] ?? "", b[i] ?? "");
      if (order !== 0) return order;
    }
    return 0;
  };
  return [...groups.values()]
    .sort((a, b) => compareValues(a.values, b.values))
    .map(({ values, members }) => {
      const attributes: Record<string, string> = Object.create(null);
      groupBy.forEach((name, i) => {
        attributes[name] = values[i] ?? "";
      });
      const counts = [...members.entries()]
        .sort(([a], [b]) => severityRank(a) - severityRank(b) || compareCodePoints(a, b))
        .map(([severity, ids]) => ({
          states: { severity },
          count: ids.length,
          sampleEntities: [...ids].sort((x, y) => x - y).slice(0, samplesPerState),
        }));
      return {
        attributes,
        count: counts.reduce((n, c) => n + c.count, 0),
        sampleEntityCount: counts.reduce((n, c) => n + c.sampleEntities.length, 0),
        counts,
      };
    });
}
