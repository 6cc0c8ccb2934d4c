/**
 * The bucket rule of a metric query (DESIGN 5.3) as both stores spell it: the grid of each bucket
 * kind on the zone's local clock, the local floor of a time on that grid in the database's SQL, the
 * grouping of a range's constant-offset segments into scans, and the instants where a query may be
 * cut into parts that answer in order. In epoch milliseconds, like zone-offsets.ts.
 */
import type { BucketSpec, MetricQueryPlan } from "../store.js";
import {
  DAY_MS,
  FIRST_MONDAY_MS,
  MINUTE_MS,
  type ScanWindow,
  segments,
  WEEK_MS,
  type ZoneOffsets,
} from "./zone-offsets.js";

/** The bucket kinds on the zone's clock (`count` buckets divide the range instead). */
export type GridKind = Exclude<BucketSpec["kind"], "count">;

/**
 * Most scans of `samples` one statement makes: a range with more offset segments than this (a
 * London query over more than eight years) scans groups of consecutive segments, choosing each
 * sample's segment with a CASE.
 */
export const MAX_SEGMENT_SCANS = 16;

/** `all` (consecutive segments) in at most {@link MAX_SEGMENT_SCANS} runs of equal length but the last. */
export function scanGroups<S>(all: readonly S[]): S[][] {
  const perScan = Math.ceil(all.length / MAX_SEGMENT_SCANS);
  const groups: S[][] = [];
  for (let first = 0; first < all.length; first += perScan) groups.push(all.slice(first, first + perScan));
  return groups;
}

/**
 * The grid of a bucket kind: its size and origin (a grid point) in local ms; none for months (no
 * fixed size) and counts (not on the clock). Sub-day sizes divide a day, so their grid from local
 * midnight is their grid from the local epoch.
 */
export function bucketGrid(
  bucket: BucketSpec,
): { readonly size: number; readonly origin: number } | undefined {
  switch (bucket.kind) {
    case "minutes":
      return { size: bucket.minutes * MINUTE_MS, origin: 0 };
    case "day":
      return { size: DAY_MS, origin: 0 };
    case "week":
      return { size: WEEK_MS, origin: FIRST_MONDAY_MS };
    case "month":
    case "count":
      return undefined;
  }
}

/** What a dialect spells for {@link gridTruncations}. */
export interface GridSql {
  /** `x` modulo `m` rounded toward minus infinity, for SQL integer expressions. */
  floorMod(x: string, m: string): string;
  /** A duration given in ms as an integer literal in the dialect's time unit. */
  duration(ms: number): string;
  /** The first instant of the calendar month of local time `l`, in the dialect's unit. */
  monthStart(l: string): string;
}

/**
 * The local floor of a local time `l` (an expression, in the dialect's unit since the local epoch)
 * for each bucket kind on the clock: plain arithmetic for minutes (`size`, the dialect's spelling of
 * the bucket's size, often a parameter), days and ISO weeks; the dialect's calendar for months.
 */
export function gridTruncations(d: GridSql): Record<GridKind, (l: string, size: string) => string> {
  return {
    minutes: (l, size) => `(${l} - ${d.floorMod(l, size)})`,
    day: (l) => `(${l} - ${d.floorMod(l, d.duration(DAY_MS))})`,
    week: (l) => `(${l} - ${d.floorMod(`${l} - ${d.duration(FIRST_MONDAY_MS)}`, d.duration(WEEK_MS))})`,
    month: (l) => d.monthStart(l),
  };
}

/**
 * An instant near `at` inside `window` (strictly after its start, before its end) that is a bucket
 * boundary no bucket spans: every sample before it falls in a bucket that starts before it, every
 * sample from it on in one that starts at or after it. It is a grid point of the bucket kind (a
 * multiple of the size from local midnight, a local midnight, a local Monday midnight) inside a
 * stretch of constant offset, after any transition that opened that stretch, so the bucket rule
 * maps it to itself; for count buckets, a boundary of the `range` they divide (`range` is needed
 * then, from `at` ≥ its start). Undefined when there is none near `at`, and always for month
 * buckets. A query can then run as separate statements on either side of it whose answers, put one
 * after the other, are the whole answer in order.
 */
export function splitInstant(
  bucket: BucketSpec,
  offsets: ZoneOffsets,
  window: ScanWindow,
  at: number,
  range?: Pick<MetricQueryPlan, "from" | "to">,
): number | undefined {
  if (bucket.kind === "count") {
    // Boundaries from + ⌈i·W/N⌉ do not depend on the zone: the one at or before `at`, or the next.
    if (range === undefined) return undefined;
    const from = BigInt(range.from);
    const width = BigInt(range.to - range.from);
    const n = BigInt(bucket.count);
    const i = ((BigInt(at) - from) * n) / width;
    for (const j of [i, i + 1n]) {
      const t = Number(from + (j * width + n - 1n) / n);
      if (t > window.from && t < window.to) return t;
    }
    return undefined;
  }
  const grid = bucketGrid(bucket);
  if (grid === undefined) return undefined;
  const { size, origin } = grid;
  for (const segment of segments(offsets, window)) {
    if (at < segment.from || at >= segment.to) continue;
    const local = at + segment.offsetMs;
    const floor = Math.floor((local - origin) / size) * size + origin - segment.offsetMs;
    for (const t of [floor, floor + size]) {
      if (t >= segment.from && t < segment.to && t > window.from && t < window.to) return t;
    }
  }
  return undefined;
}
