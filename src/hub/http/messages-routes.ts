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
  CheckedPart,
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
    .flatMap((slice) => slice.deliveries)
    .map((d, index) =>
      d.parseError === undefined
        ? { index, value: d.message }
        : { index, value: undefined, error: d.parseError },
    );
}

/** Deliveries read from a body, and how many entries (array elements, or lines blank or not) are left. */
interface Slice {
  readonly deliveries: CheckedTextDelivery[];
  readonly left: number;
}

/**
 * The body's messages as deliveries, in slices of at most `size`: a JSON array is parsed whole (it
 * is one JSON text), NDJSON one slice at a time, so the caller can hand a part to the ingester
 * before parsing the next. A line that is not JSON is a delivery with its parse error, counted by
 * its index among the non-blank lines. Each delivery is marked when its text proves its strings
 * well-formed.
 */
function* deliveryParts(text: string, size: number): Generator<Slice> {
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
      const deliveries = parsed
        .slice(start, start + size)
        .map((message) => ({ id: undefined, message, wellFormedText }));
      yield { deliveries, left: Math.max(0, parsed.length - start - size) };
    }
    return;
  }
  let part: CheckedTextDelivery[] = [];
  const lines = text.split("\n");
  if (lines[lines.length - 1]?.trim() === "") lines.pop(); // the usual final newline: no entry left
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    try {
      const message: unknown = JSON.parse(line);
      part.push({ id: undefined, message, wellFormedText: wellFormedJsonText(line), text: line });
    } catch (error) {
      part.push({
        id: undefined,
        message: undefined,
        parseError: `not valid JSON: ${(error as Error).message}`,
      });
    }
    if (part.length === size) {
      yield { deliveries: part, left: lines.length - i - 1 };
      part = [];
    }
  }
  if (part.length > 0) yield { deliveries: part, left: 0 };
}

/**
 * Messages parsed and checked between two turns of the event loop (see {@link ingestInParts}): a
 * store callback waits for one slice at most (about 1.5 ms).
 */
const PARSE_SLICE_MESSAGES = 100;
/**
 * The size of a body's first part, which each next part doubles up to the part size; and the
 * fewest messages a body's last part must hold to be committed in halves (see {@link ingestInParts}).
 */
const SMALL_PART_MESSAGES = 1000;
/** Parts handed to the ingester and not yet committed, at most (see {@link ingestInParts}). */
const IN_FLIGHT_PARTS = 3;

/**
 * Hands the body's messages to the ingester in parts of at most `size` (BACKFILL_PART_MESSAGES),
 * and resolves once every part is committed (the ingester commits parts in order, one transaction
 * each). The body is parsed and checked a slice at a time with a turn of the event loop between
 * slices, so the store's callbacks run promptly and it claims and commits parts while the next is
 * parsed. A part is handed in as soon as it is parsed and checked, while up to IN_FLIGHT_PARTS − 1
 * before it are still committing, so the store goes from one commit to the next and parsing goes
 * on meanwhile; a 256 MiB body never holds more than IN_FLIGHT_PARTS + 1 parts' messages and
 * samples at once. Parts grow from SMALL_PART_MESSAGES to `size` and shrink by halves at the end
 * of the body, so the store starts early and has little left once the body is parsed (issue 12:
 * the two ends of a body are where nothing overlaps the store's work). A store outage stops the
 * parts not yet handed in and is thrown (503): the parts committed before it stay stored (parts
 * handed in behind the failed one may be too), and sending the body again stores each message
 * once (DESIGN 1, de-duplication).
 */
async function ingestInParts(ingester: Ingester, text: string, size: number): Promise<BackfillResult> {
  const parts: Promise<IngestResult>[] = [];
  const offsets: number[] = [];
  let failure: { error: unknown } | undefined;
  let total = 0;
  const handIn = (part: CheckedPart): void => {
    const result = ingester.ingestChecked(part);
    // Noted at once, so a failed part stops the loop and is never an unhandled rejection.
    result.catch((error: unknown) => {
      failure ??= { error };
    });
    parts.push(result);
    offsets.push(total);
    total += part.length;
  };
  let part = new CheckedPart();
  let ramp = Math.min(size, SMALL_PART_MESSAGES);
  for (const { deliveries, left } of deliveryParts(text, Math.min(PARSE_SLICE_MESSAGES, size))) {
    // Checked a slice at a time, so the store's callbacks wait for one slice at most.
    ingester.check(deliveries, part);
    // Parts grow from small to `size`, and the body's last part (what is parsed and left adds up
    // to a part at most) is committed in halves: the store starts on a body early and has little
    // left to do once it is parsed — the two ends of a body, where nothing else overlaps the store.
    const rest = part.length + left;
    const last = rest <= size && rest >= SMALL_PART_MESSAGES;
    const target = Math.min(ramp, last ? Math.ceil(rest / 2) : size);
    if (part.length >= target) {
      ramp = Math.min(size, 2 * ramp);
      if (parts.length >= IN_FLIGHT_PARTS)
        await parts[parts.length - IN_FLIGHT_PARTS]?.catch(() => undefined);
      if (failure !== undefined) break;
      handIn(part);
      part = new CheckedPart();
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
