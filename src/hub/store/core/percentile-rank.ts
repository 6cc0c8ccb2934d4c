/**
 * The percentile's p as an exact fraction (DESIGN 5.3: nearest rank max(1, ⌈p·n⌉), computed in
 * integer arithmetic so that 0.07 of 100 values is the 7th, never a binary float's rank).
 */
import { MAX_PERCENTILE_DECIMALS } from "../store.js";

/** Denominators above this could overflow a 128-bit `num · n` for very large groups. */
const MAX_PERCENTILE_DENOMINATOR = 10n ** BigInt(MAX_PERCENTILE_DECIMALS);

/**
 * Turns a percentile `p` written as a decimal string (`"0.07"`, `"1"`, `".5"`, `"5e-2"`) into an
 * exact fraction numerator/denominator with a power-of-ten denominator, reduced, so that ⌈p·n⌉ can
 * be computed in integer arithmetic. Throws a RangeError when `p` is not a decimal in [0, 1] or
 * needs more than {@link MAX_PERCENTILE_DECIMALS} decimal places.
 */
export function decimalFraction(p: string): { readonly numerator: bigint; readonly denominator: bigint } {
  const m = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(p.trim());
  const whole = m?.[1] ?? "";
  const fraction = m?.[2] ?? "";
  if (m === null || whole.length + fraction.length === 0) {
    throw new RangeError(`percentile must be a decimal number in [0, 1], got "${p}"`);
  }
  const exponent = Number(m[3] ?? "0") - fraction.length;
  if (!Number.isSafeInteger(exponent) || exponent > 24 || exponent < -1000) {
    throw new RangeError(`percentile must be a decimal number in [0, 1], got "${p}"`);
  }
  let numerator = BigInt(whole + fraction);
  let denominator = 1n;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator = 10n ** BigInt(-exponent);
  if (numerator > denominator) throw new RangeError(`percentile must be in [0, 1], got "${p}"`);
  const divisor = gcd(numerator, denominator);
  numerator /= divisor;
  denominator /= divisor;
  if (denominator > MAX_PERCENTILE_DENOMINATOR) {
    throw new RangeError(`percentile "${p}" has more than ${MAX_PERCENTILE_DECIMALS} decimal places`);
  }
  return { numerator, denominator };
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a;
  let y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x === 0n ? 1n : x;
}
