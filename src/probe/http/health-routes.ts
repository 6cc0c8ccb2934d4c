/** The probe's health check (seed B): `GET /v1/healthcheck` and `GET /healthcheck`. */
import type { FastifyInstance } from "fastify";
import { resource } from "../../http/routes.js";
import type { LinkClientStatus } from "../link-client.js";

/** Registers both health-check paths: the probe's name and its link's state. */
export function registerHealthRoutes(
  app: FastifyInstance,
  probe: string,
  linkState: () => LinkClientStatus["state"],
): void {
  const health = async () => ({ status: "OK", probe, link: linkState() });
  resource(app, "/v1/healthcheck", { GET: health });
  resource(app, "/healthcheck", { GET: health });
}
