/**
 * The hub (seed area A, DESIGN 5): stores what gateways publish and serves the query API.
 * `buildHub()` returns an unstarted service (STYLE 3); the CLI starts and stops it.
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Bus } from "../bus/bus.js";
import type { Setup } from "../config/setup.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import { registerAuth } from "./auth/auth.js";
import { registerEntityRoutes } from "./http/entities-routes.js";
import { registerMessageRoutes } from "./http/messages-routes.js";
import { registerMetricRoutes } from "./http/metrics-routes.js";
import { Ingester } from "./ingest/ingester.js";
import { columnSchemaLookup } from "./query/column-schema.js";
import type { Store } from "./store/store.js";

export interface HubOptions {
  readonly setup: Setup;
  readonly store: Store;
  /** Where published messages arrive from; none for a hub fed only by backfill. */
  readonly bus?: Bus;
  readonly logger: Logger;
  /** Where the hub keeps its signing key (`<dataDir>/keys`). */
  readonly dataDir: string;
}

export interface Hub {
  readonly http: FastifyInstance;
  readonly ingester: Ingester;
  /** Migrates the store, starts consuming, and listens; returns the bound base URL. */
  start(port?: number, host?: string): Promise<string>;
  /** Stops listening, drains the bus into the store, closes the store. */
  stop(): Promise<void>;
}

/** Builds an unstarted hub. */
export async function buildHub(options: HubOptions): Promise<Hub> {
  const { setup, store, bus } = options;
  const log = options.logger.child({ component: "hub" });
  const http = createHttpApp({ logger: log });
  const ingester = new Ingester(store, log);

  // Authentication first, so its bearer check covers every route registered after it (DESIGN 5.4).
  await registerAuth(http, { security: setup.hub.security, dataDir: options.dataDir });
  resource(http, "/v0/ping", { GET: async () => ({ status: "OK" }) });
  registerEntityRoutes(http, store);
  registerMetricRoutes(http, store, columnSchemaLookup(setup));
  await registerMessageRoutes(http, ingester);

  return {
    http,
    ingester,
    async start(port = setup.hub.port, host = "127.0.0.1") {
      await store.migrate();
      await ingester.init();
      bus?.consume((messages) => ingester.ingest(messages));
      return listen(http, port, host);
    },
    async stop() {
      await http.close();
      await bus?.drain();
      await store.close();
    },
  };
}
