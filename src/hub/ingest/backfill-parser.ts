/**
 * The backfill parser (issue 12): a worker thread that parses and checks backfill bodies
 * (parse-worker.ts), so the hub's thread only turns checked slices into store writes. Parsing,
 * validating, digesting and making cells took about half of the hub's thread per backfilled sample,
 * on a machine with a second core the store uses only part of the time.
 *
 * Hand-offs (DESIGN 1): the body is moved to the worker, not copied; each slice comes back only
 * when asked for, and at most {@link SLICES_AHEAD} are asked for ahead of the one being used, so a
 * body of any size holds a bounded number of parsed slices at once. The worker is started with
 * the first backfill and stopped with the hub. If it stops (a bug), every body it was reading
 * fails with 503 (the client sends it again; nothing is stored twice), the failure is logged, and
 * the next backfill starts a new worker.
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { VigilError } from "../../errors/catalog.js";
import type { CheckedSlice } from "./backfill-body.js";
import type { ParserReply, ParserRequest } from "./parse-worker.js";

/** Where a worker failure is logged (the hub's logger). */
export interface ParserLogger {
  error(details: object, message: string): void;
}

/** Slices asked for and not yet used, per body: the worker's lead over the store. */
export const SLICES_AHEAD = 3;

/** A body being read: the slices that have come back and the one waiting for the next. */
interface Job {
  readonly slices: CheckedSlice[];
  end: { error: Error } | { done: true } | undefined;
  wake: (() => void) | undefined;
}

/**
 * A new worker running parse-worker: the `.js` beside this file in dist/; from source under tsx
 * (the tests), the `.ts` one, through tsx's loader, which the worker registers itself (Node 20 does
 * not run `--import` in a worker).
 */
function newWorker(): Worker {
  const options = { name: "vigil-backfill-parser" };
  if (extname(fileURLToPath(import.meta.url)) !== ".ts")
    return new Worker(new URL("./parse-worker.js", import.meta.url), options);
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const source = JSON.stringify(new URL("./parse-worker.ts", import.meta.url).href);
  return new Worker(`import(${tsx}).then((tsx) => tsx.register()).then(() => import(${source}))`, {
    ...options,
    eval: true,
  });
}

export class BackfillParser {
  private worker: Worker | undefined;
  private readonly jobs = new Map<number, Job>();
  private nextJob = 1;
  constructor(private readonly logger: ParserLogger) {}

  /** Slices the worker has sent back and no body has used yet (at most SLICES_AHEAD per body). */
  get buffered(): number {
    let n = 0;
    for (const job of this.jobs.values()) n += job.slices.length;
    return n;
  }

  /**
   * The checked slices of `body` (at most `size` messages each), in order. The body's buffer is
   * moved to the worker: the caller must not use it afterwards. Throws INVALID_MESSAGE (400) for a
   * body that starts like a JSON array and is not one, SERVICE_UNAVAILABLE (503) when the worker
   * stops, and a plain error (500) when checking throws. Breaking out of the loop tells the worker
   * to drop the body.
   */
  async *slices(body: Uint8Array, size: number): AsyncGenerator<CheckedSlice> {
    const worker = this.start();
    const id = this.nextJob++;
    const job: Job = { slices: [], end: undefined, wake: undefined };
    this.jobs.set(id, job);
    // Moved when the view covers its whole buffer; otherwise (a pooled buffer) the bytes are copied.
    const owned =
      body.byteOffset === 0 &&
      body.byteLength === body.buffer.byteLength &&
      body.buffer instanceof ArrayBuffer
        ? body
        : new Uint8Array(body);
    const send = (request: ParserRequest, transfer: ArrayBuffer[] = []): void =>
      worker.postMessage(request, transfer);
    send({ kind: "start", job: id, body: owned.buffer as ArrayBuffer, size }, [owned.buffer as ArrayBuffer]);
    for (let i = 0; i < SLICES_AHEAD; i++) send({ kind: "next", job: id });
    let finished = false;
    try {
      for (;;) {
        const slice = job.slices.shift();
        if (slice !== undefined) {
          send({ kind: "next", job: id });
          yield slice;
          continue;
        }
        if (job.end !== undefined) {
          if ("error" in job.end) throw job.end.error;
          finished = true;
          return;
        }
        await new Promise<void>((resolve) => {
          job.wake = resolve;
        });
      }
    } finally {
      this.jobs.delete(id);
      if (!finished && this.worker === worker) send({ kind: "end", job: id });
    }
  }

  /** Stops the worker (the hub is stopping); bodies being read fail with 503. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined) return;
    this.worker = undefined;
    this.failAll(new VigilError("SERVICE_UNAVAILABLE", { detail: "The hub is stopping." }));
    await worker.terminate();
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = newWorker();
    worker.unref(); // a body being read keeps the hub busy; an idle worker keeps nothing alive
    worker.on("message", (reply: ParserReply) => this.receive(reply));
    const failed = (why: string): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.logger.error(
        { reason: why },
        "the backfill parser's worker stopped; the backfills it was reading fail",
      );
      this.failAll(
        new VigilError(
          "SERVICE_UNAVAILABLE",
          {
            detail:
              "The hub's backfill parser stopped; send the body again (messages stored before are not stored twice).",
          },
          { headers: { "Retry-After": "1" } },
        ),
      );
    };
    worker.on("error", (error) => failed(error.message));
    worker.on("exit", (code) => failed(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private receive(reply: ParserReply): void {
    const job = this.jobs.get(reply.job);
    if (job === undefined) return;
    if ("slice" in reply) job.slices.push(reply.slice);
    else if ("done" in reply) job.end = { done: true };
    else {
      const { detail, invalid } = reply.error;
      job.end = {
        error: invalid
          ? new VigilError("INVALID_MESSAGE", { detail })
          : // A bug: the error handler logs it and answers 500 with the request id.
            new Error(`the backfill parser failed: ${detail}`),
      };
    }
    const wake = job.wake;
    job.wake = undefined;
    wake?.();
  }

  private failAll(error: Error): void {
    for (const job of this.jobs.values()) {
      job.end = { error };
      const wake = job.wake;
      job.wake = undefined;
      wake?.();
    }
  }
}
