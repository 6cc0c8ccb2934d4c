/**
 * A TCP port free on 127.0.0.1 right now (bound, then released), for a server that takes no port 0
 * (the KDC, VictoriaMetrics). Another process may take it before it is used; callers that start a
 * server on it see the failure in that server's start.
 */
import { createServer } from "node:net";

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no port was bound"))));
    });
  });
}
