/**
 * The problems a setup can have (DESIGN 2): `SetupIssue` (path, message, position), the
 * `SetupError` that carries them all, and the helpers every check shares to name a place
 * (`probes[0].managedEntities[1].name`) and to suggest a fix ("did you mean 'rules'?", STYLE 11).
 * `load-setup.ts` re-exports the public part; the checks produce `RawIssue`s, which the loader
 * locates in the YAML text.
 */

/** One problem in a setup: where (`probes[0].managedEntities[1].name`) and what to do about it. */
export interface SetupIssue {
  /** Path of the offending key, prefixed with `FILE:` when the setup came from a file; "" for the whole file. */
  readonly path: string;
  readonly message: string;
  /** 1-based line and column in the YAML text, when known. */
  readonly line?: number;
  readonly column?: number;
}

/** A setup that cannot be used; `issues` lists every problem found, not just the first. */
export class SetupError extends Error {
  readonly issues: readonly SetupIssue[];

  constructor(issues: readonly SetupIssue[], options?: { cause?: unknown }) {
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    super(`Invalid setup (${count}):\n${formatIssues(issues)}`, options);
    this.name = "SetupError";
    this.issues = issues;
  }
}

/**
 * Formats a `SetupError` for people: one line per issue, `path: message`, with ` (line L, column C)`
 * appended when the position is known, in file order. `vigil validate` prints this.
 */
export function formatSetupIssues(error: SetupError): string {
  return formatIssues(error.issues);
}

function formatIssues(issues: readonly SetupIssue[]): string {
  return issues
    .map((issue) => {
      const known = issue.line === undefined || issue.message.includes(`at line ${issue.line},`);
      const where = known ? "" : ` (line ${issue.line}, column ${issue.column ?? 1})`;
      return `${issue.path ? `${issue.path}: ` : ""}${issue.message}${where}`;
    })
    .join("\n");
}

/** One step of a path into the setup: a mapping key or a list index. */
export type Segment = string | number;

/** An issue as a check finds it: a path into the data, not yet a position in the text. */
export interface RawIssue {
  readonly segments: readonly Segment[];
  readonly message: string;
  /** Point at the key rather than its value (unknown keys). */
  readonly atKey?: boolean;
}

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/;

/**
 * `["probes", 0, "name"]` → `probes[0].name`; keys that are not identifiers are quoted as JSON
 * strings (`columns["a b"]`), which also shows a lone surrogate as `\ud800` rather than as garbage.
 */
export function formatPath(segments: readonly Segment[]): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/**
 * Removes repeated issues (same path and message) and puts the rest in file order (line, then
 * column, stable), so the list reads top to bottom like the file.
 */
export function tidyIssues(issues: readonly SetupIssue[]): SetupIssue[] {
  const seen = new Set<string>();
  return issues
    .filter((issue) => {
      const key = `${issue.path}\u0000${issue.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .map((issue, index) => ({ issue, index }))
    .sort(
      (a, b) =>
        (a.issue.line ?? 0) - (b.issue.line ?? 0) ||
        (a.issue.column ?? 0) - (b.issue.column ?? 0) ||
        a.index - b.index,
    )
    .map(({ issue }) => issue);
}

/**
 * The candidate equal to `word` ignoring case, else the closest one within edit distance 2, else
 * undefined: the "did you mean" of STYLE 11.
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const same = candidates.find((c) => c.toLowerCase() === lower);
  if (same !== undefined) return same;
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** A YAML mapping once read: a plain object (not null, not a list). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
