/**
 * Bounded HTTP load for benchmarks (127.0.0.1 only). `load()` keeps `concurrency` keep-alive
 * requests in flight for at most `seconds` and at most `maxRequests`, cycling through a plan of
 * requests (path + body), and returns the rate, the status counts and latency percentiles. Its
 * connections write each request as bytes encoded once and read only an answer's status line and
 * Content-Length: the client shares the machine's cores with the server it measures, and
 * `node:http`'s client took 80–105 µs of CPU per request where this one takes about 13
 * (docs/dependencies.md). `loadInChild()` runs the same loop in a child process
 * (bench/load-child.ts), so the client has its own event loop and does not share one with the
 * server it measures. `send()` is one request through `node:http`, for benches that drive their
 * own clients (bench/end-to-end.bench.ts).
 */
import { fork } from "node:child_process";
import { type Agent, request } from "node:http";
import { connect, type Socket } from "node:net";

/** Longest one request may take before it is abandoned and counted as an error. */
export const REQUEST_TIMEOUT_MS = 30_000; // ms
/** Most latencies one run keeps (one Float64Array); requests beyond are counted but not timed. */
const MAX_LATENCY_SAMPLES = 2_000_000; // samples
/** Time a child run may take beyond its `seconds` (start, warm-up, reporting) before it is killed. */
const CHILD_GRACE_MS = 60_000; // ms

/** One request of a plan: the path under the plan's base URL and its body. */
export interface LoadRequest {
  readonly path: string;
  /** A Buffer here; a Uint8Array once it has crossed to the load child. */
  readonly body: Uint8Array;
}

export interface LoadPlan {
  /** `http://127.0.0.1:PORT`; anything but 127.0.0.1 is refused. */
  readonly base: string;
  readonly method: "PUT" | "POST";
  /** Request `i` (counted across all connections) is `requests[i % requests.length]`. */
  readonly requests: readonly LoadRequest[];
}

export interface LoadOptions {
  readonly seconds: number;
  readonly concurrency: number;
  readonly maxRequests: number;
}

export interface Percentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export interface LoadResult {
  /** Requests sent (answered or failed). */
  readonly requests: number;
  /** Requests answered 2xx. */
  readonly ok: number;
  readonly seconds: number;
  /** 2xx answers per second. */
  readonly perSecond: number;
  /** Non-2xx answers and transport errors. */
  readonly failures: number;
  /** Answers per status code; `error` for transport errors and timeouts. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Latency of every timed request (answered or failed), in ms. */
  readonly latencyMs: Percentiles;
  /**
   * The bodies of non-2xx answers with their digits blanked (so one cause is one entry), each with
   * its count; at most MAX_FAILURE_BODIES distinct ones.
   */
  readonly failureBodies: Readonly<Record<string, number>>;
  /** CPU seconds of the client's process over the run (every thread), when it ran in a child. */
  readonly clientCpuSeconds?: number;
}

/** Distinct failure bodies a load keeps; the others are counted in `statuses` only. */
const MAX_FAILURE_BODIES = 10;
/** Characters of a failure body kept. */
const FAILURE_BODY_CHARS = 400;

/** Throws unless `url` targets 127.0.0.1 over plain HTTP: benchmarks never load anything else. */
export function assertLoopback(url: URL): void {
  if (url.protocol !== "http:" || url.hostname !== "127.0.0.1") {
    throw new Error(`benchmarks target http://127.0.0.1 only, not ${url.href}`);
  }
}

export interface SendResult {
  /** HTTP status, 0 for a transport error or timeout. */
  readonly status: number;
  /** The `Retry-After` header in seconds, when the answer carries a numeric one. */
  readonly retryAfterSeconds?: number;
  readonly ms: number;
  /** The answer's body (only when `keepBody` was asked for). */
  readonly body?: string;
}

/**
 * Sends one request on `agent` (keep-alive) and resolves when the answer has been read, never
 * rejecting: a transport error or a request older than REQUEST_TIMEOUT_MS (30 s) is status 0.
 */
