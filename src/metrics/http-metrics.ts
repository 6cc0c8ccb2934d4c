/**
 * HTTP request metrics of one vigil server: `vigil_http_request_duration_seconds`, a
 * histogram by route, method and status; its `_count` series are the request counters.
 *
 * The `route` label is the pattern the route was registered with (`/v1/managedEntity/:me/…`), never
 * the raw URL, and every request no route matches is `unmatched`: a client cannot grow the label
 * set by inventing URLs. Methods are Node's (its HTTP parser refuses others) and statuses are the
 * server's own, so every label is bounded.
 *
 * Cost per request (the probe's PUT is measured against bare node:http): no closure and no
 * allocation. Each route gets, once at registration, its own `onResponse` hook holding its label
 * and a cache of labelled histogram children by method and status; the hook reads Fastify's own
 * response time (`reply.elapsedTime`, measured by Fastify for every request anyway) and observes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Histogram, type Registry } from "prom-client";
import { HTTP_DURATION_BUCKETS_S } from "../config/defaults.js";

/** The `route` label of requests no route matches (the not-found handler answers them). */
export const UNMATCHED_ROUTE = "unmatched";

/** Something a request's duration is observed on besides the request histogram. */
export interface DurationObserver {
  observe(seconds: number): void;
}

export interface HttpMetricsOptions {
  /**
   * A second observer for some routes (the hub's query latency), asked once per route pattern;
   * it observes the requests of that route that succeed (status below 400).
   */
  readonly alsoObserve?: (route: string) => DurationObserver | undefined;
}

/** An `onResponse` hook in Fastify's callback form (no promise per request). */
export type ResponseHook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

type Label = "route" | "method" | "status";

/** The hooks this module made, so a route copied from another (Fastify's HEAD routes) gets one. */
const timers = new WeakSet<ResponseHook>();

/**
 * Creates the request histogram in `registry` and times every route registered on `app` from now
 * on. Returns the hook for the not-found handler (route `unmatched`), which the caller installs
 * with that handler (createHttpApp does). Call it before any route is registered.
 */
export function instrumentHttp(
  app: FastifyInstance,
  registry: Registry,
  options: HttpMetricsOptions = {},
): ResponseHook {
  const histogram = new Histogram<Label>({
    name: "vigil_http_request_duration_seconds",
    help: "HTTP requests by route pattern, method and status: duration until the response was sent",
    labelNames: ["route", "method", "status"],
    buckets: [...HTTP_DURATION_BUCKETS_S],
    registers: [registry],
  });
  app.addHook("onRoute", (route) => {
    const existing = route.onResponse;
    const hooks = (
      existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]
    ) as unknown[];
    if (hooks.some((hook) => timers.has(hook as ResponseHook))) return;
    const timer = routeTimer(histogram, route.url, options.alsoObserve?.(route.url));
    route.onResponse = [...hooks, timer] as NonNullable<typeof route.onResponse>;
  });
  return routeTimer(histogram, UNMATCHED_ROUTE, undefined);
}

/** The `onResponse` hook of one route: its label and labelled children are found once. */
function routeTimer(
  histogram: Histogram<Label>,
  route: string,
  also: DurationObserver | undefined,
): ResponseHook {
  const children = new Map<string, Map<number, DurationObserver>>();
  const timer: ResponseHook = (request, reply, done) => {
    const status = reply.statusCode;
    const method = request.method;
    let byStatus = children.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      children.set(method, byStatus);
    }
    let child = byStatus.get(status);
    if (child === undefined) {
      child = histogram.labels(route, method, String(status));
      byStatus.set(status, child);
    }
    const seconds = reply.elapsedTime / 1000;
    child.observe(seconds);
    if (also !== undefined && status < 400) also.observe(seconds);
    done();
  };
  timers.add(timer);
  return timer;
}
