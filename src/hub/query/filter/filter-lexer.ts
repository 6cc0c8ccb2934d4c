/**
 * The lexer of the entity filter language (DESIGN 5.2) and its syntax error. The parser pulls one
 * token at a time, so the first error in reading order is the one reported (graphql-js
 * `language/lexer.ts`). Characters that start no token become an `invalid` token so the parser can
 * say what it expected there; only an unterminated quote or a lone `!` are reported by the lexer.
 */

/** The longest filter accepted, in UTF-16 code units (8 KiB of ASCII). */
export const MAX_FILTER_LENGTH = 8_192;

/** The most tokens a filter may have, not counting the end of input. */
export const MAX_FILTER_TOKENS = 2_000;

/** The keywords, upper-case; they are matched case-insensitively. */
export const FILTER_KEYWORDS: ReadonlySet<string> = new Set(["AND", "OR", "IN", "NOT", "EXISTS"]);

const BARE_CHAR = /^[A-Za-z0-9._-]$/;
const BARE_WORD = /^[A-Za-z0-9._-]+$/;
const WHITESPACE = /^\s$/u;

/** What a token is; `word` is a bare name or value, `string` a quoted one. */
export type TokenKind = "word" | "string" | "keyword" | "operator" | "(" | ")" | "," | "invalid" | "eof";

/** One token: `value` is the decoded text (keywords upper-cased, quotes and escapes removed). */
export interface Token {
  readonly kind: TokenKind;
  /** 0-based UTF-16 offset of the first character in the source. */
  readonly start: number;
  /** 0-based UTF-16 offset just after the last character. */
  readonly end: number;
  readonly value: string;
}

/** Where a syntax error is and what was expected there. */
export interface FilterSyntaxErrorDetails {
  readonly source: string;
  readonly offset: number;
  readonly expected: string;
}

/**
 * A filter that does not follow the grammar of DESIGN 5.2. `offset` is the 0-based UTF-16 index in
 * `source` where the problem is, `expected` says what should have been there, `message` is one line
 * naming both (`Expected a value after '=' at position 9, found the end of the filter`) and `excerpt`
 * shows the source line with a `^` under the offset (graphql-js `error/syntaxError.ts`). The HTTP
 * layer answers it as the 400 `INVALID_FILTER`.
 */
export class FilterSyntaxError extends Error {
  override readonly name = "FilterSyntaxError";
  readonly source: string;
  readonly offset: number;
  readonly expected: string;
  readonly excerpt: string;

  constructor(message: string, details: FilterSyntaxErrorDetails) {
    super(message);
    this.source = details.source;
    this.offset = details.offset;
    this.expected = details.expected;
    this.excerpt = formatExcerpt(details.source, details.offset);
  }
}

const EXCERPT_CONTEXT = 40;

/**
 * Returns two lines: the source line holding `offset` (at most 40 code points either side of it,
 * elided with `…`, whitespace and control characters shown as spaces) and a `^` under `offset`.
 * The caret is placed by code points, so astral characters before it do not shift it.
 */
export function formatExcerpt(source: string, offset: number): string {
  const lineStart = source.lastIndexOf("\n", offset - 1) + 1;
  const newline = source.indexOf("\n", offset);
  const lineEnd = newline === -1 ? source.length : newline;
  let before = [...source.slice(lineStart, offset)].map(displayChar);
  let after = [...source.slice(offset, lineEnd)].map(displayChar);
  if (before.length > EXCERPT_CONTEXT) before = ["…", ...before.slice(-(EXCERPT_CONTEXT - 1))];
  if (after.length > EXCERPT_CONTEXT) after = [...after.slice(0, EXCERPT_CONTEXT - 1), "…"];
  return `${before.join("")}${after.join("")}\n${" ".repeat(before.length)}^`;
}

function displayChar(char: string): string {
  return /^[\s\p{Cc}]$/u.test(char) ? " " : char;
}

/**
 * True when `text` can be written without quotes: one or more of `[A-Za-z0-9._-]` and not a keyword
 * in any letter case. The printer quotes everything else.
 */
export function isBareWord(text: string): boolean {
  return BARE_WORD.test(text) && !FILTER_KEYWORDS.has(text.toUpperCase());
}

/** True for the characters the lexer skips between tokens: JavaScript's `\s` (Unicode white space). */
export function isFilterWhitespace(char: string): boolean {
  return WHITESPACE.test(char);
}

