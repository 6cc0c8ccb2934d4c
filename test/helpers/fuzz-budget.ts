/**
 * The time budget of every fuzz property (STYLE 13, undici `test/fuzzing/fuzzing.test.js`),
 * read from one environment variable so `npm test` and a nightly run differ only in it:
 *
 * - unset (`npm test`): each property stops after {@link DEFAULT_FUZZ_SECONDS} seconds or after the
 *   number of runs the test asks for, whichever comes first;
 * - `VIGIL_FUZZ_SECONDS=N` (nightly, e.g. `VIGIL_FUZZ_SECONDS=600 node scripts/run-tests.mjs test/fuzz`):
 *   each property runs for N seconds, the run counts lifted. The test runner's per-test limit
 *   (scripts/run-tests.mjs) must then be raised above N, e.g. with `--test-timeout`.
 *
 * A property interrupted by its budget passes (fast-check's default); each single run of an async
 * predicate is bounded by {@link FUZZ_RUN_TIMEOUT_MS}, so a request that hangs fails the property
 * (with its seed and shrunk counterexample) instead of the whole file timing out.
 */
/** Seconds per property when VIGIL_FUZZ_SECONDS is not set. */
export const DEFAULT_FUZZ_SECONDS = 3; // s
/** The longest one run of an async property may take before it counts as a hang. */
export const FUZZ_RUN_TIMEOUT_MS = 30_000; // ms (30 s)

function budgetSeconds(): { seconds: number; nightly: boolean } {
  const raw = process.env.VIGIL_FUZZ_SECONDS;
  if (raw === undefined || raw.trim() === "") return { seconds: DEFAULT_FUZZ_SECONDS, nightly: false };
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`VIGIL_FUZZ_SECONDS must be a positive number of seconds, not ${JSON.stringify(raw)}`);
  }
  return { seconds, nightly: true };
}

/** The budget in force, for a test's name or log line. */
export const FUZZ_BUDGET = budgetSeconds();

/** The parameters {@link fuzzBudget} sets; assignable to fast-check's parameters of any property. */
export interface FuzzParameters {
  readonly numRuns: number;
  readonly interruptAfterTimeLimit: number;
  readonly timeout: number;
  readonly includeErrorInReport: boolean;
  readonly seed?: number;
  readonly path?: string;
  readonly verbose?: boolean | 0 | 1 | 2;
  readonly endOnFailure?: boolean;
}

/**
 * fast-check parameters for one property: `numRuns` caps the runs in `npm test` (lifted in nightly
 * mode), the time limit comes from VIGIL_FUZZ_SECONDS. `replay` passes a failure's `seed` and `path`
 * (printed by fast-check) or `verbose` through, to replay or inspect it.
 */
export function fuzzBudget(
  numRuns: number,
  replay: Pick<FuzzParameters, "seed" | "path" | "verbose" | "endOnFailure"> = {},
): FuzzParameters {
  return {
    numRuns: FUZZ_BUDGET.nightly ? Number.MAX_SAFE_INTEGER : numRuns,
    interruptAfterTimeLimit: FUZZ_BUDGET.seconds * 1_000,
    timeout: FUZZ_RUN_TIMEOUT_MS,
    // The failing assertion's message in the report itself: node's test runner prints only the
    // message of the error fast-check throws, not its cause.
    includeErrorInReport: true,
    ...replay,
  };
}
