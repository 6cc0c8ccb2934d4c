/**
 * Route registration helpers shared by the probe, gateway and hub HTTP APIs.
 */
import { METHODS } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import { VigilError } from "../errors/catalog.js";
import { sendError } from "./error-handler.js";

/** A route handler: its answer, or a promise of it (a synchronous answer costs no promise). */
export type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

/** An `onRequest` hook of one resource, in Fastify's callback form. */
export type OnRequestHook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/** Apps that route every method Node's HTTP parser accepts (see {@link routeEveryMethod}). */
const everyMethodApps = new WeakSet<FastifyInstance>();

/**
 * Makes the router know every method Node's HTTP parser accepts (TRACE, PROPFIND, … — Fastify
 * routes only some by default, the rest would be a 404), so that a resource answers them all with
 * 405. CONNECT is left out: Node hands it to the `connect` event, never to the router. The methods
 * added are bodyless: a body sent with them is not parsed before the 405.
 */
function routeEveryMethod(app: FastifyInstance): void {
  if (everyMethodApps.has(app)) return;
  everyMethodApps.add(app);
  const supported = new Set(app.supportedMethods);
  for (const method of METHODS) {
    if (method !== "CONNECT" && !supported.has(method)) app.addHttpMethod(method);
  }
}

/**
 * Registers the handlers of one resource URL and a 405 with `Allow` for every other method Node
 * accepts, TRACE included (DESIGN 3.2: "wrong method → 405 with Allow"). HEAD is allowed wherever
 * GET is.
 */
export function resource(
  app: FastifyInstance,
  url: string,
  handlers: Partial<Record<"GET" | "POST" | "PUT" | "DELETE", Handler>>,
  options: { bodyLimit?: number; onRequest?: OnRequestHook } = {},
): void {
  // A hook of this URL only, so that other routes do not pay for it.
  const onRequest = options.onRequest === undefined ? {} : { onRequest: options.onRequest };
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
      ...onRequest,
    });
  }
  routeEveryMethod(app);
  const others = app.supportedMethods.filter(
    (m) => !allowed.includes(m as never) && !(m === "HEAD" && allowed.includes("GET")),
  );
  const notAllowed = (request: FastifyRequest, reply: FastifyReply): FastifyReply =>
    sendError(
      reply,
      new VigilError(
        "METHOD_NOT_ALLOWED",
        { method: request.method, path: request.url.split("?")[0], allow },
        { headers: { Allow: allow } },
      ),
    );
  app.route({
    method: others as HTTPMethods[],
    url,
    // Answered before the body is read (after the resource's own hook): a wrong method is a 405
    // whatever its body, never a 400 or 415 for a body no handler would read.
    onRequest: [
      ...(options.onRequest === undefined ? [] : [options.onRequest]),
      async (request: FastifyRequest, reply: FastifyReply) => notAllowed(request, reply),
    ],
    handler: async (request, reply) => notAllowed(request, reply),
  });
}
