/**
 * The probe's admission of a write (DESIGN 1 "Hand-offs", 3.5): every write is checked against
 * memory protection and the link's outgoing buffer before it changes anything, then its handler
 * hands the changes to the link. With room in the buffer (the common case) the handler runs at once
 * and its answer is sent without a promise (no per-request allocation the answer does not need); a
 * throw is a rejection to Fastify either way. Without room the request waits up to
 * PROBE_BACKLOG_WAIT_MS for it (within the bounds on waiting requests and their bodies,
 * `ProbeLinkClient.whenCapacity`), then is refused with the 503 INGEST_BACKLOG.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { MemoryProtection } from "../../http/memory-protection.js";
import type { ProbeLinkClient } from "../link-client.js";

/** A write route's handler. */
export type IngestHandler = (request: FastifyRequest, reply: FastifyReply) => unknown;

/** Wraps a write route's handler in the probe's admission. */
export type IngestAdmission = (handler: IngestHandler) => IngestHandler;

/** The admission of the probe whose memory and link these are. */
export function ingestAdmission(
  memory: Pick<MemoryProtection, "check">,
  link: Pick<ProbeLinkClient, "hasCapacity" | "whenCapacity">,
): IngestAdmission {
  return (handler) =>
    (request, reply): unknown => {
      memory.check();
      if (link.hasCapacity()) return handler(request, reply);
      const body = request.body;
      const bytes = body instanceof Uint8Array ? body.byteLength : 0;
      return link.whenCapacity(bytes, () => handler(request, reply));
    };
}
