/**
 * Route registration helpers shared by the probe, gateway and hub HTTP APIs.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import { VigilError } from "../errors/catalog.js";
import { sendError } from "./error-handler.js";

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const ALL_METHODS: readonly HTTPMethods[] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

/**
 * Registers the handlers of one resource URL and a 405 with `Allow` for every other method
 * (DESIGN 3.2: "wrong method → 405 with Allow"). HEAD is allowed wherever GET is.
 */
export function resource(
  app: FastifyInstance,
  url: string,
  handlers: Partial<Record<"GET" | "POST" | "PUT" | "DELETE", Handler>>,
  options: { bodyLimit?: number } = {},
): void {
  const allowed = Object.keys(handlers) as ("GET" | "POST" | "PUT" | "DELETE")[];
  const allow = [...allowed, ...(allowed.includes("GET") ? ["HEAD"] : [])].join(", ");
  for (const method of allowed) {
    const handler = handlers[method];
    if (handler === undefined) continue;
    app.route({
      method,
      url,
      handler,
      ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
    });
  }
  const others = ALL_METHODS.filter(
    (m) => !allowed.includes(m as never) && !(m === "HEAD" && allowed.includes("GET")),
  );
  app.route({
    method: others as HTTPMethods[],
    url,
    handler: async (request, reply) =>
      sendError(
        reply,
        new VigilError(
          "METHOD_NOT_ALLOWED",
          { method: request.method, path: request.url.split("?")[0], allow },
          { headers: { Allow: allow } },
        ),
      ),
  });
}