/**
 * Says what a token is, for the `found …` part of an error message: `the end of the filter`,
 * `the keyword AND`, `'name'`, `"quoted"` (as written), `'('` or `the character '&'`. Long text is
 * cut to 20 code points.
 */
export function describeToken(token: Token, source: string): string {
  switch (token.kind) {
    case "eof":
      return "the end of the filter";
    case "keyword":
      return `the keyword ${token.value}`;
    case "string":
      return shorten(source.slice(token.start, token.end));
    case "invalid": {
      const code = token.value.codePointAt(0) ?? 0;
      const printable = /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(token.value);
      return printable
        ? `the character '${token.value}'`
        : `the character U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
    }
    default:
      return `'${shorten(token.value)}'`;
  }
}

function shorten(text: string): string {
  const chars = [...text];
  return chars.length > 24 ? `${chars.slice(0, 20).join("")}…` : text;
}

/**
 * Reads tokens from a filter source one at a time. Counts them and throws a `FilterSyntaxError` at
 * the token after the `MAX_FILTER_TOKENS`-th; the source length is checked by the parser before the
 * lexer starts.
 */
export class FilterLexer {
  readonly source: string;
  #position = 0;
  #count = 0;

  constructor(source: string) {
    this.source = source;
  }

  /** Returns the next token, `eof` (repeatedly) at the end. */
  next(): Token {
    const source = this.source;
    while (this.#position < source.length && isFilterWhitespace(source[this.#position]!)) this.#position++;
    const start = this.#position;
    if (start >= source.length) return { kind: "eof", start, end: start, value: "" };
    this.#count++;
    if (this.#count > MAX_FILTER_TOKENS) {
      throw new FilterSyntaxError(
        `The filter has more than ${MAX_FILTER_TOKENS} tokens; the limit is reached at position ${start}`,
        { source, offset: start, expected: `at most ${MAX_FILTER_TOKENS} tokens` },
      );
    }
    const token = this.#read(start);
    this.#position = token.end;
    return token;
  }

  #read(start: number): Token {
    const source = this.source;
    const char = source[start]!;
    if (BARE_CHAR.test(char)) {
      let end = start + 1;
      while (end < source.length && BARE_CHAR.test(source[end]!)) end++;
      const word = source.slice(start, end);
      const upper = word.toUpperCase();
      return FILTER_KEYWORDS.has(upper)
        ? { kind: "keyword", start, end, value: upper }
        : { kind: "word", start, end, value: word };
    }
    switch (char) {
      case '"':
        return this.#readQuoted(start);
      case "(":
      case ")":
      case ",":
        return { kind: char, start, end: start + 1, value: char };
      case "=":
        return { kind: "operator", start, end: start + 1, value: "=" };
      case "<":
      case ">": {
        const value = source[start + 1] === "=" ? `${char}=` : char;
        return { kind: "operator", start, end: start + value.length, value };
      }
      case "!":
        if (source[start + 1] === "=") return { kind: "operator", start, end: start + 2, value: "!=" };
        throw new FilterSyntaxError(`Expected '=' after '!' at position ${start + 1}`, {
          source,
          offset: start + 1,
          expected: "'='",
        });
      default: {
        const value = String.fromCodePoint(source.codePointAt(start)!);
        return { kind: "invalid", start, end: start + value.length, value };
      }
    }
  }

  /** quoted := '"' ( any char but " and \ | "\" any char )* '"' */
  #readQuoted(start: number): Token {
    const source = this.source;
    let value = "";
    let chunkStart = start + 1;
    let position = start + 1;
    while (position < source.length) {
      const char = source[position];
      if (char === '"') {
        value += source.slice(chunkStart, position);
        return { kind: "string", start, end: position + 1, value };
      }
      if (char === "\\") {
        if (position + 1 >= source.length) break;
        value += source.slice(chunkStart, position);
        // The escaped character is kept as it is; a following low surrogate is copied with the rest.
        chunkStart = position + 1;
        position += 2;
      } else {
        position++;
      }
    }
    throw new FilterSyntaxError(
      `Unterminated quoted string starting at position ${start}: expected a closing '"' before the end of the filter`,
      { source, offset: start, expected: "a closing '\"'" },
    );
  }
}
