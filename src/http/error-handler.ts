/**
 * The one central error handler of every vigil HTTP API (STYLE 9). It logs the whole error (a 503,
 * which asks the client to retry, as a warning without a stack) and answers `{status, title, body}`
 * (DESIGN 3.2); a 5xx never shows internals, only a request id.
 *
 * Three ways an error reaches a client, all answered with that body:
 * - thrown below a route, or by Fastify while parsing a request → the error handler;
 * - raised by the router before any route runs (a malformed percent-escape in the path, a path
 *   parameter over the length limit) → {@link frameworkErrorHandler}, Fastify's `frameworkErrors`;
 * - raised by Node's HTTP parser before Fastify sees a request (over-long header fields, a
 *   malformed request line, a request timeout) → {@link clientErrorHandler}, written on the socket.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errorBody, VigilError } from "../errors/catalog.js";

/** Longest piece of a client's URL quoted back in an error body. */
const MAX_QUOTED_URL = 200;

/** The URL as quoted in an error body: its path only, cut to MAX_QUOTED_URL characters. */
function quotedPath(url: string): string {
  const path = url.split("?")[0] ?? "";
  return path.length > MAX_QUOTED_URL ? `${path.slice(0, MAX_QUOTED_URL)}…` : path;
}

/** Maps an error thrown anywhere below a route to the VigilError it is answered as. */
export function toVigilError(error: unknown, request: FastifyRequest): VigilError {
  if (error instanceof VigilError) return error;
  const fastifyError = error as Partial<FastifyError> | undefined;
  const code = fastifyError?.code;
  if (code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    return new VigilError("BODY_TOO_LARGE", { limit: request.routeOptions.bodyLimit }, { cause: error });
  }
  if (code === "FST_ERR_CTP_EMPTY_JSON_BODY") {
    return new VigilError("BAD_REQUEST", { detail: "The request body is empty; send a JSON body." });
  }
  if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return new VigilError(
      "BAD_REQUEST",
      {
        detail: `Unsupported Content-Type '${request.headers["content-type"] ?? ""}'; send application/json.`,
      },
      { cause: error },
    );
  }
  if (code === "FST_ERR_BAD_URL") {
    return new VigilError(
      "BAD_REQUEST",
      {
        detail: `The URL path '${quotedPath(request.url)}' holds a malformed percent-escape; write '%' as %25.`,
      },
      { cause: error },
    );
  }
  if (code === "FST_ERR_MAX_PARAM_LENGTH") {
    return new VigilError(
      "BAD_REQUEST",
      { detail: `A segment of the URL path '${quotedPath(request.url)}' is too long.` },
      { cause: error },
    );
  }
  const status = fastifyError?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    // Fastify's own client errors (bad JSON, bad URL encoding, …): the message names no internals.
    return new VigilError(
      "BAD_REQUEST",
      { detail: fastifyError?.message ?? "Bad request." },
      { cause: error },
    );
  }
  return new VigilError("INTERNAL", { requestId: request.id }, { cause: error });
}

/** Sends a VigilError as the API error body, with its extra headers. */
export function sendError(reply: FastifyReply, error: VigilError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type("application/json").send(errorBody(error));
}

/** Answers an error request is refused with, logging it as {@link installErrorHandling} does. */
function answer(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const vigilError = toVigilError(error, request);
  if (vigilError.status === 503) {
    // A refusal for now (back-pressure, memory protection, a store outage, a stop): the server is
    // working as designed and the client retries, so a warning with what it was told and why, not
    // an error with a stack per refused request (under load the probe refuses hundreds a minute).
    const cause = vigilError.cause instanceof Error ? vigilError.cause.message : undefined;
    request.log.warn({ code: vigilError.code, detail: vigilError.body, cause }, "request refused for now");
  } else if (vigilError.status >= 500) {
    request.log.error({ err: error, code: vigilError.code }, "request failed");
  } else {
    request.log.info({ code: vigilError.code, detail: vigilError.body }, "request rejected");
  }
  return sendError(reply, vigilError);
}

/**
 * Fastify's `frameworkErrors` option: errors the router raises before a route is chosen
 * (FST_ERR_BAD_URL for a malformed percent-escape in the path, FST_ERR_MAX_PARAM_LENGTH), answered
 * with the API error body instead of Fastify's own `{error, message, statusCode}`.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  return answer(error, request, reply);
}

/** The body text of an error Node's HTTP parser raised, by its code. */
function clientErrorText(code: string | undefined): string {
  if (code === "HPE_HEADER_OVERFLOW") {
    return "The request's header fields are larger than the server accepts; send shorter headers.";
  }
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return "The request did not arrive completely within the server's request timeout.";
  }
  return `The request is not valid HTTP/1.1 (${code ?? "unknown parser error"}).`;
}

/**
 * Fastify's `clientErrorHandler` option (Node's `clientError` event): the request never became a
 * Fastify request, so the answer is written on the socket — a 400 with the API error body (the
 * catalog has one client-error status for all of them; the body says which), then the socket is
 * closed as Node itself does. A reset or already destroyed socket gets nothing.
 */
export function clientErrorHandler(
  this: FastifyInstance,
  error: Error & { code?: string },
  socket: Socket,
): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const vigilError = new VigilError("BAD_REQUEST", { detail: clientErrorText(error.code) }, { cause: error });
  this.log.info({ code: vigilError.code, detail: vigilError.body }, "request rejected by the HTTP parser");
  if (socket.writable) {
    const body = JSON.stringify(errorBody(vigilError));
    socket.write(
      `HTTP/1.1 ${vigilError.status} ${STATUS_CODES[vigilError.status] ?? ""}\r\n` +
        "Content-Type: application/json; charset=utf-8\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Installs the error and not-found handlers on an app; `notFoundTimer`, when given, is the
 * not-found handler's `onResponse` hook (the request metrics' `unmatched` route).
 */
export function installErrorHandling(
  app: FastifyInstance,
  notFoundTimer?: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void,
): void {
  app.setErrorHandler((error, request, reply) => answer(error, request, reply));
  // Requests that arrive while the app closes (pipelined or on a busy keep-alive socket) get a 503
  // in the API's shape; Fastify's built-in answer (return503OnClosing) has a body of its own.
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onRequest", (_request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    reply.header("Connection", "close");
    sendError(
      reply,
      new VigilError("SERVICE_UNAVAILABLE", { detail: "The server is shutting down; retry later." }),
    );
  });
  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    sendError(reply, new VigilError("NOT_FOUND", { path: quotedPath(request.url) }));
  if (notFoundTimer === undefined) app.setNotFoundHandler(notFound);
  // Fastify applies every lifecycle hook given here to the not-found context (lib/four-oh-four.js),
  // though its types name only preValidation and preHandler.
  else app.setNotFoundHandler({ onResponse: notFoundTimer } as never, notFound);
}
