/**
 * A flood of wrong secrets at `GET /token` beside a client querying `/v0/entities`. The
 * hub (a DuckDB store with 200 entities, security on, one application key) runs in this process; the
 * flood comes from a child process (this file with `--flood`), 64 requests in flight, each a fresh
 * connection with a wrong Basic secret for the configured client id. Phases of VIGIL_BENCH_SECONDS seconds (default 5):
 * - baseline: no flood;
 * - control: the same flood at a path that does not exist (404): what the HTTP work alone costs;
 * - unprotected: the flood against the hub without its token limits (no rate limit or lockout,
 *   no bound on scrypt concurrency, no verified-secret cache);
 * - one address: the flood from 127.0.0.2 against the default limits;
 * - 4 064 addresses: the flood spread over 127.0.x.y (a distributed attacker) with a new unknown
 *   client id each time, against the defaults: no client-id lockout applies and each address gets
 *   its burst, so the scrypt bound is what protects the store.
 * Figures per phase: `/v0/entities` latency of the other client (p50, p95, p99, max in ms, and
 * queries done), the latency of the legitimate client's own `GET /token` (its secret recalled),
 * and how the flood was answered (counts per status). Prints a table and one JSON line; never fails
 * on time.
 */
import { fork } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import type { HubSetup } from "../src/config/setup.js";
import { resource } from "../src/http/routes.js";
import { createHttpApp, listen } from "../src/http/server.js";
import { type AuthOptions, registerAuth } from "../src/hub/auth/auth.js";
import { basicAuthorization } from "../src/hub/auth/credentials.js";
import { selectEntities } from "../src/hub/http/entities-routes.js";
import { createDuckDbStore } from "../src/hub/store/duckdb/duckdb-store.js";
import { asEpochMs } from "../src/ids.js";
import { benchSeconds } from "./settings.js";

const SECONDS = benchSeconds(5);
const FLOOD_IN_FLIGHT = 64; // requests
const ENTITIES = 200;
const CLIENT = "reporting";
const SECRET = "the-right-secret";

interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

