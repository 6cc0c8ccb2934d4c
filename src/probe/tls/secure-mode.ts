/**
 * The probe's secure mode (seed "Authentication" B.2, DESIGN 1 and 3.5): started with `-secure
 * -ssl-certificate P -ssl-certificate-key P [-ssl-certificate-chain P]`, the probe serves the same
 * routes over HTTPS on `restApiHttpsPort` beside HTTP on `restApiHttpPort`. Without `-secure` there
 * is no HTTPS listener and `restApiHttpsPort` is unused.
 *
 * One Fastify app serves both: the HTTPS server is a plain `node:https` server handing each request to
 * the app's router (`app.routing`), with the HTTP server's timeouts and parser-error answers, so
 * hooks, error bodies and the mTLS gate are the same on both ports. The HTTPS server asks for a
 * client certificate but does not require one (`requestCert: true, rejectUnauthorized: false`):
 * each sampler decides (sampler-mtls.ts).
 *
 * The files are read once at start; a changed file is logged as needing a restart (seed B rule 2).
 */

import { readFileSync, statSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { createSecureContext } from "node:tls";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { HTTP_MAX_CONNECTIONS_PER_CLIENT, HTTP_TIMEOUT_CHECK_MS } from "../../config/defaults.js";
import { limitConnections } from "../../http/connection-limits.js";
import { clientErrorHandler } from "../../http/error-handler.js";

/** The secure-mode flags, as given on the command line (paths as written). */
export interface SecureModeFiles {
  /** `-ssl-certificate`: the server certificate (PEM), optionally followed by its chain. */
  readonly certificate: string;
  /** `-ssl-certificate-key`: its private key (PEM). */
  readonly key: string;
  /** `-ssl-certificate-chain`: CA certificates (PEM) sent after the server certificate and trusted for client certificates of samplers without their own client CA. */
  readonly chain?: string;
}

/** Secure mode after its files were read and checked. */
export interface SecureMode {
  readonly files: SecureModeFiles;
  readonly cert: string;
  readonly key: string;
  /** What the files looked like when read, to tell later that they changed. */
  readonly stamps: ReadonlyMap<string, string>;
}

/** A startup error of secure mode: names the flag and the file. */
export class SecureModeError extends Error {
  override readonly name = "SecureModeError";
}

/**
 * Reads the secure-mode files and checks that the key matches the certificate; throws a
 * {@link SecureModeError} naming the flag and file that failed.
 */
export function loadSecureMode(files: SecureModeFiles): SecureMode {
  const stamps = new Map<string, string>();
  const read = (flag: string, path: string): string => {
    if (path === "") throw new SecureModeError(`${flag} needs a file path`);
    try {
      stamps.set(path, stampOf(path));
      const text = readFileSync(path, "utf8");
      if (!text.includes("-----BEGIN ")) throw new Error("not a PEM file (no -----BEGIN line)");
      return text;
    } catch (cause) {
      throw new SecureModeError(`cannot read the ${flag} file '${path}': ${message(cause)}`, { cause });
    }
  };
  const certificate = read("-ssl-certificate", files.certificate);
  const key = read("-ssl-certificate-key", files.key);
  const chain = files.chain === undefined ? "" : read("-ssl-certificate-chain", files.chain);
  const cert = chain === "" ? certificate : `${certificate.trimEnd()}\n${chain}`;
  try {
    createSecureContext({ cert, key });
  } catch (cause) {
    throw new SecureModeError(
      `the -ssl-certificate file '${files.certificate}' and the -ssl-certificate-key file '${files.key}' cannot be used together: ${message(cause)}`,
      { cause },
    );
  }
  return { files, cert, key, stamps };
}

/** The secure-mode files that changed on disk since they were read (each needs a restart to apply). */
export function changedSecureFiles(mode: SecureMode): string[] {
  const changed: string[] = [];
  for (const [path, stamp] of mode.stamps) {
    let now: string;
    try {
      now = stampOf(path);
    } catch {
      now = "missing";
    }
    if (now !== stamp) changed.push(path);
  }
  return changed;
}

/** An HTTPS listener serving a Fastify app's routes. */
export interface HttpsListener {
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, closes idle keep-alive connections. */
  close(): Promise<void>;
}

/**
 * Listens with HTTPS on `port`/`host` for `app` (which must be ready, or is made ready), with the
 * timeouts of its HTTP server. Resolves with the base URL bound (`https://127.0.0.1:7137`).
 */
export async function listenHttps(
  app: FastifyInstance,
  mode: SecureMode,
  port: number,
  host: string,
  logger: Logger,
): Promise<HttpsListener> {
  await app.ready();
  const server: Server = createServer(
    {
      cert: mode.cert,
      key: mode.key,
      requestCert: true,
      rejectUnauthorized: false,
      connectionsCheckingInterval: HTTP_TIMEOUT_CHECK_MS,
    },
    (request, response) => {
      if (closing) response.on("finish", () => server.closeIdleConnections());
      app.routing(request, response);
    },
  );
  // The same limits as the app's HTTP server.
  server.keepAliveTimeout = app.server.keepAliveTimeout;
  server.requestTimeout = app.server.requestTimeout;
  server.headersTimeout = app.server.headersTimeout;
  server.timeout = app.server.timeout;
  server.maxRequestsPerSocket = app.server.maxRequestsPerSocket;
  limitConnections(
    server,
    { maxConnections: app.server.maxConnections, maxConnectionsPerClient: HTTP_MAX_CONNECTIONS_PER_CLIENT },
    logger,
  );
  server.on("clientError", clientErrorHandler.bind(app));
  // A connection's client certificate is verified once and cached (sampler-mtls.ts): it must not
  // change under that cache through a TLS 1.2 renegotiation.
  server.on("secureConnection", (socket) => socket.disableRenegotiation());
  server.on("tlsClientError", (error) => {
    logger.debug({ reason: error.message }, "TLS handshake failed");
  });
  let closing = false;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `https://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

function stampOf(path: string): string {
  const stat = statSync(path);
  return `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
