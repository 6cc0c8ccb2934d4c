/**
 * V8's full garbage collection, for the few places that know of memory V8 cannot see: native
 * memory that is given back only when V8 collects the small objects holding it
 * (src/hub/store/duckdb/duckdb-native-memory.ts), and a parse worker's heap once it has no body to
 * read (src/hub/ingest/parse-worker.ts).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Attempts at making a context with `gc` (see {@link fullCollection}). */
const FLAG_ATTEMPTS = 3;

/**
 * V8's full collection of this thread's heap, or undefined where this Node cannot give it. `gc` is
 * a global only when the process started with `--expose-gc`; otherwise the flag is set for as long
 * as it takes a fresh context to make its own `gc` (which collects the whole heap of the thread, not
 * only that context's), and cleared again, so the process's own globals stay as they are.
 */
export function fullCollection(): (() => void) | undefined {
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === "function") return () => own();
  // V8's flags are the process's: a worker thread clearing the flag between this thread's setting it
  // and its context being made leaves that context without `gc`, so this is tried again.
  for (let attempt = 0; attempt < FLAG_ATTEMPTS; attempt++) {
    try {
      setFlagsFromString("--expose-gc");
      const gc = runInNewContext("gc") as unknown;
      if (typeof gc === "function") return () => gc();
    } catch {
      return undefined;
    } finally {
      setFlagsFromString("--no-expose-gc");
    }
  }
  return undefined;
}

/**
 * Runs `collect` once `idleMs` have passed since the last `touch()`, and not again until touched
 * again: for a thread that holds its garbage while it waits for work. `stop()` cancels a pending run.
 */
export function idleCollection(collect: () => void, idleMs: number): { touch(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  return {
    touch(): void {
      stop();
      timer = setTimeout(() => {
        timer = undefined;
        collect();
      }, idleMs);
      // Waiting to collect never keeps the thread alive.
      timer.unref();
    },
    stop,
  };
}
