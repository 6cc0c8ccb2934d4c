/**
 * Self-metrics registries: every vigil server (probe, gateway, hub) has a registry of its
 * own, never prom-client's global default one, so `vigil up` (three servers in one Node process)
 * and tests that start several services in one process never collide on a metric name. What the
 * registries hold is read when Prometheus scrapes (`collect()` over the counters and status objects
 * the services already keep), so serving metrics costs nothing between scrapes.
 *
 * Process metrics (CPU, resident memory, heap, event-loop lag, GC; prom-client's default set) are
 * one per Node process: they live in one process-wide registry, created at the first scrape, and
 * every server appends them to its own metrics. In `vigil up` each of the three ports therefore
 * shows the same process figures beside its own role's metrics (docs/operations.md "Metrics").
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";

/** The Content-Type of the Prometheus text exposition format (version 0.0.4). */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** A fresh registry for one server (never the global default registry). */
export function createMetricsRegistry(): Registry {
  return new Registry();
}

let processRegistry: Registry | undefined;

/** The process-wide registry of prom-client's default process metrics, created on first use. */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** The text a scrape answers: the server's own metrics, then the process metrics. */
export async function metricsText(registry: Registry): Promise<string> {
  const [own, process] = await Promise.all([registry.metrics(), processMetrics().metrics()]);
  return `${own}${process}`;
}

/** Label values and the value of one series, as a collect-time reader returns them. */
export type Sample<L extends string> = readonly [labels: Readonly<Record<L, string>>, value: number];

interface Described {
  readonly name: string;
  readonly help: string;
}

/**
 * A counter whose value is read from a total the service already keeps, at scrape time. A total
 * that goes down (a component replaced at a reload) reads as a counter reset, which PromQL's
 * `rate()` and `increase()` handle.
 */
export function readCounter(registry: Registry, metric: Described, read: () => number): void {
  new Counter({
    ...metric,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

/** A labelled counter read at scrape time: one series per sample `read` returns. */
export function readLabelledCounter<L extends string>(
  registry: Registry,
  metric: Described & { readonly labelNames: readonly L[] },
  read: () => Iterable<Sample<L>>,
): void {
  new Counter<L>({
    ...metric,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.inc(labels as Record<L, string>, value);
    },
  });
}

/** A gauge read at scrape time. */
export function readGauge(registry: Registry, metric: Described, read: () => number): void {
  new Gauge({
    ...metric,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** A labelled gauge read at scrape time: one series per sample `read` returns. */
export function readLabelledGauge<L extends string>(
  registry: Registry,
  metric: Described & { readonly labelNames: readonly L[] },
  read: () => Iterable<Sample<L>>,
): void {
  new Gauge<L>({
    ...metric,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.set(labels as Record<L, string>, value);
    },
  });
}
