/**
 * The hub (seed area A, DESIGN 5): stores what gateways publish and serves the query API.
 * `buildHub()` returns an unstarted service (STYLE 3); the composition module starts and stops it.
 *
 * Published messages arrive from a {@link BusConsumer} (in-process or NATS JetStream) and through
 * backfill (`POST /v0/messages`). A consumed batch is acknowledged only after the store committed it
 * (the handler's promise); messages the hub cannot store go to the dead-letter file first, so they
 * never stop the messages behind them; a store that is down makes the handler reject, and the
 * consumer delivers the batch again with back-off.
 */
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { BusConsumer, Delivery } from "../bus/bus.js";
import { DEAD_LETTER_FILE, STOP_DEADLINE_MS } from "../config/defaults.js";
import type { HubSetup, Setup, TlsFiles } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import { MemoryProtection } from "../http/memory-protection.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import { loadServerTls, ServerTlsReloader } from "../http/server-tls.js";
import { LimitRefusals, registerLimitRefusals } from "../limits/limit-refusals.js";
import { registerMetricsRoute } from "../metrics/metrics-route.js";
import { createMetricsRegistry } from "../metrics/registry.js";
import { registerAuth } from "./auth/auth.js";
import { registerConsole } from "./console/console-routes.js";
import { defaultGatewayUrl, gatewayTrust } from "./console/gateway-relay.js";
import { registerEntityRoutes } from "./http/entities-routes.js";
import { registerEventRoutes } from "./http/events-routes.js";
import { registerMessageRoutes } from "./http/messages-routes.js";
import { registerMetricRoutes } from "./http/metrics-routes.js";
import { HUB_OPENAPI } from "./http/openapi.js";
import { registerHubHistograms, registerHubMetrics } from "./hub-metrics.js";
import { DeadLetterFile } from "./ingest/dead-letter.js";
import { Ingester } from "./ingest/ingester.js";
import { columnSchemaLookup } from "./query/column-schema.js";
import { samplerPluginLookup } from "./query/metric-names.js";
import { Retention } from "./retention.js";
import { EntityCache, withEntityCache } from "./store/entity-cache.js";
import type { Store } from "./store/store.js";
import { StorePing } from "./store-ping.js";

export interface HubOptions {
  readonly setup: Setup;
  readonly store: Store;
  /** Where published messages arrive from; none for a hub fed only by backfill. */
  readonly consumer?: BusConsumer;
  readonly logger: Logger;
  /** Where the hub keeps its signing key (`<dataDir>/keys`) and its dead-letter file. */
  readonly dataDir: string;
  /**
   * The gateway whose command API the web console's actions reach through the hub (read at each
   * request); default: the setup's gateway port on 127.0.0.1 (`defaultGatewayUrl`).
   */
  readonly gatewayUrl?: () => string | undefined;
}

export interface Hub {
  readonly http: FastifyInstance;
  readonly ingester: Ingester;
  readonly deadLetters: DeadLetterFile;
  /** Reads `hub.tls` files again and serves the new pair (HTTPS hubs); see server-tls.ts. */
  reloadCertificates(files: TlsFiles): void;
  /**
   * Puts new application keys and Kerberos roles in force (DESIGN 5.4a); resolves once a removed
   * key's tokens are refused. Other `hub.security` settings need a restart.
   */
  reloadKeys(security: HubSetup["security"]): Promise<void>;
  /** Migrates the store, starts consuming, and listens; returns the bound base URL. */
  start(port?: number, host?: string): Promise<string>;
  /**
   * Stops listening and consuming (the batch in hand finishes or, past `deadlineMs`, is left
   * unacknowledged for redelivery), then closes the store.
   */
  stop(deadlineMs?: number): Promise<void>;
}

/** The store's state for `/v1/status`: `ok`, or `unavailable` with the reason; with its own counts. */
async function storeState(store: Store, ping: StorePing): Promise<Record<string, unknown>> {
  const health = store.health?.();
  const own =
    health === undefined
      ? {}
      : {
          reopens: health.reopens,
          ...(health.entityReads === undefined ? {} : { entityReads: health.entityReads }),
        };
  try {
    await ping.check();
    return { state: "ok", ...own };
  } catch (error) {
    const reason = error instanceof VigilError ? error.body : String(error);
    return { state: "unavailable", reason, ...own };
  }
}

