/**
 * The probe link over a WebSocket (DESIGN 1: the gateway port serves it at `/v1/probe-link`):
 * one JSON text message per frame, `ws` on both sides. Binary messages (1003), text that is not
 * JSON (1007), messages over `limits.linkFrameBytes` however fragmented (1009, `ws` counts every
 * fragment of a message against `maxPayload`) and JSON nested deeper than `limits.jsonDepth`
 * (4001, checked on the bytes before they are parsed) close the link with a reason.
 */
import { type ClientOptions, WebSocket } from "ws";
import { LINK_CLOSING_GRACE_MS, LINK_HANDSHAKE_TIMEOUT_MS } from "../config/defaults.js";
import type { LinkSecret } from "../config/link-secret.js";
import { trustCertificate } from "../http/pinned-certificate.js";
import { DEFAULT_DATA_LIMITS } from "../limits/data-limits.js";
import { jsonTooDeep } from "../limits/json-depth.js";
import {
  CLOSE_INVALID_DATA,
  CLOSE_NORMAL,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
  CLOSE_TOO_DEEP,
  LINK_PATH,
} from "./protocol.js";
import type { LinkClose, LinkConnector, LinkEnd, LinkHandlers } from "./transport.js";

/** The transport bounds of one link end (the setup's `limits`, read at each frame). */
export interface LinkFrameLimits {
  /** Largest message, in bytes, however fragmented (the `ws` `maxPayload`). */
  readonly linkFrameBytes: number;
  /** Deepest nesting of arrays and objects in a frame's JSON. */
  readonly jsonDepth: number;
}

const CLOSE_UNSUPPORTED_DATA = 1003;
/** The close code `ws` sends for each error its receiver raises (the rest are 1002). */
const WS_ERROR_CLOSE_CODES: ReadonlyMap<string, number> = new Map([
  ["WS_ERR_UNSUPPORTED_MESSAGE_LENGTH", CLOSE_TOO_BIG],
  ["WS_ERR_INVALID_UTF8", CLOSE_INVALID_DATA],
]);
/** A reason in a close frame is at most 123 bytes (RFC 6455 §5.5). */
const MAX_CLOSE_REASON_BYTES = 123;

function shortReason(reason: string): string {
  let out = reason;
  while (Buffer.byteLength(out) > MAX_CLOSE_REASON_BYTES) out = out.slice(0, -1);
  return out;
}

/**
 * Wraps an open `ws` socket as a {@link LinkEnd}. `limits` gives the bounds in force (the socket's
 * `maxPayload` was set from `linkFrameBytes` when it opened); each text message's depth is checked
 * against `jsonDepth` before `JSON.parse`.
 */
export function webSocketEnd(
  socket: WebSocket,
  remote: string,
  limits: () => LinkFrameLimits = () => DEFAULT_DATA_LIMITS,
): LinkEnd {
  let handlers: LinkHandlers | undefined;
  const early: unknown[] = [];
  let closed: LinkClose | undefined;
  let closedLocally: { code: number; reason: string } | undefined;
  let reported = false;

  const report = () => {
    if (handlers === undefined || closed === undefined || reported) return;
    reported = true;
    handlers.close(closed);
  };
  const closeWith = (code: number, reason: string) => {
    if (closedLocally !== undefined || socket.readyState >= WebSocket.CLOSING) return;
    closedLocally = { code, reason };
    socket.close(code, shortReason(reason));
    // A peer that does not answer the close frame does not keep its socket.
    setTimeout(() => socket.terminate(), LINK_CLOSING_GRACE_MS).unref();
  };

  socket.on("message", (data, isBinary) => {
    if (closedLocally !== undefined) return;
    if (isBinary) {
      closeWith(CLOSE_UNSUPPORTED_DATA, "binary frames are not part of the probe link");
      return;
    }
    const bytes = Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.isBuffer(data)
        ? data
        : Buffer.from(data);
    const { jsonDepth } = limits();
    if (jsonTooDeep(bytes, jsonDepth)) {
      closeWith(CLOSE_TOO_DEEP, `frame nests arrays and objects deeper than ${jsonDepth} levels`);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString("utf8"));
    } catch (error) {
      closeWith(CLOSE_INVALID_DATA, `frame is not JSON: ${(error as Error).message}`);
      return;
    }
    if (handlers === undefined) early.push(value);
    else handlers.frame(value);
  });
  socket.on("error", (error: Error & { code?: string }) => {
    // `ws` found a frame it refuses and sent a close frame itself; 'close' follows. This side
    // closed the link, with the code `ws` sent, whatever the peer answers (or if it never does).
    if (closedLocally !== undefined) return;
    const code = WS_ERROR_CLOSE_CODES.get(error.code ?? "") ?? CLOSE_PROTOCOL_ERROR;
    closedLocally = {
      code,
      reason: code === CLOSE_TOO_BIG ? wsCloseText(code, limits()) : error.message,
    };
    setTimeout(() => socket.terminate(), LINK_CLOSING_GRACE_MS).unref();
  });
  socket.on("close", (code, reason) => {
    closed =
      closedLocally === undefined
        ? { code, reason: reason.toString("utf8") || wsCloseText(code, limits()), local: false }
        : { ...closedLocally, local: true };
    report();
  });

  return {
    remote,
    listen(h) {
      handlers = h;
      for (const value of early.splice(0)) h.frame(value);
      report();
    },
    send(frame) {
      if (closedLocally !== undefined || socket.readyState !== WebSocket.OPEN) return;
      socket.send(JSON.stringify(frame));
    },
    close(code, reason) {
      closeWith(code, reason);
    },
  };
}

