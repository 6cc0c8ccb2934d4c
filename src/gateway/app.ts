/**
 * The gateway (seed area C, DESIGN 4): owns the monitoring hierarchy, takes its probes' links
 * (WebSocket at LINK_PATH on its port, or in-process for `vigil up`), turns what they send into
 * public-v2 messages and hands them to the publisher. `buildGateway()` returns an unstarted
 * service (STYLE 3); the publisher is built and closed by the caller.
 *
 * The gateway is a pipeline, each stage a part with its own small interface, wired here:
 * link server (`LinkServer`, probe frames) → hierarchy (`Hierarchy`, metrics messages) →
 * severity (`SeverityEngine`, event messages; joined to the hierarchy by `GatewayModel`) →
 * publisher. Beside it: the commands and item views (`registerCommandRoutes`, on the severity
 * stage) and the state files (`GatewayStateFiles`, from the severity stage's kept state).
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { WebSocketServer } from "ws";
import {
  DEFAULT_GATEWAY_HOST,
  LINK_MAX_UNAUTHENTICATED,
  METRICS_PATH,
  RETRY_AFTER_SECONDS,
  STATE_SAVE_INTERVAL_MS,
  TAP_END_GRACE_MS,
  TAP_MAX_BUFFERED_BYTES,
  TAP_MAX_CLIENTS,
  TOKEN_GRANT_CACHE_MS,
} from "../config/defaults.js";
import type { DeploymentSetup } from "../config/setup.js";
import { VigilError } from "../errors/catalog.js";
import { MemoryProtection } from "../http/memory-protection.js";
import { resource } from "../http/routes.js";
import { createHttpApp, listen } from "../http/server.js";
import { loadServerTls, ServerTlsReloader } from "../http/server-tls.js";
import { LimitRefusals, registerLimitRefusals } from "../limits/limit-refusals.js";
import { type InProcessConnector, inProcessConnector } from "../link/in-process.js";
import { LINK_PATH } from "../link/protocol.js";
import { webSocketEnd } from "../link/websocket.js";
import { registerMetricsRoute } from "../metrics/metrics-route.js";
import { createMetricsRegistry } from "../metrics/registry.js";
import { registerCommandRoutes } from "./commands/command-routes.js";
import {
  type BearerRule,
  bearerToken,
  requireBearer,
  type TokenVerifier,
  tokenExpiresAt,
  tokenGrant,
} from "./gateway-auth.js";
import { registerGatewayMetrics } from "./gateway-metrics.js";
import { GatewayModel } from "./gateway-model.js";
import { Hierarchy } from "./hierarchy.js";
import { LinkAuthenticator, refuseUpgrade } from "./link-auth.js";
import { LinkServer, type LinkStatus } from "./link-server.js";
import type { Publisher } from "./publish/publisher.js";
import { keptForProbes } from "./severity/item-states.js";
import { SeverityEngine } from "./severity/severity-engine.js";
import { GatewayStateFiles, readGatewayState } from "./state/state-file.js";

/** What each gateway URL needs with security on (DESIGN 5.4a); `/v1/healthcheck` stays open. */
const GATEWAY_BEARER_RULES: readonly BearerRule[] = [
  { prefix: "/v1/commands", role: "operate" },
  { prefix: "/v1/items", role: "read" },
  { prefix: "/v1/messages", role: "read" },
  { prefix: "/v1/status", role: "read" },
  { prefix: METRICS_PATH, role: "read" },
];

/** Time closing links get to finish their closing handshake when the stop deadline is spent. */
const LINK_CLOSE_GRACE_MS = 100; // ms

/** What the gateway needs of the publisher: the lead's `Publisher`, or a test's fake. */
export type GatewayPublisher = Pick<Publisher, "publish" | "ready" | "whenReady" | "subscribe" | "status">;

/** Link tuning (tests); the defaults are in `src/config/defaults.ts`. */
export interface GatewayLinkTuning {
  readonly heartbeatMs?: number;
  readonly creditBatches?: number;
  readonly maxBatchChanges?: number;
  /** Default LINK_HELLO_TIMEOUT_MS. */
  readonly helloTimeoutMs?: number;
  /** Links that have not said hello, at most; default LINK_MAX_UNAUTHENTICATED. */
  readonly maxUnauthenticated?: number;
}

