/**
 * The canonical text of a sample's number: the text a store can leave out and render again from
 * the stored double, byte for byte. A sample's text is canonical when it is exactly `String(value)`
 * and that is a plain decimal the DuckDB store's rendering reproduces (duckdb-schema.ts
 * `sampleTextSql`; the PostgreSQL store keeps every text):
 * - an integer of at most 2^53 − 1 in magnitude, written as its digits (`String` writes an
 *   exponent only from 1e21; beyond 2^53 it pads the shortest digits with zeros, which is not the
 *   integer the double holds);
 * - a number with a fraction of at least 1e-4 in magnitude: JS and DuckDB both write the shortest
 *   digits that read back as the double, in fixed notation from 1e-4 (DuckDB writes an exponent
 *   below that, JS below 1e-7); a double with a fraction is below 2^52, where neither writes one.
 * Everything else ("1.50", "01", "-0", "1e3", " 1", a text with no number) is not canonical and is
 * kept as sent.
 */

/** The largest integer a double holds with every smaller one: its digits are the integer's. */
const LARGEST_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;
/** The smallest magnitude of a number with a fraction that DuckDB writes without an exponent. */
const SMALLEST_FIXED_FRACTION = 1e-4;

/** Significant digits below which a decimal reads back from its double unchanged (DBL_DIG). */
const EXACT_DIGITS = 15;
/** 10^k for k ≤ 22: every one is a double exactly, so `m / 10^k` rounds once (Clinger's fast path). */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * Whether `text` is the canonical text of `value` (see the module comment). It runs once per stored
 * sample, so the common case writes no digits: a text in the form `String` writes
 * (`-?(0|[1-9]\d*)(\.\d*[1-9])?`) with at most 15 significant digits is the text `String` writes
 * of its own double, since two decimals of at most 15 digits never read as one double (DBL_DIG);
 * so it is canonical when its double is `value` (the digits over a power of ten, correctly rounded
 * by one division) and in the ranges above. A text of another form is not canonical: `String`
 * writes no other form within those ranges. Only a text of more digits is compared with
 * `String(value)`.
 */
export function isCanonicalNumberText(value: number, text: string): boolean {
  const length = text.length;
  let i = text.charCodeAt(0) === 0x2d ? 1 : 0; // "-"
  const negative = i === 1;
  const first = text.charCodeAt(i);
  if (!(first >= 0x30 && first <= 0x39)) return false;
  let mantissa = first - 0x30;
  let digits = first === 0x30 ? 0 : 1; // significant digits so far
  i += 1;
  if (first === 0x30 && i < length && text.charCodeAt(i) !== 0x2e) return false; // "01"
  for (; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) break;
    if (!(c >= 0x30 && c <= 0x39)) return false;
    mantissa = mantissa * 10 + (c - 0x30);
    digits += 1;
  }
  let decimals = 0;
  if (i < length) {
    // A fraction: at least one digit, the last not a zero ("7.", "1.50" are not canonical).
    i += 1;
    if (i === length || text.charCodeAt(length - 1) === 0x30) return false;
    for (; i < length; i++) {
      const c = text.charCodeAt(i);
      if (!(c >= 0x30 && c <= 0x39)) return false;
      mantissa = mantissa * 10 + (c - 0x30);
      decimals += 1;
      if (digits > 0 || c !== 0x30) digits += 1;
    }
  }
  if (digits > EXACT_DIGITS) return inRange(value) && text === String(value);
  if (negative && mantissa === 0) return false; // "-0": `String(-0)` is "0"
  const parsed = (negative ? -mantissa : mantissa) / (POWERS_OF_TEN[decimals] as number);
  return parsed === value && inRange(value);
}

/** Whether a number's `String` is a text DuckDB's rendering reproduces (see the module comment). */
function inRange(value: number): boolean {
  if (Number.isInteger(value)) return value <= LARGEST_EXACT_INTEGER && value >= -LARGEST_EXACT_INTEGER;
  return Number.isFinite(value) && Math.abs(value) >= SMALLEST_FIXED_FRACTION;
}
