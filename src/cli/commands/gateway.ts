/**
 * `vigil gateway --config FILE [--data-dir DIR] [--host HOST] [--hub URL]` (DESIGN 1). The gateway
 * listens on the loopback address unless `--host` says otherwise (`--host 0.0.0.0` for every
 * interface, so that probes on other hosts can link).
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import { startGatewayService } from "../../compose/gateway-service.js";
import { DEFAULT_DATA_DIR } from "../../config/defaults.js";
import { loadSetupFile } from "../../config/load-setup.js";
import { createLogger, type LogFormat, logFormatOption } from "../logger.js";
import { runService } from "../run-service.js";
import { LOOPBACK } from "./hosts.js";
import { parsePort } from "./hub.js";

interface GatewayCommandOptions {
  config: string;
  dataDir: string;
  host: string;
  port?: string;
  hub?: string;
  logLevel: string;
  logFormat: LogFormat;
}

export function registerGateway(program: Command): void {
  program
    .command("gateway")
    .description("the gateway: takes probe links, publishes public-v2 messages to its targets")
    .requiredOption("--config <file>", "setup file (YAML); the gateway sends each probe its part")
    .option(
      "--data-dir <dir>",
      "folder for relative publish file paths and the gateway state (gateway-state.json, gateway-severities.json)",
      DEFAULT_DATA_DIR,
    )
    .option("--host <host>", "address to listen on (0.0.0.0: every interface)", LOOPBACK)
    .option("--port <port>", "port to listen on (default: gateway.port of the setup)")
    .option(
      "--hub <url>",
      "hub whose tokens the command API and tap accept (default http://127.0.0.1:<hub.port>)",
    )
    .option("--log-level <level>", "pino log level", "info")
    .addOption(logFormatOption())
    .action(async (options: GatewayCommandOptions) => {
      const logger = createLogger(options.logLevel, options.logFormat);
      const setup = loadSetupFile(options.config);
      await runService({
        logger,
        config: { path: options.config, setup },
        start: () =>
          startGatewayService({
            setup,
            dataDir: resolve(options.dataDir),
            host: options.host,
            ...(options.port === undefined ? {} : { port: parsePort(options.port) }),
            ...(options.hub === undefined ? {} : { hubUrl: options.hub }),
            logger,
          }),
      });
    });
}
