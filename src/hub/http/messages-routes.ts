/**
 * `POST /v0/messages` — backfill (DESIGN 5.1): a JSON array or NDJSON of public-v2 messages, each
 * validated and ingested like a published one, its own `sampleTime`/`timestamp` kept. A 200 means
 * the accepted messages are committed to the store (DESIGN 1, durability).
 */
import type { FastifyInstance } from "fastify";
import { MESSAGES_BODY_LIMIT_BYTES } from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import type { PublicV2Message } from "../../messages/types.js";
import { validateMessage } from "../../messages/validate.js";
import type { Ingester } from "../ingest/ingester.js";

export interface BackfillResult {
  accepted: number;
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

/** Registers the backfill endpoint; it takes any content type (JSON array or NDJSON). */
export function registerMessageRoutes(app: FastifyInstance, ingester: Ingester): Promise<void> {
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
          const accepted: PublicV2Message[] = [];
          const rejected: BackfillResult["rejected"] = [];
          for (const candidate of splitMessages(text)) {
            if (candidate.error !== undefined) {
              rejected.push({ index: candidate.index, error: candidate.error });
              continue;
            }
            const result = validateMessage(candidate.value);
            if (result.ok) accepted.push(result.message);
            else rejected.push({ index: candidate.index, error: result.errors.join("; ") });
          }
          if (accepted.length > 0) await ingester.ingest(accepted);
          return { accepted: accepted.length, rejected };
        },
      },
      { bodyLimit: MESSAGES_BODY_LIMIT_BYTES },
    );
  }) as unknown as Promise<void>;
}
