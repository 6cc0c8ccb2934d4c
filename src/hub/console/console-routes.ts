/**
 * Serves the web console (DESIGN 1, hub row) at `/`: the page built by
 * `scripts/build-console.mjs` into dist/console (`npm run build`, which `npm ci` runs through the
 * `prepare` script), its content-hashed assets under `/assets/`, `/console/config.json` and the
 * gateway relay (gateway-relay.ts). The page and assets are open, as the data is not in them; every
 * data request the page makes needs a token when security is on (DESIGN 5.4).
 *
 * Caching: the page is `no-cache` (revalidated by its ETag, so a new build is seen at once); the
 * assets change name with their content and are cached for a year, `immutable`. Every console
 * answer carries a Content-Security-Policy that lets the page load and fetch from the hub only.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import { type GatewayRelayOptions, registerGatewayRelay } from "./gateway-relay.js";

/** Where the build puts the console: dist/console of the package (this file is 3 levels below its root in src/ and dist/). */
export const CONSOLE_DIR = join(import.meta.dirname, "..", "..", "..", "dist", "console");

/**
 * Headers of every console answer: scripts, styles and requests from the hub's own origin only (no
 * CDN, no other host), no framing, no referrer leaving the page, no MIME sniffing.
 */
const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

export interface ConsoleOptions extends GatewayRelayOptions {
  /** `hub.security.enabled`: the page asks for a key or token first. */
  readonly security: boolean;
  /** The built console; default CONSOLE_DIR. */
  readonly dir?: string;
}

function withConsoleHeaders(reply: FastifyReply): FastifyReply {
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) reply.header(name, value);
  return reply;
}

/**
 * Registers `GET /`, `/assets/*` (the files the build wrote, found at registration),
 * `GET /console/config.json` and the gateway relay. Without a build, `/` answers 503 naming the
 * command that builds the console, and the API is unaffected.
 */
export async function registerConsole(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const dir = options.dir ?? CONSOLE_DIR;
  const indexFile = join(dir, "index.html");
  if (existsSync(indexFile)) {
    const page = readFileSync(indexFile);
    const etag = `"${createHash("sha256").update(page).digest("base64url").slice(0, 22)}"`;
    resource(app, "/", {
      GET: async (request, reply) => {
        withConsoleHeaders(reply).header("Cache-Control", "no-cache").header("ETag", etag);
        if (request.headers["if-none-match"] === etag) return reply.code(304).send();
        return reply.type("text/html; charset=utf-8").send(page);
      },
    });
    await app.register(fastifyStatic, {
      root: join(dir, "assets"),
      prefix: "/assets/",
      // Routes for the files present now only: an unknown asset is the API's 404, not a file lookup.
      wildcard: false,
      index: false,
      decorateReply: false,
      maxAge: "365d",
      immutable: true,
      setHeaders: (response) => {
        for (const [name, value] of Object.entries(CONSOLE_HEADERS)) response.setHeader(name, value);
      },
    });
  } else {
    app.log.warn({ dir }, "the web console is not built; `npm run build` builds it");
    resource(app, "/", {
      GET: async () => {
        throw new VigilError("SERVICE_UNAVAILABLE", {
          detail:
            "The web console is not built: run `npm run build` (it writes dist/console); the API works without it.",
        });
      },
    });
  }
  resource(app, "/console/config.json", {
    GET: async (_request, reply) => {
      withConsoleHeaders(reply).header("Cache-Control", "no-store");
      return { security: options.security };
    },
  });
  registerGatewayRelay(app, options);
}
