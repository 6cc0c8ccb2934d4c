/**
 * The foundation's end-to-end path (DESIGN 1): `vigil up --config FILE --data-dir DIR` as a real
 * process; PUT on the probe → public-v2 messages through the in-process bus (and the NDJSON file)
 * → the entity and numeric cells in embedded DuckDB → GET /v0/entities and POST /v0/metrics/query.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { validateMessage } from "../../src/messages/validate.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

const SETUP = `
gateway:
  name: GW-E2E
  port: 0
  publish:
    - memory
    - file: ./out/messages.ndjson
probes:
  - name: probe-e2e
    restApiHttpPort: 0
    managedEntities:
      - name: web-01
        attributes: { Environment: prod, Region: emea }
        samplers:
          - name: orders
            plugin: rest-api
            schema:
              columns:
                latency: { type: float64, unit: milliseconds }
hub:
  port: 0
  security: { enabled: false }
`;

interface Entity {
  id: number;
  attributes: Record<string, string>;
  isDeleted: boolean;
}

async function json<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const response = await fetch(url, init);
  return { status: response.status, body: (await response.json()) as T };
}

const put = (url: string, body: unknown) =>
  json<Record<string, unknown>>(url, { method: "PUT", body: JSON.stringify(body) });

function avgQuery(from: string, to: string) {
  return {
    zoneId: "UTC",
    filter: { entities: "svc.name = web-01", range: { from, to } },
    metrics: [{ identifier: "lat", include: ["orders/queue/{rowname}/latency"] }],
    aggregations: ["svc.avg", "svc.count"],
    bucketing: { duration: "P1D" },
  };
}

describe("vigil up: probe → gateway → hub, end to end", () => {
  const dir = tempDir("e2e");
  let vigil: VigilProcess;
  let probe: string;
  let hub: string;
  const started = new Date();

  before(async () => {
    const config = writeFile(dir.path, "setup.yaml", SETUP);
    vigil = startVigil(["up", "--config", config, "--data-dir", join(dir.path, "data")], dir.path);
    probe = await vigil.url("probe", "probe-e2e");
    hub = await vigil.url("hub");
  });

  after(async () => {
    await vigil.stop("SIGKILL");
    dir.remove();
  });

  test("health endpoints answer 200", async () => {
    assert.equal((await fetch(`${probe}/healthcheck`)).status, 200);
    assert.equal((await fetch(`${probe}/v1/healthcheck`)).status, 200);
    assert.equal((await fetch(`${hub}/v0/ping`)).status, 200);
  });

  test("a pushed dataview becomes an entity and a queryable metric", async () => {
    const base = `${probe}/v1/managedEntity/web-01/sampler/orders/dataview/queue`;
    const first = await put(base, [
      { name: "EURUSD", latency: 10, queued: "3" },
      { name: "GBPUSD", latency: "20.5", queued: "x" },
    ]);
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { rows: 2, duplicates: 0, dropped: 0 });
    const row = await put(`${base}/row/EURUSD`, { latency: 30 });
    assert.equal(row.status, 200);

    const entities = await eventually(async () => {
      const { body } = await json<Entity[]>(`${hub}/v0/entities`);
      return body.length > 0 ? body : undefined;
    });
    assert.equal(entities.length, 1);
    const entity = entities[0]!;
    assert.equal(entity.attributes["svc.name"], "web-01");
    assert.equal(entity.attributes["svc.gateway"], "GW-E2E");
    assert.equal(entity.attributes["svc.probe"], "probe-e2e");
    assert.equal(entity.attributes["user.Environment"], "prod");
    assert.equal(entity.isDeleted, false);

    // latency samples: 10, 20.5 (dataview PUT) and 30 (row PUT) → avg 20.1666…
    const from = new Date(started.getTime() - 60_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const result = await eventually(async () => {
      const { status, body } = await json<{
        data: { bucket: string; metrics: { lat: Record<string, number> } }[];
      }>(`${hub}/v0/metrics/query`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(avgQuery(from, to)),
      });
      assert.equal(status, 200);
      const count = body.data.reduce((n, d) => n + (d.metrics.lat["svc.count"] ?? 0), 0);
      return count === 3 ? body : undefined;
    });
    if (started.toISOString().slice(0, 10) === new Date().toISOString().slice(0, 10)) {
      assert.equal(result.data.length, 1, "all samples fall in one day bucket");
      assert.ok(Math.abs((result.data[0]?.metrics.lat["svc.avg"] ?? 0) - 60.5 / 3) < 1e-9);
      assert.equal(result.data[0]?.bucket, `${started.toISOString().slice(0, 10)}T00:00:00+00:00`);
    }

    // The same query through the /v1alpha path.
    const alpha = await json<{ data: unknown[] }>(`${hub}/v1alpha/metrics/query`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(avgQuery(from, to)),
    });
    assert.equal(alpha.status, 200);
    assert.deepEqual(alpha.body.data, result.data);
  });

  test("SIGTERM stops cleanly with exit 0 and the NDJSON file holds valid public-v2 messages", async () => {
    const exit = await vigil.stop("SIGTERM");
    assert.deepEqual(exit, { code: 0, signal: null });
    const lines = readFileSync(join(dir.path, "out", "messages.ndjson"), "utf8")
      .trim()
      .split("\n");
    const messages = lines.map((line) => JSON.parse(line) as { type: string; operation: string });
    for (const message of messages)
      assert.deepEqual(validateMessage(message).ok, true, JSON.stringify(message));
    const kinds = messages.map((m) => `${m.type}:${m.operation}`);
    for (const kind of [
      "probe:create",
      "managedEntity:create",
      "headline:create",
      "table:create",
      "table:update",
    ]) {
      assert.ok(kinds.includes(kind), `${kind} published; got ${kinds.join(", ")}`);
    }
    assert.ok(kinds.includes("probe:update"), "the stopping probe is published as down");
  });

  test("what was accepted before the stop is in the store after a restart", async () => {
    const again = startVigil(
      ["up", "--config", join(dir.path, "setup.yaml"), "--data-dir", join(dir.path, "data")],
      dir.path,
    );
    try {
      const hub2 = await again.url("hub");
      const from = new Date(started.getTime() - 60_000).toISOString();
      const to = new Date(Date.now() + 60_000).toISOString();
      const { body } = await json<{ data: { metrics: { lat: Record<string, number> } }[] }>(
        `${hub2}/v0/metrics/query`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(avgQuery(from, to)),
        },
      );
      const count = body.data.reduce((n, d) => n + (d.metrics.lat["svc.count"] ?? 0), 0);
      assert.equal(count, 3);
      const entities = await json<Entity[]>(`${hub2}/v0/entities`);
      assert.equal(entities.body.length, 1);
    } finally {
      assert.equal((await again.stop("SIGINT")).code, 0);
    }
  });
});

describe("vigil up: a clean stop right after accepting data loses nothing", () => {
  const dir = tempDir("drain");
  const started: VigilProcess[] = [];
  after(async () => {
    // A failed assertion must not leave a process behind.
    for (const p of started) await p.stop("SIGKILL");
    dir.remove();
  });

  test("every value accepted before SIGTERM is in the store after a restart", async () => {
    const config = writeFile(dir.path, "setup.yaml", SETUP);
    const data = join(dir.path, "data");
    const first = startVigil(["up", "--config", config, "--data-dir", data], dir.path);
    started.push(first);
    const probe = await first.url("probe", "probe-e2e");
    const base = `${probe}/v1/managedEntity/web-01/sampler/orders/dataview/burst`;
    const rows = 200;
    const puts = 60;
    // Ten PUTs in flight at a time, so the gateway and the bus still hold work when the stop comes.
    // A 503 (back-pressure) is retried after its Retry-After, as a client should: each PUT is
    // accepted once.
    const accepted = async (i: number): Promise<number> => {
      const body = Array.from({ length: rows }, (_, r) => ({ name: `r${r}`, latency: i * rows + r }));
      for (let attempt = 0; attempt < 60; attempt++) {
        const { status } = await put(base, body);
        if (status !== 503) return status;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      return 503;
    };
    for (let batch = 0; batch < puts; batch += 10) {
      const statuses = await Promise.all(Array.from({ length: 10 }, (_, k) => accepted(batch + k)));
      assert.deepEqual(new Set(statuses), new Set([200]));
    }
    // Stop at once: the last PUTs may still be on their way through the gateway and the bus.
    assert.deepEqual(await first.stop("SIGTERM"), { code: 0, signal: null });

    const second = startVigil(["up", "--config", config, "--data-dir", data], dir.path);
    started.push(second);
    try {
      const hub = await second.url("hub");
      const query = {
        ...avgQuery(
          new Date(Date.now() - 600_000).toISOString(),
          new Date(Date.now() + 60_000).toISOString(),
        ),
        metrics: [{ identifier: "lat", include: ["orders/burst/{rowname}/latency"] }],
        aggregations: ["svc.count", "svc.sum", "svc.max"],
      };
      const { body } = await json<{ data: { metrics: { lat: Record<string, number> } }[] }>(
        `${hub}/v0/metrics/query`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(query),
        },
      );
      const total = (name: string) => body.data.reduce((n, d) => n + (d.metrics.lat[name] ?? 0), 0);
      const n = rows * puts;
      assert.equal(total("svc.count"), n);
      assert.equal(total("svc.sum"), (n * (n - 1)) / 2);
    } finally {
      assert.equal((await second.stop("SIGTERM")).code, 0);
    }
  });
});
