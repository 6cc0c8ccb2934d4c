/**
 * The three parts as their own processes (DESIGN 1): `vigil hub --bus nats://…`,
 * `vigil gateway` publishing to NATS JetStream (a throwaway stream), and `vigil probe --gateway URL`
 * taking its part of the setup over the WebSocket link. A PUT on the probe becomes queryable on the
 * hub; a gateway restart makes the probe reconnect and send its state again (published as snapshot
 * messages); a setup change reaches the running probe over the link; SIGTERM stops each cleanly.
 */
import assert from "node:assert/strict";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { maxValue } from "../helpers/hub-query.js";
import { NATS_SKIP, NATS_URL, NatsAdmin, natsReachable, uniqueNames } from "../helpers/nats.js";
import { needs } from "../helpers/needs.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";
import { P1_SECRET } from "../link/helpers.js";

const reachable = await natsReachable();

function setup(
  names: { stream: string; subjectPrefix: string },
  gatewayPort: number,
  extraEntity = "",
): string {
  return `gateway:
  name: GW-P
  port: ${gatewayPort}
  publish:
    - nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} }
probes:
  - name: p1
    restApiHttpPort: 0
    linkSecret: ${P1_SECRET}
    managedEntities:
      - name: me1
        attributes: { Region: emea }
        samplers:
          - { name: s, plugin: rest-api }
${extraEntity}hub:
  port: 0
  security: { enabled: false }
`;
}

const EXTRA = `      - name: me2
        samplers:
          - { name: t, plugin: rest-api }
`;

async function put(url: string, body: unknown): Promise<number> {
  const response = await fetch(url, { method: "PUT", body: JSON.stringify(body) });
  await response.arrayBuffer();
  return response.status;
}

const maxOf = (hub: string, entity: string, include: string) => maxValue(hub, { entity, include });

describe("vigil probe, gateway and hub as separate processes", {
  skip: needs(reachable ? false : NATS_SKIP),
}, () => {
  const dir = tempDir("processes");
  const names = uniqueNames("procs");
  let admin: NatsAdmin | undefined;
  let hub: VigilProcess;
  let gateway: VigilProcess;
  let probe: VigilProcess;
  let hubUrl = "";
  let probeUrl = "";
  let gatewayPort = 0;
  let config = "";

  const startGateway = () =>
    startVigil(
      ["gateway", "--config", config, "--host", "127.0.0.1", "--data-dir", join(dir.path, "gw")],
      dir.path,
    );

  before(async () => {
    admin = await NatsAdmin.open();
    admin.track(names.stream);
    config = writeFile(dir.path, "setup.yaml", setup(names, 0));
    hub = startVigil(
      [
        "hub",
        "--config",
        config,
        "--bus",
        NATS_URL,
        "--host",
        "127.0.0.1",
        "--data-dir",
        join(dir.path, "hub"),
      ],
      dir.path,
    );
    hubUrl = await hub.url("hub");
    gateway = startGateway();
    const gatewayUrl = await gateway.url("gateway");
    gatewayPort = Number(new URL(gatewayUrl).port);
    // Pin the gateway's port in the file, so a restarted gateway comes back where the probe looks.
    writeFileSync(config, setup(names, gatewayPort));
    // The probe's link secret from the environment (VIGIL_LINK_SECRET); the other process tests
    // give it with --link-secret-file.
    probe = startVigil(["probe", "--gateway", gatewayUrl, "--name", "p1", "--host", "127.0.0.1"], dir.path, {
      VIGIL_LINK_SECRET: P1_SECRET,
    });
    probeUrl = await probe.url("probe", "p1");
  });

  after(async () => {
    for (const p of [probe, gateway, hub]) await p?.stop("SIGKILL");
    await admin?.cleanup();
    dir.remove();
  });

  test("a PUT on the probe becomes queryable on the hub", async () => {
    const dv = `${probeUrl}/v1/managedEntity/me1/sampler/s/dataview/queue`;
    assert.equal(
      await put(dv, [
        { name: "a", v: 41 },
        { name: "b", v: 42 },
      ]),
      200,
    );
    assert.equal(await put(`${dv}/row/a`, { name: "a", v: 43 }), 200);
    const max = await eventually(async () => {
      const m = await maxOf(hubUrl, "me1", "s/queue/{rowname}/v");
      return m === 43 ? m : undefined;
    }, 30_000);
    assert.equal(max, 43);
    const entities = (await (await fetch(`${hubUrl}/v0/entities`)).json()) as {
      attributes: Record<string, string>;
    }[];
    const me1 = entities.find((e) => e.attributes["svc.name"] === "me1");
    assert.equal(me1?.attributes["user.Region"], "emea");
    assert.equal(me1?.attributes["svc.probe"], "p1");
  });

  test("a restarted gateway gets the probe's state again, as snapshot messages", async () => {
    assert.deepEqual(await gateway.stop("SIGTERM"), { code: 0, signal: null });
    gateway = startGateway();
    await gateway.url("gateway");
    // The probe reconnects by itself; the NATS stream then holds snapshots of its rows.
    await eventually(async () => {
      const stored = await admin?.read(names.stream);
      const snapshots = (stored ?? [])
        .map((m) => JSON.parse(new TextDecoder().decode(m.data)) as { type: string; operation: string })
        .filter((m) => m.type === "table" && m.operation === "snapshot");
      return snapshots.length >= 2 ? true : undefined;
    }, 30_000);
    // And the probe keeps working through the new gateway.
    const dv = `${probeUrl}/v1/managedEntity/me1/sampler/s/dataview/queue`;
    assert.equal(await put(`${dv}/row/b`, { name: "b", v: 99 }), 200);
    await eventually(
      async () => ((await maxOf(hubUrl, "me1", "s/queue/{rowname}/v")) === 99 ? true : undefined),
      30_000,
    );
  });

  test("a setup change reaches the running probe over the link (rename-and-replace of the file)", async () => {
    const next = join(dir.path, "setup.yaml.tmp");
    writeFileSync(next, setup(names, gatewayPort, EXTRA));
    renameSync(next, config);
    const url = `${probeUrl}/v1/managedEntity/me2/sampler/t/dataview/new`;
    const status = await eventually(async () => {
      const s = await put(url, [{ name: "x", v: 7 }]);
      return s === 200 ? s : undefined;
    }, 30_000);
    assert.equal(status, 200);
    await eventually(
      async () => ((await maxOf(hubUrl, "me2", "t/new/{rowname}/v")) === 7 ? true : undefined),
      30_000,
    );
  });

  test("SIGTERM stops each process cleanly (exit 0)", async () => {
    for (const p of [probe, gateway, hub]) {
      assert.deepEqual(await p.stop("SIGTERM"), { code: 0, signal: null });
    }
  });
});
