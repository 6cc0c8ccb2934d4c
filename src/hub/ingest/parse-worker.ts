/**
 * The backfill parser's worker thread (backfill-parser.ts): holds the bodies the hub's thread
 * hands it, and on each `next` parses and checks the next slice of one (backfill-body.ts) and
 * posts it back. It parses only when asked, so it is never more than the asker's window ahead.
 */
import { parentPort } from "node:worker_threads";
import { VigilError } from "../../errors/catalog.js";
import {
  type BodySlice,
  type CheckedSlice,
  checkSlice,
  deliveryParts,
  sliceBuffers,
} from "./backfill-body.js";

/** What the hub's thread sends. */
export type ParserRequest =
  | { readonly kind: "start"; readonly job: number; readonly body: ArrayBuffer; readonly size: number }
  | { readonly kind: "next"; readonly job: number }
  | { readonly kind: "end"; readonly job: number };

/** What the worker answers: a slice, the end of a body, or why it cannot be read. */
export type ParserReply =
  | { readonly job: number; readonly slice: CheckedSlice }
  | { readonly job: number; readonly done: true }
  | { readonly job: number; readonly error: { readonly detail: string; readonly invalid: boolean } };

const port = parentPort;
if (port === null) throw new Error("parse-worker.ts runs as a worker thread only");

/** The bodies being read, by job; the hub runs MAX_CONCURRENT_BACKFILLS at most. */
const jobs = new Map<number, Generator<BodySlice>>();

port.on("message", (request: ParserRequest) => {
  switch (request.kind) {
    case "start":
      jobs.set(request.job, deliveryParts(Buffer.from(request.body).toString("utf8"), request.size));
      return;
    case "end":
      jobs.delete(request.job);
      return;
    case "next": {
      const parts = jobs.get(request.job);
      if (parts === undefined) return;
      let reply: ParserReply;
      try {
        const next = parts.next();
        if (next.done === true) {
          jobs.delete(request.job);
          reply = { job: request.job, done: true };
        } else {
          const slice = checkSlice(next.value);
          port.postMessage({ job: request.job, slice } satisfies ParserReply, sliceBuffers(slice));
          return;
        }
      } catch (error) {
        jobs.delete(request.job);
        const invalid = error instanceof VigilError && error.code === "INVALID_MESSAGE";
        const detail = invalid ? String(error.fields.detail) : String(error);
        reply = { job: request.job, error: { detail, invalid } };
      }
      port.postMessage(reply);
    }
  }
});
