/**
 * A guard for transaction bodies against a crash in the `postgres` client (3.4.9; upstream issues
 * porsager/postgres#1154 and #1208, fixes proposed in #1168, #1176, #1209, none released).
 *
 * When the socket of a reserved connection (`sql.begin`, `savepoint`) closes under a query — a
 * PostgreSQL restart, a killed backend — the client first drops its socket, then rejects that
 * query with `CONNECTION_CLOSED`. If the transaction body then rejects, the client sends ROLLBACK on
 * that connection; the write is scheduled with `setImmediate` onto the dropped socket and throws a
 * TypeError nobody can catch, which ends the hub process (found by test/faults/postgres-restart).
 *
 * `sql.begin` itself has already rejected with `CONNECTION_CLOSED` at that point (it races the
 * connection's close), and the server rolls back a transaction whose connection went. So a body
 * that sees `CONNECTION_CLOSED` need not settle at all: it is left pending, the client never reaches
 * its ROLLBACK, and the pending promise, referenced by nothing, is garbage-collected. Every other
 * error rejects as before.
 */

/** True for the error the `postgres` client raises when a connection's socket closed under a query. */
function isClosedConnection(error: unknown): boolean {
  return (
    typeof error === "object" && error !== null && (error as { code?: unknown }).code === "CONNECTION_CLOSED"
  );
}

/**
 * Wraps the body of a `sql.begin(…)` or `sql.savepoint(…)` call (see the file comment): the body's
 * result as it is, except that a `CONNECTION_CLOSED` failure leaves the returned promise pending.
 */
export function closedSafe<A, T>(body: (arg: A) => Promise<T>): (arg: A) => Promise<T> {
  return (arg) =>
    body(arg).catch((error: unknown) => {
      if (isClosedConnection(error)) return new Promise<T>(() => undefined);
      throw error;
    });
}
