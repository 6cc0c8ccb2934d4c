/**
 * Load against each process of `vigil up`, through real sockets with the processes' own
 * HTTP limits (src/http/server.ts DEFAULT_HTTP_LIMITS): many keep-alive clients sending requests back
 * to back, and slow clients — headers dripped byte by byte (slowloris), a body announced and never
 * sent, an answer never read — held open the whole time. Meanwhile a normal client on its own
 * connections must keep getting its answers; each keep-alive client's answers are 2xx or a
 * documented 4xx, never a 5xx.
 *
 * test/http/connection-limits.test.ts checks the limits themselves (slowloris cut off, the
 * per-address cap, idle keep-alive closed) on a bare app with small limits; this file checks that
 * each real server keeps serving under load. Nothing asserts a duration: the load runs until the
 * normal client has its answers, bounded by the test runner's timeout.
 */
import assert from "node:assert/strict";
import { Agent, request } from "node:http";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { tempDir } from "../helpers/vigil-process.js";

/** Keep-alive clients per server, each with its own connection. */
const KEEP_ALIVE_CLIENTS = 24;
/** Slow clients per server, of each of the three kinds. */
const SLOW_CLIENTS_PER_KIND = 8;
/** Requests the normal client makes while the load runs. */
const NORMAL_REQUESTS = 12;

const setup = parseSetup(`
gateway:
  name: GW-LOAD
  port: 0
  publish: [memory]
probes:
  - name: p1
    restApiHttpPort: 0
    restApiHttpsPort: 0
    managedEntities:
      - name: web-01
        samplers: [{ name: orders, plugin: rest-api }]
hub:
  port: 0
  security: { enabled: false }
`);

interface Call {
  readonly method: string;
  readonly path: string;
  readonly body?: string;
}

/** One request on `agent` (keep-alive) or on a connection of its own; resolves with status and text. */
function call(
  base: string,
  { method, path, body }: Call,
  agent?: Agent,
): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port: Number(port),
        method,
        path,
        agent: agent ?? false,
        headers:
          body === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function open(base: string): Promise<Socket> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/**
 * Slow clients held open until `stop()`: slowloris (a header line every 100 ms, never the end of the
 * headers), a POST whose announced body never comes, and a GET whose answer is never read.
 */
async function slowClients(base: string, slowPath: Call, bigGet: string): Promise<{ stop(): void }> {
  const sockets: Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  for (let i = 0; i < SLOW_CLIENTS_PER_KIND; i += 1) {
    const loris = await open(base);
    loris.on("error", () => {});
    loris.write(`GET /v1/healthcheck HTTP/1.1\r\nHost: load\r\n`);
    timers.push(
      setInterval(() => {
        if (!loris.destroyed) loris.write(`X-Drip-${i}: 1\r\n`);
      }, 100),
    );
    const silentBody = await open(base);
    silentBody.on("error", () => {});
    silentBody.write(
      `${slowPath.method} ${slowPath.path} HTTP/1.1\r\nHost: load\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[`,
    );
    const nonReader = await open(base);
    nonReader.on("error", () => {});
    nonReader.pause(); // never reads: the server's writes back up in the socket
    for (let r = 0; r < 20; r += 1) nonReader.write(`GET ${bigGet} HTTP/1.1\r\nHost: load\r\n\r\n`);
    sockets.push(loris, silentBody, nonReader);
  }
  return {
    stop() {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
    },
  };
}

interface LoadResult {
  readonly requests: number;
  readonly statuses: Map<number, number>;
  readonly errors: string[];
}

/** KEEP_ALIVE_CLIENTS clients sending `calls` back to back on their kept-alive connections until `done`. */
function keepAliveLoad(base: string, calls: readonly Call[], done: Promise<void>): Promise<LoadResult> {
  let stopped = false;
  void done.finally(() => {
    stopped = true;
  });
  const statuses = new Map<number, number>();
  const errors: string[] = [];
  let requests = 0;
  const clients = Array.from({ length: KEEP_ALIVE_CLIENTS }, async (_, i) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let n = 0; !stopped; n += 1) {
        const answer = await call(base, calls[(i + n) % calls.length] as Call, agent).catch(
          (error: Error) => {
            errors.push(error.message);
            return undefined;
          },
        );
        requests += 1;
        if (answer !== undefined) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      }
    } finally {
      agent.destroy();
    }
  });
  return Promise.all(clients).then(() => ({ requests, statuses, errors }));
}