export interface GatewayOptions {
  readonly setup: DeploymentSetup;
  readonly publisher: GatewayPublisher;
  readonly logger: Logger;
  /**
   * When set (security enabled), the commands (`operate`), items, message tap, status and metrics
   * (`read`) need a token it accepts with that role.
   */
  readonly verifyToken?: TokenVerifier;
  readonly linkTuning?: GatewayLinkTuning;
  /**
   * How often an open message tap's token is checked again, so a revoked key's tap ends; default
   * TOKEN_GRANT_CACHE_MS (5 s), the verifier's own cache time.
   */
  readonly tokenRecheckMs?: number;
  /** Default TAP_MAX_BUFFERED_BYTES. */
  readonly tapMaxBufferedBytes?: number;
  /** Message-tap clients served at once; default TAP_MAX_CLIENTS. */
  readonly tapMaxClients?: number;
  /**
   * Where the state file (snoozes, assignments, last published severities) is kept and read back
   * at start; without it the state lives in memory only (tests).
   */
  readonly dataDir?: string;
  /** Epoch ms for commands and `until*` times; default Date.now (tests pass a controllable clock). */
  readonly clock?: () => number;
  /**
   * The self-metrics registry `/metrics` serves; default a new one. The gateway service
   * passes the one its JetStream publish targets report to.
   */
  readonly metrics?: Registry;
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
  updateSetup(setup: DeploymentSetup): void;
  /** Reads the `gateway.tls` files again and serves the new pair (HTTPS gateways; SIGHUP). */
  reloadCertificates(): void;
  /** Listens (default: the setup's gateway port on DEFAULT_GATEWAY_HOST); returns the bound base URL. */
  start(port?: number, host?: string): Promise<string>;
  /**
   * Stops taking links and requests, waits (up to `deadlineMs`) for acknowledgements in progress,
   * closes the links and the HTTP server. The publisher is the caller's to close.
   */
  stop(deadlineMs: number): Promise<void>;
  /** The probe links, as `GET /v1/status` shows them. */
  links(): LinkStatus[];
  /**
   * Releases the snoozes and assignments whose `untilTime` has come and writes changed state;
   * the started gateway runs it every STATE_SAVE_INTERVAL_MS (tests call it after moving the clock).
   */
  tick(): Promise<void>;
}

