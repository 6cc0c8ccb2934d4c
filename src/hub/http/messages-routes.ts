/**
 * `POST /v0/messages` — backfill (DESIGN 5.1): a JSON array or NDJSON of public-v2 messages, each
 * validated and ingested like a published one, its own `sampleTime`/`timestamp` kept. A 200 means
 * the accepted messages are committed to the store (DESIGN 1, durability).
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import {
  BACKFILL_PART_MESSAGES,
  MAX_CONCURRENT_BACKFILLS,
  MESSAGES_BODY_LIMIT_BYTES,
} from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import type { MemoryProtection } from "../../http/memory-protection.js";
import { resource } from "../../http/routes.js";
import {
  type CheckedTextDelivery,
  type Ingester,
  type IngestResult,
  wellFormedJsonText,
} from "../ingest/ingester.js";

export interface BackfillResult {
  /** Messages stored now or before (a message stored before is not stored twice). */
  accepted: number;
  /** Of the accepted, how many were already stored (same JSON text, or sent twice). */
  duplicates: number;
  rejected: { index: number; error: string }[];
}

/** Splits a body into candidate messages: a JSON array, or one JSON value per non-blank line. */
export function splitMessages(text: string): { index: number; value: unknown; error?: string }[] {
  return [...deliveryParts(text, Number.MAX_SAFE_INTEGER)]
    .flat()
    .map((d, index) =>
      d.parseError === undefined
        ? { index, value: d.message }
        : { index, value: undefined, error: d.parseError },
    );
}

/**
 * The body's messages as deliveries, in parts of at most `size`: a JSON array is parsed whole (it is
 * one JSON text), NDJSON one part at a time, so the caller can hand a part to the ingester before
 * parsing the next. A line that is not JSON is a delivery with its parse error, counted by its index
 * among the non-blank lines. Each delivery is marked when its text proves its strings well-formed.
 */
function* deliveryParts(text: string, size: number): Generator<CheckedTextDelivery[]> {
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
    const wellFormedText = wellFormedJsonText(trimmed);
    for (let start = 0; start < parsed.length; start += size) {
      yield parsed.slice(start, start + size).map((message) => ({ id: undefined, message, wellFormedText }));
    }
    return;
  }
  let part: CheckedTextDelivery[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      part.push({ id: undefined, message: JSON.parse(line), wellFormedText: wellFormedJsonText(line) });
    } catch (error) {
      part.push({
        id: undefined,
        message: undefined,
        parseError: `not valid JSON: ${(error as Error).message}`,
      });
    }
    if (part.length === size) {
      yield part;
      part = [];
    }
  }
  if (part.length > 0) yield part;
}

/** Messages parsed between two turns of the event loop (see {@link ingestInParts}). */
const PARSE_SLICE_MESSAGES = 500;

/**
 * Hands the body's messages to the ingester in parts of `size` (BACKFILL_PART_MESSAGES), and
 * resolves once every part is committed (the ingester commits parts in order, one transaction
 * each). The body is parsed a slice at a time with a turn of the event loop between slices, so the
 * store's callbacks run promptly and it claims and commits one part while the next is parsed. A
 * part is handed in (and checked) as soon as it is parsed, while the one before it may still be
 * committing, so the store goes from one commit to the next without waiting for a part's checks;
 * the part two before it must be committed first, so a 256 MiB body never holds more than three
 * parts' messages and samples at once. A store outage stops the parts not yet handed in and is
 * thrown (503): the parts committed before it stay stored (a part handed in behind the failed one
 * may be too), and sending the body again stores each message once (DESIGN 1, de-duplication).
 */
async function ingestInParts(ingester: Ingester, text: string, size: number): Promise<BackfillResult> {
  const parts: Promise<IngestResult>[] = [];
  const offsets: number[] = [];
  let failure: { error: unknown } | undefined;
  let total = 0;
  const handIn = (part: CheckedTextDelivery[]): void => {
    const result = ingester.ingest(part);
    // Noted at once, so a failed part stops the loop and is never an unhandled rejection.
    result.catch((error: unknown) => {
      failure ??= { error };
    });
    parts.push(result);
    offsets.push(total);
    total += part.length;
  };
  let part: CheckedTextDelivery[] = [];
  for (const slice of deliveryParts(text, Math.min(PARSE_SLICE_MESSAGES, size))) {
    for (const delivery of slice) part.push(delivery);
    if (part.length >= size) {
      if (parts.length >= 2) await parts[parts.length - 2]?.catch(() => undefined);
      if (failure !== undefined) break;
      handIn(part);
      part = [];
    }
    await nextTurn();
    if (failure !== undefined) break;
  }
  if (part.length > 0 && failure === undefined) handIn(part);
  const settled = await Promise.allSettled(parts);
  if (failure !== undefined) throw failure.error;
  let duplicates = 0;
  const rejected: BackfillResult["rejected"] = [];
  settled.forEach((outcome, p) => {
    if (outcome.status !== "fulfilled") return;
    duplicates += outcome.value.duplicates;
    for (const r of outcome.value.rejected)
      rejected.push({ index: (offsets[p] as number) + r.index, error: r.reason });
  });
  return { accepted: total - rejected.length, duplicates, rejected };
}

/**
 * Registers the backfill endpoint; it takes any content type (JSON array or NDJSON). At most
 * MAX_CONCURRENT_BACKFILLS requests run at once. Messages are de-duplicated like published ones:
 * a message without an envelope id is known by the digest of its JSON text, so posting the same
 * file twice stores it once. A body is committed in parts of `options.partMessages` messages
 * (default BACKFILL_PART_MESSAGES), one store transaction each.
 */
export function registerMessageRoutes(
  app: FastifyInstance,
  ingester: Ingester,
  memory?: MemoryProtection,
  options: { readonly partMessages?: number } = {},
): Promise<void> {
  const partMessages = options.partMessages ?? BACKFILL_PART_MESSAGES;
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
            return await ingestInParts(ingester, text, partMessages);
          } finally {
            running -= 1;
          }
        },
      },
      { bodyLimit: MESSAGES_BODY_LIMIT_BYTES },
    );
  }) as unknown as Promise<void>;
}
