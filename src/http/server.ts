/**
 * Builds the Fastify instance every vigil HTTP API starts from: shared limits, the central error
 * handler, and JSON logs through the process's pino logger. The app never listens by itself
 * (STYLE 3); `listen()` does, for the process that owns it.
 */
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyHttpsOptions, type FastifyInstance, LogController } from "fastify";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import {
  DEFAULT_BODY_LIMIT_BYTES,
  HTTP_HEADERS_TIMEOUT_MS,
  HTTP_KEEP_ALIVE_TIMEOUT_MS,
  HTTP_MAX_CONNECTIONS,
  HTTP_MAX_CONNECTIONS_PER_CLIENT,
  HTTP_REQUEST_TIMEOUT_MS,
  HTTP_TIMEOUT_CHECK_MS,
} from "../config/defaults.js";
import { type HttpMetricsOptions, instrumentHttp } from "../metrics/http-metrics.js";
import { type ConnectionLimits, limitConnections } from "./connection-limits.js";
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from "./error-handler.js";
import { lazyRequestLogger } from "./request-logger.js";

export interface HttpAppOptions {
  readonly logger: Logger;
  /** Largest accepted request body in bytes; default DEFAULT_BODY_LIMIT_BYTES (10 MiB). */
  readonly bodyLimit?: number;
  /** TLS options; the app then serves HTTPS only. */
  readonly https?: FastifyHttpsOptions<never>["https"];
  /** Timeouts and connection caps; each absent one takes its default from `defaults.ts`. */
  readonly limits?: Partial<HttpLimits>;
  /**
   * The server's self-metrics registry: every request is then timed by route pattern and status
   * (`vigil_http_request_duration_seconds`, src/metrics/http-metrics.ts). Without it, no timing.
   */
  readonly metrics?: { readonly registry: Registry; readonly options?: HttpMetricsOptions };
  /**
   * Longest path parameter (its raw, percent-encoded text) the router matches; default Fastify's
   * 100 characters. Longer ones are a 400 (FST_ERR_MAX_PARAM_LENGTH).
   */
  readonly maxParamLength?: number;
}

/** What bounds slow, idle and greedy clients. */
export interface HttpLimits extends ConnectionLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** How often Node looks for requests past their header or request timeout. */
  readonly timeoutCheckMs: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: HTTP_HEADERS_TIMEOUT_MS,
  requestTimeoutMs: HTTP_REQUEST_TIMEOUT_MS,
  keepAliveTimeoutMs: HTTP_KEEP_ALIVE_TIMEOUT_MS,
  timeoutCheckMs: HTTP_TIMEOUT_CHECK_MS,
  maxConnections: HTTP_MAX_CONNECTIONS,
  maxConnectionsPerClient: HTTP_MAX_CONNECTIONS_PER_CLIENT,
};

/**
 * Creates an unstarted Fastify app with vigil's defaults: body limit, error shape, logging, and
 * request metrics when given a registry.
 */
export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  const limits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT_BYTES,
    ...(options.maxParamLength === undefined
      ? {}
      : { routerOptions: { maxParamLength: options.maxParamLength } }),
    // Nesting and size limits for JSON bodies are enforced by the body limit and by the parsers
    // of each API; prototype poisoning is refused outright.
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    // A clean stop finishes in-flight requests and closes idle keep-alive sockets at once.
    forceCloseConnections: "idle",
    // While closing, the error handler answers 503 with the API error body (Fastify's own 503
    // has its own body); see installErrorHandling.
    return503OnClosing: false,
    // One line per request would drown the event log at ingest rates; errors are logged by the handler.
    logController: new LogController({ disableRequestLogging: true }),
    // So a request that logs nothing gets no logger of its own either.
    childLoggerFactory: lazyRequestLogger,
    // Errors of the router and of Node's HTTP parser get the API error body too (error-handler.ts).
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Slow clients are cut off (slowloris): headers and whole requests have a deadline.
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.timeoutCheckMs,
    },
    ...(options.https === undefined
      ? {}
      : {
          https: {
            ...options.https,
            headersTimeout: limits.headersTimeoutMs,
            requestTimeout: limits.requestTimeoutMs,
            connectionsCheckingInterval: limits.timeoutCheckMs,
          },
        }),
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;
  limitConnections(app.server, limits, options.logger);
  // Before any route, so that every route gets its timer.
  const unmatched =
    options.metrics === undefined
      ? undefined
      : instrumentHttp(app, options.metrics.registry, options.metrics.options);
  installErrorHandling(app, unmatched);
  return app;
}

/** Listens and returns the base URL actually bound (port 0 picks a free port). */
export async function listen(
  app: FastifyInstance,
  port: number,
  host: string,
  scheme = "http",
): Promise<string> {
  await app.listen({ port, host });
  const address = app.server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `${scheme}://${shownHost}:${address.port}`;
}