/** Builds an unstarted gateway for a setup. */
export function buildGateway(options: GatewayOptions): Gateway {
  const { publisher, logger } = options;
  let setup = options.setup;
  const log = logger.child({ component: "gateway", gateway: setup.gateway.name });
  const clock = options.clock ?? Date.now;
  const dataDir = options.dataDir;
  const kept = dataDir === undefined ? undefined : readGatewayState(dataDir, setup.gateway.name, log);
  // Severities of probes the setup no longer has would never be published again: dropped.
  const restored =
    kept === undefined ? undefined : keptForProbes(kept, new Set(setup.probes.map((p) => p.name)));

  // The pipeline: link server → hierarchy → severity → publisher.
  const hierarchy = new Hierarchy(setup.gateway, setup.probes);
  const severity = new SeverityEngine({
    gateway: setup.gateway.name,
    rules: setup.rules,
    lookup: hierarchy,
    samplerSeverities: (probe, target, row) => hierarchy.samplerSeverities(probe, target, row),
    ...(restored === undefined ? {} : { restored }),
  });
  const model = new GatewayModel(hierarchy, severity);
  const stateFiles = new GatewayStateFiles(dataDir, setup.gateway.name, severity, log);
  let ticker: NodeJS.Timeout | undefined;
  const tick = async (): Promise<void> => {
    publisher.publish(severity.tick(clock()));
    await stateFiles.flush();
  };
  const memory = new MemoryProtection("gateway", () => setup.gateway.memoryProtection);
  const { maxUnauthenticated = LINK_MAX_UNAUTHENTICATED, ...linkTuning } = options.linkTuning ?? {};
  // Probe frames refused at a limit of the setup's `limits` (DESIGN 5.4b), counted at /metrics.
  const limitRefusals = new LimitRefusals(log);
  const links = new LinkServer({
    setup: () => setup,
    model,
    publisher,
    memory,
    logger: log,
    limitRefusals,
    ...linkTuning,
  });
  const linkAuth = new LinkAuthenticator(setup.linkSecrets);
  // Both gateway.tls files set: the HTTP API and the probe link are HTTPS (wss) only; read before
  // anything starts, so a bad file stops the start.
  const tls = loadServerTls("gateway", setup.gateway.tls);
  const metrics = options.metrics ?? createMetricsRegistry();
  const http = createHttpApp({
    logger: log,
    metrics: { registry: metrics },
    ...(tls === undefined ? {} : { https: tls }),
  });
  const certificates = new ServerTlsReloader("gateway", setup.gateway.tls, log);
  certificates.attach(http.server);
  let stopping = false;

  // The probe link: a WebSocket upgrade on LINK_PATH (DESIGN 1), authenticated before the upgrade
  // by the probe's link secret (DESIGN 5.4b): a missing or wrong one is the same 401 whatever the
  // probe. At most LINK_MAX_UNAUTHENTICATED links may be waiting for their hello; one more is a 503.
  // A message is at most limits.linkFrameBytes, all its fragments together (`ws` counts them
  // against maxPayload), set again on a reload for the links that open after it.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: setup.limits.linkFrameBytes,
  });
  http.server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? "").split("?")[0];
    const remote = `${request.socket.remoteAddress ?? "?"}:${request.socket.remotePort ?? "?"}`;
    if (path !== LINK_PATH) {
      refuseUpgrade(socket, new VigilError("NOT_FOUND", { path: path ?? "" }));
      return;
    }
    if (stopping) {
      refuseUpgrade(socket, new VigilError("SERVICE_UNAVAILABLE", { detail: "The gateway is stopping." }));
      return;
    }
    const identity = linkAuth.identify(request.headers.authorization);
    if (identity.kind === "refused") {
      links.refusals.note(identity.reason, { remote }, "probe link refused: no valid link secret (401)");
      refuseUpgrade(socket, new VigilError("LINK_UNAUTHORIZED"), { "WWW-Authenticate": "Bearer" });
      return;
    }
    if (links.awaitingHello() >= maxUnauthenticated) {
      links.refusals.note(
        "busy",
        { remote, limit: maxUnauthenticated },
        "probe link refused: too many links have not said hello yet (503)",
      );
      refuseUpgrade(
        socket,
        new VigilError("SERVICE_UNAVAILABLE", {
          detail: `The gateway holds ${maxUnauthenticated} probe links that have not said hello yet; retry later.`,
        }),
        { "Retry-After": String(RETRY_AFTER_SECONDS) },
      );
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      links.accept(
        webSocketEnd(ws, remote, () => setup.limits),
        identity,
      );
    });
  });

  // With security on, every route but the health check and the probe link needs a hub token with
  // the route's role (DESIGN 5.4a); the hook goes first so that it covers every route below.
  if (options.verifyToken !== undefined) requireBearer(http, GATEWAY_BEARER_RULES, options.verifyToken);
  resource(http, "/v1/healthcheck", { GET: async () => ({ status: "OK", gateway: setup.gateway.name }) });
  resource(http, "/v1/status", {
    GET: async () => ({
      gateway: setup.gateway.name,
      links: links.status(),
      hierarchy: hierarchy.stats(),
      memory: memory.reading(),
      publisher: publisher.status(),
      tap: { clients: taps.size, dropped: tapDropped },
      events: severity.stats(),
    }),
  });

  registerCommandRoutes(http, {
    engine: severity,
    gateway: () => setup.gateway.name,
    publish: (messages) => publisher.publish(messages),
    persist: () => stateFiles.flushStates(),
    clock,
    subject: (request) => tokenGrant(request.raw)?.sub,
  });

  const taps = new Set<{ end(reason?: string): void }>();
  let tapDropped = 0;
  // Self-metrics: with security enabled, a scrape needs a hub token with `read`.
  registerGatewayMetrics(metrics, {
    publisher: () => publisher.status(),
    links: () => links.status(),
    linkRefusals: links.refusals,
    tap: () => ({ clients: taps.size, dropped: tapDropped }),
    memory,
  });
  registerLimitRefusals(metrics, limitRefusals);
  registerMetricsRoute(http, metrics);
  const tapLimit = options.tapMaxBufferedBytes ?? TAP_MAX_BUFFERED_BYTES;
  const tapMaxClients = options.tapMaxClients ?? TAP_MAX_CLIENTS;
  http.addHook("preClose", async () => {
    for (const tap of taps) tap.end();
  });

  // Live message tap (DESIGN 4.3): server-sent events, `event:` the type, `data:` one JSON line.
  // Bounded: at most TAP_MAX_CLIENTS clients; a client that reads slower than messages
  // come is let go once TAP_MAX_BUFFERED_BYTES wait; a stream opened with a token ends when the
  // token expires. Each ending sends a final `event: end` with the reason, and the connection is
  // cut TAP_END_GRACE_MS later if the client has not read it by then.
  resource(http, "/v1/messages", {
    GET: async (request, reply) => {
      if (taps.size >= tapMaxClients) {
        throw new VigilError("SERVICE_UNAVAILABLE", {
          detail: `The message tap serves at most ${tapMaxClients} clients at once; retry later.`,
        });
      }
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        // The stream holds its connection to the end; it is not reused afterwards.
        connection: "close",
      });
      raw.write(": vigil message tap\n\n");
      let unsubscribe = (): void => {};
      let expiry: NodeJS.Timeout | undefined;
      let recheck: NodeJS.Timeout | undefined;
      const tap = {
        end: (reason = "the gateway is stopping") => {
          if (!taps.has(tap)) return;
          taps.delete(tap);
          unsubscribe();
          clearTimeout(expiry);
          clearInterval(recheck);
          // The final event, then the connection closes once it is flushed; a client that reads
          // nothing more is cut after the grace period (its data may sit in the kernel's buffers).
          const socket = raw.socket;
          raw.end(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`);
          setTimeout(() => socket?.destroy(), TAP_END_GRACE_MS).unref();
        },
      };
      unsubscribe = publisher.subscribe((envelope) => {
        if (raw.writableLength > tapLimit) {
          tapDropped += 1;
          log.warn(
            { remote: request.ip, buffered: raw.writableLength },
            "message tap client too slow; disconnected",
          );
          tap.end(`the client read too slowly: more than ${tapLimit} bytes were waiting for it`);
          return;
        }
        raw.write(
          `id: ${envelope.id}\nevent: ${envelope.message.type}\ndata: ${JSON.stringify(envelope.message)}\n\n`,
        );
      });
      taps.add(tap);
      const expiresAt = tokenExpiresAt(request.raw);
      if (expiresAt !== undefined) {
        // setTimeout takes at most 2^31-1 ms; a token living longer is re-checked then.
        const endAtExpiry = () => {
          const left = expiresAt - Date.now();
          if (left <= 0) tap.end("the access token expired; open the tap again with a new token");
          else expiry = setTimeout(endAtExpiry, Math.min(left, 2 ** 31 - 1));
        };
        endAtExpiry();
      }
      // A key removed from the hub's setup, or that lost `read`, ends its open taps too (DESIGN
      // 5.4a): the token is checked again every `tokenRecheckMs`. A hub that cannot be asked
      // (a VigilError) leaves the tap open; the next check asks again.
      const token = bearerToken(request.raw);
      const verify = options.verifyToken;
      if (token !== undefined && verify !== undefined) {
        recheck = setInterval(() => {
          verify(token).then(
            (grant) => {
              if (!grant.roles.includes("read")) tap.end("the access token no longer has the read role");
            },
            (error: unknown) => {
              if (!(error instanceof VigilError)) tap.end("the access token is no longer accepted");
            },
          );
        }, options.tokenRecheckMs ?? TOKEN_GRANT_CACHE_MS);
        recheck.unref();
      }
      request.raw.on("close", () => {
        taps.delete(tap);
        unsubscribe();
        clearTimeout(expiry);
        clearInterval(recheck);
      });
    },
  });

  return {
    http,
    connectInProcess() {
      return inProcessConnector((end) => {
        if (stopping) throw new Error("the gateway is stopping");
        links.accept(end, { kind: "in-process" });
      });
    },
    updateSetup(next) {
      const before = setup;
      if (next.gateway.port !== before.gateway.port) {
        log.warn({ settings: ["gateway.port"] }, "setup changes that need a gateway restart to take effect");
      }
      setup = next;
      publisher.publish(model.updateSetup(next.gateway, next.probes, Date.now()));
      // New rules are evaluated at once over what the gateway holds (DESIGN 4.1).
      if (JSON.stringify(next.rules) !== JSON.stringify(before.rules)) {
        publisher.publish(model.updateRules(next.rules, clock()));
        log.info({ rules: next.rules.length }, "rules changed; severities evaluated again");
      }
      linkAuth.update(next.linkSecrets);
      wss.options.maxPayload = next.limits.linkFrameBytes;
      links.updateSetup(before, next);
      if (JSON.stringify(next.gateway.tls) !== JSON.stringify(before.gateway.tls))
        certificates.reload(next.gateway.tls);
    },
    reloadCertificates: () => void certificates.reload(setup.gateway.tls),
    async start(port = setup.gateway.port, host = DEFAULT_GATEWAY_HOST) {
      const url = await listen(http, port, host, tls === undefined ? "http" : "https");
      // Current state republished on start (DESIGN 4.3): the gateway's severity, snoozes, assignments.
      publisher.publish(severity.snapshot(clock()));
      ticker = setInterval(() => {
        tick().catch((error: unknown) => log.error({ err: error }, "gateway tick failed"));
      }, STATE_SAVE_INTERVAL_MS);
      ticker.unref();
      return url;
    },
    async stop(deadlineMs) {
      const until = Date.now() + deadlineMs;
      stopping = true;
      if (ticker !== undefined) clearInterval(ticker);
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
      // The severities the last links changed (`Down` included) are kept for the next run.
      await stateFiles.flush();
    },
    links: () => links.status(),
    tick,
  };
}
