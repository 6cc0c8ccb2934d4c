/**
 * `POST /v0/messages` — backfill (DESIGN 5.1): a JSON array or NDJSON of public-v2 messages, each
 * validated and ingested like a published one, its own `sampleTime`/`timestamp` kept. A 200 means
 * the accepted messages are committed to the store (DESIGN 1, durability).
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  BACKFILL_PART_MESSAGES,
  MAX_CONCURRENT_BACKFILLS,
  MESSAGES_BODY_LIMIT_BYTES,
} from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import { readBodyBuffer } from "../../http/body-buffer.js";
import type { MemoryProtection } from "../../http/memory-protection.js";
import { resource } from "../../http/routes.js";
import type { LimitName, LimitRefusals } from "../../limits/limit-refusals.js";
import { addSlice } from "../ingest/backfill-body.js";
import { BackfillParser } from "../ingest/backfill-parser.js";
import { CheckedPart, type Ingester, type IngestResult } from "../ingest/ingester.js";

export interface BackfillResult {
  /** Messages stored now or before (a message stored before is not stored twice). */
  accepted: number;
  /** Of the accepted, how many were already stored (same JSON text, or sent twice). */
  duplicates: number;
  rejected: { index: number; error: string }[];
}

/**
 * Messages in a slice the backfill parser hands back (see {@link ingestInParts}): turning one into
 * store rows takes the hub's thread about a millisecond, and the worker some ten.
 */
