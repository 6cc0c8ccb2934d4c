/**
 * `GET /metrics`: the server's self-metrics in the Prometheus text format.
 *
 * With security enabled (`hub.security.enabled`) the hub's and the gateway's metrics need a
 * hub-issued bearer token with the `read` role like the rest of their read APIs (DESIGN 5.4a):
 * their token checks cover this path (the hub's in src/hub/auth/auth.ts, the gateway's through
 * `requireBearer`). Prometheus sends a token with its `authorization` scrape setting
 * (docs/operations.md shows how). The probe serves its metrics without a token, as it serves its
 * ingest API (the seed gives the probe no authentication).
 */
import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import { METRICS_PATH } from "../config/defaults.js";
import { resource } from "../http/routes.js";
import { METRICS_CONTENT_TYPE, metricsText } from "./registry.js";

/**
 * Registers `GET /metrics` (and HEAD; other methods 405) answering `registry`'s metrics followed by
 * the process metrics. Authentication is the server's token check, registered before it.
 */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry): void {
  resource(app, METRICS_PATH, {
    GET: async (_request, reply) => {
      const text = await metricsText(registry);
      return reply.type(METRICS_CONTENT_TYPE).send(text);
    },
  });
}
