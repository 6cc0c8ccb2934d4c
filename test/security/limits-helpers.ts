/**
 * Helpers of the limits attack tests (test/security/limits-*.test.ts): reading a server's
 * `vigil_limit_refusals_total` and the hub's stored entities and metric names.
 */
import { parseExposition } from "../helpers/prometheus-text.js";

/** `vigil_limit_refusals_total{entry, limit}` at `base`/metrics (0 when the series is absent). */
export async function refusals(base: string, entry: string, limit: string): Promise<number> {
  const response = await fetch(`${base}/metrics`);
  if (response.status !== 200) throw new Error(`GET ${base}/metrics answered ${response.status}`);
  return parseExposition(await response.text()).value("vigil_limit_refusals_total", { entry, limit });
}

interface Entity {
  readonly id: number;
  readonly attributes: Readonly<Record<string, string>>;
}

/** The hub's entities (a 200 is required: a hub that cannot answer fails the test). */
export async function entities(hub: string): Promise<Entity[]> {
  const response = await fetch(`${hub}/v0/entities?includeDeleted=true`);
  if (response.status !== 200) throw new Error(`GET /v0/entities answered ${response.status}`);
  return (await response.json()) as Entity[];
}

/** The metric names the hub holds for every entity it has. */
export async function metricNames(hub: string): Promise<string[]> {
  const names: string[] = [];
  for (const entity of await entities(hub)) {
    const response = await fetch(`${hub}/v0/entities/${entity.id}/metrics`);
    if (response.status !== 200) throw new Error(`GET metrics answered ${response.status}`);
    for (const metric of (await response.json()) as { name: string }[]) names.push(metric.name);
  }
  return names;
}

/** Polls `check` every 20 ms until it returns a value other than undefined (a test's timeout bounds it). */
export async function until<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  let last: unknown;
  for (let i = 0; i < 1500; i++) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${what} did not happen${last === undefined ? "" : `: ${String(last)}`}`);
}
