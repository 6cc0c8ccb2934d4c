/**
 * The store under attack (DESIGN 5.4b, last bullet): a real `vigil hub` on an embedded DuckDB file
 * with a small `memory_limit` (`--store duckdb:PATH?memory_limit=32MB`) is fed entities with the
 * largest attributes the limits allow (64 attributes, 1,024-byte names, 4,096-byte values, a
 * 1,024-byte entity name): about 330 KiB each, so their attributes together outgrow DuckDB's memory.
 * Then it updates them all, which drives the writes into DuckDB's limit too. Every backfill answer
 * is 200 or a 503 with `Retry-After` and the error body, and a write refused so goes in when posted
 * again (it failed alone: the store did not stay out of memory); queries and `/v0/ping` go on answering; the
 * hub stops cleanly and starts again on its data dir, and every acknowledged entity is there with
 * the attributes of a version posted no earlier than its last acknowledged one; the same after a
 * `kill -9` that leaves updates in DuckDB's WAL, which the start replays under the same limit.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { startVigil, tempDir, type VigilProcess, writeFile } from "../helpers/vigil-process.js";

const START_MS = 60_000; // how long a process may take to start on a loaded machine
const ENTITIES = 110; // × ~330 KiB of attributes: about 36 MiB, past the 32 MB limit
const ATTRIBUTES = 64;
const NAME_BYTES = 1_024;
const VALUE_BYTES = 4_096;
const T0 = Date.parse("2026-04-01T00:00:00.000Z");
/** Posts of one version: a write that ran out of memory fails alone, so the next attempt goes in. */
const ATTEMPTS = 3;

/** Entity `i`'s name: 1,024 bytes, told apart by its leading number. */
const entityName = (i: number) => `e${i}-`.padEnd(NAME_BYTES, "n");

/** The attributes of version `version` of entity `i`: the largest the limits allow. */
function attributes(i: number, version: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let a = 0; a < ATTRIBUTES; a += 1) {
    out[`a${a}-`.padEnd(NAME_BYTES, "k")] = `${i}.${version}.${a}-`.padEnd(VALUE_BYTES, "v");
  }
  return out;
}

function entityMessage(i: number, version: number) {
  return {
    type: "managedEntity",
    operation: version === 0 ? "create" : "update",
    data: {
      timestamp: new Date(T0 + version * 1_000_000 + i).toISOString(),
      target: { gateway: "G", probe: "p", managedEntity: entityName(i) },
      attributes: attributes(i, version),
    },
  };
}

interface Entity {
  id: number;
  attributes: Record<string, string>;
}