const dir = tempDir("load");
let system: RunningService;
let urls: { probe: string; gateway: string; hub: string };

before(async () => {
  system = await startSystem({
    setup,
    dataDir: dir.path,
    demo: false,
    host: "127.0.0.1",
    logger: pino({ level: "silent" }),
  });
  urls = {
    probe: system.urls["probe:p1"] as string,
    gateway: system.urls.gateway as string,
    hub: system.urls.hub as string,
  };
});
after(async () => {
  await system?.stop(5_000);
  dir.remove();
});

const DATAVIEW = "/v1/managedEntity/web-01/sampler/orders/dataview/queue";
const put = (i: number): Call => ({
  method: "PUT",
  path: `${DATAVIEW}/row/r${i % 5}`,
  body: JSON.stringify({ latency: i }),
});
const metricQuery: Call = {
  method: "POST",
  path: "/v0/metrics/query",
  body: JSON.stringify({
    zoneId: "UTC",
    filter: {
      entities: "svc.name = web-01",
      range: {
        from: new Date(Date.now() - 3_600_000).toISOString(),
        to: new Date(Date.now() + 3_600_000).toISOString(),
      },
    },
    metrics: [{ identifier: "l", include: ["orders/queue/{rowname}/latency"] }],
    aggregations: ["svc.count"],
    bucketing: { duration: "PT1H" },
  }),
};

// [server, the keep-alive clients' requests, the normal client's request, a slow POST, a big GET]
const CASES: [keyof typeof urls, Call[], Call, Call, string][] = [
  [
    "probe",
    [put(0), put(1), put(2), { method: "GET", path: DATAVIEW }, { method: "GET", path: "/v1/healthcheck" }],
    { method: "GET", path: `${DATAVIEW}/row/r0` },
    { method: "PUT", path: DATAVIEW },
    `/v1/managedEntity/web-01/sampler/orders`,
  ],
  [
    "gateway",
    [
      { method: "GET", path: "/v1/healthcheck" },
      { method: "GET", path: "/v1/status" },
      { method: "GET", path: "/v1/items" },
    ],
    { method: "GET", path: "/v1/items" },
    { method: "POST", path: "/v1/commands/snooze" },
    "/v1/status",
  ],
  [
    "hub",
    [{ method: "GET", path: "/v0/entities" }, metricQuery, { method: "GET", path: "/v0/ping" }],
    metricQuery,
    { method: "POST", path: "/v0/messages" },
    "/v0/openapi.json",
  ],
];

describe("each process keeps serving a normal client under keep-alive and slow-client load", () => {
  before(async () => {
    // Data for the probe's row GET and the hub's query.
    const seeded = await call(urls.probe, {
      method: "PUT",
      path: DATAVIEW,
      body: JSON.stringify([0, 1, 2, 3, 4].map((i) => ({ name: `r${i}`, latency: i }))),
    });
    assert.equal(seeded.status, 200, seeded.text);
  });

  for (const [name, loadCalls, normal, slowPost, bigGet] of CASES) {
    test(`${name}: ${KEEP_ALIVE_CLIENTS} keep-alive clients and ${3 * SLOW_CLIENTS_PER_KIND} slow clients`, async (t) => {
      const base = urls[name];
      const slow = await slowClients(base, slowPost, bigGet);
      let finish = (): void => {};
      const done = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const load = keepAliveLoad(base, loadCalls, done);
      try {
        // The normal client: a connection of its own per request, each answered 200.
        for (let i = 0; i < NORMAL_REQUESTS; i += 1) {
          const answer = await call(base, normal);
          assert.equal(answer.status, 200, `normal request ${i} to the ${name}: ${answer.text}`);
        }
      } finally {
        finish();
        slow.stop();
      }
      const result = await load;
      t.diagnostic(
        `${name}: ${result.requests} keep-alive requests, statuses ${JSON.stringify([...result.statuses])}`,
      );
      assert.deepEqual(result.errors, [], `keep-alive clients of the ${name} lost connections`);
      assert.ok(result.requests >= KEEP_ALIVE_CLIENTS, `every keep-alive client of the ${name} was answered`);
      for (const status of result.statuses.keys()) {
        assert.ok(
          status < 500,
          `a keep-alive client of the ${name} got ${status}: ${JSON.stringify([...result.statuses])}`,
        );
      }
      // Still serving once the load is gone.
      assert.equal((await call(base, normal)).status, 200);
    });
  }
});
