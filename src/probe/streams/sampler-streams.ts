/**
 * The streams of one rest-api sampler and its `Streams Dataview` (DESIGN 3.4, seed B "Streams
 * Dataview"): headlines `samplingStatus`, `totalStreams`; one row per stream, in the order the
 * streams were created, with columns `name`, `currentBufferSize`, `maxBufferSize`,
 * `totalMessagesReceived`, `totalMessagesLost`. The dataview exists from the first stream on.
 *
 * What the gateway must learn is collected, not sent per message: a PUT marks its stream's row
 * dirty and `changes()` turns what is dirty into link changes (the whole dataview the first time,
 * then row upserts and a headline update). Many concurrent PUTs between two flushes cost one row
 * change, and the counters a change carries are read when it is made, so they are always exact.
 */
import type { Change, DataviewAddress, WireHeadlines } from "../../link/protocol.js";
import { encodeCells } from "../../link/protocol.js";
import type { StateSnapshot } from "../state-cursor.js";
import { StreamBuffer, type StreamCounters, type StreamMessage } from "./stream-buffer.js";

/** The reserved name of the dataview that shows a sampler's streams (seed B rule 7). */
export const STREAMS_DATAVIEW_NAME = "Streams Dataview";

/** Columns of the Streams Dataview, in display order (seed B). */
export const STREAMS_COLUMNS = [
  "name",
  "currentBufferSize",
  "maxBufferSize",
  "totalMessagesReceived",
  "totalMessagesLost",
] as const;

/** `samplingStatus` of a Streams Dataview: streams are pushed, so sampling is always fine. */
const STREAMS_SAMPLING_STATUS = "OK";

/** What the Streams Dataview shows of a sampler, for GET on the sampler (DESIGN 3.1). */
export interface StreamsView {
  readonly samplingStatus: string;
  readonly totalStreams: number;
  readonly streams: readonly StreamCounters[];
}

/** A consumer of streams: anything with an identity (an fkm sampler's state). */
export type Consumer = object;

/** The streams of one rest-api sampler, keyed by stream name (names are data: a Map). */
export class SamplerStreams {
  private readonly streams = new Map<string, StreamBuffer<Consumer>>();
  /** Consumers per stream name, also of streams not created yet. */
  private readonly consumers = new Map<string, Set<Consumer>>();
  private readonly dirty = new Set<string>();
  /** The dataview must be sent whole (created, or created again after a reload). */
  private announce = false;
  private headlinesDirty = false;
  /** Whether the gateway holds the dataview (it was announced and not deleted since). */
  private published = false;
  private at = 0;

  constructor(
    private address: DataviewAddress,
    private bufferSize: number,
  ) {}

  get size(): number {
    return this.streams.size;
  }

  get(name: string): StreamBuffer<Consumer> | undefined {
    return this.streams.get(name);
  }

  /** Whether anything changed since the last `changes()`. */
  get pending(): boolean {
    return this.announce || this.headlinesDirty || this.dirty.size > 0;
  }

  /**
   * Takes one message for stream `name`, creating the stream (and with the first stream the
   * dataview) when it does not exist; the caller checks the stream bound first.
   */
  push(name: string, message: StreamMessage): StreamCounters {
    let stream = this.streams.get(name);
    if (stream === undefined) {
      stream = new StreamBuffer<Consumer>(name, this.bufferSize);
      for (const consumer of this.consumers.get(name) ?? []) stream.addConsumer(consumer);
      this.streams.set(name, stream);
      if (this.published) this.headlinesDirty = true;
      else this.announce = true;
    }
    stream.push(message);
    this.touch(name, message.at);
    return stream.counters();
  }

  /** Registers `consumer` on stream `name` (which may not exist yet). */
  addConsumer(name: string, consumer: Consumer): void {
    let set = this.consumers.get(name);
    if (set === undefined) {
      set = new Set();
      this.consumers.set(name, set);
    }
    set.add(consumer);
    this.streams.get(name)?.addConsumer(consumer);
  }

