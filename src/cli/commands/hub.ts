/** `vigil hub --config FILE [--store URL] [--bus URL] [--data-dir DIR] [--host HOST] [--gateway URL]` (DESIGN 1). */
import { resolve } from "node:path";
import type { Command } from "commander";
import { startHubService } from "../../compose/hub-service.js";
import { DEFAULT_DATA_DIR } from "../../config/defaults.js";
import { loadSetupFile } from "../../config/load-setup.js";
import { createLogger, type LogFormat, logFormatOption } from "../logger.js";
import { runService } from "../run-service.js";
import { LOOPBACK } from "./hosts.js";

interface HubCommandOptions {
  config: string;
  store?: string;
  bus?: string;
  dataDir: string;
  host: string;
  port?: string;
  gateway?: string;
  logLevel: string;
  logFormat: LogFormat;
}

export function registerHub(program: Command): void {
  program
    .command("hub")
    .description("the hub: stores published messages and serves the query API")
    .requiredOption(
      "--config <file>",
      "setup file (YAML): its hub section (and sampler data schemas); a setup of only hub: will do",
    )
    .option("--store <url>", "duckdb:PATH (default: vigil.duckdb in the data dir) or postgres://…")
    .option(
      "--bus <url>",
      "consume from NATS JetStream at nats://HOST:PORT[?stream=NAME&subjectPrefix=PREFIX] (defaults: the setup's nats target, else VIGIL, vigil)",
    )
    .option("--data-dir <dir>", "signing keys, dead-letter file, embedded store", DEFAULT_DATA_DIR)
    .option("--host <host>", "address to listen on (0.0.0.0: every interface)", LOOPBACK)
    .option("--port <port>", "port to listen on (default: hub.port of the setup)")
    .option(
      "--gateway <url>",
      "gateway the web console's snooze and assign actions go to (default http://127.0.0.1:<gateway.port>)",
    )
    .option("--log-level <level>", "pino log level", "info")
    .addOption(logFormatOption())
    .action(async (options: HubCommandOptions) => {
      const logger = createLogger(options.logLevel, options.logFormat);
      // A hub has no use for the probes' link secrets: their files need not be on its host. Its
      // setup may hold only `hub:` (DESIGN 1): it stores and answers what any gateway publishes.
      const load = { linkSecretFiles: "none", hubOnly: true } as const;
      const setup = loadSetupFile(options.config, load);
      const dataDir = resolve(options.dataDir);
      await runService({
        logger,
        config: { path: options.config, setup, load },
        start: () =>
          startHubService({
            setup,
            storeUrl: options.store ?? "",
            ...(options.bus === undefined ? {} : { busUrl: options.bus }),
            dataDir,
            host: options.host,
            ...(options.port === undefined ? {} : { port: parsePort(options.port) }),
            ...(options.gateway === undefined ? {} : { gatewayUrl: gatewayUrlOption(options.gateway) }),
            logger,
          }),
      });
    });
}

/** A TCP port from the command line; a clear error otherwise. */
export function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d{1,5}$/.test(text) || port > 65535) throw new Error(`--port must be 0–65535, not '${text}'`);
  return port;
}

/** `--gateway`: an http(s) URL, checked at start so a typo fails with its fix. */
export function gatewayUrlOption(text: string): () => string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`--gateway must be a URL such as http://gateway-host:7039, not '${text}'`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error(`--gateway must be an http:// or https:// URL, not '${text}'`);
  const base = url.origin;
  return () => base;
}
