/**
 * Rules (DESIGN 2 `rules`, 4.1) compiled for evaluation. A rule's target fields are globs in which
 * `*` stands for any run of characters (`*` alone: every name; `web-*`: names starting `web-`),
 * matched without regular expressions, since they are users' text. The `sampler` field may be
 * written `name(type)` (the probe's addressing, DESIGN 3.1): the name part is a glob, the type must
 * equal the sampler's type; a plain name matches a sampler of any type.
 *
 * A condition compares a cell or headline value with the rule's value: as numbers when both parse
 * as numbers, otherwise as strings (UTF-16 code unit order); `contains` is a substring test and
 * `matches` an RE2 pattern (`src/text/pattern.ts`, linear time, as fkm keywords).
 */
import { parseSamplerRef } from "../../config/sampler-ref.js";
import type { RuleOperator, RuleSetup } from "../../config/setup.js";
import type { Severity } from "../../messages/types.js";
import { compilePattern } from "../../text/pattern.js";

/** Severity order (DESIGN 4.1): UNDEFINED < OK < UNKNOWN < WARNING < CRITICAL. */
export const SEVERITY_RANK: Readonly<Record<Severity, number>> = {
  UNDEFINED: 0,
  OK: 1,
  UNKNOWN: 2,
  WARNING: 3,
  CRITICAL: 4,
};
/** Severities by rank, the inverse of {@link SEVERITY_RANK}. */
export const BY_RANK: readonly Severity[] = ["UNDEFINED", "OK", "UNKNOWN", "WARNING", "CRITICAL"];

/** The higher of two severities. */
export const higher = (a: Severity, b: Severity): Severity => (SEVERITY_RANK[a] >= SEVERITY_RANK[b] ? a : b);

/** A name test built from a glob where `*` is any run of characters. */
export type NameTest = (name: string) => boolean;

