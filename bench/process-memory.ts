/**
 * The peak resident memory of a process the bench started, from `/proc/<pid>/status` (Linux): the
 * larger of the kernel's high-water mark (`VmHWM`) and the highest `VmRSS` seen by polling
 * `sample()`; and the environment the benches start vigil's services with. Not a benchmark by itself.
 */
import { readFileSync } from "node:fs";
import { canRestartInPlace, serviceEnvironment } from "../src/cli/young-generation.js";

export class PeakMemory {
  private peakRssKiB = 0;
  private hwmKiB = 0;

  /** `pid` gives the process's id, undefined once it is gone or before it started. */
  constructor(private readonly pid: () => number | undefined) {}

  /** Reads VmRSS and VmHWM once and keeps the peaks; a process that has gone is skipped. */
  sample(): void {
    const pid = this.pid();
    if (pid === undefined) return;
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, "utf8");
    } catch {
      return;
    }
    const field = (name: string): number =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
    this.peakRssKiB = Math.max(this.peakRssKiB, field("VmRSS"));
    this.hwmKiB = Math.max(this.hwmKiB, field("VmHWM"));
  }

  /** The peak in MiB, to one decimal. */
  peakMiB(): number {
    return Math.round((Math.max(this.peakRssKiB, this.hwmKiB) / 1024) * 10) / 10;
  }
}

/**
 * The environment the benches start a vigil service process with, as docs/operations.md deploys
 * one: a Node that can start itself again in place gives itself glibc's malloc threshold
 * (src/cli/young-generation.ts); on one that cannot (Node 20) the operator sets it, and so does the
 * bench.
 */
export function serviceEnv(): NodeJS.ProcessEnv {
  return canRestartInPlace() ? process.env : serviceEnvironment();
}

/** A line for a bench's output saying what {@link serviceEnv} adds, or undefined when nothing. */
export function serviceEnvNote(): string | undefined {
  const env = serviceEnv();
  return env.GLIBC_TUNABLES === process.env.GLIBC_TUNABLES
    ? undefined
    : `# vigil's services run with GLIBC_TUNABLES=${env.GLIBC_TUNABLES}: this Node cannot start itself again in place to set it, so the bench sets it as docs/operations.md tells operators to`;
}
