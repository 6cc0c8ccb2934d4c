/**
 * The recursive-descent parser of the entity filter language (DESIGN 5.2), one `parseX()` per rule
 * (graphql-js `language/parser.ts`). Errors name the position, what was expected and what was found.
 *
 * Decisions where DESIGN 5.2 is silent:
 * - A bare word that spells a keyword (`and`, `Or`, `IN`, `not`, `EXISTS`, any letter case) is always
 *   the keyword; as a name or value it must be quoted (`"AND" = "in"`). The error says so.
 * - `""` is a valid name and value; as a value it never matches `=` (empty means absent, DESIGN 5.1).
 * - Whitespace is JavaScript's `\s` (Unicode white space, so a pasted no-break space is accepted).
 * - Parentheses are kept in the tree only as structure: `(a = 1 AND b = 2) AND c = 3` is an `and`
 *   inside an `and`, which the printer reproduces, so `parse(print(ast))` deep-equals `ast`.
 * - Limits: `MAX_FILTER_LENGTH` UTF-16 code units, `MAX_FILTER_TOKENS` tokens and
 *   `MAX_FILTER_DEPTH` levels of nested parentheses (list parentheses do not nest and do not count).
 */

import type { CompareOperator, FilterNode, Operands } from "./filter-ast.js";
import {
  describeToken,
  FilterLexer,
  FilterSyntaxError,
  MAX_FILTER_LENGTH,
  type Token,
  type TokenKind,
} from "./filter-lexer.js";

/** The deepest nesting of parenthesised expressions accepted. */
export const MAX_FILTER_DEPTH = 64;

const OPERATORS_TEXT = "an operator (=, !=, >, >=, <, <=, IN, NOT IN, EXISTS or NOT EXISTS)";

/**
 * Parses `source` into a `FilterNode`, following `filter := expr EOF`. Throws a `FilterSyntaxError`
 * for anything else, including an empty or blank source (a caller wanting "match everything" for a
 * blank filter uses `compileFilter`), a source longer than `MAX_FILTER_LENGTH`, more than
 * `MAX_FILTER_TOKENS` tokens or parentheses nested deeper than `MAX_FILTER_DEPTH`.
 */
export function parseFilter(source: string): FilterNode {
  if (source.length > MAX_FILTER_LENGTH) {
    throw new FilterSyntaxError(
      `The filter is ${source.length} characters long; the limit of ${MAX_FILTER_LENGTH} is exceeded at position ${MAX_FILTER_LENGTH}`,
      { source, offset: MAX_FILTER_LENGTH, expected: `at most ${MAX_FILTER_LENGTH} characters` },
    );
  }
  return new FilterParser(source).parseFilter();
}

class FilterParser {
  readonly #source: string;
  readonly #lexer: FilterLexer;
  #token: Token;
  #depth = 0;

  constructor(source: string) {
    this.#source = source;
    this.#lexer = new FilterLexer(source);
    this.#token = this.#lexer.next();
  }

