/**
 * Generated public-v2 `table` messages for the benches that send them through `POST /v0/messages`
 * (bench/backfill.bench.ts, bench/peers.bench.ts): deterministic cell values, and one row message
 * as the gateway publishes it, keys in the gateway's order (a message without an id is known by the
 * digest of its text, so the same inputs must give the same text).
 */

/** A deterministic pseudo-random number in [0, 1) (a bench must not depend on Math.random). */
export function noise(seed: number): number {
  const x = Math.sin(seed * 12.9898) * 43758.5453;
  return x - Math.floor(x);
}

/** A cell value for `seed`: in [0, 10 000) with at most three decimals, so its text is exact. */
export function cellValue(seed: number): number {
  return Math.round(noise(seed) * 1e7) / 1000;
}

/** Where a row message comes from: the gateway's names for it. */
export interface TableTarget {
  readonly gateway: string;
  readonly probe: string;
  readonly managedEntity: string;
  readonly sampler: string;
  readonly dataview: string;
  readonly row: string;
  readonly osType: string;
  readonly pluginName: string;
}

/** One `table` update message of one row at `at` (epoch ms) with `cells` (column → text). */
export function tableMessage(
  at: number,
  target: TableTarget,
  cells: Readonly<Record<string, string>>,
): string {
  return JSON.stringify({
    type: "table",
    operation: "update",
    data: {
      sampleTime: new Date(at).toISOString(),
      target: {
        gateway: target.gateway,
        probe: target.probe,
        managedEntity: target.managedEntity,
        type: "",
        sampler: target.sampler,
        dataview: target.dataview,
        row: target.row,
        filter: { osType: target.osType, pluginName: target.pluginName },
      },
      row: cells,
    },
  });
}