  /** Removes `consumer` from stream `name`; what nobody else waits for leaves the buffer. */
  removeConsumer(name: string, consumer: Consumer, at: number): void {
    const set = this.consumers.get(name);
    set?.delete(consumer);
    if (set?.size === 0) this.consumers.delete(name);
    const stream = this.streams.get(name);
    if (stream === undefined) return;
    const before = stream.size;
    stream.removeConsumer(consumer);
    if (stream.size !== before) this.touch(name, at);
  }

  /** The messages of stream `name` that `consumer` has not taken yet; they are then taken. */
  take(name: string, consumer: Consumer, at: number): StreamMessage[] {
    const stream = this.streams.get(name);
    if (stream === undefined) return [];
    const messages = stream.take(consumer);
    if (messages.length > 0) this.touch(name, at);
    return messages;
  }

  /** Applies the sampler's new `bufferSize` (and address, unchanged in practice) after a reload. */
  reconfigure(address: DataviewAddress, bufferSize: number, at: number): void {
    this.address = address;
    if (bufferSize === this.bufferSize) return;
    this.bufferSize = bufferSize;
    for (const [name, stream] of this.streams) {
      stream.resize(bufferSize);
      this.touch(name, at);
    }
  }

  /** The view GET on the sampler shows. */
  view(): StreamsView {
    return {
      samplingStatus: STREAMS_SAMPLING_STATUS,
      totalStreams: this.streams.size,
      streams: [...this.streams.values()].map((s) => s.counters()),
    };
  }

  /** The link changes for what changed since the last call (none when nothing did). */
  changes(): Change[] {
    if (!this.pending || this.streams.size === 0) return [];
    const dataview = this.address;
    const at = this.at;
    if (this.announce) {
      const snapshot = this.snapshot();
      return [
        {
          kind: "dataview",
          dataview,
          at,
          plugin: snapshot.plugin,
          columns: snapshot.columns,
          rows: snapshot.rows.map((row) => ({ name: row.name, cells: encodeCells(row.cells) })),
          headlines: snapshot.headlines,
        },
      ];
    }
    const out: Change[] = [];
    for (const name of this.dirty) {
      const stream = this.streams.get(name);
      if (stream === undefined) continue;
      out.push({ kind: "row", dataview, at, name, cells: encodeCells(cellsOf(stream.counters())) });
    }
    this.dirty.clear();
    if (this.headlinesDirty) {
      this.headlinesDirty = false;
      out.push({ kind: "headlines", dataview, at, headlines: this.headlines() });
    }
    return out;
  }

  /**
   * The dataview as the link's state sends it (call it only when a stream exists). The state
   * carries everything pending, so taking it clears what `changes()` would have sent.
   */
  snapshot(): StateSnapshot {
    this.announce = false;
    this.headlinesDirty = false;
    this.dirty.clear();
    this.published = true;
    return this.current();
  }

  private current(): StateSnapshot {
    return {
      address: this.address,
      plugin: "rest-api",
      at: this.at,
      columns: STREAMS_COLUMNS,
      headlines: this.headlines(),
      rows: [...this.streams.values()].map((s) => ({
        name: s.name,
        cells: cellsOf(s.counters()),
        at: this.at,
      })),
    };
  }

  private headlines(): WireHeadlines {
    return [
      ["samplingStatus", STREAMS_SAMPLING_STATUS],
      ["totalStreams", String(this.streams.size)],
    ];
  }

  private touch(name: string, at: number): void {
    this.dirty.add(name);
    this.at = Math.max(this.at, at);
  }
}

/** The cells of a stream's row, in STREAMS_COLUMNS order. */
function cellsOf(c: StreamCounters): string[] {
  return [
    c.name,
    String(c.currentBufferSize),
    String(c.maxBufferSize),
    String(c.totalMessagesReceived),
    String(c.totalMessagesLost),
  ];
}
