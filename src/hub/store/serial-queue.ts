/**
 * Runs tasks one after another. The DuckDB node binding must not run two statements on one
 * connection at once, and a connection holds at most one transaction, so each connection (and each
 * open transaction) has its own queue.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  /** Whether a task is running or waiting. */
  get busy(): boolean {
    return this.pending > 0;
  }

  /** Runs `task` after every task queued before it; a failed task does not stop the ones behind it. */
  run<T>(task: () => Promise<T>): Promise<T> {
    this.pending += 1;
    const result = this.tail.then(task);
    const settled = () => {
      this.pending -= 1;
    };
    this.tail = result.then(settled, settled);
    return result;
  }

  /** Resolves once every task queued so far has settled; never rejects. */
  idle(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}
