/**
 * The streams of a probe and the `fkm` samplers that consume them (DESIGN 3.4), kept beside the
 * probe's rest-api samplers: a rest-api sampler's streams live as long as its `SamplerState` (the
 * registry keeps it across reloads), fkm samplers are taken from the probe's setup.
 *
 * - `put()` takes one message (PUT stream) and marks the sampler's Streams Dataview for the link.
 * - Each fkm sampler samples every `sampleInterval` (through the injected scheduler): it takes the
 *   messages of its `source` stream that it has not seen and scans them.
 * - `apply()` follows a new setup (DESIGN 3.5, without a restart): samplers added or removed,
 *   `bufferSize` changed (shrinking drops the oldest, counted lost), fkm keywords, interval or
 *   source changed.
 *
 * Changes for the gateway are collected and handed to the link once per turn of the event loop,
 * so a burst of concurrent PUTs costs one row change per stream, with the counters of that instant.
 */
import type { Logger } from "pino";
import { PROBE_MAX_STREAMS_PER_SAMPLER } from "../../config/defaults.js";
import { parseSamplerRef } from "../../config/sampler-ref.js";
import type { ProbeSetup } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import { DEFAULT_DATA_LIMITS } from "../../limits/data-limits.js";
import type { Change, ProbeLimits } from "../../link/protocol.js";
import { FkmSamplerState, type FkmView } from "../fkm/fkm-sampler.js";
import { type SampleScheduler, timerScheduler } from "../fkm/sample-scheduler.js";
import type { SamplerRegistry, SamplerState } from "../sampler-registry.js";
import type { StateSnapshot } from "../state-cursor.js";
import { SamplerStreams, STREAMS_DATAVIEW_NAME, type StreamsView } from "./sampler-streams.js";
import type { StreamCounters, StreamMessage } from "./stream-buffer.js";

export interface ProbeStreamsOptions {
  readonly registry: SamplerRegistry;
  /** The probe's setup now (fkm samplers are read from it). */
  readonly setup: ProbeSetup;
  /** Hands changes to the link (called from timers and after requests, never during construction). */
  readonly submit: (changes: readonly Change[]) => void;
  /** The gateway-wide limits now (row limit override, cell length). */
  readonly limits: () => ProbeLimits;
  readonly logger: Logger;
  /** Default {@link timerScheduler}; tests pass a `ManualScheduler`. */
  readonly scheduler?: SampleScheduler;
}

/** An fkm sampler, its timer and the stream it reads. */
interface FkmRunner {
  readonly state: FkmSamplerState;
  cancel: () => void;
  intervalMs: number;
  /** The rest-api sampler and stream it consumes; undefined when its source cannot be resolved. */
  binding: { readonly streams: SamplerStreams; readonly stream: string } | undefined;
}

const fkmKey = (managedEntity: string, sampler: { name: string; type: string }): string =>
  JSON.stringify([managedEntity, sampler.name, sampler.type]);

/** Streams of every rest-api sampler of a probe and its fkm samplers. */
export class ProbeStreams {
  private readonly bySampler = new WeakMap<SamplerState, SamplerStreams>();
  private readonly fkm = new Map<string, FkmRunner>();
  private readonly pending = new Set<SamplerStreams>();
  private flushScheduled = false;
  private stopped = false;
  private readonly scheduler: SampleScheduler;
  private readonly log: Logger;

  constructor(private readonly options: ProbeStreamsOptions) {
    this.scheduler = options.scheduler ?? timerScheduler;
    this.log = options.logger.child({ part: "streams" });
    this.applyFkm(options.setup);
  }

  /** The clock of messages and samples. */
  now(): number {
    return this.scheduler.now();
  }

  /**
   * Takes one message for stream `name` of `sampler` (PUT stream): creates the stream, and with the
   * first one the Streams Dataview, refusing a stream beyond the sampler's bound.
   */
  put(sampler: SamplerState, name: string, body: Buffer): StreamCounters {
    const streams = this.streamsOf(sampler);
    if (streams.get(name) === undefined) {
      const { maxCellLength } = this.options.limits();
      if (name.length > maxCellLength) {
        throw new VigilError("BAD_REQUEST", {
          detail: `The stream name is ${name.length} characters long, more than the limit of ${maxCellLength} (gateway.maxCellLength): it is a cell of the Streams Dataview.`,
        });
      }
      const limit = this.streamLimit(sampler);
      if (streams.size >= limit) {
        throw new VigilError("BAD_REQUEST", {
          detail:
            `Sampler '${sampler.setup.name}' already has ${limit} streams, its limit ` +
            `(the smaller of ${PROBE_MAX_STREAMS_PER_SAMPLER} and its row limit, as the Streams Dataview has one row per stream); ` +
            "send to an existing stream or use another sampler.",
        });
      }
    }
    const counters = streams.push(name, { body, at: this.now() });
    this.markPending(streams);
    return counters;
  }

