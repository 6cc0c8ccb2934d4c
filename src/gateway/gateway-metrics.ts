/**
 * The gateway's self-metrics, read at scrape time from the publisher's and the probe
 * links' status (what `GET /v1/status` shows), the message tap and memory protection; and the
 * JetStream publish targets' latency histogram and counters.
 *
 * The `sink` label is a publish target's name (`memory`, `file:<path>`, `nats:<url>/<stream>`):
 * targets come from the setup file, so the label set is bounded by it.
 */
import { Histogram, type Registry } from "prom-client";
import { BATCH_DURATION_BUCKETS_S } from "../config/defaults.js";
import type { MemoryProtection } from "../http/memory-protection.js";
import { registerMemoryMetrics } from "../metrics/memory-metrics.js";
import {
  readCounter,
  readGauge,
  readLabelledCounter,
  readLabelledGauge,
  type Sample,
} from "../metrics/registry.js";
import type { LinkRefusals } from "./link-refusals.js";
import type { LinkStatus } from "./link-server.js";
import type { NatsSinkStats } from "./publish/nats-sink.js";
import type { PublisherStatus } from "./publish/publisher.js";
import type { SinkStatus } from "./publish/sink-channel.js";

export interface GatewayMetricsSources {
  readonly publisher: () => PublisherStatus;
  readonly links: () => readonly LinkStatus[];
  readonly linkRefusals: LinkRefusals;
  readonly tap: () => { readonly clients: number; readonly dropped: number };
  readonly memory: MemoryProtection;
}

const LINK_STATES: readonly LinkStatus["state"][] = ["handshake", "syncing", "up"];

/** Registers the gateway's metrics in `registry` (one registry per gateway server). */
export function registerGatewayMetrics(registry: Registry, sources: GatewayMetricsSources): void {
  readCounter(
    registry,
    {
      name: "vigil_gateway_messages_published_total",
      help: "Public-v2 messages the gateway published (handed to every publish target)",
    },
    () => sources.publisher().published,
  );
  readCounter(
    registry,
    {
      name: "vigil_gateway_messages_invalid_total",
      help: "Messages the gateway built that failed the public-v2 schema and were not sent (a gateway bug)",
    },
    () => sources.publisher().invalid,
  );
  const sinks = (read: (sink: SinkStatus) => number) =>
    function* (): Iterable<Sample<"sink">> {
      for (const sink of sources.publisher().sinks) yield [{ sink: sink.name }, read(sink)];
    };
  const sinkMetric = (name: string, help: string) => ({ name, help, labelNames: ["sink"] as const });
  readLabelledCounter(
    registry,
    sinkMetric(
      "vigil_gateway_sink_messages_published_total",
      "Messages a publish target acknowledged (stored durably by it)",
    ),
    sinks((s) => s.acknowledged),
  );
  readLabelledGauge(
    registry,
    sinkMetric(
      "vigil_gateway_sink_buffered_messages",
      "Messages waiting in a publish target's buffer or in flight to it",
    ),
    sinks((s) => s.buffered),
  );
  readLabelledGauge(
    registry,
    sinkMetric(
      "vigil_gateway_sink_buffer_capacity_messages",
      "Messages a publish target's buffer holds before the gateway stops taking probe changes",
    ),
    sinks((s) => s.capacity),
  );
  readLabelledGauge(
    registry,
    sinkMetric(
      "vigil_gateway_sink_in_flight_batches",
      "Batches sent to a publish target and not acknowledged",
    ),
    sinks((s) => s.inFlightBatches),
  );
  readLabelledCounter(
    registry,
    sinkMetric("vigil_gateway_sink_retries_total", "Batches sent again to a publish target after a failure"),
    sinks((s) => s.retries),
  );
  readLabelledCounter(
    registry,
    sinkMetric(
      "vigil_gateway_sink_abandoned_messages_total",
      "Messages a publish target had not taken when a stop's deadline passed (not delivered)",
    ),
    sinks((s) => s.abandoned),
  );
  readLabelledGauge(
    registry,
    sinkMetric("vigil_gateway_sink_failing", "1 while a publish target fails and is retried, else 0"),
    sinks((s) => (s.state === "failing" ? 1 : 0)),
  );

  readLabelledGauge(
    registry,
    {
      name: "vigil_gateway_probe_links",
      help: "Probe links by state (handshake, syncing, up)",
      labelNames: ["state"] as const,
    },
    function* () {
      const links = sources.links();
      for (const state of LINK_STATES) {
        yield [{ state }, links.filter((link) => link.state === state).length] as const;
      }
    },
  );
  readGauge(
    registry,
    {
      name: "vigil_gateway_probe_links_waiting",
      help: "Probe links whose acknowledgements wait for room in the publish targets or for memory",
    },
    () => sources.links().filter((link) => link.waiting).length,
  );
  readLabelledCounter(
    registry,
    {
      name: "vigil_gateway_link_refusals_total",
      help: "Probe links refused or ended for what the peer did (401 missing or wrong secret, 503 busy, hello timeout, protocol error, frame too large or too deep), by reason",
      labelNames: ["reason"] as const,
    },
    function* () {
      for (const [reason, count] of sources.linkRefusals.counts()) yield [{ reason }, count] as const;
    },
  );
  readGauge(
    registry,
    { name: "vigil_gateway_tap_clients", help: "Clients of the live message tap (GET /v1/messages)" },
    () => sources.tap().clients,
  );
  readCounter(
    registry,
    {
      name: "vigil_gateway_tap_disconnected_total",
      help: "Message-tap clients disconnected because they read too slowly",
    },
    () => sources.tap().dropped,
  );
  registerMemoryMetrics(registry, sources.memory);
}

/** What the JetStream metrics read of a NATS publish target. */
export interface JetStreamSinkSource {
  readonly name: string;
  stats(): NatsSinkStats;
}

/** The JetStream publish targets' metrics; `createSinks` hands each NATS target to it. */
export interface JetStreamMetrics {
  /** Observes one batch's publish: from the first message sent to the last acknowledgement. */
  observePublish(sink: string, seconds: number): void;
  /** Reads the target's counters at every scrape. */
  track(sink: JetStreamSinkSource): void;
}

/** Registers the JetStream publish targets' metrics in `registry`. */
export function registerJetStreamMetrics(registry: Registry): JetStreamMetrics {
  const tracked: JetStreamSinkSource[] = [];
  const latency = new Histogram<"sink">({
    name: "vigil_gateway_jetstream_publish_duration_seconds",
    help: "JetStream publish of one batch: from its first message sent to its last acknowledgement",
    labelNames: ["sink"],
    buckets: [...BATCH_DURATION_BUCKETS_S],
    registers: [registry],
  });
  const each = (read: (stats: NatsSinkStats) => number) =>
    function* (): Iterable<Sample<"sink">> {
      for (const sink of tracked) yield [{ sink: sink.name }, read(sink.stats())];
    };
  readLabelledCounter(
    registry,
    {
      name: "vigil_gateway_jetstream_duplicates_total",
      help: "Messages JetStream acknowledged as duplicates (sent again after a failure, stored once)",
      labelNames: ["sink"],
    },
    each((s) => s.duplicates),
  );
  readLabelledCounter(
    registry,
    {
      name: "vigil_gateway_jetstream_dropped_too_large_total",
      help: "Messages dropped because they were larger than the NATS server's max_payload",
      labelNames: ["sink"],
    },
    each((s) => s.droppedTooLarge),
  );
  return {
    observePublish: (sink, seconds) => latency.labels(sink).observe(seconds),
    track: (sink) => {
      tracked.push(sink);
    },
  };
}
