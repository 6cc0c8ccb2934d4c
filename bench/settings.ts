/**
 * Knobs every bench reads from the environment, so `npm run bench` can be tried quickly:
 * `VIGIL_BENCH_SECONDS=3 npm run bench` runs each timed part for 3 s (a smoke run; the figures of
 * docs/performance.md come from the full durations), `VIGIL_BENCH_ROUNDS` sets the A/B rounds.
 */

/** Set when the run is a smoke run (VIGIL_BENCH_SECONDS given). */
export const SMOKE = process.env.VIGIL_BENCH_SECONDS !== undefined;

function positive(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, not '${text}'`);
  return value;
}

/** Seconds of a timed part: VIGIL_BENCH_SECONDS when set, else the bench's own duration. */
export function benchSeconds(fallback: number): number {
  return positive("VIGIL_BENCH_SECONDS", fallback);
}

/** A/B rounds of a comparison: VIGIL_BENCH_ROUNDS when set (at least 1), else `fallback`. */
export function benchRounds(fallback: number): number {
  return Math.max(1, Math.round(positive("VIGIL_BENCH_ROUNDS", fallback)));
}
