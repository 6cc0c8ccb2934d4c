/**
 * The gateway's state files (DESIGN 4.2 "Snooze and assignment state survives a gateway restart"):
 * snoozes and assignments in `<data dir>/gateway-state.json`, the last published severities in
 * `<data dir>/gateway-severities.json`.
 *
 * Each is replaced atomically: the new content goes to a temporary file beside it, is flushed to
 * disk (fsync), and is renamed over the old one, and the folder is flushed so the rename holds; a
 * `kill -9` or a power cut leaves the old file or the new one, never half of one. Commands write it
 * before they are answered; severity changes are written at most every STATE_SAVE_INTERVAL_MS.
 * A file that cannot be read is logged and set aside (`.unreadable`), and the gateway starts empty.
 */
import { mkdirSync, renameSync } from "node:fs";
import { mkdir, open, rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Logger } from "pino";
import { GATEWAY_SEVERITIES_FILE, GATEWAY_STATE_FILE } from "../../config/defaults.js";
import { readOptionalTextSync } from "../../fs/optional-file.js";
import { type EventTarget, SEVERITIES, type Severity } from "../../messages/types.js";
import type { AssignmentState, SnoozeState } from "../severity/event-messages.js";
import type { EngineState } from "../severity/item-states.js";

const VERSION = 1;

interface StateFile extends Partial<EngineState> {
  readonly version: number;
  readonly gateway: string;
  readonly savedAt: string;
}

/** Writes `text` to `path` atomically (temporary file, fsync, rename, fsync of the folder). */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  const file = await open(temporary, "w");
  try {
    await file.writeFile(text, "utf8");
    await file.sync();
  } catch (error) {
    await file.close();
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await file.close();
  await rename(temporary, path);
  const folder = await open(dirname(path), "r");
  try {
    await folder.sync();
  } catch {
    // Some file systems cannot fsync a folder; the rename is then as durable as they make it.
  } finally {
    await folder.close();
  }
}

const isSeverity = (v: unknown): v is Severity =>
  typeof v === "string" && (SEVERITIES as readonly string[]).includes(v);
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const hasTarget = (v: unknown): v is { target: { gateway: string }; state: Record<string, unknown> } =>
  isRecord(v) && isRecord(v.target) && typeof v.target.gateway === "string" && isRecord(v.state);

/**
 * Reads the state a previous run of gateway `gateway` left in `path`; undefined when there is
 * none. Entries of the wrong shape are skipped (logged); a file of another gateway is ignored.
 */
export function readStateFile(path: string, gateway: string, logger: Logger): EngineState | undefined {
  const text = readOptionalTextSync(path);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const aside = `${path}.unreadable`;
    mkdirSync(dirname(path), { recursive: true });
    renameSync(path, aside);
    logger.error(
      { err: error, path, aside },
      "gateway state file is not JSON; set aside, starting without it",
    );
    return undefined;
  }
  if (!isRecord(parsed) || parsed.version !== VERSION) {
    logger.error({ path }, "gateway state file has an unknown version; starting without it");
    return undefined;
  }
  if (parsed.gateway !== gateway) {
    logger.warn(
      { path, was: parsed.gateway, gateway },
      "gateway state file belongs to another gateway name; ignored",
    );
    return undefined;
  }
  let skipped = 0;
  const keep = (ok: boolean): boolean => {
    if (!ok) skipped += 1;
    return ok;
  };
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const snoozes = list(parsed.snoozes).filter((e) =>
    keep(hasTarget(e) && typeof e.state.snoozedBy === "string"),
  );
  const assignments = list(parsed.assignments).filter((e) =>
    keep(hasTarget(e) && typeof e.state.assignedTo === "string"),
  );
  const severities = list(parsed.severities).filter((e) =>
    keep(Array.isArray(e) && typeof e[0] === "string" && isSeverity(e[1])),
  );
  if (skipped > 0)
    logger.warn({ path, skipped }, "gateway state file entries of the wrong shape were skipped");
  return {
    snoozes: snoozes as { target: EventTarget; state: SnoozeState }[],
    assignments: assignments as { target: EventTarget; state: AssignmentState }[],
    severities: severities as [string, Severity][],
  };
}

