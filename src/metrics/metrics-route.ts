/**
 * `GET /metrics` (issue 13): the server's self-metrics in the Prometheus text format.
 *
 * With security enabled (`hub.security.enabled`) the hub's and the gateway's metrics need a
 * hub-issued bearer token like the rest of their APIs (DESIGN 5.4): Prometheus sends one with its
 * `authorization` scrape setting (docs/operations.md shows how). The check lives in the handler,
 * so it costs nothing on other routes. The probe serves its metrics without a token, as it serves
 * its ingest API (the seed gives the probe no authentication).
 */
import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { TokenVerifier } from "../auth/bearer.js";
import { METRICS_PATH } from "../config/defaults.js";
import { VigilError } from "../errors/catalog.js";
import { resource } from "../http/routes.js";
import { METRICS_CONTENT_TYPE, metricsText } from "./registry.js";

export interface MetricsRouteOptions {
  /** When set (security enabled), a scrape needs `Authorization: Bearer <token>` it accepts. */
  readonly verifyToken?: TokenVerifier;
}

/** The bearer challenge of RFC 6750 §3, as the hub and the gateway send it. */
const CHALLENGE = 'Bearer realm="vigil"';

/**
 * Registers `GET /metrics` (and HEAD; other methods 405) answering `registry`'s metrics followed by
 * the process metrics. Without a valid token when `verifyToken` is set: 401 UNAUTHORIZED with a
 * `WWW-Authenticate: Bearer` challenge (`error="invalid_token"` when a sent token failed).
 */
export function registerMetricsRoute(
  app: FastifyInstance,
  registry: Registry,
  options: MetricsRouteOptions = {},
): void {
  const { verifyToken } = options;
  resource(app, METRICS_PATH, {
    GET: async (request, reply) => {
      if (verifyToken !== undefined) {
        const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
        if (match?.[1] === undefined) {
          throw new VigilError("UNAUTHORIZED", {}, { headers: { "WWW-Authenticate": CHALLENGE } });
        }
        try {
          await verifyToken(match[1]);
        } catch (error) {
          throw new VigilError(
            "UNAUTHORIZED",
            {},
            { cause: error, headers: { "WWW-Authenticate": `${CHALLENGE}, error="invalid_token"` } },
          );
        }
      }
      const text = await metricsText(registry);
      return reply.type(METRICS_CONTENT_TYPE).send(text);
    },
  });
}
