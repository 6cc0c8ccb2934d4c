/**
 * Keyword and rule patterns (fkm `keywords[].pattern`, rule `when: { operator: matches }`) come from
 * users' setup files and run on every message or cell, so they are compiled with RE2 syntax by
 * `re2js`, a linear-time engine: `(a+)+$` against a 10 KB message costs what any other pattern
 * costs. A pattern matches when it is found anywhere in the text (no implicit anchors), without
 * flags, as in RE2.
 */
import { RE2JS } from "re2js";

export interface Pattern {
  /** The pattern as written in the setup file. */
  readonly source: string;
  /** Whether the pattern is found anywhere in `text`. */
  test(text: string): boolean;
}

/** Compiles `source` (RE2 syntax); throws a `PatternError` saying what is wrong. */
export function compilePattern(source: string): Pattern {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source);
  } catch (error) {
    throw new PatternError(source, error instanceof Error ? error.message : String(error));
  }
  return { source, test: (text) => compiled.test(text) };
}

/** Why a pattern cannot be compiled, or undefined when it can. */
export function patternProblem(source: string): string | undefined {
  try {
    compilePattern(source);
    return undefined;
  } catch (error) {
    return error instanceof PatternError ? error.reason : String(error);
  }
}

export class PatternError extends Error {
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`'${pattern}' is not a valid RE2 regular expression (${reason})`);
    this.name = "PatternError";
  }
}
