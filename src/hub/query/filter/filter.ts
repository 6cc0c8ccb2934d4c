/**
 * The entity filter language (DESIGN 5.2): the module's one public entry (STYLE 4). The HTTP layer
 * calls `compileFilter(query.filter)` and answers a `FilterSyntaxError` as the 400 `INVALID_FILTER`
 * with its `message` (and, if it likes, its `excerpt`).
 */

import { type FilterPredicate, toFilterPredicate } from "./filter-eval.js";
import { isFilterWhitespace } from "./filter-lexer.js";
import { parseFilter } from "./filter-parser.js";

export type {
  AndNode,
  CompareNode,
  CompareOperator,
  ExistsNode,
  FilterKind,
  FilterNode,
  FilterNodeOfKind,
  FilterVisitor,
  InNode,
  Operands,
  OrNode,
} from "./filter-ast.js";
export { COMPARE_OPERATORS, visitFilter } from "./filter-ast.js";
export type { FilterAttributes, FilterPredicate } from "./filter-eval.js";
export { compareCodePoints, evaluateFilter, toFilterPredicate } from "./filter-eval.js";
export {
  FILTER_KEYWORDS,
  FilterSyntaxError,
  MAX_FILTER_LENGTH,
  MAX_FILTER_TOKENS,
} from "./filter-lexer.js";
export { MAX_FILTER_DEPTH, parseFilter } from "./filter-parser.js";
export { printFilter, quoteFilterWord } from "./filter-printer.js";

const MATCH_ALL: FilterPredicate = () => true;

/**
 * Parses a filter as it arrives over HTTP and returns a predicate over attribute maps. An absent
 * (`undefined`), empty or whitespace-only filter matches every entity; any other text is parsed with
 * `parseFilter`, so it throws a `FilterSyntaxError` when it is not a valid filter.
 */
export function compileFilter(text: string | undefined): FilterPredicate {
  if (text === undefined || [...text].every(isFilterWhitespace)) return MATCH_ALL;
  return toFilterPredicate(parseFilter(text));
}
