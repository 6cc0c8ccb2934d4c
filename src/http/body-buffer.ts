/**
 * A request body read into one buffer as it arrives, for bodies too large to read twice (`POST
 * /v0/messages` takes up to 256 MiB). Fastify's own reader (`parseAs: "buffer"`) keeps every chunk
 * and joins them once the body has ended: twice the body in memory at that moment, and one copy of
 * the whole body on the event loop (tens of milliseconds at 256 MiB). With a `Content-Length` this
 * reader allocates the buffer up front and copies each chunk into it as it comes, so the body is
 * held once and copied a chunk at a time; a chunked body (no length) is gathered as Fastify does.
 * Refusals are Fastify's own errors, answered alike by the error handler: 413 when the length, or
 * the bytes received, pass `limit` (nothing is allocated for a length over it); 400 when the body
 * ends before its `Content-Length` or the stream fails; 503 with `Retry-After` when the buffer for a
 * `Content-Length` cannot be allocated.
 */
import type { Readable } from "node:stream";
import { errorCodes } from "fastify";
import { VigilError } from "../errors/catalog.js";

/** Reads `payload` whole; `declared` is the request's Content-Length header, if any. */
export function readBodyBuffer(
  payload: Readable,
  declared: string | undefined,
  limit: number,
  done: (error: Error | null, body?: Buffer) => void,
): void {
  const length = declared === undefined ? Number.NaN : Number(declared);
  if (length > limit) {
    done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    return;
  }
  const known = Number.isSafeInteger(length) && length >= 0;
  let whole: Buffer | undefined;
  try {
    // Address space, not memory: the pages are taken as the bytes arrive.
    whole = known ? Buffer.allocUnsafe(length) : undefined;
  } catch {
    done(
      new VigilError(
        "SERVICE_UNAVAILABLE",
        { detail: `The hub cannot take a body of ${length} bytes now; send it again later.` },
        { headers: { "Retry-After": "1" } },
      ),
    );
    return;
  }
  const chunks: Buffer[] = [];
  let received = 0;
  const stop = (): void => {
    payload.removeListener("data", onData);
    payload.removeListener("end", onEnd);
    payload.removeListener("error", onEnd);
  };
  function onData(chunk: Buffer | string): void {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    const total = received + bytes.length;
    if (total > limit || (whole !== undefined && total > whole.length)) {
      stop();
      done(
        total > limit
          ? new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE()
          : new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(),
      );
      return;
    }
    if (whole !== undefined) bytes.copy(whole, received);
    else chunks.push(bytes);
    received += bytes.length;
  }
  function onEnd(error?: Error & { statusCode?: number }): void {
    stop();
    if (error !== undefined && error !== null) {
      if (!(typeof error.statusCode === "number" && error.statusCode >= 400)) error.statusCode = 400;
      done(error);
      return;
    }
    if (whole !== undefined) {
      if (received !== whole.length) done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      else done(null, whole);
      return;
    }
    done(null, Buffer.concat(chunks, received));
  }
  payload.on("data", onData);
  payload.on("end", onEnd);
  payload.on("error", onEnd);
  payload.resume();
}
