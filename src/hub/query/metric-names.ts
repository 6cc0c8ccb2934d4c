/**
 * Metric names as the hub lists them (DESIGN 5.1 `GET /v0/entities/{id}/metrics` and
 * `/v0/entities/metrics`): cell references with `{rowname}` for table columns and an empty row for
 * headlines, written so that `parseCellReference` (metric-query.ts) reads each back to the same
 * cells. What is said of each comes from what the store holds ("What the hub says about a metric
 * comes from what it stored"): `type` is `string` for a cell that has only held text, else
 * `float64` or the type the setup's data schema declares (an overlay); `unit` is the schema's, else
 * `none`; the `plugin` filter matches the plug-in the messages carried.
 */
import type { ColumnSchema, Setup } from "../../config/setup.js";
import type { CellSelector, MetricName } from "../store/store.js";
import { compareCodePoints } from "./filter/filter.js";

/** Where a listed metric lives in Geneos terms (DESIGN 5.1 `includeMappings`). */
export interface MetricMapping {
  readonly legacyPath: string;
  readonly dataviewId: number;
  readonly isDeleted: boolean;
}

/** One listed metric; `mappings` only when asked for. */
export interface MetricInfo {
  readonly name: string;
  readonly type: string;
  readonly unit: string;
  readonly mappings?: MetricMapping[];
}

/**
 * A name inside a Geneos XPath predicate, `[(@name="…")]`: the value is an XML attribute's, so `&`
 * and `"` are written as the entities `&amp;` and `&quot;` (a name is data and may hold either).
 */
function xpathName(name: string): string {
  return name.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
}

/**
 * The Geneos XPath of a listed metric on one entity (DESIGN 5.1 `includeMappings`): a table column
 * with the row `{rowname}`, or a headline.
 */
export function legacyPath(cell: {
  readonly gateway: string;
  readonly probe: string;
  readonly managedEntity: string;
  readonly sampler: string;
  readonly samplerType: string;
  readonly dataview: string;
  readonly headline: boolean;
  readonly column: string;
}): string {
  const q = xpathName;
  const dataview =
    `/geneos/gateway[(@name="${q(cell.gateway)}")]/directory/probe[(@name="${q(cell.probe)}")]` +
    `/managedEntity[(@name="${q(cell.managedEntity)}")]` +
    `/sampler[(@name="${q(cell.sampler)}")][(@type="${q(cell.samplerType)}")]/dataview[(@name="${q(cell.dataview)}")]`;
  return cell.headline
    ? `${dataview}/headlines/cell[(@name="${q(cell.column)}")]`
    : `${dataview}/rows/row[(@name="{rowname}")]/cell[(@column="${q(cell.column)}")]`;
}

/** Escapes what would change how a segment is read: `%`, `/`, wildcards, and `(` `)` of a sampler. */
function escapeSegment(name: string): string {
  return name
    .replaceAll("%", "%25")
    .replaceAll("/", "%2F")
    .replaceAll("{", "%7B")
    .replaceAll("}", "%7D")
    .replaceAll("*", "%2A")
    .replaceAll("(", "%28")
    .replaceAll(")", "%29");
}

/**
 * The cell reference `<sampler>[(<type>)]/<dataview>/<row>/<column>`: `row` null is `{rowname}`,
 * "" a headline. A sampler without a type is written without parentheses.
 */
export function cellReference(cell: {
  readonly sampler: string;
  readonly samplerType: string;
  readonly dataview: string;
  readonly row: string | null;
  readonly column: string;
}): string {
  const sampler =
    cell.samplerType === ""
      ? escapeSegment(cell.sampler)
      : `${escapeSegment(cell.sampler)}(${escapeSegment(cell.samplerType)})`;
  const row = cell.row === null ? "{rowname}" : escapeSegment(cell.row);
  return [sampler, escapeSegment(cell.dataview), row, escapeSegment(cell.column)].join("/");
}

/**
 * The distinct metrics of `names`, sorted by name in code-point order. A name is numeric when any
 * entity's cells of it have held a number: then its type is the one its column declares in the
 * setup's data schema, else float64; otherwise `string`. The unit is the declared one, else none.
 * `keep` drops names first (the plugin filter). With `mappingOf`, each metric lists where it lives
 * on each entity (one mapping per distinct path, sorted by path, then dataview id).
 */
export function metricList(
  names: readonly MetricName[],
  columnSchema: (selector: CellSelector) => ColumnSchema | undefined,
  keep: (name: MetricName) => boolean = () => true,
  mappingOf?: (name: MetricName) => MetricMapping | undefined,
): MetricInfo[] {
  interface Listed {
    numeric: boolean;
    readonly schema: ColumnSchema | undefined;
    readonly mappings: Map<string, MetricMapping>;
  }
  const seen = new Map<string, Listed>();
  for (const metric of names) {
    if (!keep(metric)) continue;
    const row = metric.headline ? "" : null;
    const name = cellReference({ ...metric, row });
    let listed = seen.get(name);
    if (listed === undefined) {
      const schema = columnSchema({
        sampler: metric.sampler,
        samplerType: metric.samplerType,
        dataview: metric.dataview,
        row,
        column: metric.column,
      });
      listed = { numeric: metric.numeric, schema, mappings: new Map() };
      seen.set(name, listed);
    } else listed.numeric ||= metric.numeric;
    const mapping = mappingOf?.(metric);
    if (mapping !== undefined) {
      // The store lists rows folded, so a path comes once per entity; keyed all the same.
      const key = `${mapping.legacyPath}\u0000${mapping.dataviewId}`;
      if (!listed.mappings.has(key)) listed.mappings.set(key, mapping);
    }
  }
  const byPath = (a: MetricMapping, b: MetricMapping) =>
    compareCodePoints(a.legacyPath, b.legacyPath) || a.dataviewId - b.dataviewId;
  return [...seen.entries()]
    .map(([name, { numeric, schema, mappings }]) => ({
      name,
      type: numeric ? (schema?.type ?? "float64") : "string",
      unit: schema?.unit ?? "none",
      ...(mappingOf === undefined ? {} : { mappings: [...mappings.values()].sort(byPath) }),
    }))
    .sort((a, b) => compareCodePoints(a.name, b.name));
}

/**
 * A lookup of a sampler's plug-in (`rest-api`, `fkm`) by entity and sampler, from the setup file:
 * the fallback for a dataview whose plug-in the store does not know (stored before the store kept
 * it, until the next message carries it; {@link MetricName.plugin} null). Keyed by probe, managed
 * entity and sampler name (and type when the sampler has one); undefined for a sampler the setup
 * does not list.
 */
export function samplerPluginLookup(
  setup: Setup,
): (probe: string, managedEntity: string, sampler: string, samplerType: string) => string | undefined {
  const plugins = new Map<string, string>();
  for (const probe of setup.probes) {
    for (const entity of probe.managedEntities) {
      for (const sampler of entity.samplers) {
        const key = JSON.stringify([probe.name, entity.name, sampler.name, sampler.type]);
        if (!plugins.has(key)) plugins.set(key, sampler.plugin);
      }
    }
  }
  return (probe, managedEntity, sampler, samplerType) =>
    plugins.get(JSON.stringify([probe, managedEntity, sampler, samplerType]));
}