  /**
   * Registers `consumer` on stream `name` of `sampler` (which may not exist yet): from now on the
   * stream keeps its messages for it. fkm samplers register through their `source`; this is for
   * other consumers (and tests that read what a stream passes on).
   */
  addConsumer(sampler: SamplerState, name: string, consumer: object): void {
    this.streamsOf(sampler).addConsumer(name, consumer);
  }

  /** The messages of stream `name` that `consumer` has not taken yet, oldest first; they are taken. */
  take(sampler: SamplerState, name: string, consumer: object): StreamMessage[] {
    const streams = this.bySampler.get(sampler);
    if (streams === undefined) return [];
    const messages = streams.take(name, consumer, this.now());
    if (messages.length > 0) this.markPending(streams);
    return messages;
  }

  /** The counters of one stream, or a 404. */
  stream(sampler: SamplerState, name: string): StreamCounters {
    const stream = this.bySampler.get(sampler)?.get(name);
    if (stream === undefined)
      throw new VigilError("STREAM_NOT_FOUND", { sampler: sampler.setup.name, stream: name });
    return stream.counters();
  }

  /** The Streams Dataview of a sampler as GET on the sampler shows it; undefined before its first stream. */
  streamsView(sampler: SamplerState): StreamsView | undefined {
    const streams = this.bySampler.get(sampler);
    return streams === undefined || streams.size === 0 ? undefined : streams.view();
  }

  /**
   * An fkm sampler's state for GET on its path (DESIGN 3.1), addressed as in a URL: `name` (the
   * only fkm sampler of that name on the entity) or `name(type)`; undefined when there is none.
   */
  fkmView(
    managedEntity: string,
    samplerSegment: string,
  ): (FkmView & { readonly sampler: string; readonly type: string }) | undefined {
    const { name, type } = parseSamplerRef(samplerSegment);
    const matches = [...this.fkm.values()].filter(
      (r) =>
        r.state.managedEntity === managedEntity &&
        r.state.setup.name === name &&
        (type === null || r.state.setup.type === type),
    );
    const found = matches.length === 1 ? matches[0] : undefined;
    if (found === undefined) return undefined;
    return { sampler: found.state.setup.name, type: found.state.setup.type, ...found.state.view() };
  }

  /** Every Streams Dataview and fkm dataview, for the state sent on (re)connect. */
  snapshots(): StateSnapshot[] {
    const out: StateSnapshot[] = [];
    for (const sampler of this.options.registry.all()) {
      const streams = this.bySampler.get(sampler);
      if (streams !== undefined && streams.size > 0) out.push(streams.snapshot());
    }
    for (const runner of this.fkm.values()) out.push(runner.state.snapshot());
    this.pending.clear();
    return out;
  }

  /**
   * Follows a new setup, after the registry took it (`removed`: the rest-api samplers that went).
   * Returns the changes to send: Streams Dataviews and fkm dataviews deleted, created or updated.
   */
  apply(setup: ProbeSetup, removed: readonly SamplerState[]): Change[] {
    const at = this.now();
    // fkm first: rebinding may release messages of streams whose sampler went, dropped just below.
    const changes = this.applyFkm(setup);
    for (const runner of this.fkm.values()) changes.push(...runner.state.changes());
    for (const sampler of removed) {
      const streams = this.bySampler.get(sampler);
      if (streams === undefined) continue;
      this.bySampler.delete(sampler);
      this.pending.delete(streams);
      if (streams.size > 0) {
        changes.push({ kind: "dataviewDelete", dataview: addressOf(sampler), at });
      }
    }
    for (const sampler of this.options.registry.all()) {
      const streams = this.bySampler.get(sampler);
      if (streams === undefined) continue;
      streams.reconfigure(addressOf(sampler), sampler.setup.bufferSize, at);
      if (streams.pending) this.pending.add(streams);
    }
    changes.push(...this.collect());
    return changes;
  }

  /** Runs one sample of every fkm sampler now (tests, and `vigil` status tools). */
  sampleAll(): void {
    for (const runner of this.fkm.values()) this.sample(runner);
  }

  /** Stops every fkm timer; pushes are still counted but nothing samples any more. */
  stop(): void {
    this.stopped = true;
    for (const runner of this.fkm.values()) runner.cancel();
  }

  private streamLimit(sampler: SamplerState): number {
    const { customDataviewMaxRows } = this.options.limits();
    const rowLimit = customDataviewMaxRows > 0 ? customDataviewMaxRows : sampler.setup.rowLimit;
    return Math.min(PROBE_MAX_STREAMS_PER_SAMPLER, rowLimit);
  }

