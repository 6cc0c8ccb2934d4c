/**
 * Memory protection (seed B; DESIGN 3.5): when the process's resident memory passes
 * `ratio × limitMb`, ingest endpoints answer 503 with Retry-After instead of growing.
 * RSS is read at most every CHECK_INTERVAL_MS, so the check costs nothing per request.
 */
import { VigilError } from "../errors/catalog.js";

const CHECK_INTERVAL_MS = 250; // 0.25 s between RSS reads
const RETRY_AFTER_S = 5; // seconds a refused client is told to wait

export class MemoryProtection {
  private checkedAt = 0;
  private rssBytes = 0;

  constructor(
    private readonly settings: () => { limitMb: number; ratio: number },
    private readonly readRss: () => number = () => process.memoryUsage.rss(),
  ) {}

  /** Throws MEMORY_PROTECTION when over the threshold. */
  check(now = Date.now()): void {
    if (now - this.checkedAt >= CHECK_INTERVAL_MS) {
      this.rssBytes = this.readRss();
      this.checkedAt = now;
    }
    const { limitMb, ratio } = this.settings();
    const thresholdBytes = limitMb * ratio * 1024 * 1024;
    if (this.rssBytes > thresholdBytes) {
      throw new VigilError(
        "MEMORY_PROTECTION",
        { rssMb: Math.round(this.rssBytes / 1048576), thresholdMb: Math.round(limitMb * ratio) },
        { headers: { "Retry-After": String(RETRY_AFTER_S) } },
      );
    }
  }
}
