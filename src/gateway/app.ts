/**
 * The gateway (seed area C, DESIGN 4): owns the monitoring hierarchy, turns probe events into
 * public-v2 messages and publishes them to its sinks. `buildGateway()` returns an unstarted
 * service (STYLE 3).
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Setup } from "../config/setup.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import type { ProbeEvent, ProbeLink } from "../link/probe-link.js";
import { requireBearer, type TokenVerifier } from "./gateway-auth.js";
import { Hierarchy } from "./hierarchy.js";
import { Publisher } from "./publish/publisher.js";
import type { Sink } from "./publish/sink.js";

export interface GatewayOptions {
  readonly setup: Setup;
  readonly sinks: readonly Sink[];
  readonly logger: Logger;
  /** When set (security enabled), the message tap and commands need a token it accepts. */
  readonly verifyToken?: TokenVerifier;
}

export interface Gateway {
  readonly http: FastifyInstance;
  readonly publisher: Publisher;
  /** The gateway's end of an in-process probe link. */
  connectProbe(probeName: string): ProbeLink;
  /** Listens on the setup's gateway port; returns the bound base URL. */
  start(port?: number): Promise<string>;
  /** Stops listening, then flushes every sink. */
  stop(): Promise<void>;
}

/** Builds an unstarted gateway for a setup. */
export function buildGateway(options: GatewayOptions): Gateway {
  const { setup, logger } = options;
  const log = logger.child({ component: "gateway", gateway: setup.gateway.name });
  const hierarchy = new Hierarchy(setup.gateway, setup.probes);
  const publisher = new Publisher(options.sinks, log);
  const http = createHttpApp({ logger: log });

  const receive = (probeName: string, event: ProbeEvent): void => {
    publisher.publish(hierarchy.apply(probeName, event, Date.now()));
  };

  resource(http, "/v1/healthcheck", { GET: async () => ({ status: "OK", gateway: setup.gateway.name }) });
  resource(http, "/v1/status", {
    GET: async () => ({
      gateway: setup.gateway.name,
      published: publisher.published,
      invalid: publisher.invalid,
      sinks: options.sinks.map((s) => s.name),
    }),
  });

  if (options.verifyToken !== undefined)
    requireBearer(http, ["/v1/messages", "/v1/commands"], options.verifyToken);

  const taps = new Set<{ end(): void }>();
  http.addHook("preClose", async () => {
    for (const tap of taps) tap.end();
  });

  // Live message tap (DESIGN 4.3): server-sent events, `event:` the type, `data:` one JSON line.
  resource(http, "/v1/messages", {
    GET: async (request, reply) => {
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      raw.write(": vigil message tap\n\n");
      const unsubscribe = publisher.subscribe((message) => {
        raw.write(`event: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`);
      });
      taps.add(raw);
      request.raw.on("close", () => {
        unsubscribe();
        taps.delete(raw);
      });
    },
  });

  return {
    http,
    publisher,
    connectProbe(probeName) {
      return { send: (event) => receive(probeName, event) };
    },
    async start(port = setup.gateway.port) {
      return listen(http, port, "127.0.0.1");
    },
    async stop() {
      await http.close();
      await publisher.close();
    },
  };
}
