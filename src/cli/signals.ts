/**
 * Process signals of every long-running command (DESIGN 1):
 * - SIGINT/SIGTERM: clean stop within STOP_DEADLINE_MS (in-flight requests finish, everything
 *   accepted is carried to the store); exit 0. If the stop has not finished by the deadline (plus a
 *   second of grace) the process exits 1 with a log line rather than hang. A second signal during
 *   the stop exits at once with 130.
 * - SIGHUP: reload the configuration; the process keeps running (Node's default would end it).
 */
import type { Logger } from "pino";
import { STOP_DEADLINE_MS } from "../config/defaults.js";

/** Grace after the stop deadline before the process is ended without a clean stop. */
const HARD_EXIT_GRACE_MS = 1_000; // ms

export interface SignalHandlers {
  /** Stops everything; `deadlineMs` is what the stop may take. */
  stop(deadlineMs: number): Promise<void>;
  /** Reloads the configuration (SIGHUP). */
  reload?(): void;
}

/** Waits for SIGINT or SIGTERM, runs `stop`, and sets the exit code; SIGHUP calls `reload`. */
export function runUntilSignal(logger: Logger, handlers: SignalHandlers): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const onHangup = () => {
      logger.info({ signal: "SIGHUP" }, "reloading the configuration");
      handlers.reload?.();
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, "second signal: exiting without a clean stop");
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal, deadlineMs: STOP_DEADLINE_MS }, "stopping");
      const hard = setTimeout(() => {
        logger.error({ deadlineMs: STOP_DEADLINE_MS }, "the stop did not finish in time; exiting");
        process.exit(1);
      }, STOP_DEADLINE_MS + HARD_EXIT_GRACE_MS);
      hard.unref();
      handlers
        .stop(STOP_DEADLINE_MS)
        .then(() => {
          logger.info("stopped");
          process.exitCode = 0;
        })
        .catch((error: unknown) => {
          logger.error({ err: error }, "stop failed");
          process.exitCode = 1;
        })
        .finally(() => {
          clearTimeout(hard);
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          process.off("SIGHUP", onHangup);
          resolve();
        });
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    process.on("SIGHUP", onHangup);
  });
}
