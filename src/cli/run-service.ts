/**
 * What every long-running command does around its service (DESIGN 1): bound its heap's growth
 * (heap-growth.ts), start it, reload the setup on SIGHUP and when the file changes (an invalid file
 * is logged and the old setup stays), stop cleanly on SIGINT/SIGTERM within the deadline, and exit.
 */
import type { Logger } from "pino";
import type { RunningService } from "../compose/service.js";
import { formatSetupIssues, type SetupLoadOptions } from "../config/load-setup.js";
import type { Setup } from "../config/setup.js";
import { watchSetupFile } from "../config/watch-setup.js";
import { limitHeapGrowth } from "./heap-growth.js";
import { runUntilSignal } from "./signals.js";

export interface RunOptions {
  readonly logger: Logger;
  /** The setup file to watch and the setup it held at start; none for the built-in sample setup. */
  readonly config?: { readonly path: string; readonly setup: Setup; readonly load?: SetupLoadOptions };
  start(): Promise<RunningService>;
}

/** Starts the service, serves until a stop signal, stops, and ends the process with its exit code. */
export async function runService(options: RunOptions): Promise<void> {
  const { logger } = options;
  limitHeapGrowth();
  const service = await options.start();
  const config = options.config;
  const watcher =
    config === undefined
      ? undefined
      : watchSetupFile(config.path, {
          current: config.setup,
          ...(config.load === undefined ? {} : { load: config.load }),
          onChange(setup) {
            logger.info({ file: config.path }, "setup changed; applying it");
            try {
              service.reload(setup);
            } catch (error) {
              logger.error({ err: error }, "applying the changed setup failed; the old one stays");
            }
          },
          onInvalid(error) {
            logger.error(
              { file: config.path, problems: formatSetupIssues(error) },
              "the setup file is invalid; the setup in force stays",
            );
          },
        });
  const stopped = runUntilSignal(logger, {
    reload: () => {
      if (watcher === undefined) logger.info("no setup file to reload (built-in sample setup)");
      else void watcher.reload();
      // Certificates renewed in place keep their paths: read them again whatever the setup says.
      service.reloadCertificates();
    },
    stop: async (deadlineMs) => {
      watcher?.close();
      await service.stop(deadlineMs);
    },
  });
  // Said once a stop signal is handled: whoever waits for this line may stop the process cleanly.
  logger.info({ urls: service.urls }, "vigil is up");
  await stopped;
  // Everything is stopped; a handle some library left open must not keep the process alive.
  process.exit(process.exitCode ?? 0);
}
