/**
 * Authentication of the probe link (DESIGN 5.4b), checked on the upgrade request before anything
 * else happens: `Authorization: Bearer <linkSecret>` names the probe whose secret it is. The
 * gateway keeps only the SHA-256 digests of the setup's secrets, in a Map from digest to probe
 * name: the lookup of a presented secret's digest takes the same time whoever sends it and reveals
 * nothing of a secret (a timing difference could tell at most a digest's prefix). A missing
 * secret, a wrong one and the secret of no probe in the setup are one answer, 401: no oracle of
 * probe names.
 */
import type { Duplex } from "node:stream";
import type { ProbeLinkSecret } from "../config/link-secret.js";
import { linkSecretDigest } from "../config/link-secret.js";
import { errorBody, type VigilError } from "../errors/catalog.js";
import type { LinkIdentity } from "./link-server.js";

/** Longest Authorization header looked at; a longer one is no secret of the setup's. */
const MAX_AUTHORIZATION_LENGTH = 4_096; // characters
const BEARER = /^Bearer +(\S+) *$/i;

/** The outcome of an upgrade's check: the probe it may speak for, or why it may not. */
export type LinkAuthentication =
  | Extract<LinkIdentity, { kind: "secret" }>
  | { readonly kind: "refused"; readonly reason: "missing_secret" | "wrong_secret" };

/** The setup's link secrets as digests (rebuilt on every reload). */
export class LinkAuthenticator {
  private byDigest = new Map<string, string>();

  constructor(secrets: readonly ProbeLinkSecret[]) {
    this.update(secrets);
  }

  /** Takes a reloaded setup's secrets; links open already are checked by the link server. */
  update(secrets: readonly ProbeLinkSecret[]): void {
    const next = new Map<string, string>();
    for (const { probe, secret } of secrets) next.set(secret.digest, probe);
    this.byDigest = next;
  }

  /** Who an upgrade request's `Authorization` header (as Node gives it) authenticates. */
  identify(authorization: string | undefined): LinkAuthentication {
    if (authorization === undefined || authorization === "")
      return { kind: "refused", reason: "missing_secret" };
    const match = authorization.length > MAX_AUTHORIZATION_LENGTH ? null : BEARER.exec(authorization);
    if (match === null) return { kind: "refused", reason: "missing_secret" };
    const digest = linkSecretDigest(match[1] as string);
    const probe = this.byDigest.get(digest);
    if (probe === undefined) return { kind: "refused", reason: "wrong_secret" };
    return { kind: "secret", probe, digest };
  }
}

/**
 * Answers an upgrade request with `error` (its `{status, title, body}` JSON) and closes the
 * socket once the answer is written; a peer that does not read it is cut after that.
 */
export function refuseUpgrade(
  socket: Duplex,
  error: VigilError,
  headers: Readonly<Record<string, string>> = {},
): void {
  const body = JSON.stringify(errorBody(error));
  const lines = [
    `HTTP/1.1 ${error.status} ${error.title}`,
    "Connection: close",
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.on("error", () => {}); // a peer gone already: nothing to answer
  socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`, () => socket.destroy());
}
