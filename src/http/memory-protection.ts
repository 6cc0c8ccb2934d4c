/**
 * Memory protection (seed B; DESIGN 3.5): when the process's resident memory passes
 * `ratio × limitMb`, a service stops taking work instead of growing. The probe's ingest endpoints
 * answer 503 with Retry-After (`check()`); the gateway stops acknowledging probe changes (`over()`),
 * which slows its probes down (DESIGN 1 "Hand-offs"). RSS is read at most every
 * MEMORY_CHECK_INTERVAL_MS, so a check costs nothing per request.
 */
import { MEMORY_CHECK_INTERVAL_MS, RETRY_AFTER_SECONDS } from "../config/defaults.js";
import type { MemoryProtectionSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";

const BYTES_PER_MB = 1024 * 1024;

/** The RSS watch of one process against its `memoryProtection` setting. */
export class MemoryProtection {
  private checkedAt = Number.NEGATIVE_INFINITY;
  private rssBytes = 0;
  /** Requests `check()` refused since the process started (self-metrics). */
  private rejections = 0;

  /**
   * `service` names the process in the 503 body (`probe`, `gateway`); `settings` is read on every
   * check, so a reloaded setup applies at once; `readRss` defaults to `process.memoryUsage.rss()`.
   */
  constructor(
    private readonly service: string,
    private readonly settings: () => MemoryProtectionSetup,
    private readonly readRss: () => number = () => process.memoryUsage.rss(),
  ) {}

  /** True while the resident memory is above the threshold. */
  over(now = Date.now()): boolean {
    if (now - this.checkedAt >= MEMORY_CHECK_INTERVAL_MS) {
      this.rssBytes = this.readRss();
      this.checkedAt = now;
    }
    return this.rssBytes > this.thresholdBytes();
  }

  /** Throws MEMORY_PROTECTION (503, `Retry-After: RETRY_AFTER_SECONDS`) when over the threshold. */
  check(now = Date.now()): void {
    if (!this.over(now)) return;
    this.rejections += 1;
    throw new VigilError(
      "MEMORY_PROTECTION",
      {
        service: this.service,
        rssMb: Math.round(this.rssBytes / BYTES_PER_MB),
        thresholdMb: Math.round(this.thresholdBytes() / BYTES_PER_MB),
      },
      { headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } },
    );
  }

  /**
   * Resident memory at the last read and the threshold, in bytes, and the requests `check()` has
   * refused (status pages, self-metrics).
   */
  reading(): { rssBytes: number; thresholdBytes: number; rejections: number } {
    return { rssBytes: this.rssBytes, thresholdBytes: this.thresholdBytes(), rejections: this.rejections };
  }

  private thresholdBytes(): number {
    const { limitMb, ratio } = this.settings();
    return limitMb * ratio * BYTES_PER_MB;
  }
}
