/**
 * Progress of a replay (DESIGN 1 "progress bar"): on a terminal, one line redrawn in place with a
 * bar, the share done, lines per second and the time left; elsewhere (a log, a pipe), a plain line
 * now and then. Written here rather than taken from `cli-progress`: it needs one bar, and the clock
 * is passed in, so tests drive it with counts and a fake clock, never by waiting.
 */

export interface ProgressOptions {
  /** Bytes to read in this run (from the resume offset to the end of the file). */
  readonly totalBytes: number;
  /** Draw a bar redrawn in place (a terminal) or print plain lines. */
  readonly tty: boolean;
  readonly write: (text: string) => void;
  /** Milliseconds; default `Date.now`. */
  readonly now?: () => number;
  /** Bar width in characters; default 30. */
  readonly barWidth?: number;
  /**
   * Terminal width: the line is kept shorter (a wrapped line cannot be redrawn with `\r`) by
   * narrowing the bar, then leaving it out and cutting the text. Default: no limit.
   */
  readonly columns?: number;
}

const TTY_REDRAW_MS = 100; // at most ten redraws a second
const PLAIN_EVERY_MS = 5_000; // a plain line every 5 s
const MIN_BAR_WIDTH = 10; // characters; a narrower bar says too little to be worth the room

/** Seconds as `1h02m03s`, `2m05s`, `7s`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, "0")}m${String(rest).padStart(2, "0")}s`;
  if (m > 0) return `${m}m${String(rest).padStart(2, "0")}s`;
  return `${rest}s`;
}

/** Bytes as `512 B`, `12.3 KiB`, `4.0 MiB`, `1.2 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Draws the progress of one replay run. */
export class Progress {
  private readonly now: () => number;
  private readonly started: number;
  private lastDrawn = Number.NEGATIVE_INFINITY;
  private bytes = 0;
  private lines = 0;

  constructor(private readonly options: ProgressOptions) {
    this.now = options.now ?? Date.now;
    this.started = this.now();
  }

  /** Records that `bytes` more of the file and `lines` more lines are done; redraws when it is time. */
  advance(bytes: number, lines: number): void {
    this.bytes += bytes;
    this.lines += lines;
    const at = this.now();
    if (at - this.lastDrawn < (this.options.tty ? TTY_REDRAW_MS : PLAIN_EVERY_MS)) return;
    this.lastDrawn = at;
    this.draw(at);
  }

  /** Draws the final state and ends the terminal line. */
  finish(): void {
    this.draw(this.now());
    if (this.options.tty) this.options.write("\n");
  }

  /** The text of the current state (no bar, no control characters), e.g. for a plain line. */
  status(at = this.now()): string {
    const { totalBytes } = this.options;
    const seconds = (at - this.started) / 1000;
    const rate = seconds > 0 ? this.lines / seconds : 0;
    const byteRate = seconds > 0 ? this.bytes / seconds : 0;
    const left = Math.max(0, totalBytes - this.bytes);
    const eta = left === 0 ? "0s" : byteRate > 0 ? formatDuration(left / byteRate) : "?";
    return (
      `${this.percent()}% ${formatBytes(this.bytes)}/${formatBytes(totalBytes)}, ${this.lines} lines, ` +
      `${Math.round(rate)} lines/s, ETA ${eta}`
    );
  }

  private percent(): number {
    const { totalBytes } = this.options;
    return totalBytes === 0 ? 100 : Math.floor((Math.min(this.bytes, totalBytes) / totalBytes) * 100);
  }

  private draw(at: number): void {
    if (!this.options.tty) {
      this.options.write(`replay: ${this.status(at)}\n`);
      return;
    }
    const status = this.status(at);
    const room = (this.options.columns ?? Number.POSITIVE_INFINITY) - 1; // the last column would wrap
    const width = Math.min(this.options.barWidth ?? 30, room - status.length - 1);
    let line = status.slice(0, Math.max(0, room));
    if (width >= MIN_BAR_WIDTH) {
      const filled = Math.floor((this.percent() / 100) * width);
      line = `${"█".repeat(filled)}${"░".repeat(width - filled)} ${status}`;
    }
    // \r returns to the line start; ESC[K clears what a longer previous line left behind.
    this.options.write(`\r${line}\u001b[K`);
  }
}
