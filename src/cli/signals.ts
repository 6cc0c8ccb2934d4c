/**
 * Clean stop on SIGINT/SIGTERM (DESIGN 1): finish in-flight requests, carry everything accepted
 * through to the store, exit 0. A second signal during the stop exits at once with 130.
 */
import type { Logger } from "pino";

/** Waits for SIGINT or SIGTERM, runs `stop`, and sets the exit code. */
export function runUntilSignal(logger: Logger, stop: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, "second signal: exiting without a clean stop");
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal }, "stopping");
      stop()
        .then(() => {
          process.exitCode = 0;
        })
        .catch((error: unknown) => {
          logger.error({ err: error }, "stop failed");
          process.exitCode = 1;
        })
        .finally(() => {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          resolve();
        });
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
