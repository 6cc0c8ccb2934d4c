/**
 * Retention (DESIGN 2 `hub.retentionDays`): with a maximum age set, the hub removes older
 * samples and events at start and then every RETENTION_INTERVAL_MS, through `Store.deleteBefore`
 * (its own connection and short statements: queries and ingest go on). 0, the default, keeps
 * everything. A failed run is logged and tried again at the next interval; runs never overlap.
 */
import type { Logger } from "pino";
import { RETENTION_INTERVAL_MS } from "../config/defaults.js";
import { asEpochMs } from "../ids.js";
import type { Store } from "./store/store.js";

const DAY_MS = 86_400_000;

export interface RetentionStats {
  readonly runs: number;
  readonly samplesRemoved: number;
  readonly eventsRemoved: number;
  readonly lastError: string | undefined;
}

export class Retention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stats: RetentionStats = { runs: 0, samplesRemoved: 0, eventsRemoved: 0, lastError: undefined };

  constructor(
    private readonly store: Store,
    private readonly days: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly intervalMs = RETENTION_INTERVAL_MS,
  ) {}

  /** Starts the background runs (the first at once); nothing when retention is off. */
  start(): void {
    if (this.days <= 0 || this.timer !== undefined) return;
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the runs and waits for the one under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  status(): RetentionStats & { readonly days: number } {
    return { days: this.days, ...this.stats };
  }

  /** One run: removes what is older than `days` before now. Resolves when it is done (never rejects). */
  runOnce(): Promise<void> {
    if (this.running !== undefined) return this.running;
    const cutoff = asEpochMs(this.now() - this.days * DAY_MS);
    this.running = this.store
      .deleteBefore(cutoff)
      .then(
        (removed) => {
          this.stats = {
            runs: this.stats.runs + 1,
            samplesRemoved: this.stats.samplesRemoved + removed.samples,
            eventsRemoved: this.stats.eventsRemoved + removed.events,
            lastError: undefined,
          };
          if (removed.samples > 0 || removed.events > 0) {
            this.logger.info(
              { cutoff: new Date(cutoff).toISOString(), ...removed },
              "retention removed old data",
            );
          }
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          this.stats = { ...this.stats, runs: this.stats.runs + 1, lastError: message };
          this.logger.warn({ err: error }, "retention run failed; trying again at the next interval");
        },
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
