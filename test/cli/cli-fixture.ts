/**
 * What the client-command tests share: a real hub listening on 127.0.0.1 (port 0) over an in-memory
 * DuckDB store, published messages to backfill, and the `vigil` command run from its TypeScript
 * entry through tsx (dist/ is built by `npm test`, not here) as a child process, asynchronously so
 * the hub in this process keeps answering.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { parseSetup } from "../../src/config/load-setup.js";
import { buildHub, type Hub } from "../../src/hub/app.js";
import { createDuckDbStore } from "../../src/hub/store/duckdb/duckdb-store.js";

export const CLIENT_ID = "cli-tests";
export const CLIENT_SECRET = "s3cret:with-colon";
export const OTHER_ID = "cli-tests-2";
export const OTHER_SECRET = "other-secret";

export const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();

export interface RunningHub {
  readonly url: string;
  readonly hub: Hub;
  stop(): Promise<void>;
}

/** Starts a hub with one sampler `orders` (latency in milliseconds), security on or off. */
export async function startHub(security: boolean): Promise<RunningHub> {
  const setup = parseSetup(`
gateway: { name: GW }
probes:
  - name: p1
    managedEntities:
      - name: web-01
        samplers:
          - name: orders
            plugin: rest-api
            schema: { columns: { latency: { type: float64, unit: milliseconds } } }
hub:
  security:
    enabled: ${security}
    appKeys:
      - { clientId: ${CLIENT_ID}, clientSecret: "${CLIENT_SECRET}", roles: [read, write] }
      - { clientId: ${OTHER_ID}, clientSecret: "${OTHER_SECRET}" }
`);
  const dataDir = mkdtempSync(join(tmpdir(), "vigil-cli-hub-"));
  const store = await createDuckDbStore({ path: ":memory:" });
  const hub = await buildHub({ setup, store, logger: pino({ level: "silent" }), dataDir });
  const url = await hub.start(0, "127.0.0.1");
  return {
    url,
    hub,
    async stop() {
      await hub.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A managedEntity create message. */
export function entityMessage(name: string, attributes: Record<string, string>): Record<string, unknown> {
  return {
    type: "managedEntity",
    operation: "create",
    data: { timestamp: iso(T0), target: { gateway: "GW", probe: "p1", managedEntity: name }, attributes },
  };
}

/** A table row update of `orders/queue/<row>/latency` on entity `me` at `at`. */
export function rowMessage(me: string, row: string, latency: string, at: number): Record<string, unknown> {
  return {
    type: "table",
    operation: "update",
    data: {
      sampleTime: iso(at),
      target: {
        gateway: "GW",
        probe: "p1",
        managedEntity: me,
        type: "",
        sampler: "orders",
        dataview: "queue",
        row,
        filter: { osType: "Linux", pluginName: "rest-api" },
      },
      row: { name: row, latency },
    },
  };
}

export const probeMessage = {
  type: "probe",
  operation: "create",
  data: { timestamp: iso(T0), target: { gateway: "GW", probe: "p1" }, parameters: { osType: "Linux" } },
};

/** The query counting samples of `orders/queue/{rowname}/latency` on `me` over the day of T0. */
export function countQuery(me: string): Record<string, unknown> {
  return {
    zoneId: "UTC",
    filter: {
      entities: `svc.name = "${me}"`,
      range: { from: "2026-03-01T00:00:00Z", to: "2026-03-02T00:00:00Z" },
    },
    metrics: [{ identifier: "m", include: ["orders/queue/{rowname}/latency"] }],
    aggregations: ["svc.count", "svc.max"],
    bucketing: { duration: "P1D" },
  };
}

/** Samples the hub holds for `me` (the query above, through real HTTP, no token: security off). */
export async function countSamples(url: string, me: string, token?: string): Promise<number> {
  const response = await fetch(`${url}/v0/metrics/query`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(countQuery(me)),
  });
  const body = (await response.json()) as { data: { metrics: { m: { "svc.count": number } } }[] };
  if (response.status !== 200) throw new Error(`query failed: ${JSON.stringify(body)}`);
  return body.data.reduce((n, d) => n + d.metrics.m["svc.count"], 0);
}

const MAIN = join(import.meta.dirname, "..", "..", "src", "cli", "main.ts");

export interface CliResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `vigil <args>` from src/cli/main.ts through tsx with `env` added to a copy of this process's
 * environment minus any VIGIL_* variable (so the caller's shell cannot leak into a test).
 */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  stdin?: string,
): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VIGIL_")));
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
    env: { ...base, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.end(stdin ?? "");
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}
