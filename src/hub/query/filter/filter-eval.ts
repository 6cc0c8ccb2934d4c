/**
 * The evaluator of the entity filter language (DESIGN 5.2) over an entity's attributes (DESIGN 5.1).
 *
 * Semantics:
 * - An attribute whose value is `""` is absent everywhere (seed rule 5, DESIGN 5.1), and so is a key
 *   that is only inherited (`constructor`, `__proto__`): only own properties are attributes.
 * - `=` and `IN` are false for an absent attribute, so `name = ""` never matches; `!=` and `NOT IN`
 *   are their negations and so are true for an absent attribute (`name != ""` always matches).
 * - `<`, `<=`, `>`, `>=` are false for an absent attribute and otherwise compare by Unicode code
 *   point (`compareCodePoints`), case-sensitively and without normalisation.
 * - `EXISTS` is true when the attribute is present and not empty; `NOT EXISTS` is its negation.
 */

import { type CompareOperator, type FilterNode, type FilterVisitor, visitFilter } from "./filter-ast.js";

/** An entity's attributes: key to value, keys case-sensitive. */
export type FilterAttributes = Readonly<Record<string, string>>;

/** A compiled filter. */
export type FilterPredicate = (attributes: FilterAttributes) => boolean;

/**
 * Orders UTF-16 code units so that comparing them one by one gives code point order: surrogates
 * (U+D800–U+DFFF, the halves of U+10000 and above) move above U+E000–U+FFFF (ICU's fix-up). Lone
 * surrogates thus still order consistently.
 */
function codePointOrderKey(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/**
 * Compares two strings lexicographically by Unicode code point, not by UTF-16 code unit as JavaScript's
 * `<` does (which puts U+1F600 before U+FFFD). Returns a negative number, zero or a positive number
 * as `a` sorts before, equal to or after `b`; a proper prefix sorts first.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointOrderKey(x) - codePointOrderKey(y);
  }
  return a.length - b.length;
}

function lookup(attributes: FilterAttributes, name: string): string | undefined {
  if (!Object.hasOwn(attributes, name)) return undefined;
  const value = attributes[name];
  return value === "" ? undefined : value;
}

const COMPARE: {
  readonly [O in CompareOperator]: (attribute: string | undefined, value: string) => boolean;
} = {
  "=": (attribute, value) => attribute === value,
  "!=": (attribute, value) => attribute !== value,
  "<": (attribute, value) => attribute !== undefined && compareCodePoints(attribute, value) < 0,
  "<=": (attribute, value) => attribute !== undefined && compareCodePoints(attribute, value) <= 0,
  ">": (attribute, value) => attribute !== undefined && compareCodePoints(attribute, value) > 0,
  ">=": (attribute, value) => attribute !== undefined && compareCodePoints(attribute, value) >= 0,
};

const COMPILER: FilterVisitor<FilterPredicate> = {
  or: (node) => {
    const operands = node.operands.map(toFilterPredicate);
    return (attributes) => operands.some((operand) => operand(attributes));
  },
  and: (node) => {
    const operands = node.operands.map(toFilterPredicate);
    return (attributes) => operands.every((operand) => operand(attributes));
  },
  compare: ({ name, operator, value }) => {
    const compare = COMPARE[operator];
    // `= ""` compares an absent attribute (undefined) with "", so it never matches, as documented.
    return (attributes) => compare(lookup(attributes, name), value);
  },
  in: ({ name, values, negated }) => {
    const set: ReadonlySet<string> = new Set(values);
    return (attributes) => {
      const attribute = lookup(attributes, name);
      return (attribute !== undefined && set.has(attribute)) !== negated;
    };
  },
  exists: ({ name, negated }) => {
    return (attributes) => (lookup(attributes, name) !== undefined) !== negated;
  },
};

/**
 * Turns a filter tree into a predicate over attribute maps, doing the per-node work (operator
 * lookup, building `IN` sets) once, so a filter applied to many entities is walked only once.
 */
export function toFilterPredicate(node: FilterNode): FilterPredicate {
  return visitFilter(node, COMPILER);
}

/**
 * Says whether an entity with `attributes` matches the filter `node`, with the semantics in this
 * file's header. To apply one filter to many entities, build the predicate once with
 * `toFilterPredicate`.
 */
export function evaluateFilter(node: FilterNode, attributes: FilterAttributes): boolean {
  return toFilterPredicate(node)(attributes);
}
