/**
 * The probe's self-metrics, read at scrape time from what the probe keeps anyway: the
 * accepted-data totals its ingest routes add to, the counters of every stream (the Streams
 * Dataview's), the link's status and memory protection.
 *
 * Streams are summed over the probe: stream names are chosen by clients, so they are no label.
 */
import type { Registry } from "prom-client";
import type { MemoryProtection } from "../http/memory-protection.js";
import { registerMemoryMetrics } from "../metrics/memory-metrics.js";
import { readCounter, readGauge } from "../metrics/registry.js";
import type { LinkClientStatus } from "./link-client.js";
import type { StreamCounters } from "./streams/stream-buffer.js";

/** What the probe's ingest routes accepted since it started; plain numbers, added to per request. */
export interface AcceptedTotals {
  /** Rows stored by PUT dataview (those kept under the row limit) and PUT row. */
  rows: number;
  /** Cells of those rows as the client sent them. */
  cells: number;
  /** Rows a PUT dataview dropped at the row limit. */
  droppedRows: number;
}

export interface ProbeMetricsSources {
  readonly accepted: Readonly<AcceptedTotals>;
  /** The counters of every stream the probe holds now. */
  readonly streams: () => Iterable<StreamCounters>;
  readonly link: () => LinkClientStatus;
  readonly memory: MemoryProtection;
}

/** Sums of the counters of every stream. */
function streamTotals(streams: Iterable<StreamCounters>) {
  const totals = { streams: 0, buffered: 0, capacity: 0, fullest: 0, received: 0, lost: 0 };
  for (const s of streams) {
    totals.streams += 1;
    totals.buffered += s.currentBufferSize;
    totals.capacity += s.maxBufferSize;
    if (s.maxBufferSize > 0) totals.fullest = Math.max(totals.fullest, s.currentBufferSize / s.maxBufferSize);
    totals.received += s.totalMessagesReceived;
    totals.lost += s.totalMessagesLost;
  }
  return totals;
}

/** Registers the probe's metrics in `registry` (one registry per probe server). */
export function registerProbeMetrics(registry: Registry, sources: ProbeMetricsSources): void {
  const { accepted } = sources;
  readCounter(
    registry,
    {
      name: "vigil_probe_rows_accepted_total",
      help: "Dataview rows accepted by PUT dataview (rows kept under the row limit) and PUT row",
    },
    () => accepted.rows,
  );
  readCounter(
    registry,
    {
      name: "vigil_probe_cells_accepted_total",
      help: "Cells of the accepted rows, as the clients sent them",
    },
    () => accepted.cells,
  );
  readCounter(
    registry,
    {
      name: "vigil_probe_rows_dropped_total",
      help: "Rows a PUT dataview dropped because the dataview's row limit was reached",
    },
    () => accepted.droppedRows,
  );

  // A few passes over the streams per scrape (at most 100 streams per sampler): nothing kept between.
  const streams = () => streamTotals(sources.streams());
  readGauge(
    registry,
    { name: "vigil_probe_streams", help: "Streams the probe holds" },
    () => streams().streams,
  );
  readGauge(
    registry,
    { name: "vigil_probe_stream_buffered_messages", help: "Messages held in all stream buffers" },
    () => streams().buffered,
  );
  readGauge(
    registry,
    {
      name: "vigil_probe_stream_buffer_capacity_messages",
      help: "Sum of the stream buffers' sizes (each sampler's bufferSize, per stream)",
    },
    () => streams().capacity,
  );
  readGauge(
    registry,
    {
      name: "vigil_probe_stream_buffer_fill_ratio",
      help: "Fill of the fullest stream buffer, 0 to 1 (1: the next message drops the oldest)",
    },
    () => streams().fullest,
  );
  readCounter(
    registry,
    { name: "vigil_probe_stream_messages_received_total", help: "Stream messages received (PUT stream)" },
    () => streams().received,
  );
  readCounter(
    registry,
    {
      name: "vigil_probe_stream_messages_lost_total",
      help: "Stream messages dropped, oldest first, because their stream's buffer was full",
    },
    () => streams().lost,
  );

  readGauge(
    registry,
    { name: "vigil_probe_link_up", help: "1 while the link to the gateway is up, else 0" },
    () => (sources.link().state === "up" ? 1 : 0),
  );
  readGauge(
    registry,
    {
      name: "vigil_probe_link_outgoing_changes",
      help: "Accepted changes waiting in the outgoing buffer to be sent to the gateway (ingest answers 503 when it is full)",
    },
    () => sources.link().outgoing,
  );
  readGauge(
    registry,
    {
      name: "vigil_probe_ingest_waiting_requests",
      help: "Ingest requests waiting for room in the outgoing buffer (each up to 250 ms, then answered 503)",
    },
    () => sources.link().waitingRequests,
  );
  readCounter(
    registry,
    {
      name: "vigil_probe_ingest_waited_requests_total",
      help: "Ingest requests that waited for room in the outgoing buffer (then taken, or answered 503 after 250 ms)",
    },
    () => sources.link().waitedRequests,
  );
  readCounter(
    registry,
    { name: "vigil_probe_link_connections_total", help: "Connections made to the gateway" },
    () => sources.link().connections,
  );
  registerMemoryMetrics(registry, sources.memory);
}
