/**
 * The scale-out deployment of docs/deploy.md as real processes (DESIGN 1, 5.5): two gateways, each
 * with its own setup, name and linked probe (`vigil probe --link-secret-file`, a secret per probe),
 * publishing to ONE JetStream stream (a test-unique stream name and subject prefix), and two hubs
 * whose setups hold only `hub:` (security on, one application key), consuming that stream through
 * `--bus nats://…?stream=…&subjectPrefix=…` with one shared durable consumer into ONE PostgreSQL
 * database. Headlines and tables (numeric and text-only cells) pushed through both probes' HTTP APIs
 * must be stored once each and answered identically by either hub.
 *
 * What each hub must store is read back from the stream itself (every non-blank cell of every
 * headline and table message is one sample, DESIGN 4.3), after checking that the stream holds the
 * values pushed, in order.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { type as osType } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { PG_SKIP, PgTestDatabase, postgresReachable } from "../helpers/postgres.js";
import {
  eventually,
  startVigil,
  tempDir,
  type VigilProcess,
  writeFile,
  writeSecretFile,
} from "../helpers/vigil-process.js";

const natsUp = await natsReachable();
const pgUp = await postgresReachable();

/** The durable consumer every hub shares by default (NATS_DEFAULT_DURABLE). */
const DURABLE = "vigil-hub";
const ENTITY = "web-01";
const CLIENT_ID = "e2e-reader";
const CLIENT_SECRET = randomBytes(12).toString("hex");

interface GatewayPlan {
  readonly gateway: string;
  readonly probe: string;
  readonly hostname: string;
  readonly region: string;
  /** Added to every pushed number, so the two gateways' values differ. */
  readonly base: number;
}

const GATEWAYS: readonly GatewayPlan[] = [
  { gateway: "GW-A", probe: "probe-a", hostname: "host-a.example", region: "emea", base: 10 },
  { gateway: "GW-B", probe: "probe-b", hostname: "host-b.example", region: "apac", base: 20 },
];

/** One metric message as the stream holds it (the fields this test reads). */
interface MetricsMessage {
  type: string;
  operation: string;
  data: {
    sampleTime: string;
    target: { gateway: string; managedEntity: string; sampler: string; dataview: string; row?: string };
    row: Record<string, string>;
  };
}

/** A concrete cell reference (`s/queue/eu/depth`, headline `s/queue//totalRows`) of one gateway's entity. */
type CellKey = string;
const cellKey = (gateway: string, path: string): CellKey => JSON.stringify([gateway, path]);

const numeric = (value: string): boolean => /^-?\d+(\.\d+)?$/.test(value);

interface EntityAnswer {
  id: number;
  attributes: Record<string, string>;
  isDeleted: boolean;
}

interface MetricAnswer {
  name: string;
  type: string;
  unit: string;
}

const skip = needs(!natsUp ? NATS_SKIP : !pgUp ? PG_SKIP : false);