/** Builds an unstarted hub. */
export async function buildHub(options: HubOptions): Promise<Hub> {
  const { setup, consumer } = options;
  const log = options.logger.child({ component: "hub" });
  // Entity requests (and the ingester's start) read the entities from memory between changes.
  const entityCache = new EntityCache(options.store, {
    maxEntries: setup.hub.maxEntities,
    maxBytes: setup.hub.entityCacheMb * 1024 * 1024,
    logger: log,
  });
  const store = withEntityCache(options.store, entityCache);
  // Both hub.tls files set: HTTPS only (DESIGN 2); read before anything starts, so a bad file stops the start.
  const tls = loadServerTls("hub", setup.hub.tls);
  // Self-metrics: this hub's own registry; query routes are also timed by kind.
  const metrics = createMetricsRegistry();
  const observers = registerHubHistograms(metrics);
  const http = createHttpApp({
    logger: log,
    metrics: { registry: metrics, options: { alsoObserve: observers.queryObserver } },
    ...(tls === undefined ? {} : { https: tls }),
  });
  const certificates = new ServerTlsReloader("hub", setup.hub.tls, log);
  certificates.attach(http.server);
  const ingester = new Ingester(store, log, {
    maxEntities: setup.hub.maxEntities,
    onCommit: observers.observeCommit,
    limits: setup.limits,
  });
  // Messages refused at a limit of the setup's `limits` (DESIGN 5.4b), from backfill and the bus.
  const refusals = new LimitRefusals(log);
  const retention = new Retention(store, setup.hub.retentionDays, log);
  const deadLetters = new DeadLetterFile(join(options.dataDir, DEAD_LETTER_FILE), log);
  // Past its memory threshold the hub takes no new backfill (503). Consumed batches are not refused:
  // storing them is what frees the buffers upstream (refusing them deadlocked `vigil up`, where the
  // probe's backlog shares the hub's RSS), and the bus bounds what a consumer holds.
  const memory = new MemoryProtection("hub", () => setup.hub.memoryProtection);

  /** Handles one consumed batch; resolves once it is committed and its rejects are dead-lettered. */
  const handle = async (batch: readonly Delivery[]): Promise<void> => {
    const result = await ingester.ingest(batch);
    await deadLetters.append(
      result.rejected.map((r) => {
        const delivery = batch[r.index] as Delivery;
        return { reason: r.reason, id: delivery.id, message: delivery.message };
      }),
    );
    // Counted once dead-lettered (a batch whose letters cannot be written comes again).
    for (const r of result.rejected) if (r.limit !== undefined) refusals.refused("bus", r.limit, r.reason);
  };

  // Authentication first, so its bearer check covers every route registered after it (DESIGN 5.4).
  const auth = await registerAuth(http, { security: setup.hub.security, dataDir: options.dataDir });
  // Ready only when the store answers (DESIGN 5.4b): 503 with the reason otherwise, so a load
  // balancer or a probe of the hub sees a store that cannot answer.
  const storePing = new StorePing(store);
  resource(http, "/v0/ping", {
    GET: async () => {
      await storePing.check();
      return { status: "OK" };
    },
  });
  resource(http, "/v1/status", {
    GET: async () => ({
      store: store.kind,
      storeState: await storeState(store, storePing),
      ingest: ingester.counts,
      entityCache: entityCache.status(),
      deadLettered: deadLetters.count,
      retention: retention.status(),
      memory: memory.reading(),
      ...(consumer === undefined ? {} : { consumer: consumer.status() }),
    }),
  });
  registerHubMetrics(metrics, {
    ingest: ingester.counts,
    deadLettered: () => deadLetters.count,
    ...(consumer === undefined ? {} : { consumer: () => consumer.status() }),
    memory,
  });
  registerLimitRefusals(metrics, refusals);
  // With security enabled, a scrape needs a bearer token with `read` (auth.ts covers the path).
  registerMetricsRoute(http, metrics);
  const columnSchema = columnSchemaLookup(setup);
  registerEntityRoutes(http, store, { columnSchema, samplerPlugin: samplerPluginLookup(setup) });
  registerMetricRoutes(http, store, columnSchema);
  registerEventRoutes(http, store);
  resource(http, "/v0/openapi.json", { GET: async () => HUB_OPENAPI });
  await registerMessageRoutes(http, ingester, memory, { refusals });
  // The web console at `/`; its actions go to the gateway through the hub.
  const gatewayUrl = defaultGatewayUrl(setup);
  await registerConsole(http, {
    security: setup.hub.security.enabled,
    gatewayUrl: options.gatewayUrl ?? (() => gatewayUrl),
    trust: gatewayTrust(setup),
    ...(setup.hub.security.enabled ? { verify: auth.verify } : {}),
  });

  let consuming = false;
  return {
    http,
    ingester,
    deadLetters,
    reloadCertificates: (files) => void certificates.reload(files),
    reloadKeys: (security) => auth.reload(security),
    async start(port = setup.hub.port, host = "127.0.0.1") {
      for (const notice of await store.migrate()) http.log.warn({ store: store.kind }, notice);
      await ingester.init();
      retention.start();
      if (consumer !== undefined) {
        await consumer.start(handle);
        consuming = true;
      }
      return listen(http, port, host, tls === undefined ? "http" : "https");
    },
    async stop(deadlineMs = STOP_DEADLINE_MS) {
      const until = Date.now() + deadlineMs;
      await http.close();
      if (consuming) await consumer?.stop(Math.max(0, until - Date.now()));
      await retention.stop();
      await store.close();
    },
  };
}
