/**
 * Whether a JSON text is exactly what `JSON.stringify` makes of the value it parses to, so that the
 * digest of a message without an id (the SHA-256 of `JSON.stringify(message)`, DESIGN 1) can be
 * taken of the text as received, without writing the message out again (that was a
 * tenth of the backfill's time on the hub's thread). Conservative: `false` only costs the usual
 * `JSON.stringify`; `true` must never be wrong, so anything not plainly canonical is `false`.
 *
 * `JSON.stringify` (ECMA-262 25.5.2) writes no whitespace; escapes `"`, `\`, control characters
 * and lone surrogates; writes numbers in their shortest round-trip form; and writes an object's
 * keys in its property order, which for an object from `JSON.parse` is the text's order except
 * that integer-like keys go first, and a repeated key keeps its first place with its last value.
 * So a text is canonical when (1) it holds no backslash (no escape at all) and, with the caller's
 * guarantee, no lone surrogate; (2) it is made only of structure, strings without control
 * characters, integers of at most 15 digits (exact in a double; no `-0` or leading zero) and
 * `true`/`false`/`null`; (3) no key is made of digits only; and (4) no key is repeated. Given
 * (1)–(3), `JSON.stringify` writes every token as the text has it, and a repeated key only drops a
 * key and a value, so (4) holds exactly when the length `JSON.stringify` would write, summed over
 * the parsed value, is the text's length.
 */

/**
 * (2) and (3): canonical tokens only, and no string of digits only followed by a colon (a key). A
 * string holds no control character: JSON.parse, which accepted the text, refuses one unescaped.
 */
const CANONICAL_TOKENS =
  /^(?:[{}[\],:]|(?!"\d+":)"[^"\\]*"|-?(?:0|[1-9]\d{0,14})(?![\d.eE])|true|false|null)*$/;

/**
 * Whether `text`, which holds no lone surrogate and which `JSON.parse` turned into `value`, equals
 * `JSON.stringify(value)` (see the module comment; false when unsure).
 */
export function isCanonicalJson(text: string, value: unknown): boolean {
  return !text.includes("\\") && CANONICAL_TOKENS.test(text) && writtenLength(value) === text.length;
}

/**
 * The length of `JSON.stringify(value)` for a value parsed from text that passed the checks above
 * (its strings need no escape); keys as `for…in` enumerates them (an enumerable property added to
 * Object.prototype only makes the length differ).
 */
function writtenLength(value: unknown): number {
  switch (typeof value) {
    case "string":
      return value.length + 2;
    case "number":
      return String(value).length;
    case "boolean":
      return value ? 4 : 5;
    case "object": {
      if (value === null) return 4;
      let length = 2;
      let items = 0;
      if (Array.isArray(value)) {
        for (const item of value) {
          length += writtenLength(item);
          items += 1;
        }
      } else {
        const record = value as Record<string, unknown>;
        for (const key in record) {
          length += key.length + 3 + writtenLength(record[key]);
          items += 1;
        }
      }
      return items === 0 ? length : length + items - 1;
    }
    default:
      return -1;
  }
}