/**
 * The state a previous run left in the data dir: snoozes and assignments from `gateway-state.json`,
 * last published severities from `gateway-severities.json` (two files, so that a command writes
 * only the small one); undefined when neither exists.
 */
export function readGatewayState(dataDir: string, gateway: string, logger: Logger): EngineState | undefined {
  const states = readStateFile(join(dataDir, GATEWAY_STATE_FILE), gateway, logger);
  const severities = readStateFile(join(dataDir, GATEWAY_SEVERITIES_FILE), gateway, logger);
  if (states === undefined && severities === undefined) return undefined;
  return {
    snoozes: states?.snoozes ?? [],
    assignments: states?.assignments ?? [],
    severities: severities?.severities ?? [],
  };
}

/**
 * Keeps one state file up to date: `save()` writes now (serialised with other writes);
 * `saveSoon()` asks for a write within STATE_SAVE_INTERVAL_MS (the caller's timer runs `flush`).
 */
export class StateKeeper {
  private writing: Promise<void> = Promise.resolve();
  private pending = false;

  constructor(
    private readonly path: string,
    private readonly gateway: string,
    private readonly state: () => Partial<EngineState>,
    private readonly logger: Logger,
  ) {}

  /** Writes the current state; resolves once it is on disk (a failure is logged and retried later). */
  save(): Promise<void> {
    this.pending = false;
    const content: StateFile = {
      version: VERSION,
      gateway: this.gateway,
      savedAt: new Date().toISOString(),
      ...this.state(),
    };
    const text = JSON.stringify(content);
    this.writing = this.writing.then(() =>
      writeFileAtomic(this.path, text).catch((error: unknown) => {
        this.pending = true;
        this.logger.error(
          { err: error, path: this.path },
          "could not write the gateway state file; will retry",
        );
      }),
    );
    return this.writing;
  }

  /** Marks the state as changed; `flush()` writes it. */
  saveSoon(): void {
    this.pending = true;
  }

  /** Writes when something changed since the last write. */
  async flush(): Promise<void> {
    if (this.pending) await this.save();
    else await this.writing;
  }
}

/** What the state files are written from: the severity stage's kept state. */
export interface KeptState {
  /** Which part changed since the last call. */
  takeDirty(): { states: boolean; severities: boolean };
  exportStates(): Pick<EngineState, "snoozes" | "assignments">;
  exportSeverities(): Pick<EngineState, "severities">;
}

/**
 * The two state files of a gateway kept up to date from `state`: snoozes and assignments, written
 * at every command; severities, written at most every STATE_SAVE_INTERVAL_MS (the caller's timer
 * runs `flush`). Without a data dir nothing is written (the state lives in memory only: tests).
 */
export class GatewayStateFiles {
  private readonly keepers: { readonly states: StateKeeper; readonly severities: StateKeeper } | undefined;

  constructor(
    dataDir: string | undefined,
    gateway: string,
    private readonly state: KeptState,
    logger: Logger,
  ) {
    this.keepers =
      dataDir === undefined
        ? undefined
        : {
            states: new StateKeeper(
              join(dataDir, GATEWAY_STATE_FILE),
              gateway,
              () => state.exportStates(),
              logger,
            ),
            severities: new StateKeeper(
              join(dataDir, GATEWAY_SEVERITIES_FILE),
              gateway,
              () => state.exportSeverities(),
              logger,
            ),
          };
  }

  /** Marks the files whose part changed since the last call as to be written. */
  note(): void {
    const dirty = this.state.takeDirty();
    if (dirty.states) this.keepers?.states.saveSoon();
    if (dirty.severities) this.keepers?.severities.saveSoon();
  }

  /** Writes snoozes and assignments when they changed (a command, before it is answered). */
  async flushStates(): Promise<void> {
    this.note();
    await this.keepers?.states.flush();
  }

  /** Writes both files when they changed. */
  async flush(): Promise<void> {
    this.note();
    await Promise.all([this.keepers?.states.flush(), this.keepers?.severities.flush()]);
  }
}
