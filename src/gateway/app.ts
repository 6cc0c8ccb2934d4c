/**
 * The gateway (seed area C, DESIGN 4): owns the monitoring hierarchy, takes its probes' links
 * (WebSocket at LINK_PATH on its port, or in-process for `vigil up`), turns what they send into
 * public-v2 messages and hands them to the publisher. `buildGateway()` returns an unstarted
 * service (STYLE 3); the publisher is built and closed by the caller.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { WebSocketServer } from "ws";
import { DEFAULT_GATEWAY_HOST, LINK_MAX_FRAME_BYTES, TAP_MAX_BUFFERED_BYTES } from "../config/defaults.js";
import type { Setup } from "../config/setup.js";
import { MemoryProtection } from "../http/memory-protection.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import { type InProcessConnector, inProcessConnector } from "../link/in-process.js";
import { LINK_PATH } from "../link/protocol.js";
import { webSocketEnd } from "../link/websocket.js";
import { requireBearer, type TokenVerifier } from "./gateway-auth.js";
import { Hierarchy } from "./hierarchy.js";
import { LinkServer, type LinkStatus } from "./link-server.js";
import type { Publisher } from "./publish/publisher.js";

/** Time closing links get to finish their closing handshake when the stop deadline is spent. */
const LINK_CLOSE_GRACE_MS = 100; // ms

/** What the gateway needs of the publisher: the lead's `Publisher`, or a test's fake. */
export type GatewayPublisher = Pick<Publisher, "publish" | "ready" | "whenReady" | "subscribe" | "status">;

/** Link tuning (tests); the defaults are in `src/config/defaults.ts`. */
export interface GatewayLinkTuning {
  readonly heartbeatMs?: number;
  readonly creditBatches?: number;
  readonly maxBatchChanges?: number;
}

export interface GatewayOptions {
  readonly setup: Setup;
  readonly publisher: GatewayPublisher;
  readonly logger: Logger;
  /** When set (security enabled), the message tap and commands need a token it accepts. */
  readonly verifyToken?: TokenVerifier;
  readonly linkTuning?: GatewayLinkTuning;
  /** Default TAP_MAX_BUFFERED_BYTES. */
  readonly tapMaxBufferedBytes?: number;
}

export interface Gateway {
  readonly http: FastifyInstance;
  /** A connector for a probe in this process (`vigil up`): `buildProbe({ link: gateway.connectInProcess() })`. */
  connectInProcess(): InProcessConnector;
  /**
   * Applies a new setup (reload): connected probes get their changed part; probes no longer in
   * it are refused and deleted; new ones are accepted when they connect; the gateway port cannot
   * change without a restart (logged).
   */
  updateSetup(setup: Setup): void;
  /** Listens (default: the setup's gateway port on DEFAULT_GATEWAY_HOST); returns the bound base URL. */
  start(port?: number, host?: string): Promise<string>;
  /**
   * Stops taking links and requests, waits (up to `deadlineMs`) for acknowledgements in progress,
   * closes the links and the HTTP server. The publisher is the caller's to close.
   */
  stop(deadlineMs: number): Promise<void>;
  /** The probe links, as `GET /v1/status` shows them. */
  links(): LinkStatus[];
}

/** Builds an unstarted gateway for a setup. */
export function buildGateway(options: GatewayOptions): Gateway {
  const { publisher, logger } = options;
  let setup = options.setup;
  const log = logger.child({ component: "gateway", gateway: setup.gateway.name });
  const hierarchy = new Hierarchy(setup.gateway, setup.probes);
  const memory = new MemoryProtection("gateway", () => setup.gateway.memoryProtection);
  const links = new LinkServer({
    setup: () => setup,
    hierarchy,
    publisher,
    memory,
    logger: log,
    ...options.linkTuning,
  });
  const http = createHttpApp({ logger: log });
  let stopping = false;

  // The probe link: a WebSocket upgrade on LINK_PATH (DESIGN 1). Probe authentication is not
  // specified yet, so links are accepted with security enabled too.
  const wss = new WebSocketServer({ noServer: true, maxPayload: LINK_MAX_FRAME_BYTES });
  http.server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? "").split("?")[0];
    if (path !== LINK_PATH || stopping) {
      socket.end(
        `HTTP/1.1 ${stopping ? "503 Service Unavailable" : "404 Not Found"}\r\nConnection: close\r\n\r\n`,
      );
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const remote = `${request.socket.remoteAddress ?? "?"}:${request.socket.remotePort ?? "?"}`;
      links.accept(webSocketEnd(ws, remote));
    });
  });

  resource(http, "/v1/healthcheck", { GET: async () => ({ status: "OK", gateway: setup.gateway.name }) });
  resource(http, "/v1/status", {
    GET: async () => ({
      gateway: setup.gateway.name,
      links: links.status(),
      hierarchy: hierarchy.stats(),
      memory: memory.reading(),
      publisher: publisher.status(),
      tap: { clients: taps.size, dropped: tapDropped },
    }),
  });

  if (options.verifyToken !== undefined)
    requireBearer(http, ["/v1/messages", "/v1/commands"], options.verifyToken);

  const taps = new Set<{ end(): void }>();
  let tapDropped = 0;
  const tapLimit = options.tapMaxBufferedBytes ?? TAP_MAX_BUFFERED_BYTES;
  http.addHook("preClose", async () => {
    for (const tap of taps) tap.end();
  });

  // Live message tap (DESIGN 4.3): server-sent events, `event:` the type, `data:` one JSON line.
  // A client that reads slower than messages come is dropped once TAP_MAX_BUFFERED_BYTES wait.
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
      let unsubscribe = (): void => {};
      const drop = () => {
        unsubscribe();
        taps.delete(raw);
      };
      unsubscribe = publisher.subscribe((envelope) => {
        if (raw.writableLength > tapLimit) {
          tapDropped += 1;
          log.warn(
            { remote: request.ip, buffered: raw.writableLength },
            "message tap client too slow; disconnected",
          );
          drop();
          raw.destroy();
          return;
        }
        raw.write(
          `id: ${envelope.id}\nevent: ${envelope.message.type}\ndata: ${JSON.stringify(envelope.message)}\n\n`,
        );
      });
      taps.add(raw);
      request.raw.on("close", drop);
    },
  });

  return {
    http,
    connectInProcess() {
      return inProcessConnector((end) => {
        if (stopping) throw new Error("the gateway is stopping");
        links.accept(end);
      });
    },
    updateSetup(next) {
      const before = setup;
      if (next.gateway.port !== before.gateway.port) {
        log.warn({ settings: ["gateway.port"] }, "setup changes that need a gateway restart to take effect");
      }
      setup = next;
      publisher.publish(hierarchy.updateSetup(next.gateway, next.probes, Date.now()));
      links.updateSetup(before, next);
    },
    async start(port = setup.gateway.port, host = DEFAULT_GATEWAY_HOST) {
      return listen(http, port, host);
    },
    async stop(deadlineMs) {
      const until = Date.now() + deadlineMs;
      stopping = true;
      await links.close(deadlineMs);
      // The links were closed with a close frame; sockets that do not finish the closing
      // handshake in time are cut, so the HTTP server's close never waits on them.
      const closing = [...wss.clients].map(
        (client) => new Promise((resolve) => client.once("close", resolve)),
      );
      const left = Math.max(LINK_CLOSE_GRACE_MS, until - Date.now());
      await Promise.race([Promise.all(closing), new Promise((resolve) => setTimeout(resolve, left).unref())]);
      for (const client of wss.clients) client.terminate();
      await http.close();
    },
    links: () => links.status(),
  };
}
