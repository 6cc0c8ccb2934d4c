/**
 * `POST /v0/messages` — backfill (DESIGN 5.1): a JSON array or NDJSON of public-v2 messages, each
 * validated and ingested like a published one, its own `sampleTime`/`timestamp` kept. A 200 means
 * the accepted messages are committed to the store (DESIGN 1, durability).
 */
import type { FastifyInstance } from "fastify";
import type { Delivery } from "../../bus/bus.js";
import { MAX_CONCURRENT_BACKFILLS, MESSAGES_BODY_LIMIT_BYTES } from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import type { MemoryProtection } from "../../http/memory-protection.js";
import { resource } from "../../http/routes.js";
import type { Ingester } from "../ingest/ingester.js";

export interface BackfillResult {
  /** Messages stored now or before (a message stored before is not stored twice). */
  accepted: number;
  /** Of the accepted, how many were already stored (same JSON text, or sent twice). */
  duplicates: number;
  rejected: { index: number; error: string }[];
}

/** Splits a body into candidate messages: a JSON array, or one JSON value per non-blank line. */
export function splitMessages(text: string): { index: number; value: unknown; error?: string }[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (error) {
      throw new VigilError("INVALID_MESSAGE", {
        detail: `The body starts like a JSON array but is not valid JSON (${(error as Error).message}).`,
      });
    }
    if (!Array.isArray(parsed))
      throw new VigilError("INVALID_MESSAGE", { detail: "The body must be a JSON array." });
    return parsed.map((value, index) => ({ index, value }));
  }
  const out: { index: number; value: unknown; error?: string }[] = [];
  let index = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      out.push({ index, value: JSON.parse(line) });
    } catch (error) {
      out.push({ index, value: undefined, error: `not valid JSON: ${(error as Error).message}` });
    }
    index += 1;
  }
  return out;
}

/**
 * Registers the backfill endpoint; it takes any content type (JSON array or NDJSON). At most
 * MAX_CONCURRENT_BACKFILLS requests run at once. Messages are de-duplicated like published ones:
 * a message without an envelope id is known by the digest of its JSON text, so posting the same
 * file twice stores it once.
 */
export function registerMessageRoutes(
  app: FastifyInstance,
  ingester: Ingester,
  memory?: MemoryProtection,
): Promise<void> {
  let running = 0;
  return app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      "*",
      { parseAs: "string", bodyLimit: MESSAGES_BODY_LIMIT_BYTES },
      (_r, body, done) => done(null, body),
    );
    resource(
      scope,
      "/v0/messages",
      {
        POST: async (request): Promise<BackfillResult> => {
          const text = typeof request.body === "string" ? request.body : "";
          if (text.trim() === "") {
            throw new VigilError("NO_BODY", { expected: "a JSON array or NDJSON of public-v2 messages" });
          }
          memory?.check();
          if (running >= MAX_CONCURRENT_BACKFILLS) {
            throw new VigilError(
              "SERVICE_UNAVAILABLE",
              { detail: `${running} backfills are running; retry when one has finished.` },
              { headers: { "Retry-After": "1" } },
            );
          }
          running += 1;
          try {
            const deliveries: Delivery[] = splitMessages(text).map((candidate) =>
              candidate.error === undefined
                ? { id: undefined, message: candidate.value }
                : { id: undefined, message: candidate.value, parseError: candidate.error },
            );
            const result = await ingester.ingest(deliveries);
            const rejected = result.rejected.map((r) => ({ index: r.index, error: r.reason }));
            return { accepted: deliveries.length - rejected.length, duplicates: result.duplicates, rejected };
          } finally {
            running -= 1;
          }
        },
      },
      { bodyLimit: MESSAGES_BODY_LIMIT_BYTES },
    );
  }) as unknown as Promise<void>;
}
