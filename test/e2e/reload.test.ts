/**
 * Configuration reload (DESIGN 1) on a real `vigil up`: SIGHUP reloads instead of ending
 * the process; a new sampler becomes addressable without a restart while PUTs keep flowing, and
 * every PUT the probe acknowledged during the reload is stored; an invalid file is logged and the
 * setup in force stays.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { countSamples } from "../helpers/hub-query.js";
import { eventually, startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

const setup = (extra: string) => `gateway: { name: GW-R, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities:
      - name: me1
        samplers:
          - { name: s, plugin: rest-api }
${extra}hub: { port: 0, security: { enabled: false } }
`;
const EXTRA = "          - { name: extra, plugin: rest-api }\n";

async function put(url: string, body: unknown): Promise<number> {
  const response = await fetch(url, { method: "PUT", body: JSON.stringify(body) });
  await response.arrayBuffer();
  return response.status;
}

const countOf = (hub: string, include: string) => countSamples(hub, { entity: "me1", include });

describe("reload on SIGHUP and on a change of the setup file", () => {
  const dir = tempDir("reload");
  let vigil: VigilProcess;
  let config = "";
  let probe = "";
  let hub = "";

  before(async () => {
    config = writeFile(dir.path, "setup.yaml", setup(""));
    vigil = startVigil(["up", "--config", config, "--data-dir", join(dir.path, "data")], dir.path);
    probe = await vigil.url("probe", "p1");
    hub = await vigil.url("hub");
  });

  after(async () => {
    await vigil.stop("SIGKILL");
    dir.remove();
  });

  test("SIGHUP applies a new sampler while PUTs flow; every acknowledged PUT is stored", async () => {
    const base = `${probe}/v1/managedEntity/me1/sampler/s/dataview/dv`;
    assert.equal(await put(base, [{ name: "r", v: 0 }]), 200);
    let acknowledged = 1;
    let running = true;
    const writer = (async () => {
      for (let i = 1; running && i < 5_000; i++) {
        if ((await put(`${base}/row/r`, { name: "r", v: i })) === 200) acknowledged += 1;
      }
    })();
    writeFileSync(config, setup(EXTRA));
    vigil.child.kill("SIGHUP");
    await vigil.waitFor((l) => l.msg === "reloading the configuration");
    const extra = `${probe}/v1/managedEntity/me1/sampler/extra/dataview/x`;
    await eventually(
      async () => ((await put(extra, [{ name: "a", v: 1 }])) === 200 ? true : undefined),
      20_000,
    );
    running = false;
    await writer;
    assert.equal(vigil.child.exitCode, null, "SIGHUP did not end the process");
    const stored = await eventually(async () => {
      const n = await countOf(hub, "s/dv/{rowname}/v");
      return n >= acknowledged ? n : undefined;
    }, 20_000);
    assert.equal(stored, acknowledged, "each acknowledged PUT once");
  });

  test("an invalid file is logged and the setup in force stays", async () => {
    writeFileSync(config, "gateway: { name: GW-R, port: nope }\n");
    vigil.child.kill("SIGHUP");
    await vigil.waitFor((l) => l.msg === "the setup file is invalid; the setup in force stays");
    assert.equal(
      await put(`${probe}/v1/managedEntity/me1/sampler/extra/dataview/x`, [{ name: "a", v: 2 }]),
      200,
    );
  });

  test("SIGTERM still stops cleanly", async () => {
    assert.deepEqual(await vigil.stop("SIGTERM"), { code: 0, signal: null });
  });
});
