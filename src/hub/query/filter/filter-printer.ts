/**
 * The printer of the entity filter language (DESIGN 5.2): canonical text with upper-case keywords,
 * one space around operators and keywords, `", "` between list values, and parentheses only where
 * the tree needs them, so `parseFilter(printFilter(ast))` deep-equals `ast` (graphql-js
 * `language/printer.ts`).
 */

import { type FilterNode, type FilterVisitor, visitFilter } from "./filter-ast.js";
import { isBareWord } from "./filter-lexer.js";

/**
 * Writes a name or value as the grammar needs it: bare when it is one or more of `[A-Za-z0-9._-]`
 * and not a keyword in any letter case, otherwise in double quotes with `"` and `\` escaped by a
 * backslash (seed rule 3). The empty string is `""`.
 */
export function quoteFilterWord(text: string): string {
  return isBareWord(text) ? text : `"${text.replace(/["\\]/g, "\\$&")}"`;
}

/**
 * Prints `node` as canonical filter text. An `or` operand of an `and` or `or`, and an `and` operand
 * of an `and`, are parenthesised (the parser keeps such groups as nested nodes, so this is what
 * makes printing round-trip); nothing else is.
 */
export function printFilter(node: FilterNode): string {
  return visitFilter(node, PRINTER);
}

const PRINTER: FilterVisitor<string> = {
  or: (node) => node.operands.map((operand) => printOperand(operand, operand.kind === "or")).join(" OR "),
  and: (node) =>
    node.operands
      .map((operand) => printOperand(operand, operand.kind === "or" || operand.kind === "and"))
      .join(" AND "),
  compare: (node) => `${quoteFilterWord(node.name)} ${node.operator} ${quoteFilterWord(node.value)}`,
  in: (node) =>
    `${quoteFilterWord(node.name)} ${node.negated ? "NOT IN" : "IN"} (${node.values.map(quoteFilterWord).join(", ")})`,
  exists: (node) => `${quoteFilterWord(node.name)} ${node.negated ? "NOT EXISTS" : "EXISTS"}`,
};

function printOperand(operand: FilterNode, parenthesise: boolean): string {
  const text = printFilter(operand);
  return parenthesise ? `(${text})` : text;
}