/** Compiles a glob: no `*` is equality, `*` alone matches everything. */
export function globTest(glob: string): NameTest {
  if (!glob.includes("*")) return (name) => name === glob;
  const parts = glob.split("*");
  if (parts.every((p) => p === "")) return () => true;
  const first = parts[0] ?? "";
  const last = parts[parts.length - 1] ?? "";
  const middle = parts.slice(1, -1).filter((p) => p !== "");
  const fixed = first.length + last.length;
  return (name) => {
    if (name.length < fixed || !name.startsWith(first) || !name.endsWith(last)) return false;
    // Leftmost matching of each middle part is enough for globs with `*` only.
    let at = first.length;
    const end = name.length - last.length;
    for (const part of middle) {
      const found = name.indexOf(part, at);
      if (found < 0 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}

/** Strictly a decimal number (what "parses as a number" means for rules): no blanks, no hex. */
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The number a value spells, or undefined. */
export function parseNumber(text: string): number | undefined {
  if (!NUMBER.test(text)) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

type Compare = (value: string, number: number | undefined) => boolean;

function comparison(operator: RuleOperator, raw: string | number): Compare {
  const text = String(raw);
  const ruleNumber = typeof raw === "number" ? raw : parseNumber(text);
  const order = (value: string, number: number | undefined): number => {
    if (number !== undefined && ruleNumber !== undefined) return number - ruleNumber;
    return value < text ? -1 : value > text ? 1 : 0;
  };
  switch (operator) {
    case "=":
      return (v, n) => order(v, n) === 0;
    case "!=":
      return (v, n) => order(v, n) !== 0;
    case ">":
      return (v, n) => order(v, n) > 0;
    case ">=":
      return (v, n) => order(v, n) >= 0;
    case "<":
      return (v, n) => order(v, n) < 0;
    case "<=":
      return (v, n) => order(v, n) <= 0;
    case "contains":
      return (v) => v.includes(text);
    case "matches": {
      const pattern = compilePattern(text);
      return (v) => pattern.test(v);
    }
  }
}

/** One rule, ready to test names and values. */
export interface CompiledRule {
  readonly name: string;
  readonly severity: Severity;
  /** True for a headline rule, false for a cell rule. */
  readonly headline: boolean;
  readonly managedEntity: NameTest;
  readonly sampler: (name: string, type: string) => boolean;
  readonly dataview: NameTest;
  /** Cell rules: the row; headline rules: always true. */
  readonly row: NameTest;
  /** Cell rules: the column; headline rules: the headline. */
  readonly column: NameTest;
  /** Whether the condition holds for a value (its number when it parses as one). */
  readonly holds: Compare;
}

/** Compiles the setup's rules (already validated at load: patterns compile, targets are complete). */
export function compileRules(rules: readonly RuleSetup[]): CompiledRule[] {
  return rules.map((rule) => {
    const { target } = rule;
    const ref = parseSamplerRef(target.sampler);
    const samplerName = globTest(ref.name);
    const headline = target.headline !== undefined;
    return {
      name: rule.name,
      severity: rule.severity,
      headline,
      managedEntity: globTest(target.managedEntity),
      sampler: (name, type) => samplerName(name) && (ref.type === null || ref.type === type),
      dataview: globTest(target.dataview),
      row: headline ? () => true : globTest(target.row ?? "*"),
      column: globTest((headline ? target.headline : target.column) ?? "*"),
      holds: comparison(rule.when.operator, rule.when.value),
    };
  });
}

/**
 * The severity rules give a value (DESIGN 4.1): the highest among the rules that hold, `OK` when
 * `rules` is not empty and none holds, `UNDEFINED` when it is empty.
 */
export function evaluate(rules: readonly CompiledRule[], value: string): Severity {
  if (rules.length === 0) return "UNDEFINED";
  const number = parseNumber(value);
  let result: Severity = "OK";
  for (const rule of rules) {
    if (SEVERITY_RANK[rule.severity] > SEVERITY_RANK[result] && rule.holds(value, number))
      result = rule.severity;
  }
  return result;
}

/** The rules that apply to one dataview, by kind, with their candidates per column name cached. */
export interface DataviewRules {
  readonly generation: number;
  readonly cells: readonly CompiledRule[];
  readonly headlines: readonly CompiledRule[];
  readonly byColumn: Map<string, readonly CompiledRule[]>;
  readonly byHeadline: Map<string, readonly CompiledRule[]>;
}

/** Names of a dataview, as rules target them. */
export interface DataviewNames {
  readonly managedEntity: string;
  readonly sampler: string;
  readonly type: string;
  readonly dataview: string;
}

/** Column names a dataview's candidate cache holds before it is cleared. */
const CANDIDATES_CACHED = 4096;

/**
 * The setup's rules, compiled, and which of them apply to a dataview. A new set of rules (a setup
 * reload) makes every dataview's cached selection stale (its generation).
 */
export class RuleBook {
  private rules: CompiledRule[];
  private generation = 0;

  constructor(rules: readonly RuleSetup[]) {
    this.rules = compileRules(rules);
  }

  set(rules: readonly RuleSetup[]): void {
    this.rules = compileRules(rules);
    this.generation += 1;
  }

  /** The rules of a dataview: `cached` when still current, else selected anew (the caller keeps it). */
  forDataview(names: DataviewNames, cached: DataviewRules | undefined): DataviewRules {
    if (cached !== undefined && cached.generation === this.generation) return cached;
    const applicable = this.rules.filter(
      (r) =>
        r.managedEntity(names.managedEntity) &&
        r.sampler(names.sampler, names.type) &&
        r.dataview(names.dataview),
    );
    return {
      generation: this.generation,
      cells: applicable.filter((r) => !r.headline),
      headlines: applicable.filter((r) => r.headline),
      byColumn: new Map(),
      byHeadline: new Map(),
    };
  }
}

/** The rules of `list` whose column (or headline) test takes `name`, remembered in `cache`. */
export function candidates(
  list: readonly CompiledRule[],
  cache: Map<string, readonly CompiledRule[]>,
  name: string,
): readonly CompiledRule[] {
  if (list.length === 0) return list;
  let found = cache.get(name);
  if (found === undefined) {
    found = list.filter((r) => r.column(name));
    // Bounded by the dataview's columns; cleared rather than grown past a few thousand names.
    if (cache.size >= CANDIDATES_CACHED) cache.clear();
    cache.set(name, found);
  }
  return found;
}

/**
 * The severity the candidates give a value of row `row` (undefined: a headline), as `evaluate`
 * does for those that target the row; the value is parsed as a number once, when a rule needs it.
 */
export function evaluateCandidates(
  list: readonly CompiledRule[],
  row: string | undefined,
  value: string,
): Severity {
  let targeted = false;
  let result: Severity = "UNDEFINED";
  let number: number | undefined | null = null;
  for (const rule of list) {
    if (row !== undefined && !rule.row(row)) continue;
    if (!targeted) {
      targeted = true;
      result = "OK";
    }
    if (SEVERITY_RANK[rule.severity] <= SEVERITY_RANK[result]) continue;
    if (number === null) number = parseNumber(value);
    if (rule.holds(value, number)) result = rule.severity;
  }
  return result;
}
