/**
 * The backfill parser: worker threads that parse and check backfill bodies
 * (parse-worker.ts), so the hub's thread only cuts NDJSON bodies into slices of lines and turns
 * checked slices into store writes. Parsing, validating, digesting and making cells took about half
 * of the hub's thread per backfilled sample; one worker then left the store waiting for the next
 * part at the start of each body, so slices of one body go to every worker of the pool in turn
 * (PARSE_WORKERS). A JSON array body is one JSON text and goes to one worker.
 *
 * Hand-offs (DESIGN 1): each NDJSON slice's bytes are copied out of the body and moved to a worker
 * (an array body is moved whole); each slice is asked for only when the one before it is used, and
 * at most {@link SLICES_AHEAD} are asked for ahead of the one being used, so a body of any size
 * holds a bounded number of parsed slices at once. Workers start with a backfill and stop with the
 * hub, or once no body has been read for BACKFILL_PARSE_WORKER_IDLE_MS (the next backfill starts
 * them again). If one stops otherwise (a bug), every body it was reading fails with 503 (the client
 * sends it again; nothing is stored twice), the failure is logged, and the next backfill starts a
 * new one.
 */
import { availableParallelism } from "node:os";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import {
  BACKFILL_PARSE_WORKER_IDLE_MS,
  BACKFILL_PARSE_WORKER_YOUNG_MB,
  BACKFILL_PARSE_WORKERS_MAX,
} from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import type { DataLimits } from "../../limits/data-limits.js";
import { type CheckedSlice, lineRanges, startsLikeArray } from "./backfill-body.js";
import type { ParserReply, ParserRequest } from "./parse-worker.js";

/** Where a worker failure is logged (the hub's logger). */
export interface ParserLogger {
  error(details: object, message: string): void;
}

/**
 * Worker threads per parser: one per core the hub may use beyond the first (which the hub's thread
 * and DuckDB's share), at least one, at most BACKFILL_PARSE_WORKERS_MAX.
 */
export const PARSE_WORKERS = parseWorkers(availableParallelism());

/** The parse workers for a hub that may use `cores` cores ({@link PARSE_WORKERS}). */
export function parseWorkers(cores: number): number {
  return Math.max(1, Math.min(BACKFILL_PARSE_WORKERS_MAX, Math.floor(cores) - 1));
}

/** Slices asked for and not yet used, per body: the workers' lead over the store. */
export const SLICES_AHEAD = 4;

/** A body being read: the slices that have come back, by number, and where it ends. */
interface Job {
  readonly slices: Map<number, CheckedSlice>;
  /** The workers asked for its slices: the body fails if one of them stops. */
  readonly workers: Set<Worker>;
  /** Slices asked of the workers and not answered yet (by a slice, the end, or an error). */
  asked: number;
  /** No slice from `seq` on; `error` is thrown there. */
  end: { readonly seq: number; readonly error?: Error } | undefined;
  wake: (() => void) | undefined;
}

/**
 * A new worker running parse-worker: the `.js` beside this file in dist/; from source under tsx
 * (the tests), the `.ts` one, through tsx's loader, which the worker registers itself (Node 20 does
 * not run `--import` in a worker).
 */
