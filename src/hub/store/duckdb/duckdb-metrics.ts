/**
 * Runs a metric query on DuckDB (DESIGN 5.3): the zone's offsets over the scanned window (read from
 * DuckDB's ICU once per zone and window, then kept), then the one statement of
 * duckdb-metrics-sql.ts, and reads its rows. The PostgreSQL store's counterpart is
 * postgres-metrics.ts; what both share (the plan, the segments, the bucket grid) is in `../core/`.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { fixedZoneOffsets, parseZone, type ZoneOffsets } from "../core/zone-offsets.js";
import type { MetricQueryPlan, MetricRowBatches } from "../store.js";
import {
  buildMetricQuery,
  buildZoneOffsetsQuery,
  type DuckDbScanWindow,
  metricRowBatches,
  readZoneOffsets,
} from "./duckdb-metrics-sql.js";

/** Zone-offset answers kept for metric queries (a few hundred bytes each). */
const ZONE_OFFSETS_CACHE_ENTRIES = 256; // entries

/** The metric queries of one DuckDB store, with the zone offsets they have read. */
export class DuckDbMetrics {
  /** Offsets of named zones around recent query ranges (buildZoneOffsetsQuery's key). */
  private readonly zoneOffsets = new Map<string, ZoneOffsets>();

  /** Forgets the offsets read (a reopened database reads them again). */
  forget(): void {
    this.zoneOffsets.clear();
  }

  /** The rows of `plan` over `window`, answered on `reader`, made a DuckDB chunk at a time. */
  async query(
    reader: DuckDBConnection,
    plan: MetricQueryPlan,
    window: DuckDbScanWindow,
  ): Promise<MetricRowBatches> {
    const query = buildMetricQuery(plan, await this.offsets(reader, plan, window), window);
    return metricRowBatches(await reader.run(query.sql, query.values, query.types), query);
  }

  private async offsets(
    reader: DuckDBConnection,
    plan: MetricQueryPlan,
    window: DuckDbScanWindow,
  ): Promise<ZoneOffsets> {
    const zone = parseZone(plan.zone);
    if (zone.kind === "fixed") return fixedZoneOffsets(zone.offsetSeconds);
    // Count buckets ignore the zone's clock: without time windows no offset is read.
    if (plan.bucket.kind === "count" && plan.timeWindows.length === 0) return fixedZoneOffsets(0);
    const q = buildZoneOffsetsQuery(zone.name, window);
    const known = this.zoneOffsets.get(q.key);
    if (known !== undefined) return known;
    const offsets = readZoneOffsets((await reader.runAndReadAll(q.sql, q.values, q.types)).getRows());
    // Keys come from requests: the cache must not grow without limit.
    if (this.zoneOffsets.size >= ZONE_OFFSETS_CACHE_ENTRIES) this.zoneOffsets.clear();
    this.zoneOffsets.set(q.key, offsets);
    return offsets;
  }
}
