/**
 * A backfill parser's worker thread (backfill-parser.ts). It parses and checks what the hub's
 * thread asks for (backfill-body.ts) and posts each checked slice back, tagged with the number the
 * request gave it:
 * - `lines`: the bytes of one slice of an NDJSON body, which the hub's thread cut (stateless: any
 *   worker takes any slice);
 * - `start` / `next` / `end`: a JSON array body, held here whole (it is one JSON text) and read a
 *   slice per `next`, only when asked, so the worker is never more than the asker's window ahead.
 * Once nothing has come for BACKFILL_PARSE_WORKER_COLLECT_MS, the worker collects its heap in full.
 */
import { parentPort } from "node:worker_threads";
import { BACKFILL_PARSE_WORKER_COLLECT_MS } from "../../config/defaults.js";
import { type ErrorFields, VigilError } from "../../errors/catalog.js";
import type { DataLimits } from "../../limits/data-limits.js";
import { fullCollection, idleCollection } from "../../memory/full-collection.js";
import {
  arraySlices,
  type BodySlice,
  type CheckedSlice,
  checkLines,
  checkSlice,
  sliceBuffers,
} from "./backfill-body.js";

/** What the hub's thread sends. */
export type ParserRequest =
  | {
      readonly kind: "lines";
      readonly job: number;
      readonly seq: number;
      readonly bytes: ArrayBuffer;
      readonly count: number;
      readonly left: number;
      readonly limits: DataLimits;
    }
  | {
      readonly kind: "start";
      readonly job: number;
      readonly body: ArrayBuffer;
      readonly size: number;
      readonly limits: DataLimits;
    }
  | { readonly kind: "next"; readonly job: number; readonly seq: number }
  | { readonly kind: "end"; readonly job: number };

/** What the worker answers: slice `seq`, the end of a body (no slice `seq`), or why it cannot be read. */
export type ParserReply =
  | { readonly job: number; readonly seq: number; readonly slice: CheckedSlice }
  | { readonly job: number; readonly seq: number; readonly done: true }
  | {
      readonly job: number;
      readonly seq: number;
      readonly error: {
        readonly detail: string;
        readonly invalid: boolean;
        /** The fields of a LIMIT_EXCEEDED refusal of the whole body (an array nested too deep). */
        readonly limit?: ErrorFields;
      };
    };

const port = parentPort;
if (port === null) throw new Error("parse-worker.ts runs as a worker thread only");

/** The JSON array bodies being read, by job, with their limits; the hub runs MAX_CONCURRENT_BACKFILLS at most. */
const arrays = new Map<number, { readonly slices: Generator<BodySlice>; readonly limits: DataLimits }>();

/** Slice `seq` of `job`, or the end of the body when `read` has none; an error as its reply. */
function reply(job: number, seq: number, read: () => CheckedSlice | undefined): void {
  let answer: ParserReply;
  try {
    const slice = read();
    if (slice === undefined) answer = { job, seq, done: true };
    else {
      port?.postMessage({ job, seq, slice } satisfies ParserReply, sliceBuffers(slice));
      return;
    }
  } catch (error) {
    arrays.delete(job);
    const invalid = error instanceof VigilError && error.code === "INVALID_MESSAGE";
    const limit = error instanceof VigilError && error.code === "LIMIT_EXCEEDED" ? error.fields : undefined;
    const detail = invalid ? String(error.fields.detail) : String(error);
    answer = { job, seq, error: { detail, invalid, ...(limit === undefined ? {} : { limit }) } };
  }
  port?.postMessage(answer);
}

/** A full collection of this worker's heap once it has had nothing to read for a while. */
const collect = fullCollection();
const idle = collect === undefined ? undefined : idleCollection(collect, BACKFILL_PARSE_WORKER_COLLECT_MS);

port.on("message", (request: ParserRequest) => {
  idle?.touch();
  switch (request.kind) {
    case "lines":
      return reply(request.job, request.seq, () => {
        const text = Buffer.from(request.bytes).toString("utf8");
        const slice = checkLines(text, request.left, request.limits);
        if (slice.count !== request.count)
          throw new Error(`a slice of ${request.count} lines read as ${slice.count}`);
        return slice;
      });
    case "start":
      arrays.set(request.job, {
        slices: arraySlices(
          Buffer.from(request.body).toString("utf8"),
          request.size,
          request.limits.jsonDepth,
        ),
        limits: request.limits,
      });
      return;
    case "end":
      arrays.delete(request.job);
      return;
    case "next": {
      // A body that has ended (or failed) answers every later ask with its end, so each ask is
      // answered once.
      const array = arrays.get(request.job);
      if (array === undefined) {
        port.postMessage({ job: request.job, seq: request.seq, done: true } satisfies ParserReply);
        return;
      }
      return reply(request.job, request.seq, () => {
        const next = array.slices.next();
        if (next.done !== true) return checkSlice(next.value, array.limits);
        arrays.delete(request.job);
        return undefined;
      });
    }
  }
});