describe("a DuckDB store driven to its memory limit", { timeout: 300_000 }, () => {
  const dir = tempDir("store-memory");
  const config = writeFile(
    dir.path,
    "setup.yaml",
    "gateway:\n  name: G\nhub:\n  port: 0\n  security: { enabled: false }\n",
  );
  const args = [
    "hub",
    "--config",
    config,
    "--data-dir",
    join(dir.path, "data"),
    "--store",
    `duckdb:${join(dir.path, "data", "hub.duckdb")}?memory_limit=32MB`,
    "--host",
    "127.0.0.1",
  ];
  const processes: VigilProcess[] = [];
  const start = async (): Promise<string> => {
    const hub = startVigil(args, dir.path);
    processes.push(hub);
    const url = await Promise.race([
      hub.url("hub"),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the hub did not start")), START_MS),
      ),
    ]);
    return url.replace("0.0.0.0", "127.0.0.1");
  };
  after(async () => {
    for (const p of processes) await p.stop("SIGKILL");
    dir.remove();
  });

  /** Per entity, the versions posted, and the last one answered 200. */
  const posted = new Map<number, number[]>();
  const acknowledged = new Map<number, number>();
  const refusals: unknown[] = [];

  /** Posts version `version` of entity `i`, again after a 503 (at most ATTEMPTS times in all). */
  const post = async (url: string, i: number, version: number): Promise<void> => {
    posted.set(i, [...(posted.get(i) ?? []), version]);
    for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
      const response = await fetch(`${url}/v0/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([entityMessage(i, version)]),
      });
      const body = (await response.json()) as {
        accepted?: number;
        status?: number;
        title?: string;
        body?: string;
      };
      if (response.status === 200) {
        assert.equal(body.accepted, 1, JSON.stringify(body));
        acknowledged.set(i, version);
        return;
      }
      assert.equal(response.status, 503, `backfill answered ${response.status}: ${JSON.stringify(body)}`);
      assert.ok(response.headers.get("retry-after") !== null, "a 503 carries Retry-After");
      assert.deepEqual(Object.keys(body).sort(), ["body", "status", "title"]);
      assert.doesNotMatch(String(body.body), /\n\s+at /, "no stack trace");
      refusals.push(body);
    }
  };

  const entities = async (url: string): Promise<Entity[]> => {
    const response = await fetch(`${url}/v0/entities`);
    const text = await response.text();
    assert.equal(response.status, 200, text.slice(0, 500));
    return JSON.parse(text) as Entity[];
  };

  /** Every acknowledged entity is there, with a version posted no earlier than its last acknowledged one. */
  const checkEverything = (found: Entity[]): void => {
    const byName = new Map(found.map((e) => [e.attributes["svc.name"], e]));
    for (const [i, version] of acknowledged) {
      const entity = byName.get(entityName(i));
      assert.ok(entity !== undefined, `acknowledged entity ${i} is missing`);
      const stored = Number(
        /^\d+\.(\d+)\./.exec(entity.attributes[`user.${"a0-".padEnd(NAME_BYTES, "k")}`] ?? "")?.[1],
      );
      const later = (posted.get(i) ?? []).filter((v) => v >= version);
      assert.ok(later.includes(stored), `entity ${i} holds version ${stored}, acknowledged ${version}`);
      assert.deepEqual(
        Object.fromEntries(Object.entries(entity.attributes).filter(([k]) => k.startsWith("user."))),
        Object.fromEntries(Object.entries(attributes(i, stored)).map(([k, v]) => [`user.${k}`, v])),
        `entity ${i}'s attributes are whole`,
      );
    }
  };

  let url = "";
  test("backfill answers 200 or 503, queries and ping go on answering", async () => {
    url = await start();
    for (const version of [0, 1]) {
      for (let i = 0; i < ENTITIES; i += 1) await post(url, i, version);
    }
    // A failed write fails that write only: each version went in within ATTEMPTS posts.
    assert.deepEqual(
      [...acknowledged].filter(([, version]) => version !== 1).map(([i]) => i),
      [],
      "entities whose update was never acknowledged",
    );
    assert.equal(acknowledged.size, ENTITIES);
    checkEverything(await entities(url));
    assert.equal((await fetch(`${url}/v0/ping`)).status, 200);
    const status = (await (await fetch(`${url}/v1/status`)).json()) as {
      storeState: { state: string; entityReads: string };
    };
    assert.equal(status.storeState.state, "ok");
    // The attributes outgrew memory_limit: the store reads them entity by entity.
    assert.equal(status.storeState.entityReads, "entity by entity");
    const summary = await fetch(`${url}/v0/entities/summary`);
    assert.equal(summary.status, 200);
    console.log(`# ${acknowledged.size} entities acknowledged, ${refusals.length} backfills answered 503`);
  });

  test("the hub stops, starts again on its data dir, and every acknowledged entity is there", async () => {
    const first = processes.at(-1) as VigilProcess;
    assert.deepEqual(await first.stop("SIGTERM"), { code: 0, signal: null });
    url = await start();
    checkEverything(await entities(url));
    assert.equal((await fetch(`${url}/v0/ping`)).status, 200);
  });

  test("killed with updates in its WAL, it starts again and every acknowledged entity is there", async () => {
    for (let i = 0; i < ENTITIES; i += 3) await post(url, i, 2);
    const second = processes.at(-1) as VigilProcess;
    assert.deepEqual(await second.stop("SIGKILL"), { code: null, signal: "SIGKILL" });
    url = await start();
    checkEverything(await entities(url));
    assert.equal((await fetch(`${url}/v0/ping`)).status, 200);
  });
});
