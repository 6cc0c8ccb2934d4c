/**
 * Memory-protection metrics (DESIGN 3.5), the same in every server's registry: the
 * threshold, whether the process is over it, and the requests refused because it was.
 */
import type { Registry } from "prom-client";
import type { MemoryProtection } from "../http/memory-protection.js";
import { readCounter, readGauge } from "./registry.js";

/** Registers the memory-protection metrics of `memory` in `registry`, read at scrape time. */
export function registerMemoryMetrics(registry: Registry, memory: MemoryProtection): void {
  readGauge(
    registry,
    {
      name: "vigil_memory_protection_threshold_bytes",
      help: "Resident memory (RSS) above which this server refuses new work (memoryProtection: limitMb × ratio)",
    },
    () => memory.reading().thresholdBytes,
  );
  readGauge(
    registry,
    {
      name: "vigil_memory_protection_active",
      help: "1 while the process's resident memory is above the memory-protection threshold, else 0",
    },
    () => (memory.over() ? 1 : 0),
  );
  readCounter(
    registry,
    {
      name: "vigil_memory_protection_rejections_total",
      help: "Requests answered 503 because the process was over its memory-protection threshold",
    },
    () => memory.reading().rejections,
  );
}
