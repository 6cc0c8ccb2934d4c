/**
 * The `name(type)` addressing of samplers (DESIGN 3.1, 5.3), parsed in one place: the probe's
 * ingest URLs, an fkm sampler's `source.sampler` in the setup, and the hub's cell references all
 * name a sampler as `name` (any type) or `name(type)` (`name()`: the sampler without a type).
 */

/** A sampler reference: `type` is null when none was given (any type matches). */
export interface SamplerRef {
  readonly name: string;
  /** The text between the final parentheses; "" for `name()`; null for a plain `name`. */
  readonly type: string | null;
}

/**
 * How a reference is read. `lenient` (the default; the probe's URLs and the setup): the type is
 * the text inside the final `(…)`, the name is everything before it, whatever it holds, and a text
 * that does not end in `(…)` is all name. `strict` (the hub's cell references, where `(` and `)`
 * in a name are written `%28 %29`): the name part must hold no parenthesis either, and a text with
 * parentheses that is not exactly `name(type)` is refused.
 */
export type SamplerRefMode = "lenient" | "strict";

/** Lenient: a final `(type)` without parentheses inside; the name may be anything, newlines too. */
const LENIENT = /^(.*)\(([^()]*)\)$/s;
/** Strict: exactly `name(type)`, neither part holding a parenthesis. */
const STRICT = /^([^()]*)\(([^()]*)\)$/;

/**
 * Splits `name(type)` into its parts: `orders(web)` → `{ name: "orders", type: "web" }`,
 * `orders()` → type "", `orders` → type null. In the default `lenient` mode every text parses
 * (`a(b)(c)` → name `a(b)`, type `c`; `a(b` → all name), the semantics the probe has always used.
 * In `strict` mode, a text holding `(` or `)` that is not exactly `name(type)` with neither part
 * holding one returns null, for the caller to refuse. Neither mode decodes or trims anything.
 */
export function parseSamplerRef(text: string): SamplerRef;
export function parseSamplerRef(text: string, mode: "lenient"): SamplerRef;
export function parseSamplerRef(text: string, mode: SamplerRefMode): SamplerRef | null;
export function parseSamplerRef(text: string, mode: SamplerRefMode = "lenient"): SamplerRef | null {
  const typed = (mode === "strict" ? STRICT : LENIENT).exec(text);
  if (typed !== null) return { name: typed[1] ?? "", type: typed[2] ?? "" };
  if (mode === "strict" && /[()]/.test(text)) return null;
  return { name: text, type: null };
}

/**
 * Writes a sampler reference: `name(type)`, or the bare `name` when `type` is null (a type of ""
 * gives `name()`, the sampler without a type). It is the inverse of `parseSamplerRef` for names
 * without parentheses, which the setup guarantees (its schema refuses them in names and types).
 */
export function formatSamplerRef(name: string, type: string | null): string {
  return type === null ? name : `${name}(${type})`;
}
