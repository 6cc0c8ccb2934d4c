/**
 * When fkm samplers sample (DESIGN 3.4: every `sampleInterval`), behind an interface so tests run
 * samples on demand with {@link ManualScheduler} instead of waiting for wall-clock time (house
 * rule: tests never assert durations). The scheduler is also the streams' clock: a message's
 * receive time and an fkm row's `lastMatchTime` come from `now()`.
 */

/** A clock and a periodic timer. */
export interface SampleScheduler {
  /** The current time (epoch ms). */
  now(): number;
  /** Runs `task` every `intervalMs` until the returned function is called. */
  every(intervalMs: number, task: () => void): () => void;
}

/** Longest delay Node's timers take; a longer one would fire after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1; // ms (about 24.8 days)

/**
 * The real scheduler: `Date.now()` and `setInterval`, the interval clamped to 1 ms … ~24.8 days
 * (Node's timer range). Its timers do not keep the process alive: the HTTP server does.
 */
export const timerScheduler: SampleScheduler = {
  now: () => Date.now(),
  every(intervalMs, task) {
    const timer = setInterval(task, Math.min(MAX_TIMER_MS, Math.max(1, intervalMs)));
    timer.unref();
    return () => clearInterval(timer);
  },
};

interface ManualTask {
  readonly intervalMs: number;
  next: number;
  readonly task: () => void;
}

/**
 * A scheduler whose time moves only when a test says so: `advance(ms)` runs every task that falls
 * due meanwhile, in time order; `runAll()` runs every task once, now. Starts at `start` (epoch ms).
 */
export class ManualScheduler implements SampleScheduler {
  private time: number;
  private readonly tasks = new Set<ManualTask>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  every(intervalMs: number, task: () => void): () => void {
    const entry: ManualTask = { intervalMs: Math.max(1, intervalMs), next: this.time + intervalMs, task };
    this.tasks.add(entry);
    return () => this.tasks.delete(entry);
  }

  /** Tasks scheduled now. */
  get size(): number {
    return this.tasks.size;
  }

  /** Moves time on by `ms`, running each task as often as it falls due; returns the runs. */
  advance(ms: number): number {
    const until = this.time + ms;
    let runs = 0;
    for (;;) {
      let due: ManualTask | undefined;
      for (const task of this.tasks)
        if (task.next <= until && (due === undefined || task.next < due.next)) due = task;
      if (due === undefined) break;
      this.time = due.next;
      due.next += due.intervalMs;
      due.task();
      runs += 1;
    }
    this.time = until;
    return runs;
  }

  /** Runs every task once at the current time (each keeps its schedule); returns the runs. */
  runAll(): number {
    const tasks = [...this.tasks];
    for (const task of tasks) task.task();
    return tasks.length;
  }
}
