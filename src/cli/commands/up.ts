/**
 * `vigil up [--config FILE] [--data-dir DIR] [--demo] [--host HOST] [-secure -ssl-certificate P
 * -ssl-certificate-key P [-ssl-certificate-chain P]]` (DESIGN 1): the secure-mode flags apply to every
 * probe of the setup (src/probe/tls/secure-flags.ts).
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import { startSystem } from "../../compose/system.js";
import { DEFAULT_DATA_DIR } from "../../config/defaults.js";
import { loadSetupFile } from "../../config/load-setup.js";
import { sampleSetup } from "../../config/sample-setup.js";
import {
  addSecureModeOptions,
  type SecureFlagValues,
  secureModeFromFlags,
} from "../../probe/tls/secure-flags.js";
import { createLogger, type LogFormat, logFormatOption } from "../logger.js";
import { runService } from "../run-service.js";
import { LOOPBACK } from "./hosts.js";

interface UpOptions extends SecureFlagValues {
  config?: string;
  dataDir: string;
  demo: boolean;
  host: string;
  logLevel: string;
  logFormat: LogFormat;
}

export function registerUp(program: Command): void {
  addSecureModeOptions(program.command("up"))
    .description("probe + gateway + hub in one process, with the embedded store and in-process bus")
    .option("--config <file>", "setup file (YAML); the built-in sample setup without it")
    .option("--data-dir <dir>", "where the embedded store keeps its files", DEFAULT_DATA_DIR)
    .option("--demo", "push demo data through the probe's HTTP API", false)
    .option("--host <host>", "address of the gateway and hub (probes use their setup hostname)", LOOPBACK)
    .option("--log-level <level>", "pino log level", "info")
    .addOption(logFormatOption())
    .action(async (options: UpOptions) => {
      const secure = secureModeFromFlags(options);
      const logger = createLogger(options.logLevel, options.logFormat);
      const setup = options.config === undefined ? sampleSetup() : loadSetupFile(options.config);
      await runService({
        logger,
        ...(options.config === undefined ? {} : { config: { path: options.config, setup } }),
        start: () =>
          startSystem({
            setup,
            dataDir: resolve(options.dataDir),
            demo: options.demo,
            host: options.host,
            ...(secure === undefined ? {} : { secure }),
            logger,
          }),
      });
    });
}
