/**
 * Attacks through the bus: messages beyond the setup's limits (DESIGN 5.4b, docs/security.md
 * "Limits") published straight to a real NATS JetStream stream that a real hub consumes (a hub
 * trusts no gateway). Each goes to the dead-letter file with a reason naming the limit, is counted
 * at the hub's /metrics and never reaches the store; the valid message behind them is stored.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { startHubService } from "../../src/compose/hub-service.js";
import type { RunningService } from "../../src/compose/service.js";
import { DEAD_LETTER_FILE } from "../../src/config/defaults.js";
import { parseSetup } from "../../src/config/load-setup.js";
import type { PublicV2Message } from "../../src/messages/types.js";
import {
  NATS_SKIP,
  NATS_URL,
  NatsAdmin,
  natsReachable,
  subjectFor,
  tableMessage,
  uniqueNames,
  waitFor,
} from "../helpers/nats.js";
import { tempDir } from "../helpers/vigil-process.js";
import { entities, metricNames, refusals, until } from "./limits-helpers.js";

const reachable = await natsReachable();
const names = uniqueNames("limits");
const setup = parseSetup(`
gateway:
  name: GW
  publish: [{ nats: { url: "${NATS_URL}", stream: ${names.stream}, subjectPrefix: ${names.subjectPrefix} } }]
hub: { port: 0, security: { enabled: false } }
`);
const dir = tempDir("limits-bus");
let admin: NatsAdmin | undefined;
let hub: RunningService | undefined;
let base = "";

before(async () => {
  if (!reachable) return;
  admin = await NatsAdmin.open();
  admin.track(names.stream);
  hub = await startHubService({
    setup,
    storeUrl: `duckdb:${dir.path}/vigil.duckdb`,
    busUrl: NATS_URL,
    dataDir: dir.path,
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
  });
  base = hub.urls.hub ?? "";
  // The hub's consumer makes the stream in the background: a publish before it would find no stream.
  const a = admin;
  await waitFor("the hub to make its stream", () => a.exists(names.stream), 60_000);
});
after(async () => {
  await hub?.stop(5000);
  await admin?.cleanup();
  dir.remove();
});

const long = (bytes: number) => "x".repeat(bytes);
const TIME = "2024-05-01T12:00:00.000Z";
const entity = (name: string, attributes: Record<string, string>): PublicV2Message => ({
  type: "managedEntity",
  operation: "create",
  data: { timestamp: TIME, target: { gateway: "GW1", probe: "probe1", managedEntity: name }, attributes },
});
const table = (change: (m: ReturnType<typeof tableMessage>) => void): PublicV2Message => {
  const message = tableMessage("r1");
  change(message);
  return message;
};

// One line per attack (each within NATS's 1 MiB payload): the message and the limit it breaks.
const attacks: { name: string; limit: string; message: PublicV2Message; text?: string }[] = [
  {
    name: "an attribute value of 5,000 bytes",
    limit: "attributeValueBytes",
    message: entity("bad-1", { Region: long(5000) }),
  },
  {
    name: "65 attributes",
    limit: "attributesPerEntity",
    message: entity("bad-2", Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`a${i}`, "v"]))),
  },
  { name: "a managed entity name of 2,000 bytes", limit: "nameBytes", message: entity(long(2000), {}) },
  {
    name: "a cell of 100,000 bytes",
    limit: "cellBytes",
    message: table((m) => {
      m.data.row = { name: "r1", queued: long(100_000) };
    }),
  },
  {
    name: "a column name of 2,000 bytes",
    limit: "nameBytes",
    message: table((m) => {
      m.data.row = { name: "r1", [long(2000)]: "1" };
    }),
  },
  {
    name: "a text nested 100,000 arrays deep",
    limit: "jsonDepth",
    message: entity("bad-deep", {}),
    text: `${"[".repeat(100_000)}${"]".repeat(100_000)}`,
  },
];

describe("limits at the hub's bus consumer", { skip: reachable ? false : NATS_SKIP }, () => {
  test("each message beyond a limit is dead-lettered with the limit, counted, not stored; the one behind is stored", async () => {
    const a = admin as NatsAdmin;
    const before = new Map(
      await Promise.all(attacks.map(async (x) => [x.limit, await refusals(base, "bus", x.limit)] as const)),
    );
    for (const [i, attack] of attacks.entries()) {
      await a.publishRaw(
        subjectFor(names.subjectPrefix, attack.message),
        attack.text ?? JSON.stringify(attack.message),
        `bad-${i}`,
      );
    }
    const valid = entity("valid-behind", { Region: "emea" });
    await a.publishRaw(subjectFor(names.subjectPrefix, valid), JSON.stringify(valid), "good-1");
    await until(
      async () =>
        (await entities(base)).some((e) => e.attributes["svc.name"] === "valid-behind") ? true : undefined,
      "the valid message behind the refused ones to be stored",
    );
    // Dead letters are written beside the store's commits, not before them: read once all are there.
    const letters = await until(async () => {
      const written = readFileSync(join(dir.path, DEAD_LETTER_FILE), "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { id: string; reason: string });
      return attacks.every((_, i) => written.some((l) => l.id === `bad-${i}`)) ? written : undefined;
    }, "every refused message in the dead-letter file");
    attacks.forEach((attack, i) => {
      const letter = letters.find((l) => l.id === `bad-${i}`);
      assert.ok(letter, `${attack.name}: dead-lettered`);
      assert.match(letter.reason, new RegExp(`limits\\.${attack.limit} \\(\\d+\\)`), attack.name);
    });
    for (const [limit, count] of before) {
      const expected = count + attacks.filter((x) => x.limit === limit).length;
      assert.equal(await refusals(base, "bus", limit), expected, `refusals of ${limit}`);
    }
    const stored = (await entities(base)).map((e) => e.attributes["svc.name"]);
    assert.deepEqual(stored, ["valid-behind"]);
    assert.deepEqual(await metricNames(base), []);
  });
});
