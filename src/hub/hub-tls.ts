/**
 * HTTPS for the hub (DESIGN 2 `hub.tls`): when both `certificate` and `key` are set the hub serves
 * HTTPS only, on its one port. The files are read once at start (a changed file is reported by the
 * setup reload as needing a restart); an unreadable or mismatched pair stops the start with a
 * message naming the setup key and the file.
 */
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";

/** The PEM texts the hub's HTTPS server uses. */
export interface HubTls {
  readonly cert: string;
  readonly key: string;
}

/** The hub's TLS files read from the setup paths, or undefined when HTTPS is off (both empty). */
export function loadHubTls(tls: { readonly certificate: string; readonly key: string }): HubTls | undefined {
  if (tls.certificate === "" && tls.key === "") return undefined;
  const read = (setting: string, path: string): string => {
    if (path === "")
      throw new Error(`${setting} is empty; set both hub.tls.certificate and hub.tls.key, or neither`);
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
  const cert = read("hub.tls.certificate", tls.certificate);
  const key = read("hub.tls.key", tls.key);
  try {
    createSecureContext({ cert, key });
  } catch (cause) {
    throw new Error(
      `hub.tls.certificate '${tls.certificate}' and hub.tls.key '${tls.key}' cannot be used together: ${(cause as Error).message}`,
      { cause },
    );
  }
  return { cert, key };
}
