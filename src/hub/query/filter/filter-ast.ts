/**
 * The syntax tree of the entity filter language (DESIGN 5.2). A union keyed on `kind`; the negated
 * predicates (`!=`, `NOT IN`, `NOT EXISTS`) are flags on their positive kinds, so every consumer
 * handles exactly five kinds through `visitFilter` (STYLE 6).
 */

/** A single-value comparison operator; `!=` is the negation of `=`. */
export type CompareOperator = "=" | "!=" | ">" | ">=" | "<" | "<=";

/** The comparison operators in the order the grammar lists them. */
export const COMPARE_OPERATORS: readonly CompareOperator[] = ["=", "!=", ">", ">=", "<", "<="];

/** Two or more operands; the parser never builds a one-operand `and`/`or`. */
export type Operands = readonly [FilterNode, FilterNode, ...FilterNode[]];

/** `a OR b OR …`: true when any operand is. */
export interface OrNode {
  readonly kind: "or";
  readonly operands: Operands;
}

/** `a AND b AND …`: true when every operand is. */
export interface AndNode {
  readonly kind: "and";
  readonly operands: Operands;
}

/** `name <op> value`. */
export interface CompareNode {
  readonly kind: "compare";
  readonly name: string;
  readonly operator: CompareOperator;
  readonly value: string;
}

/** `name IN (v, …)`, or `name NOT IN (v, …)` when `negated`. */
export interface InNode {
  readonly kind: "in";
  readonly name: string;
  readonly values: readonly [string, ...string[]];
  readonly negated: boolean;
}

/** `name EXISTS`, or `name NOT EXISTS` when `negated`. */
export interface ExistsNode {
  readonly kind: "exists";
  readonly name: string;
  readonly negated: boolean;
}

/** Any node of a parsed entity filter. */
export type FilterNode = OrNode | AndNode | CompareNode | InNode | ExistsNode;

/** The discriminant of `FilterNode`. */
export type FilterKind = FilterNode["kind"];

/** The node type whose `kind` is `K`. */
export type FilterNodeOfKind<K extends FilterKind> = Extract<FilterNode, { readonly kind: K }>;

/** One handler per kind; adding a kind to `FilterNode` makes every visitor fail to compile. */
export type FilterVisitor<R> = { readonly [K in FilterKind]: (node: FilterNodeOfKind<K>) => R };

/**
 * Calls the handler of `visitor` registered for `node.kind` and returns its result. This is the only
 * place that dispatches on the kind, so the evaluator and printer need no `switch` and a new kind is
 * a compile error in each of them until handled (STYLE 6).
 */
export function visitFilter<R>(node: FilterNode, visitor: FilterVisitor<R>): R {
  // TypeScript cannot correlate `visitor[node.kind]` with `node`; the mapped type guarantees it.
  const handler = visitor[node.kind] as (node: FilterNode) => R;
  return handler(node);
}