export function send(
  agent: Agent,
  url: URL,
  method: string,
  body: Uint8Array | string | undefined,
  options: { headers?: Record<string, string>; keepBody?: boolean | "failures" } = {},
): Promise<SendResult> {
  assertLoopback(url);
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: number, retryAfterSeconds?: number, text?: string): void => {
      if (settled) return;
      settled = true;
      resolve({
        status,
        ms: performance.now() - started,
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
        ...(text === undefined ? {} : { body: text }),
      });
    };
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method,
        headers: options.headers,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const header = res.headers["retry-after"];
        const retry = header === undefined || !/^\d+$/.test(header) ? undefined : Number(header);
        const keep =
          options.keepBody === true || (options.keepBody === "failures" && (status < 200 || status > 299));
        if (keep) {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => done(status, retry, Buffer.concat(chunks).toString("utf8")));
        } else {
          res.resume();
          res.on("end", () => done(status, retry));
        }
        res.on("error", () => done(0));
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error("request timed out")));
    req.on("error", () => done(0));
    req.end(body);
  });
}

/** Nearest-rank percentiles of `values` (sorted in place); zeros when empty. */
export function percentiles(values: Float64Array | number[]): Percentiles {
  if (values.length === 0) return { p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = values instanceof Float64Array ? values.sort() : values.sort((a, b) => a - b);
  const at = (p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? 0;
  const round = (v: number): number => Math.round(v * 100) / 100;
  return { p50: round(at(0.5)), p90: round(at(0.9)), p99: round(at(0.99)), max: round(at(1)) };
}

/** The median of `values` (the lower middle one for an even count); 0 when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
}

/** Runs the plan in this process (see the module comment); bounded by `seconds` and `maxRequests`. */
export async function load(plan: LoadPlan, options: LoadOptions): Promise<LoadResult> {
  const base = new URL(plan.base);
  assertLoopback(base);
  if (plan.requests.length === 0) throw new Error("a load plan needs at least one request");
  const encoded = plan.requests.map((r) => encodeRequest(plan.method, base, r));
  const latencies = new Float64Array(Math.min(options.maxRequests, MAX_LATENCY_SAMPLES));
  const statuses = new Map<string, number>();
  const failureBodies = new Map<string, number>();
  const deadline = performance.now() + options.seconds * 1000;
  let sent = 0;
  let timed = 0;
  let ok = 0;
  const record = (status: number, ms: number, body: string | undefined): void => {
    if (timed < latencies.length) latencies[timed++] = ms;
    if (status >= 200 && status < 300) ok += 1;
    else if (body !== undefined) {
      const text = body.slice(0, FAILURE_BODY_CHARS).replace(/\d+/g, "N");
      if (failureBodies.has(text) || failureBodies.size < MAX_FAILURE_BODIES) {
        failureBodies.set(text, (failureBodies.get(text) ?? 0) + 1);
      }
    }
    const key = status === 0 ? "error" : String(status);
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  };
  const next = (): Buffer | undefined => {
    if (performance.now() >= deadline || sent >= options.maxRequests) return undefined;
    const request = encoded[sent % encoded.length];
    sent += 1;
    return request;
  };
  const port = Number(base.port || 80);
  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, () => connection(port, next, record)));
  const seconds = (performance.now() - started) / 1000;
  return {
    requests: sent,
    ok,
    seconds,
    perSecond: ok / seconds,
    failures: sent - ok,
    statuses: Object.fromEntries(statuses),
    latencyMs: percentiles(latencies.subarray(0, timed)),
    failureBodies: Object.fromEntries(failureBodies),
  };
}

