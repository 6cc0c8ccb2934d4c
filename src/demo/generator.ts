/**
 * The demo generator (DESIGN 1, `--demo`): pushes realistic data through the probe's real HTTP
 * API, so a new user sees live entities and charts without typing anything. For every rest-api
 * sampler it PUTs a dataview every interval: `queue` for the built-in sample setup's `orders`
 * samplers, `demo` for the samplers of any other setup.
 */
import type { Logger } from "pino";
import type { ProbeSetup, RestApiSampler } from "../config/setup.js";

const DEMO_INTERVAL_MS = 2_000; // 2 s between pushes
const INSTRUMENTS = ["EURUSD", "GBPUSD", "USDJPY", "AUDUSD"] as const;

export interface DemoTarget {
  readonly probe: ProbeSetup;
  /** Base URL the probe listens on, e.g. http://127.0.0.1:7136. */
  readonly url: string;
}

/** A bounded random walk, so charts look like a real system. */
class Walk {
  constructor(
    private value: number,
    private readonly min: number,
    private readonly max: number,
    private readonly step: number,
  ) {}
  next(): number {
    this.value = Math.min(this.max, Math.max(this.min, this.value + (Math.random() * 2 - 1) * this.step));
    return this.value;
  }
}

function samplerPath(managedEntity: string, sampler: RestApiSampler, dataview: string): string {
  const name = sampler.type === "" ? sampler.name : `${sampler.name}(${sampler.type})`;
  return `/v1/managedEntity/${encodeURIComponent(managedEntity)}/sampler/${encodeURIComponent(name)}/dataview/${encodeURIComponent(dataview)}`;
}

/** Starts pushing; returns a function that stops it and waits for the push in flight. */
export function startDemo(
  targets: readonly DemoTarget[],
  logger: Logger,
  intervalMs = DEMO_INTERVAL_MS,
): () => Promise<void> {
  const walks = new Map<string, Walk>();
  const walk = (key: string, start: number, min: number, max: number, step: number): number => {
    let w = walks.get(key);
    if (w === undefined) {
      w = new Walk(start, min, max, step);
      walks.set(key, w);
    }
    return w.next();
  };

  const rowsFor = (entity: string, sampler: RestApiSampler): Record<string, string>[] => {
    const columns = Object.keys(sampler.schema.columns);
    return INSTRUMENTS.map((instrument) => {
      const row: Record<string, string> = { name: instrument };
      for (const column of columns.length > 0 ? columns : ["value"]) {
        const key = `${entity}/${sampler.name}/${instrument}/${column}`;
        const declared = sampler.schema.columns[column];
        if (column === "queued" || declared?.type === "int64")
          row[column] = String(Math.round(walk(key, 40, 0, 160, 15)));
        else if (column === "cpu") row[column] = walk(key, 35, 1, 99, 6).toFixed(1);
        else if (column === "latency") row[column] = walk(key, 120, 5, 400, 30).toFixed(2);
        else row[column] = walk(key, 50, 0, 100, 5).toFixed(2);
      }
      return row;
    });
  };

  const push = async (): Promise<void> => {
    for (const { probe, url } of targets) {
      for (const entity of probe.managedEntities) {
        for (const sampler of entity.samplers) {
          if (sampler.plugin !== "rest-api") continue;
          const dataview = sampler.name === "orders" ? "queue" : "demo";
          try {
            const response = await fetch(url + samplerPath(entity.name, sampler, dataview), {
              method: "PUT",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(rowsFor(entity.name, sampler)),
            });
            await response.arrayBuffer();
            if (!response.ok)
              logger.warn({ status: response.status, entity: entity.name }, "demo push refused");
          } catch (error) {
            logger.warn({ err: error }, "demo push failed");
          }
        }
      }
    }
  };

  let inFlight: Promise<void> = push();
  const timer = setInterval(() => {
    inFlight = inFlight.then(push);
  }, intervalMs);
  logger.info({ intervalMs }, "demo generator pushing data through the probe's HTTP API");
  return async () => {
    clearInterval(timer);
    await inFlight;
  };
}
