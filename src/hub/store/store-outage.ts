/**
 * Store outages as HTTP 503 (DESIGN 1 "Durability"; the fault tests in test/faults): while PostgreSQL is
 * down or restarting, or the store's disk is full, every store call fails; without this the API
 * answered those failures as 500 "Internal error", which tells a client (or `vigil replay`) that
 * retrying is pointless. {@link withOutageErrors} wraps a store so that such failures become
 * `SERVICE_UNAVAILABLE` (503 with `Retry-After`) carrying the original error as `cause` (the error
 * handler logs it whole). Anything else passes through unchanged: a `StoreDataError` still reaches
 * the ingester, which dead-letters the message at fault, and a failed read that is no outage is
 * still a 500.
 *
 * The embedded DuckDB store is unavailable in two more ways: a statement that needs more than
 * DuckDB's `memory_limit` fails with "Out of Memory Error" (that call only: the next may fit), and
 * after a fatal error the store answers `STORE_REOPENING` until it has reopened its file
 * (duckdb-store.ts). Both are 503 too: the write or query failed, the store goes on. A write
 * (`ingest`, `transaction`) fails alone whatever the store's error ({@link rethrowWrite}).
 *
 * The ingester rethrows a non-data store error, so a backfill gets the 503, and the bus consumer
 * naks its batch and retries with back-off: both recover by themselves when the store is back (the
 * `postgres` client opens new connections on demand).
 */
import { RETRY_AFTER_SECONDS } from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import { type Store, StoreDataError, type StoreHealth } from "./store.js";

/** Error codes of Node's sockets and file system, and of the `postgres` client, that mean an outage. */
const OUTAGE_CODES: ReadonlySet<string> = new Set([
  // The server is not there or went away.
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  // The disk under the store is full or failing.
  "ENOSPC",
  "EDQUOT",
  "EIO",
  // The DuckDB store reopens its file after a fatal error (duckdb-store.ts StoreFaultError).
  "STORE_REOPENING",
]);

/**
 * SQLSTATEs of an unavailable PostgreSQL: class 08 (connection exception), 53 (insufficient
 * resources: disk full, out of memory, too many connections), 58 (system error: I/O), and 57P01-03
 * (the server is shutting down, crashed, or not accepting connections yet).
 */
const OUTAGE_SQLSTATE = /^(?:08|53|58)[0-9A-Z]{3}$|^57P0[123]$/;

/**
 * DuckDB reports I/O failures, a statement past its `memory_limit`, and a fatal error that
 * invalidated the instance (which the store then reopens) as text only.
 */
const OUTAGE_MESSAGE =
  /No space left on device|Disk quota exceeded|Input\/output error|Out of Memory Error|^FATAL Error|database has been invalidated/i;

/** A short reason when `error` (or an error in its `cause` chain) is a store outage, else undefined. */
export function outageReason(error: unknown, depth = 0): string | undefined {
  if (depth > 4 || typeof error !== "object" || error === null) return undefined;
  const { code, name, message, cause } = error as {
    code?: unknown;
    name?: unknown;
    message?: unknown;
    cause?: unknown;
  };
  if (typeof code === "string") {
    if (OUTAGE_CODES.has(code)) return code;
    if (name === "PostgresError" && OUTAGE_SQLSTATE.test(code)) return `SQLSTATE ${code}`;
  }
  if (typeof message === "string") {
    const found = OUTAGE_MESSAGE.exec(message);
    if (found !== null) return found[0];
  }
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const reason = outageReason(inner, depth + 1);
      if (reason !== undefined) return reason;
    }
  }
  return outageReason(cause, depth + 1);
}

/** A 503 SERVICE_UNAVAILABLE with `Retry-After`, carrying `error` as its cause. */
function unavailable(detail: string, error: unknown): VigilError {
  return new VigilError(
    "SERVICE_UNAVAILABLE",
    { detail },
    { headers: { "Retry-After": String(RETRY_AFTER_SECONDS) }, cause: error },
  );
}

