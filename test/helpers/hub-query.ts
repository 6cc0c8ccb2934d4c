/**
 * One aggregation of one cell reference for one entity, over whole days, from a hub with security
 * off: what the end-to-end tests ask to see whether data arrived.
 */
import assert from "node:assert/strict";

export interface AggregateOptions {
  /** `svc.name` of the entity. */
  readonly entity: string;
  /** A cell reference such as `s/dv/{rowname}/v`. */
  readonly include: string;
  readonly aggregation: "svc.count" | "svc.max";
  /** Default: the hour around now. */
  readonly from?: string;
  readonly to?: string;
}

/** The aggregation's value per bucket (nulls left out); asserts a 200. */
export async function aggregate(hub: string, options: AggregateOptions): Promise<number[]> {
  const response = await fetch(`${hub}/v0/metrics/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      zoneId: "UTC",
      filter: {
        entities: `svc.name = "${options.entity}"`,
        range: {
          from: options.from ?? new Date(Date.now() - 3_600_000).toISOString(),
          to: options.to ?? new Date(Date.now() + 3_600_000).toISOString(),
        },
      },
      metrics: [{ identifier: "m", include: [options.include] }],
      aggregations: [options.aggregation],
      bucketing: { duration: "P1D" },
    }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const body = JSON.parse(text) as { data: { metrics: { m: Record<string, number | null> } }[] };
  return body.data
    .map((d) => d.metrics.m[options.aggregation])
    .filter((v): v is number => typeof v === "number");
}

/** Samples counted for the cell reference. */
export async function countSamples(
  hub: string,
  options: Omit<AggregateOptions, "aggregation">,
): Promise<number> {
  return (await aggregate(hub, { ...options, aggregation: "svc.count" })).reduce((n, v) => n + v, 0);
}

/** The largest value of the cell reference, undefined when it has none. */
export async function maxValue(
  hub: string,
  options: Omit<AggregateOptions, "aggregation">,
): Promise<number | undefined> {
  const values = await aggregate(hub, { ...options, aggregation: "svc.max" });
  return values.length === 0 ? undefined : Math.max(...values);
}