/** A plan's request as the bytes one keep-alive connection writes: request line, headers, body. */
function encodeRequest(method: string, base: URL, request: LoadRequest): Buffer {
  const url = new URL(request.path, base);
  const head =
    `${method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${base.host}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${request.body.byteLength}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), request.body]);
}

const HEAD_END = Buffer.from("\r\n\r\n", "latin1");

/**
 * One keep-alive connection of `load()`: writes the request `next()` gives, reads its answer,
 * calls `record(status, ms, body)` (the body only of a non-2xx answer; status 0 for a transport
 * error or a request older than REQUEST_TIMEOUT_MS) and writes the next, until `next()` has none.
 * A connection the server closes, or that fails, is opened again for the next request. Answers
 * must carry a Content-Length (the servers measured here always do); anything else, such as a
 * chunked answer, is recorded as a transport error and the connection opened again.
 */
function connection(
  port: number,
  next: () => Buffer | undefined,
  record: (status: number, ms: number, body: string | undefined) => void,
): Promise<void> {
  return new Promise((resolve) => {
    let socket: Socket | undefined;
    let pending: Buffer | undefined; // bytes of the answer read so far
    let sentAt = 0;
    let inFlight = false;
    const write = (): void => {
      const request = next();
      if (request === undefined) {
        socket?.end();
        resolve();
        return;
      }
      if (socket === undefined) open();
      sentAt = performance.now();
      inFlight = true;
      socket?.write(request);
    };
    const fail = (): void => {
      socket?.destroy();
      socket = undefined;
      pending = undefined;
      if (inFlight) {
        inFlight = false;
        record(0, performance.now() - sentAt, undefined);
        write();
      }
    };
    const read = (chunk: Buffer): void => {
      pending = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
      const end = pending.indexOf(HEAD_END);
      if (end < 0) return;
      const head = pending.toString("latin1", 0, end);
      const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
      const status = /^HTTP\/1\.[01] (\d{3}) /.exec(head);
      if (length === null || status === null || pending.length > end + 4 + Number(length[1])) {
        fail();
        return;
      }
      if (pending.length < end + 4 + Number(length[1])) return;
      const code = Number(status[1]);
      const body = code >= 200 && code < 300 ? undefined : pending.toString("utf8", end + 4);
      pending = undefined;
      inFlight = false;
      record(code, performance.now() - sentAt, body);
      if (/\r\nconnection:[ \t]*close/i.test(head)) {
        socket?.destroy();
        socket = undefined;
      }
      write();
    };
    const open = (): void => {
      const s = connect(port, "127.0.0.1");
      s.setNoDelay(true);
      s.setTimeout(REQUEST_TIMEOUT_MS, fail);
      s.on("data", read);
      s.on("error", fail);
      s.on("close", () => {
        if (socket === s) fail();
      });
      socket = s;
    };
    write();
  });
}

/** What bench/load-child.ts receives. */
export interface ChildLoadRequest {
  readonly plan: LoadPlan;
  readonly options: LoadOptions;
}

/**
 * Runs `load(plan, options)` in a child process (bench/load-child.ts, through tsx) and resolves
 * with its result; the child is killed if it has not answered `seconds` + 60 s after it started.
 */
export function loadInChild(plan: LoadPlan, options: LoadOptions): Promise<LoadResult> {
  assertLoopback(new URL(plan.base));
  const child = fork(new URL("./load-child.ts", import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => {
        child.kill("SIGKILL");
        reject(new Error("the load child did not finish in time"));
      },
      options.seconds * 1000 + CHILD_GRACE_MS,
    );
    child.once("message", (message) => {
      clearTimeout(timer);
      child.disconnect();
      resolve(message as LoadResult);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the load child exited (${code}) without a result`));
    });
    const request: ChildLoadRequest = { plan, options };
    child.send(request);
  });
}

/** One request for bench/query-child.ts. */
export interface ChildQuery {
  readonly url: string;
  readonly method: "GET" | "POST";
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** What bench/query-child.ts answers for a {@link ChildQuery}. */
export interface ChildQueryAnswer {
  /** HTTP status; 0 when the request failed. */
  readonly status: number;
  /** Characters of the answer's text. */
  readonly length: number;
  /** The first 300 characters of an answer that is not a 200, or the error. */
  readonly head?: string;
}

/**
 * A client in a child process (bench/query-child.ts, through tsx) that sends one request at a
 * time and reads each answer whole, so that a server in the bench's own process is timed as a
 * separate client would see it, the client's reading not on the server's thread. `close()` ends
 * the child.
 */
export function queryClientInChild(): {
  send(query: ChildQuery): Promise<ChildQueryAnswer>;
  close(): void;
} {
  const child = fork(new URL("./query-child.ts", import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let pending: { resolve(a: ChildQueryAnswer): void; reject(e: Error): void } | undefined;
  child.on("message", (message) => {
    const waiting = pending;
    pending = undefined;
    waiting?.resolve(message as ChildQueryAnswer);
  });
  child.once("exit", (code) => {
    pending?.reject(new Error(`the query child exited (${code}) without an answer`));
    pending = undefined;
  });
  return {
    send(query) {
      assertLoopback(new URL(query.url));
      if (pending !== undefined) return Promise.reject(new Error("one query at a time"));
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        child.send(query);
      });
    },
    close() {
      if (child.connected) child.disconnect();
    },
  };
}
