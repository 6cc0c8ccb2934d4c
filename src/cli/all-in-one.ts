/**
 * `vigil up`: probe(s), gateway and hub in one process with the embedded defaults (DESIGN 1):
 * the in-process bus and the embedded DuckDB store under the data dir. Composes the unstarted
 * services that buildProbe/buildGateway/buildHub return and owns their start and stop order.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { MemoryBus } from "../bus/memory-bus.js";
import type { Setup } from "../config/setup.js";
import { startDemo } from "../demo/generator.js";
import { buildGateway } from "../gateway/app.js";
import { hubTokenVerifier } from "../gateway/gateway-auth.js";
import { BusSink } from "../gateway/publish/bus-sink.js";
import { FileSink } from "../gateway/publish/file-sink.js";
import type { Sink } from "../gateway/publish/sink.js";
import { buildHub } from "../hub/app.js";
import { openStore } from "../hub/store/open-store.js";
import { buildProbe } from "../probe/app.js";

export interface AllInOneOptions {
  readonly setup: Setup;
  readonly dataDir: string;
  readonly demo: boolean;
  readonly logger: Logger;
}

export interface RunningSystem {
  readonly urls: { readonly hub: string; readonly gateway: string; readonly probes: Record<string, string> };
  /** Clean stop: probes first, then the gateway's sinks, then the hub drains into the store. */
  stop(): Promise<void>;
}

/** Starts the whole system; resolves once every service listens. */
export async function startAllInOne(options: AllInOneOptions): Promise<RunningSystem> {
  const { setup, logger } = options;
  const dataDir = resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true });

  const bus = new MemoryBus(logger.child({ component: "bus" }));
  const sinks: Sink[] = [new BusSink(bus)];
  for (const sink of setup.gateway.publish) {
    if (sink.kind === "file") sinks.push(new FileSink(resolve(dataDir, sink.path)));
    if (sink.kind === "nats") {
      throw new Error(
        "publishing to NATS needs the NATS bus (`vigil hub --bus nats://…`), which this build does not have yet",
      );
    }
  }
  if (!setup.gateway.publish.some((s) => s.kind === "memory")) {
    logger.info("the embedded hub of `vigil up` always receives messages through the in-process bus");
  }

  // Services started so far, stopped in reverse when a later one fails to start (port in use, …),
  // so a failed start exits instead of hanging on open sockets.
  const started: (() => Promise<void>)[] = [];
  const stopStarted = async () => {
    for (const stop of started.reverse()) await stop().catch(() => {});
  };
  try {
    const store = await openStore(`duckdb:${join(dataDir, "vigil.duckdb")}`, dataDir);
    const hub = await buildHub({ setup, store, bus, logger, dataDir });
    started.push(() => hub.stop());
    const hubUrl = await hub.start();
    logger.info({ service: "hub", url: hubUrl }, "listening");

    const gateway = buildGateway({
      setup,
      sinks,
      logger,
      ...(setup.hub.security.enabled ? { verifyToken: hubTokenVerifier(hubUrl) } : {}),
    });
    started.push(() => gateway.stop());
    const gatewayUrl = await gateway.start();
    logger.info({ service: "gateway", url: gatewayUrl }, "listening");

    const probeUrls: Record<string, string> = {};
    for (const probeSetup of setup.probes) {
      const probe = buildProbe({
        setup: probeSetup,
        customDataviewMaxRows: setup.gateway.customDataviewMaxRows,
        link: gateway.connectProbe(probeSetup.name),
        logger,
      });
      started.push(() => probe.stop());
      const { http } = await probe.start();
      probeUrls[probe.name] = http;
      logger.info({ service: "probe", probe: probe.name, url: http }, "listening");
    }

    if (options.demo) {
      started.push(
        startDemo(
          setup.probes.map((probe) => ({ probe, url: probeUrls[probe.name] ?? "" })),
          logger.child({ component: "demo" }),
        ),
      );
    }

    return {
      urls: { hub: hubUrl, gateway: gatewayUrl, probes: probeUrls },
      async stop() {
        // Reverse start order: demo, probes, gateway (flushes its sinks), hub (drains the bus).
        for (const stop of started.reverse()) await stop();
        logger.info("stopped");
      },
    };
  } catch (error) {
    await stopStarted();
    throw error;
  }
}
