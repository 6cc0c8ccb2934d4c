/**
 * What the probe-link attack tests share: a real gateway on a real socket (port 0) whose setup
 * names four probes — p1 and p2 with secrets, p3 without one, p4 with one but never started — a
 * log that the tests read, and a rogue client: a `ws` WebSocket that presents whatever it likes
 * and sends whatever frames it likes. Every wait is for an event (open, a frame, a close), never a
 * fixed time.
 */
import assert from "node:assert/strict";
import { pino } from "pino";
import { WebSocket } from "ws";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildGateway, type Gateway, type GatewayLinkTuning } from "../../src/gateway/app.js";
import { LINK_PROTOCOL_VERSION } from "../../src/link/protocol.js";
import { gatewayLinkUrl } from "../../src/link/websocket.js";
import { FakePublisher, P1_SECRET, P2_SECRET } from "../link/helpers.js";

export { P1_SECRET, P2_SECRET };
/** The secret of p4, a probe of the setup that is never started. */
export const P4_SECRET = "p4-link-secret-for-tests-5555555555";

export const SETUP_TEXT = `
gateway: { name: GW-SEC, port: 0 }
probes:
  - { name: p1, linkSecret: ${P1_SECRET}, restApiHttpPort: 0, restApiHttpsPort: 0, managedEntities: [{ name: me1, samplers: [{ name: s1, plugin: rest-api }] }] }
  - { name: p2, linkSecret: ${P2_SECRET}, restApiHttpPort: 0, restApiHttpsPort: 0 }
  - { name: p3, restApiHttpPort: 0, restApiHttpsPort: 0 }
  - { name: p4, linkSecret: ${P4_SECRET}, restApiHttpPort: 0, restApiHttpsPort: 0, managedEntities: [{ name: me4, samplers: [{ name: s4, plugin: rest-api }] }] }
`;

export const PARAMETERS = { osType: "Linux", HostName: "evil-host", Port: "1", OS: "Linux", Version: "0" };

export function hello(probe: string): Record<string, unknown> {
  return {
    type: "hello",
    version: LINK_PROTOCOL_VERSION,
    probe,
    parameters: PARAMETERS,
    coalesced: 0,
    resumed: false,
  };
}

export interface TestGateway {
  readonly gateway: Gateway;
  readonly publisher: FakePublisher;
  readonly url: string;
  /** Every log line the gateway wrote, parsed. */
  readonly logs: Record<string, unknown>[];
  /** The raw log text, to look for secrets in. */
  logText(): string;
  stop(): Promise<void>;
}

/** A started gateway for `setupText` (default {@link SETUP_TEXT}). */
export async function startGateway(
  options: { setupText?: string; linkTuning?: GatewayLinkTuning; port?: number } = {},
): Promise<TestGateway> {
  const lines: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(line) });
  const publisher = new FakePublisher();
  const gateway = buildGateway({
    setup: parseSetup(options.setupText ?? SETUP_TEXT),
    publisher,
    logger,
    ...(options.linkTuning === undefined ? {} : { linkTuning: options.linkTuning }),
  });
  const url = await gateway.start(options.port ?? 0, "127.0.0.1");
  return {
    gateway,
    publisher,
    url,
    get logs() {
      return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    logText: () => lines.join(""),
    stop: () => gateway.stop(1000),
  };
}

/** What an upgrade that was refused got: its status, headers and body text. */
export interface Refused {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** A rogue link: the socket, every frame it received, and how it closed. */
export interface Rogue {
  readonly socket: WebSocket;
  readonly frames: Record<string, unknown>[];
  readonly closed: Promise<{ code: number; reason: string }>;
  send(frame: unknown): void;
  /** Resolves with the first frame of `type` received. */
  frame(type: string): Promise<Record<string, unknown>>;
}

/**
 * Opens a link presenting `secret` (none when undefined, or a whole `authorization` header).
 * Resolves with the open link, or with the refused upgrade's answer.
 */
export function rogue(
  url: string,
  auth: { secret?: string; authorization?: string } = {},
): Promise<{ open: Rogue } | { refused: Refused }> {
  const authorization =
    auth.authorization ?? (auth.secret === undefined ? undefined : `Bearer ${auth.secret}`);
  const socket = new WebSocket(gatewayLinkUrl(url), {
    ...(authorization === undefined ? {} : { headers: { authorization } }),
  });
  return new Promise((resolve, reject) => {
    socket.once("unexpected-response", (_request, response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () =>
        resolve({ refused: { status: response.statusCode ?? 0, headers: response.headers, body } }),
      );
    });
    socket.once("error", reject);
    socket.once("open", () => {
      socket.removeListener("error", reject);
      socket.on("error", () => {});
      const frames: Record<string, unknown>[] = [];
      const waiters: { type: string; resolve: (f: Record<string, unknown>) => void }[] = [];
      socket.on("message", (data) => {
        const frame = JSON.parse(String(data)) as Record<string, unknown>;
        frames.push(frame);
        for (const waiter of waiters.filter((w) => w.type === frame.type)) waiter.resolve(frame);
      });
      const closed = new Promise<{ code: number; reason: string }>((done) =>
        socket.once("close", (code, reason) => done({ code, reason: reason.toString() })),
      );
      resolve({
        open: {
          socket,
          frames,
          closed,
          send: (frame) => socket.send(JSON.stringify(frame)),
          frame: (type) => {
            const seen = frames.find((f) => f.type === type);
            if (seen !== undefined) return Promise.resolve(seen);
            return new Promise((done) => waiters.push({ type, resolve: done }));
          },
        },
      });
    });
  });
}

/** The open link, failing the test if the upgrade was refused. */
export async function opened(url: string, secret?: string): Promise<Rogue> {
  const result = await rogue(url, secret === undefined ? {} : { secret });
  assert.ok("open" in result, `the upgrade was refused: ${JSON.stringify(result)}`);
  return result.open;
}

/** The refused upgrade, failing the test if it was accepted. */
export async function refused(
  url: string,
  auth: { secret?: string; authorization?: string } = {},
): Promise<Refused> {
  const result = await rogue(url, auth);
  if ("open" in result) {
    result.open.socket.terminate();
    assert.fail("the upgrade was accepted");
  }
  return result.refused;
}

/** The value of `name{reason="…"}` in the gateway's /metrics. */
export async function refusalCount(url: string, reason: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const match = new RegExp(`^vigil_gateway_link_refusals_total\\{reason="${reason}"\\} (\\d+)$`, "m").exec(
    text,
  );
  return match === null ? Number.NaN : Number(match[1]);
}
