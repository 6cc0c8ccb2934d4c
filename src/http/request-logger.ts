/**
 * The logger Fastify gives each request (`request.log`), made only when the request logs
 * (no per-request logger where the answer does not need one). Fastify's own factory makes
 * a pino child with the request id for every request, though a served request logs nothing
 * (request logging is off, createHttpApp); this one hands out a small object that makes that same
 * child at the first call on it and forwards to it from then on.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "pino";

type LogMethod = (...args: unknown[]) => void;

/** A request's logger: the pino child Fastify would make, made on first use. */
class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The child logger, made at the first call. */
  private get logger(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  private log(method: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent", args: unknown[]) {
    const logger = this.logger;
    (logger[method] as LogMethod).apply(logger, args);
  }

  get level(): string {
    return this.logger.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void {
    this.log("fatal", args);
  }

  error(...args: unknown[]): void {
    this.log("error", args);
  }

  warn(...args: unknown[]): void {
    this.log("warn", args);
  }

  info(...args: unknown[]): void {
    this.log("info", args);
  }

  debug(...args: unknown[]): void {
    this.log("debug", args);
  }

  trace(...args: unknown[]): void {
    this.log("trace", args);
  }

  silent(...args: unknown[]): void {
    this.log("silent", args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory` option: each request's logger is made when it first logs. */
export function lazyRequestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}
