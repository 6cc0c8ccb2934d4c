/**
 * The PostgreSQL client's sockets with Nagle's algorithm off (TCP_NODELAY). The `postgres` client
 * opens plain `net.Socket`s, which keep Nagle on: the last small write of a COPY (its end marker)
 * then waits for the acknowledgement of the data before it, which Linux delays by up to 40 ms, so
 * every ingest transaction paid about 45 ms doing nothing (5 000-row COPY transactions: 66 ms each
 * with Nagle, 18–22 ms without, measured on the 2-core machine of docs/performance.md).
 *
 * Given as the client's `socket` option; the client still does TLS (`sslmode`) on top of it. Hosts
 * of a multi-host URL are tried in order; a Unix socket path (`?host=/run/postgresql`) is used as
 * given.
 */
import { connect, Socket } from "node:net";

/** What the client passes to its `socket` option (its parsed connection options). */
export interface PgSocketTarget {
  readonly host: readonly string[];
  readonly port: readonly number[];
  readonly path?: string | false;
}

function open(options: { host: string; port: number } | { path: string }): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ ...options, noDelay: true });
    socket.once("connect", () => {
      socket.removeListener("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/**
 * Connects to the first reachable host of `target`, with TCP_NODELAY set. Never rejects: the last
 * host's socket (a Unix socket's too) is handed back while it connects, so that a refusal reaches
 * the client as that socket's `error` and `close`, as with the client's own sockets. A rejected
 * factory leaves the `postgres` client (3.4.9) without a socket: its queries on that connection
 * then hang, and its next scheduled write throws a TypeError nobody can catch, which ended the hub
 * when PostgreSQL restarted under load (test/faults/postgres-restart.test.ts, once in CI).
 */
export async function noDelaySocket(target: PgSocketTarget): Promise<Socket> {
  if (typeof target.path === "string" && target.path !== "")
    return connect({ path: target.path, noDelay: true });
  const last = target.host.length - 1;
  for (let i = 0; i < last; i++) {
    try {
      return await open({
        host: target.host[i] ?? "127.0.0.1",
        port: target.port[i] ?? target.port[0] ?? 5432,
      });
    } catch {
      // The next host.
    }
  }
  if (last < 0) {
    const socket = new Socket();
    process.nextTick(() => socket.destroy(new Error("the PostgreSQL URL names no host")));
    return socket;
  }
  return connect({
    host: target.host[last] ?? "127.0.0.1",
    port: target.port[last] ?? target.port[0] ?? 5432,
    noDelay: true,
  });
}
