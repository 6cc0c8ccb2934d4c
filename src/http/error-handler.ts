/**
 * The one central error handler of every vigil HTTP API (STYLE 9). It logs the whole error and
 * answers `{status, title, body}` (DESIGN 3.2); a 5xx never shows internals, only a request id.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errorBody, VigilError } from "../errors/catalog.js";

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

/** Installs the error and not-found handlers on an app. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const vigilError = toVigilError(error, request);
    if (vigilError.status >= 500) {
      request.log.error({ err: error, code: vigilError.code }, "request failed");
    } else {
      request.log.info({ code: vigilError.code, detail: vigilError.body }, "request rejected");
    }
    return sendError(reply, vigilError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new VigilError("NOT_FOUND", { path: request.url.split("?")[0] })),
  );
}