/** Rethrows an outage as a 503 VigilError; anything else as it is. */
function rethrow(kind: string, error: unknown): never {
  if (error instanceof VigilError) throw error;
  const reason = outageReason(error);
  if (reason === undefined) throw error;
  throw unavailable(
    `The hub's ${kind} store is unavailable (${reason}); the hub keeps retrying by itself; retry later.`,
    error,
  );
}

/**
 * SQLSTATE classes of PostgreSQL that refuse the data itself: 22 (data exception: a value out of
 * range, an invalid byte sequence) and 23 (integrity constraint violation).
 */
const DATA_SQLSTATE = /^(?:22|23)[0-9A-Z]{3}$/;

/**
 * Rethrows a write's error so that it fails that write only (DESIGN 5.4b): an outage as a 503; a
 * PostgreSQL refusal of the data as a {@link StoreDataError}, which the ingester narrows down to the
 * message at fault and dead-letters (backfill: that message in `rejected`); any other error of the
 * store (a statement that failed for a reason of its own) as a 503 too, since the write did not
 * happen and the store goes on. A StoreDataError or VigilError from the caller's `work` passes as is.
 */
function rethrowWrite(kind: string, error: unknown): never {
  if (error instanceof VigilError) throw error;
  if (error instanceof Error && error.name === "StoreDataError") throw error;
  if (outageReason(error) !== undefined) rethrow(kind, error);
  const { code, name } = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    name?: unknown;
  };
  if (name === "PostgresError" && typeof code === "string") {
    if (DATA_SQLSTATE.test(code)) {
      const message = error instanceof Error ? error.message : String(error);
      throw new StoreDataError(`PostgreSQL refused it (SQLSTATE ${code}: ${message})`, { cause: error });
    }
    throw unavailable(
      `The hub's ${kind} store could not commit the write (SQLSTATE ${code}); it was not stored; retry later.`,
      error,
    );
  }
  throw unavailable(
    `The hub's ${kind} store could not commit the write; it was not stored; retry later.`,
    error,
  );
}

/**
 * Wraps `store` so that its outages reject with a 503 `SERVICE_UNAVAILABLE` (see the file comment);
 * every call is passed through as it is.
 */
export function withOutageErrors(store: Store): Store {
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    call().catch((error: unknown) => rethrow(store.kind, error));
  const guardWrite = <T>(call: () => Promise<T>): Promise<T> =>
    call().catch((error: unknown) => rethrowWrite(store.kind, error));
  return {
    kind: store.kind,
    migrate: () => guard(() => store.migrate()),
    ingest: (batch) => guardWrite(() => store.ingest(batch)),
    transaction: (work) => guardWrite(() => store.transaction(work)),
    ping: () => guard(() => store.ping()),
    deleteBefore: (cutoff) => guard(() => store.deleteBefore(cutoff)),
    listEntities: (options) => guard(() => store.listEntities(options)),
    listProbes: () => guard(() => store.listProbes()),
    getEntity: (id) => guard(() => store.getEntity(id)),
    listSeries: (entity) => guard(() => store.listSeries(entity)),
    listEvents: (query) => guard(() => store.listEvents(query)),
    queryMetrics: (plan) => guard(() => store.queryMetrics(plan)),
    queryMetricBatches: (plan) => guard(() => store.queryMetricBatches(plan)),
    latestSeverities: () => guard(() => store.latestSeverities()),
    listSamples: (query) => guard(() => store.listSamples(query)),
    listMetricNames: (query) => guard(() => store.listMetricNames(query)),
    listRowNames: (query) => guard(() => store.listRowNames(query)),
    close: () => store.close(),
    ...(store.health === undefined ? {} : { health: () => (store.health as () => StoreHealth)() }),
    ...(store.entityVersion === undefined
      ? {}
      : { entityVersion: () => guard(() => (store.entityVersion as () => Promise<string>).call(store)) }),
    ...(store.changedEntities === undefined
      ? {}
      : {
          changedEntities: (since: string) =>
            guard(() => (store.changedEntities as NonNullable<Store["changedEntities"]>).call(store, since)),
        }),
  };
}