function newWorker(): Worker {
  const options = {
    name: "vigil-backfill-parser",
    resourceLimits: { maxYoungGenerationSizeMb: BACKFILL_PARSE_WORKER_YOUNG_MB },
  };
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
  private readonly workers: (Worker | undefined)[];
  /** The pool's next worker to ask (round robin over every body's slices). */
  private turn = 0;
  private readonly jobs = new Map<number, Job>();
  private nextJob = 1;
  /** Stops the workers once no body has been read for `idleMs`; set while no body is. */
  private idleTimer: NodeJS.Timeout | undefined;

  /**
   * `workers`: the size of the pool (PARSE_WORKERS unless a test sets it); `idleMs`: how long the
   * workers stay while no body is being read.
   */
  constructor(
    private readonly logger: ParserLogger,
    workers: number = PARSE_WORKERS,
    private readonly idleMs: number = BACKFILL_PARSE_WORKER_IDLE_MS,
  ) {
    this.workers = new Array<Worker | undefined>(Math.max(1, workers)).fill(undefined);
  }

  /** Workers running now (none before the first backfill and after an idle spell). */
  get running(): number {
    return this.workers.filter((w) => w !== undefined).length;
  }

  /** Slices the workers have sent back and no body has used yet (at most SLICES_AHEAD per body). */
  get buffered(): number {
    let n = 0;
    for (const job of this.jobs.values()) n += job.slices.size;
    return n;
  }

  /** Slices asked of the workers that they have not answered yet, over the bodies being read. */
  get outstanding(): number {
    let n = 0;
    for (const job of this.jobs.values()) n += job.asked;
    return n;
  }

  /**
   * The checked slices of `body` (at most `size` messages each), in order; each slice's `left`
   * (entries after it) is exact when at most `exactUpTo`, otherwise some number above it (an NDJSON
   * body's lines are counted ahead only that far: {@link lineRanges}). An array body's buffer
   * is moved to a worker: the caller must not use it afterwards. Each message is checked against
   * `limits` (a line nested too deep is rejected unparsed). Throws INVALID_MESSAGE (400) for a
   * body that starts like a JSON array and is not one, LIMIT_EXCEEDED (400) for an array nested
   * deeper than `limits.jsonDepth`, SERVICE_UNAVAILABLE (503) when a worker
   * stops, and a plain error (500) when checking throws. Breaking out of the loop drops the body.
   */
  async *slices(
    body: Uint8Array,
    size: number,
    limits: DataLimits,
    exactUpTo = Number.POSITIVE_INFINITY,
  ): AsyncGenerator<CheckedSlice> {
    const id = this.nextJob++;
    const job: Job = { slices: new Map(), workers: new Set(), asked: 0, end: undefined, wake: undefined };
    this.jobs.set(id, job);
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const ask = startsLikeArray(body)
      ? this.askArray(id, job, body, size, limits)
      : this.askLines(id, job, body, size, limits, exactUpTo);
    let next = 0;
    try {
      for (let i = 0; i < SLICES_AHEAD; i++) ask();
      for (;;) {
        const slice = job.slices.get(next);
        if (slice !== undefined) {
          job.slices.delete(next);
          next += 1;
          ask();
          yield slice;
          continue;
        }
        if (job.end !== undefined && next >= job.end.seq) {
          if (job.end.error !== undefined) throw job.end.error;
          return;
        }
        await new Promise<void>((resolve) => {
          job.wake = resolve;
        });
      }
    } finally {
      this.jobs.delete(id);
      // An array body held by a worker that is still running: it may drop the body.
      for (const worker of job.workers)
        if (this.workers.includes(worker)) send(worker, { kind: "end", job: id });
      if (this.jobs.size === 0) {
        this.idleTimer = setTimeout(() => this.stopIdle(), this.idleMs);
        this.idleTimer.unref();
      }
    }
  }

  /** Stops the workers when still no body is being read (each is let go before it is stopped). */
  private stopIdle(): void {
    this.idleTimer = undefined;
    if (this.jobs.size > 0) return;
    const running = this.workers.filter((w) => w !== undefined);
    this.workers.fill(undefined);
    for (const worker of running) void worker.terminate();
  }

  /** Asks for an NDJSON body's next slice of lines (cut here) from the pool's next worker. */
  private askLines(
    id: number,
    job: Job,
    body: Uint8Array,
    size: number,
    limits: DataLimits,
    exactUpTo: number,
  ): () => void {
    const ranges = lineRanges(body, size, exactUpTo);
    let seq = 0;
    return () => {
      if (job.end !== undefined) return;
      const range = ranges.next();
      if (range.done === true) {
        end(job, { seq });
        return;
      }
      const { start, end: stop, count, left } = range.value;
      const bytes = new Uint8Array(body.subarray(start, stop)); // a copy, moved to the worker
      const worker = this.worker();
      job.workers.add(worker);
      job.asked += 1;
      send(worker, { kind: "lines", job: id, seq, bytes: bytes.buffer, count, left, limits }, [bytes.buffer]);
      seq += 1;
    };
  }

  /** Moves an array body to one worker, and asks it for the next slice at each call. */
  private askArray(id: number, job: Job, body: Uint8Array, size: number, limits: DataLimits): () => void {
    const worker = this.worker();
    job.workers.add(worker);
    // Moved when the view covers its whole buffer; otherwise (a pooled buffer) the bytes are copied.
    const owned =
      body.byteOffset === 0 &&
      body.byteLength === body.buffer.byteLength &&
      body.buffer instanceof ArrayBuffer
        ? body
        : new Uint8Array(body);
    const buffer = owned.buffer as ArrayBuffer;
    send(worker, { kind: "start", job: id, body: buffer, size, limits }, [buffer]);
    let seq = 0;
    return () => {
      if (job.end !== undefined) return;
      job.asked += 1;
      send(worker, { kind: "next", job: id, seq: seq++ });
    };
  }

  /** Stops the workers (the hub is stopping); bodies being read fail with 503. */
  async close(): Promise<void> {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const running = this.workers.filter((w) => w !== undefined);
    this.workers.fill(undefined);
    const stopping = new VigilError("SERVICE_UNAVAILABLE", { detail: "The hub is stopping." });
    for (const job of this.jobs.values()) fail(job, stopping);
    await Promise.all(running.map((w) => w.terminate()));
  }

  /** The pool's next worker, started when it is not running. */
  private worker(): Worker {
    const at = this.turn;
    this.turn = (this.turn + 1) % this.workers.length;
    const running = this.workers[at];
    if (running !== undefined) return running;
    const worker = newWorker();
    worker.unref(); // a body being read keeps the hub busy; an idle worker keeps nothing alive
    worker.on("message", (reply: ParserReply) => this.receive(reply));
    const failed = (why: string): void => {
      if (this.workers[at] !== worker) return;
      this.workers[at] = undefined;
      this.logger.error(
        { reason: why },
        "a backfill parser's worker stopped; the backfills it was reading fail",
      );
      const error = new VigilError(
        "SERVICE_UNAVAILABLE",
        {
          detail:
            "The hub's backfill parser stopped; send the body again (messages stored before are not stored twice).",
        },
        { headers: { "Retry-After": "1" } },
      );
      for (const job of this.jobs.values()) if (job.workers.has(worker)) fail(job, error);
    };
    worker.on("error", (error) => failed(error.message));
    worker.on("exit", (code) => failed(`exit code ${code}`));
    this.workers[at] = worker;
    return worker;
  }

  private receive(reply: ParserReply): void {
    const job = this.jobs.get(reply.job);
    if (job === undefined) return;
    job.asked -= 1;
    if ("slice" in reply) job.slices.set(reply.seq, reply.slice);
    else if ("done" in reply) end(job, { seq: reply.seq });
    else {
      const { detail, invalid, limit } = reply.error;
      const error =
        limit !== undefined
          ? new VigilError("LIMIT_EXCEEDED", limit)
          : invalid
            ? new VigilError("INVALID_MESSAGE", { detail })
            : // A bug: the error handler logs it and answers 500 with the request id.
              new Error(`the backfill parser failed: ${detail}`);
      end(job, { seq: reply.seq, error });
    }
    const wake = job.wake;
    job.wake = undefined;
    wake?.();
  }
}

function send(worker: Worker, request: ParserRequest, transfer: ArrayBuffer[] = []): void {
  worker.postMessage(request, transfer);
}

/** Ends `job` at `at` unless it ends sooner already. */
function end(job: Job, at: NonNullable<Job["end"]>): void {
  if (job.end === undefined || at.seq < job.end.seq) job.end = at;
}

/** Fails `job` at the first slice it has not received. */
function fail(job: Job, error: Error): void {
  end(job, { seq: 0, error });
  const wake = job.wake;
  job.wake = undefined;
  wake?.();
}