  /** filter := expr EOF */
  parseFilter(): FilterNode {
    if (this.#at("eof")) {
      throw this.#error(
        `Expected an attribute name at position ${this.#token.start}, found the end of the filter (the filter is empty)`,
        "an attribute name",
      );
    }
    const node = this.parseExpr("");
    if (!this.#at("eof")) {
      const hint = this.#at(")") ? "; no '(' is open" : "";
      throw this.#unexpected("AND, OR or the end of the filter", "", { hint });
    }
    return node;
  }

  /**
   * expr := and ( OR and )*
   * `context` says what came before the first term (`after '('`), for messages.
   */
  parseExpr(context: string): FilterNode {
    const operands = [this.parseAnd(context)];
    while (this.#isKeyword("OR")) {
      this.#advance();
      operands.push(this.parseAnd("after OR"));
    }
    return group("or", operands);
  }

  /** and := term ( AND term )* */
  parseAnd(context: string): FilterNode {
    const operands = [this.parseTerm(context)];
    while (this.#isKeyword("AND")) {
      this.#advance();
      operands.push(this.parseTerm("after AND"));
    }
    return group("and", operands);
  }

  /** term := "(" expr ")" | name predicate */
  parseTerm(context: string): FilterNode {
    const open = this.#token;
    if (open.kind !== "(") {
      const name = this.parseName(context);
      return this.parsePredicate(name);
    }
    if (this.#depth >= MAX_FILTER_DEPTH) {
      throw this.#error(
        `Parentheses nest more than ${MAX_FILTER_DEPTH} levels deep at position ${open.start}`,
        `at most ${MAX_FILTER_DEPTH} levels of nested parentheses`,
      );
    }
    this.#depth++;
    this.#advance();
    const node = this.parseExpr("after '('");
    if (!this.#at(")")) {
      throw this.#unexpected("AND, OR or ')'", "", { note: ` (to close the '(' at position ${open.start})` });
    }
    this.#advance();
    this.#depth--;
    return node;
  }

  /** predicate := cmp value | IN list | NOT IN list | EXISTS | NOT EXISTS */
  parsePredicate(name: string): FilterNode {
    const token = this.#token;
    if (token.kind === "operator") {
      const operator = this.parseCmp();
      return { kind: "compare", name, operator, value: this.parseValue(`after '${operator}'`) };
    }
    if (this.#isKeyword("EXISTS")) {
      this.#advance();
      return { kind: "exists", name, negated: false };
    }
    if (this.#isKeyword("IN")) {
      this.#advance();
      return { kind: "in", name, values: this.parseList("IN"), negated: false };
    }
    if (this.#isKeyword("NOT")) {
      this.#advance();
      if (this.#isKeyword("EXISTS")) {
        this.#advance();
        return { kind: "exists", name, negated: true };
      }
      if (this.#isKeyword("IN")) {
        this.#advance();
        return { kind: "in", name, values: this.parseList("NOT IN"), negated: true };
      }
      throw this.#unexpected("IN or EXISTS", "after NOT");
    }
    throw this.#unexpected(OPERATORS_TEXT, "after the attribute name");
  }

  /** cmp := = | != | > | >= | < | <= */
  parseCmp(): CompareOperator {
    const token = this.#token;
    if (token.kind !== "operator") throw this.#unexpected(OPERATORS_TEXT, "");
    this.#advance();
    // The lexer builds operator tokens only from these six spellings.
    return token.value as CompareOperator;
  }

  /** list := "(" value ( "," value )* ")"; `operator` is `IN` or `NOT IN`, for messages. */
  parseList(operator: string): readonly [string, ...string[]] {
    if (!this.#at("(")) throw this.#unexpected("'(' to start the list", `after ${operator}`);
    this.#advance();
    if (this.#at(")")) {
      throw this.#unexpected("a value", "after '('", { hint: "; a list needs at least one value" });
    }
    const values: [string, ...string[]] = [this.parseValue("after '('")];
    while (this.#at(",")) {
      this.#advance();
      values.push(this.parseValue("after ','"));
    }
    if (!this.#at(")")) throw this.#unexpected("',' or ')'", "in the list");
    this.#advance();
    return values;
  }

  /** name := bare | quoted */
  parseName(context: string): string {
    return this.#parseWord("an attribute name or '('", "an attribute name", context);
  }

  /** value := bare | quoted */
  parseValue(context: string): string {
    return this.#parseWord("a value", "a value", context);
  }

  #parseWord(expected: string, role: string, context: string): string {
    const token = this.#token;
    if (token.kind === "word" || token.kind === "string") {
      this.#advance();
      return token.value;
    }
    const hint =
      token.kind === "keyword"
        ? `; quote it as "${this.#source.slice(token.start, token.end)}" to use it as ${role}`
        : "";
    throw this.#unexpected(expected, context, { hint });
  }

  /** A method, not a field test, so TypeScript does not keep a narrowing across `#advance()`. */
  #at(kind: TokenKind): boolean {
    return this.#token.kind === kind;
  }

  #isKeyword(keyword: string): boolean {
    return this.#at("keyword") && this.#token.value === keyword;
  }

  #advance(): void {
    this.#token = this.#lexer.next();
  }

  /**
   * `Expected <expected> [<context>] at position <n>[<note>], found <token>[<hint>]`; an invalid
   * character always gets the hint of `invalidCharacterHint`.
   */
  #unexpected(
    expected: string,
    context: string,
    extra: { note?: string; hint?: string } = {},
  ): FilterSyntaxError {
    const token = this.#token;
    const where = context === "" ? "" : ` ${context}`;
    const hint = token.kind === "invalid" ? invalidCharacterHint(token.value) : (extra.hint ?? "");
    return this.#error(
      `Expected ${expected}${where} at position ${token.start}${extra.note ?? ""}, found ${describeToken(token, this.#source)}${hint}`,
      expected,
    );
  }

  #error(message: string, expected: string): FilterSyntaxError {
    return new FilterSyntaxError(message, { source: this.#source, offset: this.#token.start, expected });
  }
}

/** Why a character starts no token, and what to write instead. */
function invalidCharacterHint(char: string): string {
  if (char === "&" || char === "|") return "; combine conditions with AND and OR";
  if (char === "'") return "; quote names and values with double quotes";
  return "; names and values with characters other than A-Z, a-z, 0-9, '.', '_' and '-' must be quoted";
}

function group(kind: "and" | "or", operands: readonly FilterNode[]): FilterNode {
  const [first, second, ...rest] = operands;
  if (first === undefined) throw new Error("unreachable: a group has at least one operand");
  if (second === undefined) return first;
  const all: Operands = [first, second, ...rest];
  return { kind, operands: all };
}
