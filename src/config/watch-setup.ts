/**
 * Configuration reload (DESIGN 1): a long-running command reloads its setup on SIGHUP and when the
 * file changes, also when an editor replaces it by a rename. A setup that fails validation is
 * reported and ignored: the old one stays in force.
 *
 * The watch is on the file's folder, not on the file: a watch on the file follows its inode, so
 * after "write a temporary file, rename it over the setup" (what most editors do on save) it would
 * watch the old, unlinked file and never fire again. Events are filtered by the file's name and
 * debounced, so one save (often several events) is one reload.
 *
 * Not handled: a setup path that is a symbolic link into another folder (Kubernetes ConfigMap
 * volumes swap a `..data` link): the link's own folder is watched, so such changes arrive by
 * SIGHUP only.
 */
import { type FSWatcher, watch } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { SETUP_RELOAD_DEBOUNCE_MS } from "./defaults.js";
import { loadSetupFile, SetupError, type SetupLoadOptions } from "./load-setup.js";
import type { Setup } from "./setup.js";

export interface SetupWatchOptions {
  /** The setup in force when the watch starts (what `loadSetupFile(path)` returned at start-up). */
  readonly current: Setup;
  /** A new setup parsed and different from the one in force: apply it. Must not throw. */
  onChange(setup: Setup): void;
  /**
   * The file could not be read or is invalid (every issue listed), or the folder can no longer be
   * watched: log it; the setup in force stays. Must not throw.
   */
  onInvalid(error: SetupError): void;
  /** Quiet time after the last event before reading the file; default SETUP_RELOAD_DEBOUNCE_MS (100 ms). */
  readonly debounceMs?: number;
  /** How the file is loaded, as at start-up (whose link secret files are read, whether hub-only is accepted). */
  readonly load?: SetupLoadOptions;
}

/** What one reload found: a new setup, the same one, an unusable file, or a closed watcher. */
export type ReloadOutcome = "changed" | "unchanged" | "invalid" | "closed";

export interface SetupWatcher {
  /**
   * Reads and parses the file now (SIGHUP), cancelling a pending debounced read; calls `onChange`
   * or `onInvalid` as a change of the file would, and says which happened.
   */
  reload(): ReloadOutcome;
  /** Stops watching; later events and `reload()` calls do nothing. Idempotent. */
  close(): void;
}

/**
 * Watches the setup file at `path` (DESIGN 1): on a change to the file, after `debounceMs` (default
 * SETUP_RELOAD_DEBOUNCE_MS, 100 ms) of quiet, it re-reads and parses it with `loadSetupFile` and
 * calls `onChange` with the new frozen setup only when it differs (deep equality) from the last good
 * one, starting from `current`; an unusable file calls `onInvalid` with the `SetupError` and keeps
 * the last good setup as the reference. The watch does not keep the process alive. Throws when the
 * file's folder cannot be watched at start (it does not exist).
 */
export function watchSetupFile(path: string, options: SetupWatchOptions): SetupWatcher {
  const debounceMs = options.debounceMs ?? SETUP_RELOAD_DEBOUNCE_MS;
  const load: SetupLoadOptions = options.load ?? {};
  const name = basename(path);
  let lastGood = options.current;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const cancelPending = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };

  const reload = (): ReloadOutcome => {
    if (closed) return "closed";
    cancelPending();
    let setup: Setup;
    try {
      setup = loadSetupFile(path, load);
    } catch (error) {
      options.onInvalid(asSetupError(path, error));
      return "invalid";
    }
    if (isDeepStrictEqual(setup, lastGood)) return "unchanged";
    lastGood = setup;
    options.onChange(setup);
    return "changed";
  };

  // `persistent: false`: a setup watch alone never keeps a process from exiting.
  const watcher: FSWatcher = watch(dirname(resolve(path)), { persistent: false }, (_event, filename) => {
    // Some platforms do not say which file changed (filename null): read it then, to be safe.
    if (closed || (filename !== null && filename !== name)) return;
    cancelPending();
    timer = setTimeout(reload, debounceMs);
    timer.unref();
  });
  watcher.on("error", (cause) => {
    // The folder was removed or became unreadable: no more events will come. SIGHUP still works.
    watcher.close();
    options.onInvalid(
      new SetupError(
        [
          {
            path,
            message: `the setup file's folder can no longer be watched (${cause.message}); changes to the file are not picked up, send SIGHUP to reload`,
          },
        ],
        { cause },
      ),
    );
  });

  return {
    reload,
    close() {
      if (closed) return;
      closed = true;
      cancelPending();
      watcher.close();
    },
  };
}

/** `loadSetupFile` throws only `SetupError`s; anything else (a bug) is wrapped, never lost. */
function asSetupError(path: string, error: unknown): SetupError {
  if (error instanceof SetupError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new SetupError([{ path, message: `cannot load the setup file (${reason})` }], { cause: error });
}