  private streamsOf(sampler: SamplerState): SamplerStreams {
    let streams = this.bySampler.get(sampler);
    if (streams === undefined) {
      streams = new SamplerStreams(addressOf(sampler), sampler.setup.bufferSize);
      this.bySampler.set(sampler, streams);
    }
    return streams;
  }

  /** Builds, keeps or removes fkm samplers after the setup; returns the changes of those removed. */
  private applyFkm(setup: ProbeSetup): Change[] {
    const at = this.now();
    const changes: Change[] = [];
    const previous = new Map(this.fkm);
    this.fkm.clear();
    for (const entity of setup.managedEntities) {
      for (const sampler of entity.samplers) {
        if (sampler.plugin !== "fkm") continue;
        const key = fkmKey(entity.name, sampler);
        let runner = previous.get(key);
        previous.delete(key);
        if (runner === undefined) {
          runner = {
            state: new FkmSamplerState(entity.name, sampler, at),
            cancel: () => {},
            intervalMs: Number.NaN,
            binding: undefined,
          };
        } else {
          runner.state.reconfigure(sampler);
        }
        this.fkm.set(key, runner);
        this.bind(runner, at);
        this.schedule(runner);
      }
    }
    for (const runner of previous.values()) {
      runner.cancel();
      this.unbind(runner, at);
      changes.push({ kind: "dataviewDelete", dataview: runner.state.address, at });
    }
    if (previous.size > 0) this.log.info({ samplers: previous.size }, "fkm samplers removed from the setup");
    return changes;
  }

  /** Points an fkm sampler at its source stream (again, after a reload). */
  private bind(runner: FkmRunner, at: number): void {
    const { source } = runner.state.setup;
    let target: SamplerStreams | undefined;
    try {
      const sampler = this.options.registry.resolve(runner.state.managedEntity, source.sampler);
      target = this.streamsOf(sampler);
    } catch (error) {
      if (!(error instanceof VigilError)) throw error;
    }
    const current = runner.binding;
    if (current !== undefined && current.streams === target && current.stream === source.stream) return;
    this.unbind(runner, at);
    if (target === undefined) {
      runner.state.setSourceStatus(`Source sampler '${source.sampler}' not found on this managed entity`);
      this.log.warn(
        {
          managedEntity: runner.state.managedEntity,
          sampler: runner.state.setup.name,
          source: source.sampler,
        },
        "fkm source sampler not found; the sampler scans nothing",
      );
      return;
    }
    target.addConsumer(source.stream, runner.state);
    runner.binding = { streams: target, stream: source.stream };
    runner.state.setSourceStatus("OK");
  }

  private unbind(runner: FkmRunner, at: number): void {
    const binding = runner.binding;
    if (binding === undefined) return;
    binding.streams.removeConsumer(binding.stream, runner.state, at);
    if (binding.streams.pending) this.pending.add(binding.streams);
    runner.binding = undefined;
  }

  private schedule(runner: FkmRunner): void {
    const intervalMs = runner.state.setup.sampleInterval * 1000;
    if (intervalMs === runner.intervalMs || this.stopped) return;
    runner.cancel();
    runner.intervalMs = intervalMs;
    runner.cancel = this.scheduler.every(intervalMs, () => this.sample(runner));
  }

  private sample(runner: FkmRunner): void {
    try {
      const at = this.now();
      const binding = runner.binding;
      const messages = binding === undefined ? [] : binding.streams.take(binding.stream, runner.state, at);
      if (binding !== undefined && messages.length > 0) this.pending.add(binding.streams);
      // A match is cut to a cell: within gateway.maxCellLength and within limits.cellBytes (3 bytes
      // of UTF-8 at most per UTF-16 code unit), so the link and the hub take it.
      const limits = this.options.limits();
      const cellBytes = limits.data?.cellBytes ?? DEFAULT_DATA_LIMITS.cellBytes;
      runner.state.sample(messages, at, Math.min(limits.maxCellLength, Math.floor(cellBytes / 3)));
      this.options.submit([...this.collect(), ...runner.state.changes()]);
    } catch (error) {
      this.log.error({ err: error, sampler: runner.state.setup.name }, "fkm sample failed");
    }
  }

  private markPending(streams: SamplerStreams): void {
    this.pending.add(streams);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // One turn of the event loop: concurrent PUTs share one change per stream.
    setImmediate(() => {
      this.flushScheduled = false;
      const changes = this.collect();
      if (changes.length > 0) this.options.submit(changes);
    });
  }

  /** The changes of every Streams Dataview marked since the last flush. */
  private collect(): Change[] {
    const out: Change[] = [];
    for (const streams of this.pending) out.push(...streams.changes());
    this.pending.clear();
    return out;
  }
}

function addressOf(sampler: SamplerState) {
  return {
    managedEntity: sampler.managedEntity,
    sampler: sampler.setup.name,
    samplerType: sampler.setup.type,
    dataview: STREAMS_DATAVIEW_NAME,
  };
}
