/**
 * HTTPS for the gateway and the hub (DESIGN 2 `gateway.tls`, `hub.tls`): when both `certificate`
 * and `key` are set that server serves HTTPS only, on its one port. The files are read at start (an
 * unreadable or mismatched pair stops the start with a message naming the setup key and the file)
 * and again on SIGHUP or when the setup names other files: a good new pair replaces the server's
 * certificate for new connections, without a restart; a bad one is logged and the old pair stays.
 * Turning HTTPS on or off needs a restart (logged).
 */
import { readFileSync } from "node:fs";
import type { Server } from "node:https";
import { createSecureContext } from "node:tls";
import type { Logger } from "pino";
import type { TlsFiles } from "../config/setup.js";

/** The PEM texts an HTTPS server uses. */
export interface ServerTls {
  readonly cert: string;
  readonly key: string;
}

/** Which server's `tls` setting: names the setup keys in messages. */
export type TlsSection = "gateway" | "hub";

/** Whether the setting turns HTTPS on (both files named). */
export function tlsEnabled(files: TlsFiles): boolean {
  return files.certificate !== "" || files.key !== "";
}

/** The TLS files read from the setup paths, or undefined when HTTPS is off (both empty). */
export function loadServerTls(section: TlsSection, files: TlsFiles): ServerTls | undefined {
  if (!tlsEnabled(files)) return undefined;
  const read = (setting: string, path: string): string => {
    if (path === "")
      throw new Error(
        `${setting} is empty; set both ${section}.tls.certificate and ${section}.tls.key, or neither`,
      );
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (cause) {
      throw new Error(`cannot read the ${setting} file '${path}': ${(cause as Error).message}`, { cause });
    }
    if (!text.includes("-----BEGIN ")) {
      throw new Error(`the ${setting} file '${path}' is not a PEM file (no -----BEGIN line)`);
    }
    return text;
  };
  const cert = read(`${section}.tls.certificate`, files.certificate);
  const key = read(`${section}.tls.key`, files.key);
  try {
    createSecureContext({ cert, key });
  } catch (cause) {
    throw new Error(
      `${section}.tls.certificate '${files.certificate}' and ${section}.tls.key '${files.key}' cannot be used together: ${(cause as Error).message}`,
      { cause },
    );
  }
  return { cert, key };
}

/**
 * Keeps an HTTPS server's certificate in step with its setting: `reload(files)` reads the files
 * again and gives the server the new pair (connections already open keep theirs).
 */
export class ServerTlsReloader {
  readonly #section: TlsSection;
  readonly #logger: Logger;
  #server: Server | undefined;
  #https: boolean;

  /** `started` is the setting the server was started with (HTTPS when both files are set). */
  constructor(section: TlsSection, started: TlsFiles, logger: Logger) {
    this.#section = section;
    this.#https = tlsEnabled(started);
    this.#logger = logger;
  }

  /** The server whose certificate `reload` replaces (the app's `server`, once it exists). */
  attach(server: unknown): void {
    if (this.#https) this.#server = server as Server;
  }

  /** Reads `files` and applies them; returns whether the server now uses them. Never throws. */
  reload(files: TlsFiles): boolean {
    const section = this.#section;
    if (tlsEnabled(files) !== this.#https) {
      this.#logger.warn(
        { setting: `${section}.tls` },
        `${section}.tls ${this.#https ? "no longer names" : "now names"} a certificate; switching between HTTP and HTTPS takes effect when the ${section} restarts`,
      );
      return false;
    }
    if (this.#server === undefined) return false;
    try {
      const tls = loadServerTls(section, files) as ServerTls;
      this.#server.setSecureContext({ cert: tls.cert, key: tls.key });
    } catch (error) {
      this.#logger.error(
        { err: error, setting: `${section}.tls` },
        `the ${section} certificate was not reloaded; the one in use stays`,
      );
      return false;
    }
    this.#logger.info(
      { setting: `${section}.tls`, certificate: files.certificate },
      `the ${section} certificate was reloaded`,
    );
    return true;
  }
}
