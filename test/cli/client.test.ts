/**
 * The small client of DESIGN 1 — `vigil token`, `vigil entities`, `vigil query` — against a real
 * hub with security on, over real HTTP: tables, `--json` passed through as the hub sent it, the hub
 * URL and credentials from flags or VIGIL_* variables, and the hub's `{title, body}` on errors.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { credentialsFrom } from "../../src/cli/client/connection-options.js";
import { HubClient, HubError } from "../../src/cli/client/hub-client.js";
import { entitiesText } from "../../src/cli/commands/entities.js";
import { queryTable, queryText } from "../../src/cli/commands/query.js";
import { tokenText } from "../../src/cli/commands/token.js";
import {
  CLIENT_ID,
  CLIENT_SECRET,
  countQuery,
  entityMessage,
  OTHER_ID,
  OTHER_SECRET,
  probeMessage,
  type RunningHub,
  rowMessage,
  runCli,
  startHub,
  T0,
} from "./cli-fixture.js";

const dir = mkdtempSync(join(tmpdir(), "vigil-client-"));
let hub: RunningHub;
const app = (id = CLIENT_ID, secret = CLIENT_SECRET) =>
  new HubClient({ url: hub.url, credentials: { kind: "client", clientId: id, clientSecret: secret } });

before(async () => {
  hub = await startHub(true);
  const messages = [
    probeMessage,
    entityMessage("web-01", { Region: "emea", ["__proto__"]: "data", Evil: "\u001b[31mred" }),
    entityMessage("web-02", { Region: "amer" }),
    rowMessage("web-01", "EURUSD", "10", T0 + 1_000),
    rowMessage("web-01", "EURUSD", "20", T0 + 2_000),
    rowMessage("web-01", "GBPUSD", "60", T0 + 3_000),
  ];
  const answer = await app().request("POST", "/v0/messages", {
    text: JSON.stringify(messages),
    contentType: "application/json",
  });
  assert.deepEqual(JSON.parse(answer.text), { accepted: 6, duplicates: 0, rejected: [] });
});
after(async () => {
  await hub.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("vigil token", () => {
  test("prints the access token alone, or the hub's whole answer with --json", async () => {
    const token = await tokenText(app(), false);
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, "a JWT");
    const json = JSON.parse(await tokenText(app(), true)) as Record<string, unknown>;
    assert.equal(json.token_type, "Bearer");
    assert.equal(typeof json.refresh_token, "string");
    assert.equal(typeof json.expires, "number");
  });

  test("a wrong secret is the hub's 401 title and body", async () => {
    await assert.rejects(tokenText(app(OTHER_ID, "wrong"), false), (error: unknown) => {
      assert.ok(error instanceof HubError);
      assert.equal(error.status, 401);
      assert.match(error.message, /^hub answered 401 Authorization failed: Client authentication failed/);
      return true;
    });
  });

  test("needs an application key", async () => {
    const client = new HubClient({ url: hub.url, credentials: { kind: "token", token: "t" } });
    await assert.rejects(tokenText(client, false), /a token needs an application key: --client-id/);
  });
});

describe("vigil entities", () => {
  test("a table with the svc attributes in columns and the others as name=value, escaped", async () => {
    const text = await entitiesText(app(), {});
    const lines = text.split("\n");
    assert.match(
      lines[0] ?? "",
      /^id {2}svc\.name +svc\.gateway +svc\.probe +svc\.hostname +svc\.os-type +other attributes$/,
    );
    assert.match(lines[1] ?? "", /^-+ {2}-+/);
    assert.equal(lines.length, 4, text);
    const web01 = lines.find((l) => l.includes("web-01")) ?? "";
    assert.match(web01, /GW +p1 .*Linux/);
    assert.match(web01, /Evil=\\u001b\[31mred/, "a control character is shown escaped");
    assert.match(web01, /__proto__=data/, "__proto__ is an ordinary attribute name");
    assert.ok(!text.includes("\u001b"), "no raw escape character");
  });

  test("--filter selects, --json is the hub's answer as sent", async () => {
    const text = await entitiesText(app(), { filter: 'user.Region = "amer"', json: true });
    const entities = JSON.parse(text) as { attributes: Record<string, string> }[];
    assert.deepEqual(
      entities.map((e) => e.attributes["svc.name"]),
      ["web-02"],
    );
    assert.equal(await entitiesText(app(), { filter: 'svc.name = "none"' }), "no entities");
  });

  test("a bad filter is the hub's 400 title and body", async () => {
    await assert.rejects(entitiesText(app(), { filter: "svc.name = " }), (error: unknown) => {
      assert.ok(error instanceof HubError);
      assert.equal(error.status, 400);
      assert.match(error.message, /^hub answered 400 /);
      return true;
    });
  });
});

describe("HubClient", () => {
  test("with an application key, a token the hub no longer takes is replaced once and the request repeated", async () => {
    const client = app(OTHER_ID, OTHER_SECRET);
    // As if the cached token had expired (5 minutes by default; a test does not wait for that).
    (client as unknown as { bearer: string }).bearer = "expired";
    const answer = await client.request("GET", "/v0/entities");
    assert.equal((JSON.parse(answer.text) as unknown[]).length, 2);
  });
});

describe("vigil query", () => {
  test("a table with one column per identifier and aggregation, with its unit", async () => {
    const file = join(dir, "grouped.json");
    writeFileSync(file, JSON.stringify({ ...countQuery("web-01"), grouping: ["rowname"] }));
    const text = await queryText(app(), file, false);
    assert.equal(
      text,
      [
        "bucket                     rowname  m svc.count  m svc.max (milliseconds)",
        "-------------------------  -------  -----------  ------------------------",
        "2026-03-01T00:00:00+00:00  EURUSD             2                        20",
        "2026-03-01T00:00:00+00:00  GBPUSD             1                        60",
      ].join("\n"),
    );
  });

  test("--json passes the hub's answer through; an invalid query is the hub's 400", async () => {
    const file = join(dir, "plain.json");
    writeFileSync(file, JSON.stringify(countQuery("web-01")));
    const json = await queryText(app(), file, true);
    assert.deepEqual((JSON.parse(json) as { data: unknown[] }).data.length, 1);
    assert.equal(queryTable(json).split("\n").length, 3);

    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ ...countQuery("web-01"), zoneId: "Mars/Olympus" }));
    await assert.rejects(queryText(app(), bad, false), /^HubError: hub answered 400 .*zoneId/);
  });
});

describe("flags and environment variables", () => {
  test("credentials: a token wins, an id needs its secret, nothing means no Authorization", () => {
    assert.deepEqual(credentialsFrom({ token: "t", clientId: "a", clientSecret: "b" }), {
      kind: "token",
      token: "t",
    });
    assert.deepEqual(credentialsFrom({ token: "t", clientId: "a", clientSecret: "b" }, false), {
      kind: "client",
      clientId: "a",
      clientSecret: "b",
    });
    assert.throws(() => credentialsFrom({ clientId: "a" }), /--client-id needs --client-secret/);
    assert.deepEqual(credentialsFrom({}), { kind: "none" });
  });

  test("the real command: token from VIGIL_* variables, then entities and query with VIGIL_TOKEN", async () => {
    const env = { VIGIL_HUB_URL: hub.url, VIGIL_CLIENT_ID: OTHER_ID, VIGIL_CLIENT_SECRET: OTHER_SECRET };
    const token = await runCli(["token"], env);
    assert.equal(token.status, 0, token.stderr);
    const bearer = token.stdout.trim();

    const entities = await runCli(["entities", "--json", "--filter", 'svc.name = "web-01"'], {
      VIGIL_HUB_URL: hub.url,
      VIGIL_TOKEN: bearer,
    });
    assert.equal(entities.status, 0, entities.stderr);
    assert.equal((JSON.parse(entities.stdout) as unknown[]).length, 1);

    // The query from standard input; the flag --hub overrides the variable.
    const query = await runCli(
      ["query", "-", "--hub", hub.url],
      { VIGIL_HUB_URL: "http://127.0.0.1:1", VIGIL_TOKEN: bearer },
      JSON.stringify(countQuery("web-01")),
    );
    assert.equal(query.status, 0, query.stderr);
    assert.match(query.stdout, /^bucket +m svc\.count +m svc\.max \(milliseconds\)\n/);
  });

  test("the real command: the hub's error text and exit 1; no hub given; an unreachable hub", async () => {
    const denied = await runCli(["entities", "--hub", hub.url]);
    assert.equal(denied.status, 1);
    assert.equal(
      denied.stderr,
      "vigil: hub answered 401 Authorization failed: A valid authorization token is needed: send 'Authorization: Bearer <token>' with a token from GET /token.\n",
    );
    const none = await runCli(["entities"]);
    assert.equal(none.status, 1);
    assert.match(none.stderr, /which hub\? give --hub/);
    const down = await runCli(["query", join(dir, "missing.json"), "--hub", "http://127.0.0.1:1"]);
    assert.equal(down.status, 1);
    assert.match(down.stderr, /ENOENT/);
  });
});
