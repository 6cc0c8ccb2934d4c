/**
 * `vigil up`: probe(s), gateway and hub in one process (DESIGN 1), assembled from the same services
 * as the separate processes (`vigil probe|gateway|hub`) with the same acknowledged hand-offs; only the
 * transports differ: the probe link is in-process and the bus is the in-process {@link MemoryBus}.
 */
import { join } from "node:path";
import type { Logger } from "pino";
import { MemoryBus } from "../bus/memory-bus.js";
import type { DeploymentSetup } from "../config/setup.js";
import { startDemo } from "../demo/generator.js";
import type { SecureModeFiles } from "../probe/tls/secure-mode.js";
import { startGatewayService } from "./gateway-service.js";
import { startHubService } from "./hub-service.js";
import { startProbeService } from "./probe-service.js";
import { type RunningService, stopInOrder } from "./service.js";

export interface SystemOptions {
  readonly setup: DeploymentSetup;
  readonly dataDir: string;
  /** Push demo data through the probes' HTTP API (DESIGN 1 `--demo`). */
  readonly demo: boolean;
  /** Address of the gateway and hub (the probes use their setup `hostname`); `vigil up` keeps loopback. */
  readonly host: string;
  /** Secure mode for every probe (`vigil up -secure …`): HTTPS on each restApiHttpsPort. */
  readonly secure?: SecureModeFiles;
  readonly logger: Logger;
}

/** Starts the whole system; resolves once every part listens. A part that fails to start stops the others. */
export async function startSystem(options: SystemOptions): Promise<RunningService> {
  const { setup, logger, dataDir, host } = options;
  const memoryBus = new MemoryBus(logger);
  // Started parts, stopped in reverse start order: demo, probes, gateway (flushes its targets into
  // the bus, which the hub commits), hub (stops consuming, closes the store).
  const stops: ((deadlineMs: number) => Promise<void>)[] = [];
  const urls: Record<string, string> = {};
  const parts: RunningService[] = [];
  try {
    // The hub listens first (the gateway verifies tokens against it); the console's actions reach
    // the gateway through the hub once the gateway listens.
    let gatewayUrl: string | undefined;
    const hub = await startHubService({
      setup,
      storeUrl: `duckdb:${join(dataDir, "vigil.duckdb")}`,
      memoryBus,
      dataDir,
      host,
      gatewayUrl: () => gatewayUrl,
      logger,
    });
    stops.unshift(hub.stop);
    parts.push(hub);
    const gateway = await startGatewayService({
      setup,
      dataDir,
      host,
      memoryBus,
      hubUrl: hub.urls.hub ?? "",
      logger,
    });
    stops.unshift(gateway.stop);
    parts.push(gateway);
    gatewayUrl = gateway.urls.gateway;
    for (const probeSetup of setup.probes) {
      const probe = await startProbeService({
        name: probeSetup.name,
        link: gateway.gateway.connectInProcess(),
        setup,
        ...(options.secure === undefined ? {} : { secure: options.secure }),
        logger,
      });
      stops.unshift(probe.stop);
      parts.push(probe);
    }
    for (const part of parts) Object.assign(urls, part.urls);
    if (options.demo) {
      const stopDemo = startDemo(
        setup.probes.map((probe) => ({ probe, url: urls[`probe:${probe.name}`] ?? "" })),
        logger.child({ component: "demo" }),
      );
      stops.unshift(() => stopDemo());
    }
  } catch (error) {
    await stopInOrder(stops, 2_000).catch(() => undefined);
    throw error;
  }
  return {
    urls,
    reload(next) {
      // The gateway sends each in-process probe its changed part over the link, as to any probe.
      for (const part of parts.slice(0, 2)) part.reload(next);
    },
    reloadCertificates() {
      for (const part of parts) part.reloadCertificates();
    },
    stop: (deadlineMs) => stopInOrder(stops, deadlineMs),
  };
}
