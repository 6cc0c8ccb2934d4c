/**
 * Builds the Fastify instance every vigil HTTP API starts from: shared limits, the central error
 * handler, and JSON logs through the process's pino logger. The app never listens by itself
 * (STYLE 3); `listen()` does, for the process that owns it.
 */
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyHttpsOptions, type FastifyInstance, LogController } from "fastify";
import type { Logger } from "pino";
import { DEFAULT_BODY_LIMIT_BYTES } from "../config/defaults.js";
import { installErrorHandling } from "./error-handler.js";

export interface HttpAppOptions {
  readonly logger: Logger;
  /** Largest accepted request body in bytes; default DEFAULT_BODY_LIMIT_BYTES (10 MiB). */
  readonly bodyLimit?: number;
  /** TLS options; the app then serves HTTPS only. */
  readonly https?: FastifyHttpsOptions<never>["https"];
}

/** Creates an unstarted Fastify app with vigil's defaults: body limit, error shape, logging. */
export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT_BYTES,
    // Nesting and size limits for JSON bodies are enforced by the body limit and by the parsers
    // of each API; prototype poisoning is refused outright.
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    // A clean stop finishes in-flight requests and closes idle keep-alive sockets at once.
    forceCloseConnections: "idle",
    return503OnClosing: true,
    // One line per request would drown the event log at ingest rates; errors are logged by the handler.
    logController: new LogController({ disableRequestLogging: true }),
    ...(options.https === undefined ? {} : { https: options.https }),
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;
  installErrorHandling(app);
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
