/**
 * What every store's transaction shares (`Store.transaction`): calls run one after another on the
 * transaction's own queue (a connection runs one statement at a time), a call after the end is
 * refused, and the first failure that is not a clean `StoreDataError` marks the transaction, which
 * is then rolled back, never committed. A call whose turn comes after that failure does not run:
 * it fails with the same error. So nothing runs in a transaction its database has given up (both
 * databases refuse further statements there anyway), no work is done that the rollback would undo,
 * and a statement queued behind a BEGIN that failed never runs outside a transaction.
 */
import { SerialQueue } from "./serial-queue.js";
import { StoreDataError } from "./store.js";

export abstract class QueuedTransaction {
  /** The first statement that failed: such a transaction is rolled back, never committed. */
  failure: { error: unknown } | undefined;
  private readonly queue = new SerialQueue();
  private finished = false;

  /** Refuses further calls and waits for the calls already made. */
  async finish(): Promise<void> {
    this.finished = true;
    await this.queue.idle();
  }

  /**
   * Runs `task` after the calls before it, unless one of them marked the transaction (then fails
   * with that error); a failure other than a StoreDataError marks the transaction.
   */
  protected run<T>(task: () => Promise<T>): Promise<T> {
    if (this.finished) return Promise.reject(new Error("the store transaction has already ended"));
    return this.queue.run(async () => {
      if (this.failure !== undefined) throw this.failure.error;
      try {
        return await task();
      } catch (error) {
        // A StoreDataError from the checks left the transaction clean; anything else did not.
        if (!(error instanceof StoreDataError) && this.failure === undefined) this.failure = { error };
        throw error;
      }
    });
  }
}
