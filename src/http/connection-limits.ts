/**
 * Limits that keep slow, idle or greedy clients from starving the others: a cap on open
 * connections per server and per remote address (beyond either, a new connection is closed at once,
 * counted, and logged once per minute), next to the header, request and keep-alive timeouts that
 * `createHttpApp` gives Node's server. The per-address map holds only addresses with an open
 * connection, so it is bounded by the connection cap.
 */
import type { Server } from "node:net";
import type { Logger } from "pino";

export interface ConnectionLimits {
  /** Open connections the server accepts at once. */
  readonly maxConnections: number;
  /** Open connections one remote address may hold. */
  readonly maxConnectionsPerClient: number;
}

/** Counters of refused connections, for status pages and tests. */
export interface ConnectionRefusals {
  total: number;
  perClient: number;
}

const LOG_EVERY_MS = 60_000;

/** Applies `limits` to `server` (HTTP or HTTPS); returns the live counters of refusals. */
export function limitConnections(
  server: Server,
  limits: ConnectionLimits,
  logger: Logger,
): ConnectionRefusals {
  const refusals: ConnectionRefusals = { total: 0, perClient: 0 };
  const open = new Map<string, number>();
  let loggedAt = Number.NEGATIVE_INFINITY;
  const refuse = (kind: "total" | "perClient", address: string): void => {
    refusals[kind] += 1;
    const now = Date.now();
    if (now - loggedAt >= LOG_EVERY_MS) {
      loggedAt = now;
      logger.warn(
        { address, refusedTotal: refusals.total, refusedPerClient: refusals.perClient, ...limits },
        kind === "total"
          ? "connection refused: the server holds its maximum of open connections"
          : "connection refused: this address holds its maximum of open connections",
      );
    }
  };
  // Node closes connections beyond maxConnections itself (and emits 'drop'); count them.
  server.maxConnections = limits.maxConnections;
  server.on("drop", (data?: { remoteAddress?: string }) => refuse("total", data?.remoteAddress ?? "unknown"));
  // TLS servers hand over the raw socket on 'connection' too, before the handshake.
  server.on("connection", (socket) => {
    const address = socket.remoteAddress ?? "unknown";
    const count = (open.get(address) ?? 0) + 1;
    if (count > limits.maxConnectionsPerClient) {
      refuse("perClient", address);
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
  return refusals;
}