function get(
  url: string,
  headers: Record<string, string>,
  options: { agent?: Agent | false; localAddress?: string } = {},
) {
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = request(
      url,
      { headers, agent: options.agent ?? false, localAddress: options.localAddress },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

// ---- The flood, in a child process ----

async function flood(url: string, mode: string, seconds: number): Promise<void> {
  const spread = mode === "spread";
  // The control flood asks for a path that does not exist: the same HTTP work, no secret to check.
  const path = mode === "control" ? "/no-such-path" : "/token";
  const until = Date.now() + seconds * 1000;
  const counts = new Map<string, number>();
  let next = 0;
  const loop = async () => {
    while (Date.now() < until) {
      const n = next++;
      const localAddress = spread ? `127.0.${2 + ((n >> 8) & 15)}.${1 + ((n & 255) % 254)}` : "127.0.0.2";
      try {
        // Spread: a fresh unknown client id each time, so only the address limits and the scrypt
        // bound stand in the way (a configured id would be locked out after 10 failures).
        const clientId = spread ? `guest-${n}` : CLIENT;
        const r = await get(
          `${url}${path}`,
          { authorization: basicAuthorization(clientId, `wrong-${n}`) },
          { localAddress },
        );
        counts.set(String(r.status), (counts.get(String(r.status)) ?? 0) + 1);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? "error";
        counts.set(code, (counts.get(code) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: FLOOD_IN_FLIGHT }, loop));
  process.send?.(Object.fromEntries(counts));
}

if (process.argv[2] === "--flood") {
  await flood(process.argv[3] ?? "", process.argv[4] ?? "one", Number(process.argv[5]));
  process.exit(0);
}

// ---- The hub and the measuring client ----

const security: HubSetup["security"] = {
  enabled: true,
  tokenLifetime: 300,
  appKeys: [{ clientId: CLIENT, clientSecret: SECRET, roles: ["read"] }],
  kerberos: { enabled: false, keytab: "", servicePrincipal: "" },
  kerberosRoles: ["read"],
};
const UNLIMITED = { burst: 1e12, lockoutFailures: 1e12 };
const BEFORE: Pick<AuthOptions, "limits" | "checks" | "verifiedTtlMs"> = {
  limits: { address: UNLIMITED, client: UNLIMITED },
  checks: { concurrency: 1e9, queue: 1e9 },
  verifiedTtlMs: 0,
};

async function startHub(dir: string, options: Pick<AuthOptions, "limits" | "checks" | "verifiedTtlMs">) {
  const store = await createDuckDbStore({ path: join(dir, "vigil.duckdb") });
  await store.migrate();
  const at = asEpochMs(Date.now());
  await store.ingest({
    entities: Array.from({ length: ENTITIES }, (_, e) => ({
      key: { gateway: "GW", probe: "p1", managedEntity: `me${e}` },
      attributes: { region: `r${e % 7}`, app: `app${e % 13}` },
      deleted: false,
      at,
    })),
    samples: [],
  });
  const app = createHttpApp({ logger: pino({ level: "silent" }) });
  await registerAuth(app, { security, dataDir: dir, ...options });
  resource(app, "/v0/entities", {
    GET: async () =>
      (await selectEntities(store, undefined, false)).map((e) => ({ id: e.id, attributes: e.attributes })),
  });
  const url = await listen(app, 0, "127.0.0.1");
  return {
    url,
    async stop() {
      await app.close();
      await store.close();
    },
  };
}

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);
const round = (ms: number) => Math.round(ms * 10) / 10;

interface PhaseResult {
  readonly phase: string;
  readonly queries: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  readonly tokenP50: number;
  readonly tokenMax: number;
  readonly flood: Record<string, number>;
}

async function phase(
  name: string,
  options: typeof BEFORE | undefined,
  floodMode: "none" | "control" | "one" | "spread",
): Promise<PhaseResult> {
  const dir = await mkdtemp(join(tmpdir(), "vigil-bench-flood-"));
  const hub = await startHub(dir, options ?? {});
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const auth = { authorization: basicAuthorization(CLIENT, SECRET) };
    const first = await get(`${hub.url}/token`, auth, { agent });
    const bearer = {
      authorization: `Bearer ${(JSON.parse(first.body) as { access_token: string }).access_token}`,
    };
    for (let i = 0; i < 20; i++) await get(`${hub.url}/v0/entities`, bearer, { agent }); // warm-up
    let floodDone: Promise<Record<string, number>> = Promise.resolve({});
    if (floodMode !== "none") {
      const child = fork(fileURLToPath(import.meta.url), ["--flood", hub.url, floodMode, String(SECONDS)], {
        execArgv: ["--import", "tsx"],
      });
      floodDone = new Promise((resolve) =>
        child.once("message", (counts) => resolve(counts as Record<string, number>)),
      );
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the flood start
    }
    const latencies: number[] = [];
    const tokenLatencies: number[] = [];
    const until = Date.now() + (SECONDS - 0.6) * 1000;
    const queries = async () => {
      while (Date.now() < until) {
        const t0 = performance.now();
        const r = await get(`${hub.url}/v0/entities`, bearer, { agent });
        latencies.push(performance.now() - t0);
        if (r.status !== 200) throw new Error(`/v0/entities answered ${r.status}: ${r.body}`);
      }
    };
    // The legitimate client also gets a token every 200 ms, from its own address (127.0.0.1).
    const tokenAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const tokens = async () => {
      while (Date.now() < until) {
        const t0 = performance.now();
        const t = await get(`${hub.url}/token`, auth, { agent: tokenAgent });
        tokenLatencies.push(performance.now() - t0);
        if (t.status !== 200) throw new Error(`/token answered ${t.status}: ${t.body}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    await Promise.all([queries(), tokens()]);
    tokenAgent.destroy();
    const counts = await floodDone;
    latencies.sort((a, b) => a - b);
    tokenLatencies.sort((a, b) => a - b);
    return {
      phase: name,
      queries: latencies.length,
      p50: round(quantile(latencies, 0.5)),
      p95: round(quantile(latencies, 0.95)),
      p99: round(quantile(latencies, 0.99)),
      max: round(latencies.at(-1) ?? Number.NaN),
      tokenP50: round(quantile(tokenLatencies, 0.5)),
      tokenMax: round(tokenLatencies.at(-1) ?? Number.NaN),
      flood: counts,
    };
  } finally {
    agent.destroy();
    await hub.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const results: PhaseResult[] = [];
results.push(await phase("baseline, no flood", undefined, "none"));
results.push(await phase("control: flood of 404s", undefined, "control"));
results.push(await phase("flood, unprotected (before)", BEFORE, "one"));
results.push(await phase("flood, one address (after)", undefined, "one"));
results.push(await phase("flood, 4064 addresses (after)", undefined, "spread"));

console.log(`token flood: ${FLOOD_IN_FLIGHT} wrong-secret requests in flight, ${SECONDS} s per phase`);
console.log(
  "phase                          | /v0/entities p50   p95   p99   max (ms) | queries | /token p50 max (ms) | flood answers",
);
for (const r of results) {
  console.log(
    `${r.phase.padEnd(30)} | ${[r.p50, r.p95, r.p99, r.max].map((v) => String(v).padStart(8)).join("")}        | ${String(r.queries).padStart(7)} | ${String(r.tokenP50).padStart(8)} ${String(r.tokenMax).padStart(6)}     | ${JSON.stringify(r.flood)}`,
  );
}
console.log(JSON.stringify({ bench: "token-flood", seconds: SECONDS, results }));
