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

/**
 * Whether `text` is the canonical text of `value` (see the module comment). One `String(value)` and
 * a comparison after two range checks: it runs once per stored sample.
 */
export function isCanonicalNumberText(value: number, text: string): boolean {
  if (Number.isInteger(value)) {
    if (!(value <= LARGEST_EXACT_INTEGER && value >= -LARGEST_EXACT_INTEGER)) return false;
  } else if (!(Number.isFinite(value) && Math.abs(value) >= SMALLEST_FIXED_FRACTION)) {
    return false;
  }
  return text === String(value);
}
