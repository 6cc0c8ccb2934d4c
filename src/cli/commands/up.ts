/** `vigil up [--config FILE] [--data-dir DIR] [--demo]` (DESIGN 1). */
import type { Command } from "commander";
import { loadSetupFile } from "../../config/load-setup.js";
import { sampleSetup } from "../../config/sample-setup.js";
import { startAllInOne } from "../all-in-one.js";
import { createLogger } from "../logger.js";
import { runUntilSignal } from "../signals.js";

interface UpOptions {
  config?: string;
  dataDir: string;
  demo: boolean;
  logLevel: string;
}

export function registerUp(program: Command): void {
  program
    .command("up")
    .description("probe + gateway + hub in one process, with the embedded store and in-process bus")
    .option("--config <file>", "setup file (YAML); the built-in sample setup without it")
    .option("--data-dir <dir>", "where the embedded store keeps its files", "./vigil-data")
    .option("--demo", "push demo data through the probe's HTTP API", false)
    .option("--log-level <level>", "pino log level", "info")
    .action(async (options: UpOptions) => {
      const logger = createLogger(options.logLevel);
      const setup = options.config === undefined ? sampleSetup() : loadSetupFile(options.config);
      const system = await startAllInOne({ setup, dataDir: options.dataDir, demo: options.demo, logger });
      logger.info({ urls: system.urls }, "vigil is up");
      await runUntilSignal(logger, () => system.stop());
    });
}
