/**
 * The gateway as a running service (DESIGN 1 `vigil gateway`, and the gateway inside `vigil up`):
 * its publish targets behind one publisher, the probe link and HTTP API on host:port.
 */
import type { Logger } from "pino";
import { hubTokenVerifier } from "../auth/bearer.js";
import type { MemoryBus } from "../bus/memory-bus.js";
import { type DeploymentSetup, deploymentSetup } from "../config/setup.js";
import { preparePrivateDir } from "../fs/private-files.js";
import { buildGateway, type Gateway } from "../gateway/app.js";
import { registerJetStreamMetrics } from "../gateway/gateway-metrics.js";
import { Publisher } from "../gateway/publish/publisher.js";
import { readableCertificate } from "../http/pinned-certificate.js";
import { createMetricsRegistry } from "../metrics/registry.js";
import type { RunningService } from "./service.js";
import { createSinks } from "./sinks.js";

export interface GatewayServiceOptions {
  readonly setup: DeploymentSetup;
  readonly dataDir: string;
  readonly host: string;
  readonly port?: number;
  /** `vigil up`'s in-process bus; its embedded hub consumes it. */
  readonly memoryBus?: MemoryBus;
  /**
   * The hub whose tokens the gateway's command API and message tap accept when security is on
   * (its `/.well-known/jwks.json`); default `http://127.0.0.1:<hub.port>`.
   */
  readonly hubUrl?: string;
  readonly logger: Logger;
}

export interface GatewayService extends RunningService {
  readonly gateway: Gateway;
}

/** Builds the publish targets and the gateway, and listens; resolves once the gateway serves. */
export async function startGatewayService(options: GatewayServiceOptions): Promise<GatewayService> {
  const { setup, logger } = options;
  // Data dir 0700 and files 0600 (umask 0077) for its state and file sinks.
  await preparePrivateDir(options.dataDir);
  // The gateway's self-metrics registry: its JetStream targets report there, /metrics serves it.
  const metrics = createMetricsRegistry();
  const sinks = createSinks(setup.gateway.publish, {
    dataDir: options.dataDir,
    ...(options.memoryBus === undefined ? {} : { memoryBus: options.memoryBus }),
    logger,
    jetStreamMetrics: registerJetStreamMetrics(metrics),
  });
  const publisher = new Publisher({ gateway: setup.gateway.name, sinks, logger });
  const hubTls = setup.hub.tls.certificate !== "";
  const hubUrl = options.hubUrl ?? `${hubTls ? "https" : "http"}://127.0.0.1:${setup.hub.port}`;
  // An HTTPS hub's certificate (often self-signed) is trusted for its key set when readable here.
  const hubCertificate = hubTls ? readableCertificate(setup.hub.tls.certificate) : undefined;
  const gateway = buildGateway({
    setup,
    publisher,
    logger,
    // Snoozes, assignments and last published severities survive a restart (DESIGN 4.2).
    dataDir: options.dataDir,
    metrics,
    ...(setup.hub.security.enabled
      ? { verifyToken: hubTokenVerifier(hubUrl, hubCertificate === undefined ? {} : { hubCertificate }) }
      : {}),
  });
  let url: string;
  try {
    url = await gateway.start(options.port ?? setup.gateway.port, options.host);
  } catch (error) {
    await publisher.close(0);
    throw error;
  }
  logger.info({ service: "gateway", url }, "listening");
  return {
    gateway,
    urls: { gateway: url },
    reload: (next) => gateway.updateSetup(deploymentSetup(next)),
    reloadCertificates: () => gateway.reloadCertificates(),
    async stop(deadlineMs) {
      const until = Date.now() + deadlineMs;
      // Links first (acknowledged probe changes are in the publisher), then flush the targets.
      await gateway.stop(deadlineMs);
      await publisher.close(Math.max(0, until - Date.now()));
    },
  };
}
