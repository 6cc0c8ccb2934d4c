/**
 * The heap growth of a long-running vigil process: V8 lets the heap grow past what
 * survived the last full garbage collection by a factor it picks from the machine's memory and the
 * collector's speed, up to 4×, so a process that keeps ~40 MB live under load held 150–160 MB of old
 * space. {@link HEAP_GROWING_PERCENT} fixes the factor. V8 reads the flag at every full collection,
 * so setting it once the process runs takes effect from the next one; a process started with its
 * own `--heap-growing-percent` keeps it.
 */
import { setFlagsFromString } from "node:v8";
import { HEAP_GROWING_PERCENT } from "../config/defaults.js";

/** The V8 flag to set for a process started with `execArgv`, or undefined when it names its own. */
export function heapGrowthFlag(
  execArgv: readonly string[],
  percent: number = HEAP_GROWING_PERCENT,
): string | undefined {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg))) return undefined;
  return `--heap-growing-percent=${percent}`;
}

/** Sets {@link heapGrowthFlag} for this process. */
export function limitHeapGrowth(): void {
  const flag = heapGrowthFlag(process.execArgv);
  if (flag !== undefined) setFlagsFromString(flag);
}