describe("two gateways on one NATS stream, two hubs with hub-only setups on one PostgreSQL database", {
  skip,
}, () => {
  const dir = tempDir("deploy");
  const names = uniqueNames("deploy");
  const busUrl = `${NATS_URL}?stream=${names.stream}&subjectPrefix=${names.subjectPrefix}`;
  const processes: VigilProcess[] = [];
  let admin: NatsAdmin | undefined;
  let db: PgTestDatabase | undefined;
  const hubs: { url: string; token: string }[] = [];
  const gateways: VigilProcess[] = [];
  const probes: VigilProcess[] = [];
  const hubProcesses: VigilProcess[] = [];
  /** What the hubs must store: the values of each cell, in the order the hub answers them. */
  const expected = new Map<CellKey, string[]>();
  /** The values of each cell in the order the stream holds them (its sequence). */
  const inStream = new Map<CellKey, string[]>();

  const start = (args: string[]): VigilProcess => {
    const child = startVigil([...args, "--host", "127.0.0.1", "--log-level", "info"], dir.path);
    processes.push(child);
    return child;
  };

  const gatewaySetup = (plan: GatewayPlan): string => {
    const secretFile = writeSecretFile(dir.path, `${plan.probe}.secret`, randomBytes(24).toString("hex"));
    return writeFile(
      dir.path,
      `${plan.gateway}.yaml`,
      `gateway:
  name: ${plan.gateway}
  port: 0
  publish:
    - nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} }
probes:
  - name: ${plan.probe}
    hostname: ${plan.hostname}
    restApiHttpPort: 0
    linkSecretFile: ${secretFile}
    managedEntities:
      - name: ${ENTITY}
        attributes: { Region: ${plan.region} }
        samplers:
          - { name: s, plugin: rest-api }
`,
    );
  };

  /** A hub's own setup: only `hub:` (DESIGN 1), security on with one read-only application key. */
  const hubSetup = (name: string): string =>
    writeFile(
      dir.path,
      `${name}.yaml`,
      `hub:
  port: 0
  security:
    enabled: true
    appKeys:
      - { clientId: ${CLIENT_ID}, clientSecret: "${CLIENT_SECRET}", roles: [read] }
`,
    );

  const tokenOf = async (hub: string): Promise<string> => {
    const basic = Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64");
    const response = await fetch(`${hub}/token`, { headers: { authorization: `Basic ${basic}` } });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    return (JSON.parse(text) as { access_token: string }).access_token;
  };

  const getJson = async <T>(hub: { url: string; token: string }, path: string): Promise<T> => {
    const response = await fetch(`${hub.url}${path}`, { headers: { authorization: `Bearer ${hub.token}` } });
    const text = await response.text();
    assert.equal(response.status, 200, `${path}: ${text}`);
    return JSON.parse(text) as T;
  };

  const put = async (url: string, body: unknown): Promise<void> => {
    const response = await fetch(url, { method: "PUT", body: JSON.stringify(body) });
    const text = await response.text();
    assert.equal(response.status, 200, `${url}: ${text}`);
  };

  /** The metrics messages in the stream, in sequence order. */
  const published = async (): Promise<MetricsMessage[]> =>
    ((await admin?.read(names.stream)) ?? [])
      .map((m) => JSON.parse(new TextDecoder().decode(m.data)) as MetricsMessage)
      .filter((m) => m.type === "headline" || m.type === "table");

  const range = () => ({
    from: new Date(Date.now() - 3_600_000).toISOString(),
    to: new Date(Date.now() + 3_600_000).toISOString(),
  });

  before(async () => {
    admin = await NatsAdmin.open();
    admin.track(names.stream);
    db = await PgTestDatabase.create("deploy");

    // The hubs first, one after the other: each has only its hub-only setup and the --bus URL.
    for (const name of ["hub-1", "hub-2"]) {
      const hub = start([
        "hub",
        "--config",
        hubSetup(name),
        "--bus",
        busUrl,
        "--store",
        db.url,
        "--data-dir",
        join(dir.path, name),
      ]);
      hubProcesses.push(hub);
      const url = await hub.url("hub");
      hubs.push({ url, token: await tokenOf(url) });
    }

    // Each gateway with its own setup; each probe linked with its own secret file.
    const probeUrls: string[] = [];
    for (const plan of GATEWAYS) {
      const config = gatewaySetup(plan);
      const gateway = start([
        "gateway",
        "--config",
        config,
        "--data-dir",
        join(dir.path, plan.gateway),
        "--hub",
        hubs[0]?.url ?? "",
      ]);
      gateways.push(gateway);
      const gatewayUrl = await gateway.url("gateway");
      const probe = start([
        "probe",
        "--gateway",
        gatewayUrl,
        "--name",
        plan.probe,
        "--link-secret-file",
        join(dir.path, `${plan.probe}.secret`),
      ]);
      probes.push(probe);
      probeUrls.push(await probe.url("probe", plan.probe));
    }

    // Tables (a numeric and a text-only column) and, with them, the headlines (totalRows, samplingStatus).
    for (const [index, plan] of GATEWAYS.entries()) {
      const dv = `${probeUrls[index]}/v1/managedEntity/${ENTITY}/sampler/s/dataview/queue`;
      const b = plan.base;
      await put(dv, [
        { name: "eu", depth: b + 1, state: "idle" },
        { name: "us", depth: b + 2, state: "busy" },
      ]);
      await put(`${dv}/row/eu`, { name: "eu", depth: b + 3, state: "busy" });
      await put(`${dv}/row/us`, { name: "us", depth: b + 4, state: "idle" });
      await put(`${dv}/row/ap`, { name: "ap", depth: b + 5, state: "idle" }); // totalRows 2 → 3
    }

    // Both gateways have published the last push, and the hubs have stored (acked) everything.
    await eventually(async () => {
      const messages = await published();
      const done = GATEWAYS.every(
        ({ gateway }) =>
          messages.some((m) => m.data.target.gateway === gateway && m.data.target.row === "ap") &&
          messages.some((m) => m.data.target.gateway === gateway && m.data.row.totalRows === "3"),
      );
      return done ? true : undefined;
    }, 60_000);
    await eventually(
      async () => ((await admin?.consumerDone(names.stream, DURABLE)) === true ? true : undefined),
      60_000,
    );

    const cells = new Map<CellKey, { at: string; value: string }[]>();
    for (const message of await published()) {
      if (message.operation === "delete") continue;
      const { target, sampleTime, row } = message.data;
      for (const [column, value] of Object.entries(row)) {
        if (value === "") continue; // a blank cell is no sample
        const path = `${target.sampler}/${target.dataview}/${target.row ?? ""}/${column}`;
        const key = cellKey(target.gateway, path);
        cells.set(key, [...(cells.get(key) ?? []), { at: sampleTime, value }]);
      }
    }
    // The hub orders a cell's values by time, ties by text (docs/hub-api.md): a gateway may publish
    // two changes of a row in one batch, with one sampleTime.
    for (const [key, values] of cells) {
      inStream.set(
        key,
        values.map((v) => v.value),
      );
      const sorted = [...values].sort((x, y) =>
        x.at === y.at ? (x.value < y.value ? -1 : x.value > y.value ? 1 : 0) : x.at < y.at ? -1 : 1,
      );
      expected.set(
        key,
        sorted.map((v) => v.value),
      );
    }
  });

  after(async () => {
    for (const child of processes) await child.stop("SIGKILL").catch(() => undefined);
    await admin?.cleanup();
    await db?.drop();
    dir.remove();
  });

  const entitiesOf = (hub: { url: string; token: string }) => getJson<EntityAnswer[]>(hub, "/v0/entities");
  const entityOf = (list: EntityAnswer[], gateway: string): EntityAnswer => {
    const entity = list.find((e) => e.attributes["svc.gateway"] === gateway);
    assert.ok(entity, `no entity of ${gateway} in ${JSON.stringify(list)}`);
    return entity;
  };

  test("the stream holds every value pushed through both probes, in order, each once", () => {
    for (const { gateway, base: b } of GATEWAYS) {
      const values = (path: string) => inStream.get(cellKey(gateway, path));
      assert.deepEqual(values("s/queue/eu/depth"), [String(b + 1), String(b + 3)]);
      assert.deepEqual(values("s/queue/us/depth"), [String(b + 2), String(b + 4)]);
      assert.deepEqual(values("s/queue/ap/depth"), [String(b + 5)]);
      assert.deepEqual(values("s/queue/eu/state"), ["idle", "busy"]);
      assert.deepEqual(values("s/queue/us/state"), ["busy", "idle"]);
      assert.deepEqual(values("s/queue/ap/state"), ["idle"]);
      assert.deepEqual(values("s/queue//totalRows")?.slice(-1), ["3"]);
      assert.ok((values("s/queue//samplingStatus") ?? []).length > 0, "samplingStatus published");
    }
  });

  test("every value is stored once: raw data of each cell, the same from either hub", async () => {
    for (const hub of hubs) {
      const list = await entitiesOf(hub);
      for (const { gateway } of GATEWAYS) {
        const { id } = entityOf(list, gateway);
        for (const [key, values] of expected) {
          const [keyGateway, path] = JSON.parse(key) as [string, string];
          if (keyGateway !== gateway) continue;
          const query = new URLSearchParams({ path, ...range(), limit: "10000" });
          const answer = await getJson<{ totalCount: number; values: { value: string }[] }>(
            hub,
            `/v0/entities/${id}/metrics/data?${query}`,
          );
          assert.equal(answer.totalCount, values.length, `${hub.url} ${gateway} ${path}`);
          assert.deepEqual(
            answer.values.map((v) => v.value),
            values,
            `${hub.url} ${gateway} ${path}`,
          );
        }
      }
    }
  });

  test("every value is stored once: svc.count of numeric and text-only cells, the same from either hub", async () => {
    const countOf = async (hub: { url: string; token: string }, gateway: string, include: string) => {
      const response = await fetch(`${hub.url}/v0/metrics/query`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${hub.token}` },
        body: JSON.stringify({
          zoneId: "UTC",
          filter: { entities: `svc.gateway = "${gateway}" AND svc.name = "${ENTITY}"`, range: range() },
          metrics: [{ identifier: "m", include: [include] }],
          aggregations: ["svc.count"],
          bucketing: { duration: "P1D" },
        }),
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      const body = JSON.parse(text) as { data: { metrics: { m: Record<string, number | null> } }[] };
      return body.data.reduce((n, d) => n + (d.metrics.m["svc.count"] ?? 0), 0);
    };
    const numericIn = (gateway: string, matches: (path: string) => boolean): number => {
      let n = 0;
      for (const [key, values] of expected) {
        const [keyGateway, path] = JSON.parse(key) as [string, string];
        if (keyGateway === gateway && matches(path)) n += values.filter(numeric).length;
      }
      return n;
    };
    for (const hub of hubs) {
      for (const { gateway } of GATEWAYS) {
        const depth = numericIn(gateway, (p) => /^s\/queue\/[^/]+\/depth$/.test(p));
        assert.equal(depth, 5, "five numbers pushed in the depth column");
        assert.equal(await countOf(hub, gateway, "s/queue/{rowname}/depth"), depth, `${hub.url} ${gateway}`);
        assert.equal(
          await countOf(hub, gateway, "s/queue/{rowname}/state"),
          0,
          "a text-only cell counts none",
        );
        assert.equal(
          await countOf(hub, gateway, "s/queue//totalRows"),
          numericIn(gateway, (p) => p === "s/queue//totalRows"),
          `${hub.url} ${gateway} totalRows`,
        );
      }
    }
  });

  test("/v0/entities: both gateways' entities, answered identically by either hub", async () => {
    const [first, second] = await Promise.all(hubs.map(entitiesOf));
    assert.deepEqual(second, first);
    assert.equal(first?.length, GATEWAYS.length);
    for (const plan of GATEWAYS) {
      const entity = entityOf(first ?? [], plan.gateway);
      assert.equal(entity.isDeleted, false);
      assert.equal(entity.attributes["svc.name"], ENTITY);
      assert.equal(entity.attributes["svc.probe"], plan.probe);
      assert.equal(entity.attributes["user.Region"], plan.region);
    }
  });

  test("svc.os-type and svc.hostname of both gateways' entities, answered identically by either hub", async () => {
    for (const hub of hubs) {
      const list = await entitiesOf(hub);
      for (const plan of GATEWAYS) {
        const entity = entityOf(list, plan.gateway);
        assert.equal(entity.attributes["svc.os-type"], osType(), `${hub.url} ${plan.gateway} svc.os-type`);
        assert.equal(
          entity.attributes["svc.hostname"],
          plan.hostname,
          `${hub.url} ${plan.gateway} svc.hostname`,
        );
        for (const attribute of ["svc.os-type", "svc.hostname"]) {
          const values = await getJson<string[]>(hub, `/v0/entities/attributes/${attribute}`);
          assert.ok(
            values.includes(entity.attributes[attribute] ?? ""),
            `${hub.url} ${attribute}: ${values}`,
          );
        }
      }
    }
  });

  test("/v0/entities/metrics?plugin=rest-api: identical on either hub, a text-only cell typed string", async () => {
    const path = "/v0/entities/metrics?plugin=rest-api&includeNonNumeric=true";
    const [first, second] = await Promise.all(hubs.map((hub) => getJson<MetricAnswer[]>(hub, path)));
    assert.deepEqual(second, first);
    const byName = new Map((first ?? []).map((m) => [m.name, m]));
    assert.deepEqual(byName.get("s/queue/{rowname}/state"), {
      name: "s/queue/{rowname}/state",
      type: "string",
      unit: "none",
    });
    assert.deepEqual(byName.get("s/queue/{rowname}/depth"), {
      name: "s/queue/{rowname}/depth",
      type: "float64",
      unit: "none",
    });
    assert.deepEqual(byName.get("s/queue//totalRows"), {
      name: "s/queue//totalRows",
      type: "float64",
      unit: "none",
    });
    assert.equal(byName.get("s/queue//samplingStatus")?.type, "string");
  });

  test("SIGTERM stops every process cleanly (exit 0)", async () => {
    for (const child of [...probes, ...gateways, ...hubProcesses]) {
      assert.deepEqual(await child.stop("SIGTERM"), { code: 0, signal: null });
    }
  });
});
