/**
 * The probe link over a WebSocket (DESIGN 1: the gateway port serves it at `/v1/probe-link`):
 * one JSON text message per frame, `ws` on both sides. Binary messages, text that is not JSON and
 * messages over LINK_MAX_FRAME_BYTES close the link with a reason (1003, 1007, 1009).
 */
import { type ClientOptions, WebSocket } from "ws";
import { LINK_HANDSHAKE_TIMEOUT_MS, LINK_MAX_FRAME_BYTES } from "../config/defaults.js";
import { trustCertificate } from "../http/pinned-certificate.js";
import { CLOSE_INVALID_DATA, CLOSE_NORMAL, LINK_PATH } from "./protocol.js";
import type { LinkClose, LinkConnector, LinkEnd, LinkHandlers } from "./transport.js";

const CLOSE_UNSUPPORTED_DATA = 1003;
/** A reason in a close frame is at most 123 bytes (RFC 6455 §5.5). */
const MAX_CLOSE_REASON_BYTES = 123;

function shortReason(reason: string): string {
  let out = reason;
  while (Buffer.byteLength(out) > MAX_CLOSE_REASON_BYTES) out = out.slice(0, -1);
  return out;
}

/** Wraps an open `ws` socket as a {@link LinkEnd}. */
export function webSocketEnd(socket: WebSocket, remote: string): LinkEnd {
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
  };

  socket.on("message", (data, isBinary) => {
    if (closedLocally !== undefined) return;
    if (isBinary) {
      closeWith(CLOSE_UNSUPPORTED_DATA, "binary frames are not part of the probe link");
      return;
    }
    let value: unknown;
    try {
      const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : data.toString("utf8");
      value = JSON.parse(text);
    } catch (error) {
      closeWith(CLOSE_INVALID_DATA, `frame is not JSON: ${(error as Error).message}`);
      return;
    }
    if (handlers === undefined) early.push(value);
    else handlers.frame(value);
  });
  socket.on("error", () => {
    // `ws` emits 'close' after every 'error' (e.g. 1009 for a message over maxPayload).
  });
  socket.on("close", (code, reason) => {
    closed =
      closedLocally === undefined
        ? { code, reason: reason.toString("utf8") || wsCloseText(code), local: false }
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

function wsCloseText(code: number): string {
  if (code === 1006) return "connection lost";
  if (code === 1009) return `frame larger than ${LINK_MAX_FRAME_BYTES} bytes`;
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

/**
 * A probe's connector to a gateway over WebSocket: `gateway` is its base URL (`--gateway
 * http://HOST:7039`) or the link URL. Each `connect()` opens a new socket (handshake timeout 10 s).
 * Over `wss`, the gateway's certificate must be one the public CAs (and `NODE_EXTRA_CA_CERTS`)
 * vouch for, or `gatewayCertificate` (PEM text: the setup's `gateway.tls.certificate`).
 */
export function webSocketConnector(gateway: string, gatewayCertificate?: string): LinkConnector {
  const url = gatewayLinkUrl(gateway);
  const trust = trustCertificate(gatewayCertificate);
  return {
    description: url,
    connect() {
      return new Promise<LinkEnd>((resolve, reject) => {
        const socket = new WebSocket(url, {
          maxPayload: LINK_MAX_FRAME_BYTES,
          handshakeTimeout: LINK_HANDSHAKE_TIMEOUT_MS,
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
          failed(new Error(`the gateway answered the link upgrade with HTTP ${response.statusCode}`));
        });
        socket.once("open", () => {
          socket.removeListener("error", failed);
          socket.removeAllListeners("unexpected-response");
          resolve(webSocketEnd(socket, url));
        });
      });
    },
  };
}
