/**
 * The demo generator (DESIGN 1, `--demo`): pushes realistic data through the probe's real HTTP
 * API, so a new user sees live entities and charts without typing anything. For every rest-api
 * sampler it PUTs a dataview every interval: `queue` for the built-in sample setup's `orders`
 * samplers, `demo` for the samplers of any other setup. For every fkm sampler it also PUTs a few
 * application log lines (some WARN, some ERROR) to the stream the sampler reads (DESIGN 3.4), so
 * the sampler's Streams Dataview fills and its keywords match.
 */
import type { Logger } from "pino";
import type { FkmSampler, ProbeSetup, RestApiSampler } from "../config/setup.js";

const DEMO_INTERVAL_MS = 2_000; // 2 s between pushes
const INSTRUMENTS = ["EURUSD", "GBPUSD", "USDJPY", "AUDUSD"] as const;
/** Log lines pushed to each fkm source stream per interval, at most. */
const LOG_LINES_PER_PUSH = 3;
/** Share of demo log lines that are warnings and errors. */
const WARN_RATIO = 0.12;
const ERROR_RATIO = 0.05;

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

function streamPath(managedEntity: string, fkm: FkmSampler): string {
  // `source.sampler` is written as the ingest path writes a sampler: `name` or `name(type)`.
  return `/v1/managedEntity/${encodeURIComponent(managedEntity)}/sampler/${encodeURIComponent(fkm.source.sampler)}/stream/${encodeURIComponent(fkm.source.stream)}`;
}

let orderId = 10_000;

/** One application log line, as a service would write it: mostly INFO, some WARN and ERROR. */
function logLine(entity: string): string {
  const instrument = INSTRUMENTS[Math.floor(Math.random() * INSTRUMENTS.length)] ?? "EURUSD";
  const time = new Date().toISOString();
  orderId += 1;
  const roll = Math.random();
  if (roll < ERROR_RATIO) {
    return `${time} ERROR ${entity} orders: order ${orderId} ${instrument} rejected: upstream timeout after 5000 ms\n`;
  }
  if (roll < ERROR_RATIO + WARN_RATIO) {
    const ms = 300 + Math.round(Math.random() * 600);
    return `${time} WARN  ${entity} orders: order ${orderId} ${instrument} filled slowly in ${ms} ms\n`;
  }
  const ms = 5 + Math.round(Math.random() * 80);
  return `${time} INFO  ${entity} orders: order ${orderId} ${instrument} filled in ${ms} ms\n`;
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
        for (const sampler of entity.samplers) {
          if (sampler.plugin !== "fkm") continue;
          const lines = 1 + Math.floor(Math.random() * LOG_LINES_PER_PUSH);
          for (let i = 0; i < lines; i += 1) {
            try {
              // A stream takes any content: each PUT is one log line, sent as plain text.
              const response = await fetch(url + streamPath(entity.name, sampler), {
                method: "PUT",
                headers: { "content-type": "text/plain; charset=utf-8" },
                body: logLine(entity.name),
              });
              await response.arrayBuffer();
              if (!response.ok)
                logger.warn({ status: response.status, entity: entity.name }, "demo log push refused");
            } catch (error) {
              logger.warn({ err: error }, "demo log push failed");
            }
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
