/**
 * Bounded HTTP load for benchmarks (127.0.0.1 only). `load()` keeps `concurrency` keep-alive
 * requests in flight for at most `seconds` and at most `maxRequests`, cycling through a plan of
 * requests (path + body), and returns the rate, the status counts and latency percentiles.
 * `loadInChild()` runs the same loop in a child process (bench/load-child.ts), so the client has
 * its own event loop and does not share one with the server it measures. `send()` is one request,
 * for benches that drive their own clients (bench/end-to-end.bench.ts).
 */
import { fork } from "node:child_process";
import { Agent, request } from "node:http";

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
  const urls = plan.requests.map((r) => new URL(r.path, base));
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  const latencies = new Float64Array(Math.min(options.maxRequests, MAX_LATENCY_SAMPLES));
  const statuses = new Map<string, number>();
  const failureBodies = new Map<string, number>();
  const deadline = performance.now() + options.seconds * 1000;
  let sent = 0;
  let timed = 0;
  let ok = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline && sent < options.maxRequests) {
      const index = sent % urls.length;
      sent += 1;
      const result = await send(agent, urls[index]!, plan.method, plan.requests[index]!.body, {
        keepBody: "failures",
      });
      if (timed < latencies.length) latencies[timed++] = result.ms;
      if (result.status >= 200 && result.status < 300) ok += 1;
      else if (result.body !== undefined) {
        const text = result.body.slice(0, FAILURE_BODY_CHARS).replace(/\d+/g, "N");
        if (failureBodies.has(text) || failureBodies.size < MAX_FAILURE_BODIES) {
          failureBodies.set(text, (failureBodies.get(text) ?? 0) + 1);
        }
      }
      const key = result.status === 0 ? "error" : String(result.status);
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
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
