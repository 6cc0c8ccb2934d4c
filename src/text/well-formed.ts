/**
 * Whether a string is well-formed Unicode: no lone UTF-16 surrogate. Such strings cannot be written
 * as UTF-8 (stores, files, sockets) without being altered, so every API refuses them at its edge.
 * `String.prototype.isWellFormed` is ES2024 (Node 20 has it; the compiler's ES2023 library does not
 * declare it, and raising the library would let other ES2024 calls that Node 20 lacks compile).
 */
export function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** In `u` mode a surrogate class matches only code units that are not part of a pair. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The index of the first lone surrogate in `text`, or undefined when it is well-formed. */
export function loneSurrogateAt(text: string): number | undefined {
  if (isWellFormed(text)) return undefined;
  return LONE_SURROGATE.exec(text)?.index;
}
