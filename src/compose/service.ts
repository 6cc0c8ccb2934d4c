/**
 * What the composition module hands the CLI for each running part: its URLs, a stop with a
 * deadline, and a reload that applies a new setup (DESIGN 1: SIGHUP and file changes).
 */
import type { Setup } from "../config/setup.js";

export interface RunningService {
  /** Bound URLs by name (`hub`, `gateway`, `probe:<name>`), as logged in `listening` lines. */
  readonly urls: Readonly<Record<string, string>>;
  /** Applies a changed setup; what cannot change without a restart is logged as such. */
  reload(setup: Setup): void;
  /**
   * Reads again the certificate files its setup names and serves the new ones (SIGHUP, after the
   * setup itself was reloaded); a pair that cannot be used is logged and the old one stays.
   */
  reloadCertificates(): void;
  /** Stops cleanly: everything acknowledged is committed, within `deadlineMs`. */
  stop(deadlineMs: number): Promise<void>;
}

/** Runs `stops` in order, each with what is left of one shared deadline. */
export async function stopInOrder(
  stops: readonly ((deadlineMs: number) => Promise<void>)[],
  deadlineMs: number,
): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (const stop of stops) await stop(Math.max(0, until - Date.now()));
}
