/**
 * The console's way to the gateway's command API (DESIGN 4.2): the hub relays
 * `POST /console/gateway/v1/commands/{snooze|unsnooze|assign|unassign}` and
 * `GET /console/gateway/v1/items` to the same paths on one configured gateway, with the caller's
 * bearer token. The browser thus talks to the hub's origin only: no CORS on the gateway, and an
 * HTTPS hub works with the plain-HTTP gateway (a browser blocks such mixed content). Only these five
 * paths are relayed, to the one URL the operator configured (never one a request names), the body
 * is the parsed JSON re-serialised, and only a bearer `Authorization` and `Content-Type` are forwarded.
 * With security on the hub checks the token itself first, and its role (`operate` for a command,
 * `read` for items), so it never relays an anonymous or a read-only user's command; the gateway
 * checks both again (DESIGN 5.4a). docs/decisions.md, "Web console".
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { demandRole, type Role, type TokenGrant } from "../../auth/roles.js";
import type { Setup } from "../../config/setup.js";
import { VigilError } from "../../errors/catalog.js";
import { type BoundedAnswer, boundedRequest } from "../../http/bounded-request.js";
import { type PinnedTrust, readableCertificate, trustCertificate } from "../../http/pinned-certificate.js";
import { resource } from "../../http/routes.js";
import { tlsEnabled } from "../../http/server-tls.js";
import { REALM } from "../auth/client-auth.js";

/** The URL prefix of the relay; the rest of the path is the gateway's. */
export const RELAY_PREFIX = "/console/gateway";
/** The gateway's commands the console may send. */
const COMMANDS = ["snooze", "unsnooze", "assign", "unassign"] as const;
/** How long the gateway gets to answer a relayed request. */
const RELAY_TIMEOUT_MS = 10_000; // 10 s
/** Largest gateway answer relayed (an item with many children). */
const RELAY_MAX_ANSWER_BYTES = 4 * 1024 * 1024; // 4 MiB

export interface GatewayRelayOptions {
  /** The gateway's base URL (read at each request: `vigil up` knows it once the gateway listens). */
  readonly gatewayUrl: () => string | undefined;
  /** With security on: checks a hub token, rejecting with a 401 VigilError. */
  readonly verify?: (token: string) => Promise<TokenGrant>;
  /** How an HTTPS gateway's certificate is trusted (the setup's `gateway.tls.certificate`). */
  readonly trust?: PinnedTrust;
}

/**
 * The gateway a hub assumes when not told (`vigil hub` without `--gateway`): the setup's gateway
 * port on this machine, since one setup file describes the deployment (the gateway assumes the
 * hub the same way). Undefined when the setup's port is 0 (picked at start, so not knowable) and
 * for a hub-only setup, which names no gateway.
 */
export function defaultGatewayUrl(setup: Setup): string | undefined {
  const gateway = setup.gateway;
  if (gateway === undefined || gateway.port === 0) return undefined;
  return `${tlsEnabled(gateway.tls) ? "https" : "http"}://127.0.0.1:${gateway.port}`;
}

/** How the hub trusts an HTTPS gateway: the certificate the setup names for it, when readable here. */
export function gatewayTrust(setup: Setup): PinnedTrust {
  const gateway = setup.gateway;
  return gateway !== undefined && tlsEnabled(gateway.tls)
    ? trustCertificate(readableCertificate(gateway.tls.certificate))
    : {};
}

/** A URL to dial for a listening address: the wildcard addresses are dialled on loopback. */
function dialable(base: string): URL {
  const url = new URL(base);
  if (url.hostname === "0.0.0.0") url.hostname = "127.0.0.1";
  if (url.hostname === "[::]") url.hostname = "[::1]";
  return url;
}

/** Registers the relay routes (405 for other methods, as every vigil resource). */
export function registerGatewayRelay(app: FastifyInstance, options: GatewayRelayOptions): void {
  const relay =
    (gatewayPath: string, method: "GET" | "POST", role: Role) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const authorization = request.headers.authorization;
      if (options.verify !== undefined) {
        const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
        if (match?.[1] === undefined) {
          throw new VigilError(
            "UNAUTHORIZED",
            {},
            { headers: { "WWW-Authenticate": `Bearer realm="${REALM}"` } },
          );
        }
        demandRole(await options.verify(match[1]), role);
      }
      // JSON only: a cross-site form or `text/plain` POST (no CORS preflight) cannot reach the gateway.
      if (method === "POST" && !/^application\/json\s*(;|$)/i.test(request.headers["content-type"] ?? "")) {
        throw new VigilError("BAD_REQUEST", {
          detail: `Unsupported Content-Type '${request.headers["content-type"] ?? ""}'; send application/json.`,
        });
      }
      const base = options.gatewayUrl();
      if (base === undefined) {
        throw new VigilError("SERVICE_UNAVAILABLE", {
          detail:
            "This hub does not know its gateway: start it with --gateway URL to snooze and assign from the console.",
        });
      }
      const url = dialable(base);
      url.pathname = gatewayPath;
      url.search = method === "GET" ? (request.url.split("?")[1] ?? "") : "";
      const headers: Record<string, string> = { accept: "application/json" };
      // Only a bearer token goes on (the gateway accepts nothing else); never Basic credentials.
      if (authorization !== undefined && /^Bearer\s/i.test(authorization))
        headers.authorization = authorization;
      if (method === "POST") headers["content-type"] = "application/json";
      let answer: BoundedAnswer;
      try {
        answer = await boundedRequest(url, {
          method,
          headers,
          ...(method === "POST" ? { body: JSON.stringify(request.body ?? null) } : {}),
          maxBytes: RELAY_MAX_ANSWER_BYTES,
          signal: AbortSignal.timeout(RELAY_TIMEOUT_MS),
          ...(options.trust === undefined ? {} : { trust: options.trust }),
        });
      } catch (error) {
        const reason =
          error instanceof Error
            ? error.cause instanceof Error
              ? error.cause.message
              : error.message
            : String(error);
        throw new VigilError(
          "SERVICE_UNAVAILABLE",
          {
            detail: `The gateway at ${base} did not answer (${reason}); snooze and assignment are unavailable until it does (a hub names its gateway with --gateway URL).`,
          },
          { cause: error },
        );
      }
      const challenge = answer.headers["www-authenticate"];
      if (challenge !== undefined) reply.header("WWW-Authenticate", challenge);
      return reply
        .code(answer.status)
        .header("Cache-Control", "no-store")
        .type(answer.headers["content-type"] ?? "application/json")
        .send(answer.body.toString("utf8"));
    };
  for (const command of COMMANDS) {
    resource(app, `${RELAY_PREFIX}/v1/commands/${command}`, {
      POST: relay(`/v1/commands/${command}`, "POST", "operate"),
    });
  }
  resource(app, `${RELAY_PREFIX}/v1/items`, { GET: relay("/v1/items", "GET", "read") });
}