function wsCloseText(code: number, limits: LinkFrameLimits): string {
  if (code === 1006) return "connection lost";
  if (code === CLOSE_TOO_BIG) return `frame larger than ${limits.linkFrameBytes} bytes`;
  if (code === CLOSE_NORMAL) return "closed";
  return `closed with code ${code}`;
}

/**
 * The probe's link URL for a gateway base URL: `http://HOST:7039` → `ws://HOST:7039/v1/probe-link`
 * (`https` → `wss`). A `ws://`/`wss://` URL with a path is taken as it is.
 */
export function gatewayLinkUrl(gateway: string): string {
  const url = new URL(gateway);
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  else if (url.protocol !== "ws:" && url.protocol !== "wss:") {
    throw new Error(`the gateway URL must be http(s):// or ws(s)://, not ${gateway}`);
  }
  if (url.pathname === "/" || url.pathname === "") url.pathname = LINK_PATH;
  return url.toString();
}

/** How a probe's connector links: its secret, and the bounds of what it takes from the gateway. */
export interface WebSocketConnectorOptions {
  /**
   * PEM text of the certificate to trust for `wss` besides the public CAs (and
   * `NODE_EXTRA_CA_CERTS`): the setup's `gateway.tls.certificate`.
   */
  readonly gatewayCertificate?: string;
  /** The probe's link secret, sent as `Authorization: Bearer <secret>` on the upgrade. */
  readonly secret?: LinkSecret;
  /** Default DEFAULT_DATA_LIMITS (8 MiB frames, depth 64). */
  readonly limits?: LinkFrameLimits;
}

/**
 * A probe's connector to a gateway over WebSocket: `gateway` is its base URL (`--gateway
 * http://HOST:7039`) or the link URL. Each `connect()` opens a new socket (handshake timeout 10 s)
 * presenting the probe's link secret (DESIGN 5.4b); a gateway that refuses it answers 401 and
 * `connect()` rejects. Over `wss`, the gateway's certificate must be one the public CAs vouch for,
 * or `options.gatewayCertificate`.
 */
export function webSocketConnector(gateway: string, options: WebSocketConnectorOptions = {}): LinkConnector {
  const url = gatewayLinkUrl(gateway);
  const trust = trustCertificate(options.gatewayCertificate);
  const limits = options.limits ?? DEFAULT_DATA_LIMITS;
  const headers =
    options.secret === undefined ? undefined : { authorization: `Bearer ${options.secret.reveal()}` };
  return {
    description: url,
    connect() {
      return new Promise<LinkEnd>((resolve, reject) => {
        const socket = new WebSocket(url, {
          maxPayload: limits.linkFrameBytes,
          handshakeTimeout: LINK_HANDSHAKE_TIMEOUT_MS,
          ...(headers === undefined ? {} : { headers }),
          // ws hands its options to tls.connect; its own typing of checkServerIdentity is not Node's.
          ...(trust as unknown as ClientOptions),
        });
        const failed = (error: Error) => {
          socket.removeAllListeners();
          socket.on("error", () => {});
          socket.terminate();
          reject(error);
        };
        socket.once("error", failed);
        socket.once("unexpected-response", (_request, response) => {
          const status = response.statusCode ?? 0;
          response.resume();
          failed(
            new Error(
              status === 401
                ? `the gateway refused the link (HTTP 401): ${options.secret === undefined ? "no link secret given; use --link-secret-file FILE or VIGIL_LINK_SECRET" : "the link secret is not the one the gateway's setup gives this probe"}`
                : `the gateway answered the link upgrade with HTTP ${status}`,
            ),
          );
        });
        socket.once("open", () => {
          socket.removeListener("error", failed);
          socket.removeAllListeners("unexpected-response");
          resolve(webSocketEnd(socket, url, () => limits));
        });
      });
    },
  };
}
