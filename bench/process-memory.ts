/**
 * The peak resident memory of a process the bench started, from `/proc/<pid>/status` (Linux): the
 * larger of the kernel's high-water mark (`VmHWM`) and the highest `VmRSS` seen by polling
 * `sample()`. Not a benchmark by itself.
 */
import { readFileSync } from "node:fs";

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