const PARSE_SLICE_MESSAGES = 500;
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
 * each). The backfill parser's worker threads parse and check the body a slice at a time
 * (backfill-parser.ts); the hub's thread adds each slice to the part it builds, with a turn of the
 * event loop between slices, so the store's callbacks run promptly and it claims and commits parts
 * while the next is parsed. A part is handed in as soon as it is parsed and checked, while up to
 * IN_FLIGHT_PARTS − 1 before it are still committing, so the store goes from one commit to the next
 * and parsing goes on meanwhile; a 256 MiB body never holds more than IN_FLIGHT_PARTS + 1 parts'
 * messages and samples at once. Parts grow from SMALL_PART_MESSAGES to `size` and shrink by halves at the end
 * of the body, so the store starts early and has little left once the body is parsed
 * (the two ends of a body are where nothing overlaps the store's work). A store outage stops the
 * parts not yet handed in and is thrown (503): the parts committed before it stay stored (parts
 * handed in behind the failed one may be too), and sending the body again stores each message
 * once (DESIGN 1, de-duplication).
 */
async function ingestInParts(
  ingester: Ingester,
  parser: BackfillParser,
  body: Uint8Array,
  size: number,
  refusals: LimitRefusals | undefined,
): Promise<BackfillResult> {
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
  try {
    // Lines left after a slice only matter up to a part's size (`last` below).
    const sliceSize = Math.min(PARSE_SLICE_MESSAGES, size);
    for await (const slice of parser.slices(body, sliceSize, ingester.limits, size)) {
      addSlice(part, slice);
      // Parts grow from small to `size`, and the body's last part (what is parsed and left adds up
      // to a part at most) is committed in halves: the store starts on a body early and has little
      // left to do once it is parsed — the two ends of a body, where nothing overlaps the store.
      const rest = part.length + slice.left;
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
  } catch (error) {
    // The parser failed (a worker stopped): answer only once the parts handed in have settled,
    // so no work of this request outlives its answer or its place among MAX_CONCURRENT_BACKFILLS.
    await Promise.allSettled(parts);
    throw error;
  }
  if (part.length > 0 && failure === undefined) handIn(part);
  const settled = await Promise.allSettled(parts);
  if (failure !== undefined) throw failure.error;
  let duplicates = 0;
  const rejected: BackfillResult["rejected"] = [];
  settled.forEach((outcome, p) => {
    if (outcome.status !== "fulfilled") return;
    duplicates += outcome.value.duplicates;
    for (const r of outcome.value.rejected) {
      rejected.push({ index: (offsets[p] as number) + r.index, error: r.reason });
      if (r.limit !== undefined) refusals?.refused("backfill", r.limit, r.reason);
    }
  });
  return { accepted: total - rejected.length, duplicates, rejected };
}

/** Whether `body` holds nothing but JSON whitespace (what `String.prototype.trim` removes of it). */
function isBlank(body: Uint8Array): boolean {
  for (const byte of body) if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return false;
  return true;
}

/**
 * Registers the backfill endpoint; it takes any content type (JSON array or NDJSON). At most
 * MAX_CONCURRENT_BACKFILLS requests run at once. Messages are de-duplicated like published ones:
 * a message without an envelope id is known by the digest of its JSON text, so posting the same
 * file twice stores it once. Each message is checked against the ingester's limits (the setup's
 * `limits`): one beyond is rejected with its index and the limit, and counted in
 * `options.refusals`. A body is committed in parts of `options.partMessages` messages
 * (default BACKFILL_PART_MESSAGES), one store transaction each, and may hold `options.bodyLimit`
 * bytes (default MESSAGES_BODY_LIMIT_BYTES; 413 beyond).
 */
export function registerMessageRoutes(
  app: FastifyInstance,
  ingester: Ingester,
  memory?: MemoryProtection,
  options: {
    readonly partMessages?: number;
    readonly bodyLimit?: number;
    /** Counts messages refused at a limit of the setup's `limits` (the hub's /metrics). */
    readonly refusals?: LimitRefusals;
  } = {},
): Promise<void> {
  const partMessages = options.partMessages ?? BACKFILL_PART_MESSAGES;
  const bodyLimit = options.bodyLimit ?? MESSAGES_BODY_LIMIT_BYTES;
  const parser = new BackfillParser(app.log);
  // The backfills admitted and not done: each until its response has closed (answered, or its
  // client gone) and its handler, if it started, has returned.
  const admitted = new Map<FastifyRequest, { handling: boolean; closed: boolean }>();
  return app.register(async (scope) => {
    scope.addHook("onClose", () => parser.close());
    // A backfill is admitted before its body is read, so the hub holds at most
    // MAX_CONCURRENT_BACKFILLS bodies at once (each up to `bodyLimit`) and runs at most as many, and
    // a hub over its memory threshold reads none: a refused request costs no body. A client that
    // goes away frees its place once its handler, if it started, has returned.
    scope.addHook("onRequest", (request, reply, done) => {
      if (request.method !== "POST") return done();
      try {
        memory?.check();
        if (admitted.size >= MAX_CONCURRENT_BACKFILLS) {
          throw new VigilError(
            "SERVICE_UNAVAILABLE",
            { detail: `${admitted.size} backfills are running; retry when one has finished.` },
            { headers: { "Retry-After": "1" } },
          );
        }
      } catch (error) {
        // The body is not read: the connection closes rather than carry it to the next request.
        reply.header("connection", "close");
        done(error as Error);
        return;
      }
      const place = { handling: false, closed: false };
      admitted.set(request, place);
      reply.raw.once("close", () => {
        place.closed = true;
        if (!place.handling) admitted.delete(request);
      });
      done();
    });
    scope.removeAllContentTypeParsers();
    // The bytes as they came: the worker decodes them (UTF-8, as a string body would be). Read
    // into one buffer as they arrive (body-buffer.ts): a 256 MiB body is held once, not twice.
    scope.addContentTypeParser("*", { bodyLimit }, (request, payload, done) =>
      readBodyBuffer(payload, request.headers["content-length"], bodyLimit, done),
    );
    resource(
      scope,
      "/v0/messages",
      {
        POST: async (request): Promise<BackfillResult> => {
          const body = request.body instanceof Uint8Array ? request.body : new Uint8Array(0);
          if (isBlank(body)) {
            throw new VigilError("NO_BODY", { expected: "a JSON array or NDJSON of public-v2 messages" });
          }
          const place = admitted.get(request);
          if (place !== undefined) place.handling = true;
          try {
            return await ingestInParts(ingester, parser, body, partMessages, options.refusals);
          } catch (error) {
            // A body refused whole (an array nested deeper than limits.jsonDepth).
            if (error instanceof VigilError && error.code === "LIMIT_EXCEEDED")
              options.refusals?.refused("backfill", error.fields.limit as LimitName, error.body);
            throw error;
          } finally {
            if (place !== undefined) {
              place.handling = false;
              if (place.closed) admitted.delete(request);
            }
          }
        },
      },
      { bodyLimit },
    );
  }) as unknown as Promise<void>;
}
