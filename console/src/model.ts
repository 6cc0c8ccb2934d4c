/**
 * What the console knows of the hub's data: entities, severities (DESIGN 4.1 order), metric names
 * (DESIGN 5.3 cell references) and entity filters (DESIGN 5.2) it writes itself.
 */
import { h } from "./dom.js";

export interface Entity {
  readonly id: number;
  readonly attributes: Readonly<Record<string, string>>;
  readonly isDeleted: boolean;
}

export interface SummaryGroup {
  readonly attributes: Readonly<Record<string, string>>;
  readonly count: number;
  readonly counts: readonly {
    readonly states: { readonly severity: string };
    readonly count: number;
    readonly sampleEntities: readonly number[];
  }[];
}

export interface MetricInfo {
  readonly name: string;
  readonly type: string;
  readonly unit: string;
}

/** Severities from the highest down, as a person scans for trouble. */
export const SEVERITIES = ["CRITICAL", "WARNING", "UNKNOWN", "OK", "UNDEFINED"] as const;

/** A severity as a word, a colour (the CSS class) and an accessible name. */
export function severityBadge(severity: string | undefined): HTMLElement {
  const word = severity ?? "UNDEFINED";
  const known = (SEVERITIES as readonly string[]).includes(word) ? word.toLowerCase() : "undefined";
  return h(
    "span",
    {
      class: `severity sev-${known}`,
      role: "img",
      "aria-label": `Severity ${word}`,
      title: `Severity ${word}`,
    },
    h("span", { class: "dot", "aria-hidden": "true" }),
    word,
  );
}

/** A value as the filter language writes it: quoted, with `"` and `\` escaped. */
export function quoteFilterValue(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A filter selecting one entity by the attributes that identify a managed entity. */
export function entityFilter(entity: Entity): string {
  return ["svc.gateway", "svc.probe", "svc.name"]
    .filter((name) => (entity.attributes[name] ?? "") !== "")
    .map((name) => `${name} = ${quoteFilterValue(entity.attributes[name] ?? "")}`)
    .join(" AND ");
}

/** The name a person knows an entity by. */
export function entityName(entity: Entity): string {
  return entity.attributes["svc.name"] ?? `entity ${entity.id}`;
}

/** One segment of a cell reference with its percent-escapes decoded (`%2F` is `/`, DESIGN 5.3). */
function unescapeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export interface MetricPath {
  /** As written in the reference (`orders` or `orders(type)`), escaped. */
  readonly samplerRef: string;
  readonly sampler: string;
  readonly type: string;
  readonly dataviewRef: string;
  readonly dataview: string;
  /** null for a headline. */
  readonly rowRef: string | null;
  readonly columnRef: string;
  readonly column: string;
}

/** Splits `<sampler>/<dataview>/<row>/<column>` (an empty row: a headline). */
export function parseMetricName(name: string): MetricPath | undefined {
  const parts = name.split("/");
  if (parts.length !== 4) return undefined;
  const [samplerRef, dataviewRef, rowRef, columnRef] = parts as [string, string, string, string];
  const typed = /^(.*)\(([^()]*)\)$/.exec(samplerRef);
  return {
    samplerRef,
    sampler: unescapeSegment(typed?.[1] ?? samplerRef),
    type: unescapeSegment(typed?.[2] ?? ""),
    dataviewRef,
    dataview: unescapeSegment(dataviewRef),
    rowRef: rowRef === "" ? null : rowRef,
    columnRef,
    column: unescapeSegment(columnRef),
  };
}

/** Escapes a name for a cell reference as the hub writes it: `%`, `/`, wildcards, parentheses. */
export function escapeSegment(name: string): string {
  return name
    .replaceAll("%", "%25")
    .replaceAll("/", "%2F")
    .replaceAll("{", "%7B")
    .replaceAll("}", "%7D")
    .replaceAll("*", "%2A")
    .replaceAll("(", "%28")
    .replaceAll(")", "%29");
}

/** The severity of each entity, from the summary's sample lists. */
export function severityById(groups: readonly SummaryGroup[]): Map<number, string> {
  const map = new Map<number, string>();
  for (const group of groups)
    for (const state of group.counts)
      for (const id of state.sampleEntities) map.set(id, state.states.severity);
  return map;
}

/** Counts by severity summed over groups. */
export function totals(groups: readonly SummaryGroup[]): Map<string, number> {
  const map = new Map<string, number>();
  for (const group of groups)
    for (const state of group.counts)
      map.set(state.states.severity, (map.get(state.states.severity) ?? 0) + state.count);
  return map;
}
