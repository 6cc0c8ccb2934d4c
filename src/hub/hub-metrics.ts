/**
 * The hub's self-metrics: ingest and dead-letter totals and the consumer's state, read
 * at scrape time from what `GET /v1/status` shows; and two histograms observed where the work
 * happens: each store commit (the ingester's transaction) and each successful query request.
 */
import { Histogram, type Registry } from "prom-client";
import type { ConsumerStatus } from "../bus/bus.js";
import { BATCH_DURATION_BUCKETS_S, HTTP_DURATION_BUCKETS_S } from "../config/defaults.js";
import type { MemoryProtection } from "../http/memory-protection.js";
import type { DurationObserver } from "../metrics/http-metrics.js";
import { registerMemoryMetrics } from "../metrics/memory-metrics.js";
import { readCounter, readGauge, readLabelledCounter } from "../metrics/registry.js";

/** The ingester's totals, as `Ingester.counts` keeps them. */
export interface IngestCounts {
  readonly stored: number;
  readonly duplicates: number;
  readonly rejected: number;
  readonly batches: number;
}

export interface HubMetricsSources {
  readonly ingest: Readonly<IngestCounts>;
  readonly deadLettered: () => number;
  /** The bus consumer's status; absent for a hub fed by backfill only. */
  readonly consumer?: () => ConsumerStatus;
  readonly memory: MemoryProtection;
}

/** The observers the hub hands to its ingester and to its HTTP app. */
export interface HubMetrics {
  /** Observes one committed store transaction. */
  observeCommit(seconds: number): void;
  /** The query-latency observer of a route pattern, undefined for routes that are not queries. */
  queryObserver(route: string): DurationObserver | undefined;
}

/**
 * The `query` label of the hub's query routes: metric queries, metric data of one entity, event
 * records, and the entity listings. Other routes (tokens, backfill, status) are no queries.
 */
export function queryKind(route: string): string | undefined {
  if (route === "/v0/metrics/query" || route === "/v1alpha/metrics/query") return "metrics";
  if (route === "/v0/entities/:id/metrics/data") return "metric-data";
  if (route === "/v0/events/recordsQuery") return "events";
  if (route === "/v0/entities" || route.startsWith("/v0/entities/")) return "entities";
  return undefined;
}

/**
 * Registers the hub's histograms in `registry` and returns the observers its ingester and HTTP app
 * report to (created before them).
 */
export function registerHubHistograms(registry: Registry): HubMetrics {
  const commits = new Histogram({
    name: "vigil_hub_store_commit_duration_seconds",
    help: "Store transactions committing an ingested batch (claim of message ids and writes)",
    buckets: [...BATCH_DURATION_BUCKETS_S],
    registers: [registry],
  });
  const queries = new Histogram<"query">({
    name: "vigil_hub_query_duration_seconds",
    help: "Successful query requests by kind (metrics, metric-data, events, entities): duration until the response was sent",
    labelNames: ["query"],
    buckets: [...HTTP_DURATION_BUCKETS_S],
    registers: [registry],
  });
  return {
    observeCommit: (seconds) => commits.observe(seconds),
    queryObserver(route) {
      const kind = queryKind(route);
      return kind === undefined ? undefined : queries.labels(kind);
    },
  };
}

/** Registers the hub's metrics read at scrape time in `registry`. */
export function registerHubMetrics(registry: Registry, sources: HubMetricsSources): void {
  const { ingest } = sources;
  readLabelledCounter(
    registry,
    {
      name: "vigil_hub_messages_ingested_total",
      help: "Messages the hub ingested (bus and backfill) by result: stored, duplicate (stored before), rejected",
      labelNames: ["result"] as const,
    },
    () => [
      [{ result: "stored" }, ingest.stored],
      [{ result: "duplicate" }, ingest.duplicates],
      [{ result: "rejected" }, ingest.rejected],
    ],
  );
  readCounter(
    registry,
    {
      name: "vigil_hub_ingest_batches_total",
      help: "Batches the hub ingested (one store transaction or more each)",
    },
    () => ingest.batches,
  );
  readCounter(
    registry,
    {
      name: "vigil_hub_dead_lettered_messages_total",
      help: "Consumed messages the hub could not store, written to the dead-letter file with the reason",
    },
    sources.deadLettered,
  );
  const consumer = sources.consumer;
  if (consumer !== undefined) {
    readCounter(
      registry,
      {
        name: "vigil_hub_consumer_delivered_messages_total",
        help: "Messages the bus consumer handed to the hub and acknowledged once committed",
      },
      () => consumer().delivered,
    );
    readCounter(
      registry,
      {
        name: "vigil_hub_consumer_retries_total",
        help: "Batches the bus consumer had to deliver again, and failed attempts to reach the bus",
      },
      () => consumer().retries,
    );
    readGauge(
      registry,
      {
        name: "vigil_hub_consumer_retrying",
        help: "1 while the bus consumer retries (the store or the bus is failing), else 0",
      },
      () => (consumer().state === "retrying" ? 1 : 0),
    );
    readGauge(
      registry,
      {
        name: "vigil_hub_jetstream_consumer_lag_messages",
        help: "Messages in the JetStream stream not yet delivered to the hubs' durable consumer, as of the last batch received (0 on the in-process bus)",
      },
      () => consumer().pending ?? 0,
    );
  }
  registerMemoryMetrics(registry, sources.memory);
}
