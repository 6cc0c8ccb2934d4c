/**
 * The gateway's publish targets from the setup (DESIGN 2 `gateway.publish`): `memory` (the
 * in-process bus of `vigil up`), `file` (NDJSON), `nats` (JetStream). One place builds them for
 * `vigil up` and `vigil gateway` alike.
 */
import { resolve } from "node:path";
import type { Logger } from "pino";
import type { MemoryBus } from "../bus/memory-bus.js";
import type { PublishSink } from "../config/setup.js";
import type { JetStreamMetrics } from "../gateway/gateway-metrics.js";
import { FileSink } from "../gateway/publish/file-sink.js";
import { MemorySink } from "../gateway/publish/memory-sink.js";
import { createNatsSink } from "../gateway/publish/nats-sink.js";
import type { Sink } from "../gateway/publish/sink.js";

export interface SinkContext {
  /** Folder that relative file paths are resolved against (the setup loader resolves most already). */
  readonly dataDir: string;
  /** The in-process bus; only `vigil up` has one, and its embedded hub always consumes it. */
  readonly memoryBus?: MemoryBus;
  readonly logger: Logger;
  /** The gateway's JetStream metrics; each `nats` target reports its publish latency and counters. */
  readonly jetStreamMetrics?: JetStreamMetrics;
}

/**
 * Builds one sink per configured target. `vigil up` always publishes to its in-process bus (its
 * hub is fed that way), whether or not the setup lists `memory`. A standalone gateway has no
 * in-process hub: a `memory` target there is refused with the fix, never silently ignored.
 */
export function createSinks(targets: readonly PublishSink[], context: SinkContext): Sink[] {
  const sinks: Sink[] = [];
  if (context.memoryBus !== undefined) sinks.push(new MemorySink(context.memoryBus));
  for (const target of targets) {
    switch (target.kind) {
      case "memory":
        if (context.memoryBus === undefined) {
          throw new Error(
            "gateway.publish lists `memory`, the in-process bus of `vigil up`; a standalone gateway cannot reach a hub that way: publish to `nats: { url: … }` and start `vigil hub --bus nats://…`",
          );
        }
        break;
      case "file":
        sinks.push(new FileSink(resolve(context.dataDir, target.path)));
        break;
      case "nats": {
        const metrics = context.jetStreamMetrics;
        const sink = createNatsSink({
          url: target.url,
          stream: target.stream,
          subjectPrefix: target.subjectPrefix,
          logger: context.logger,
          ...(metrics === undefined ? {} : { onPublished: metrics.observePublish }),
        });
        metrics?.track(sink);
        sinks.push(sink);
        break;
      }
    }
  }
  return sinks;
}
