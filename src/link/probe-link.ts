/**
 * The probe link: what a probe tells its gateway (DESIGN 1: "probe link"). A probe keeps the data
 * pushed to it in memory and sends the gateway the whole state of each dataview it changes, with
 * the names of the rows the request touched; the gateway diffs and publishes. `vigil up` carries
 * these events in-process; a separate probe process will carry the same events over a WebSocket.
 */
import type { EpochMs } from "../ids.js";

/** Parameters of a probe as published in `probe` messages (seed C, Probe data). */
export interface ProbeParameters {
  readonly osType: string;
  readonly HostName: string;
  readonly Port: string;
  readonly OS: string;
  readonly Version: string;
}

export interface DataviewAddress {
  readonly managedEntity: string;
  readonly sampler: string;
  /** Sampler type, "" when none. */
  readonly samplerType: string;
  readonly dataview: string;
}

export interface DataviewRowState {
  /** Published row name (duplicates already renamed `<name>_duplicateN`). */
  readonly name: string;
  readonly cells: Readonly<Record<string, string>>;
}

export interface DataviewState {
  readonly columns: readonly string[];
  readonly rows: readonly DataviewRowState[];
  readonly headlines: Readonly<Record<string, string>>;
}

export type ProbeEvent =
  | { readonly kind: "hello"; readonly at: EpochMs; readonly parameters: ProbeParameters }
  | {
      readonly kind: "dataview";
      readonly at: EpochMs;
      readonly address: DataviewAddress;
      /** Plug-in of the sampler: `rest-api` or `fkm`. */
      readonly plugin: string;
      readonly state: DataviewState;
      /** Published names of the rows this change wrote: every one becomes a sample. */
      readonly touched: readonly string[];
    }
  | { readonly kind: "dataviewDeleted"; readonly at: EpochMs; readonly address: DataviewAddress }
  | { readonly kind: "bye"; readonly at: EpochMs };

/** One probe's side of the link. */
export interface ProbeLink {
  send(event: ProbeEvent): void;
}
