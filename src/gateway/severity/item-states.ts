/**
 * What the gateway keeps of its items beyond their current severity (DESIGN 4.2): snoozes and
 * user assignments by item key, also while their item is gone (a probe away, a row re-pushed),
 * at most GATEWAY_MAX_ITEM_STATES of them together, and the severity last published of each item
 * (also of items with no node, after a restart). All of it survives a restart (the state files,
 * src/gateway/state); `takeDirty()` tells which part changed since it was last written.
 *
 * The `until*` conditions of a state decide when `system` releases it; the tests of them are here,
 * the releases themselves the engine's.
 */
import { GATEWAY_MAX_ITEM_STATES } from "../../config/defaults.js";
import type { EventTarget, Severity } from "../../messages/types.js";
import type { AssignmentState, SnoozeState, Until } from "./event-messages.js";
import { itemKey, probeOfKey } from "./item-target.js";

/** A kept state and the item it is of. */
export interface Held<S> {
  readonly target: EventTarget;
  readonly state: S;
}

/** The two kinds of state an item can hold. */
export type StateKind = "snooze" | "assignment";

/** The state of each kind. */
export interface StateOfKind {
  readonly snooze: SnoozeState;
  readonly assignment: AssignmentState;
}

/** What survives a restart (the state files, src/gateway/state). */
export interface EngineState {
  readonly snoozes: readonly Held<SnoozeState>[];
  readonly assignments: readonly Held<AssignmentState>[];
  /** Last published severity by item key (UNDEFINED left out). */
  readonly severities: readonly (readonly [string, Severity])[];
}

/**
 * The state kept by a previous run, without the severities of probes `probes` does not name
 * (they would never be published again).
 */
export function keptForProbes(state: EngineState, probes: ReadonlySet<string>): EngineState {
  return {
    ...state,
    severities: state.severities.filter(([key]) => {
      const probe = probeOfKey(key);
      return probe === null || (probe !== undefined && probes.has(probe));
    }),
  };
}

/** The held states of an item's key, snoozes and assignments, and the severities last published. */
export class ItemStates {
  readonly maxStates: number;
  private readonly held: { readonly [K in StateKind]: Map<string, Held<StateOfKind[K]>> } = {
    snooze: new Map(),
    assignment: new Map(),
  };
  /** Last published severity of items (also of items with no node, after a restart). */
  private readonly lastPublished = new Map<string, Severity>();
  /** Set when snoozes or assignments changed since the last `takeDirty()`. */
  private statesDirty = false;
  /** Set when last published severities changed since the last `takeDirty()`. */
  private severitiesDirty = false;

  /** `maxStates`: snoozes plus assignments held at most; default GATEWAY_MAX_ITEM_STATES. */
  constructor(maxStates: number | undefined, restored: EngineState | undefined) {
    this.maxStates = maxStates ?? GATEWAY_MAX_ITEM_STATES;
    if (restored === undefined) return;
    for (const held of restored.snoozes) this.held.snooze.set(itemKey(held.target), held);
    for (const held of restored.assignments) this.held.assignment.set(itemKey(held.target), held);
    for (const [key, severity] of restored.severities) this.lastPublished.set(key, severity);
  }

  /** The state of kind `kind` kept for an item. */
  get<K extends StateKind>(kind: K, key: string): Held<StateOfKind[K]> | undefined {
    return this.held[kind].get(key) as Held<StateOfKind[K]> | undefined;
  }

  /** The states of kind `kind`, by item key. */
  all<K extends StateKind>(kind: K): ReadonlyMap<string, Held<StateOfKind[K]>> {
    return this.held[kind] as ReadonlyMap<string, Held<StateOfKind[K]>>;
  }

  count(kind: StateKind): number {
    return this.held[kind].size;
  }

  /** Whether one more state fits under the bound. */
  hasRoom(): boolean {
    return this.held.snooze.size + this.held.assignment.size < this.maxStates;
  }

  set<K extends StateKind>(kind: K, key: string, held: Held<StateOfKind[K]>): void {
    (this.held[kind] as Map<string, Held<StateOfKind[K]>>).set(key, held);
    this.statesDirty = true;
  }

  /** Drops a state; the one dropped, undefined when there was none. */
  take<K extends StateKind>(kind: K, key: string): Held<StateOfKind[K]> | undefined {
    const held = this.get(kind, key);
    if (held === undefined) return undefined;
    this.held[kind].delete(key);
    this.statesDirty = true;
    return held;
  }

  /** Keys of the states whose `untilTime` has come. */
  expired(kind: StateKind, nowMs: number): string[] {
    const keys: string[] = [];
    for (const [key, held] of this.held[kind])
      if (held.state.untilTime !== undefined && held.state.untilTime <= nowMs) keys.push(key);
    return keys;
  }

  /** The severity last published of an item. */
  published(key: string): Severity | undefined {
    return this.lastPublished.get(key);
  }

  /** Notes the severity an item was published with (UNDEFINED is not kept). */
  notePublished(key: string, severity: Severity): void {
    if (severity === "UNDEFINED") this.forgetPublished(key);
    else if (this.lastPublished.get(key) !== severity) {
      this.lastPublished.set(key, severity);
      this.severitiesDirty = true;
    }
  }

  forgetPublished(key: string): void {
    if (this.lastPublished.delete(key)) this.severitiesDirty = true;
  }

  /** Keys of published severities, for the items no longer there to be forgotten. */
  publishedKeys(): IterableIterator<string> {
    return this.lastPublished.keys();
  }

  /** Which state that survives a restart changed since the last call. */
  takeDirty(): { states: boolean; severities: boolean } {
    const dirty = { states: this.statesDirty, severities: this.severitiesDirty };
    this.statesDirty = false;
    this.severitiesDirty = false;
    return dirty;
  }

  /** Snoozes and assignments (small; written at every command). */
  exportStates(): Pick<EngineState, "snoozes" | "assignments"> {
    return { snoozes: [...this.held.snooze.values()], assignments: [...this.held.assignment.values()] };
  }

  /** Last published severities (one per item with a severity; written at most every second). */
  exportSeverities(): Pick<EngineState, "severities"> {
    return { severities: [...this.lastPublished] };
  }
}

/**
 * Why a state is released when its item's severity goes from `previous` to `next`: it reached
 * `untilSeverity`, or left `untilSeverityNot`; undefined when it stays.
 */
export function severityRelease(until: Until, previous: Severity, next: Severity): string | undefined {
  if (until.untilSeverity !== undefined && next === until.untilSeverity)
    return `severity reached ${until.untilSeverity}`;
  if (until.untilSeverityNot !== undefined && previous === until.untilSeverityNot && next !== previous)
    return `severity left ${until.untilSeverityNot}`;
  return undefined;
}

/** Whether a state watching the value (`untilValueNot`) is released by the value `value`. */
export function valueReleases(until: Until | undefined, value: string): boolean {
  const watched = until?.untilValueNot;
  return watched !== undefined && value !== watched;
}
