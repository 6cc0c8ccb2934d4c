/**
 * Roles (DESIGN 5.4a) attacked on real servers (`vigil up`'s parts in this process, on sockets):
 * each key is refused outside its role's endpoints with 403 FORBIDDEN naming the role, the status
 * and metrics endpoints need a token, the console's relay needs `operate` for an action, and the
 * built-in demo key can do everything. A command's token subject is kept in the gateway's state
 * and never published.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { calculateJwkThumbprint, importJWK, type JWK, SignJWT } from "jose";
import { pino } from "pino";
import type { RunningService } from "../../src/compose/service.js";
import { startSystem } from "../../src/compose/system.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { sampleSetup } from "../../src/config/sample-setup.js";
import { validateMessage } from "../../src/messages/validate.js";
import { tempDir } from "../helpers/vigil-process.js";

const GATEWAY = "GW-ROLES";
// The demo key with exactly the roles the built-in sample setup gives it.
const demo = sampleSetup().hub.security.appKeys.find((key) => key.clientId === "demo");
assert.ok(demo !== undefined, "the sample setup has the demo key");

const setup = parseSetup(`
gateway: { name: ${GATEWAY}, port: 0 }
probes:
  - name: p1
    restApiHttpPort: 0
    managedEntities: [{ name: web-01, samplers: [{ name: orders, plugin: rest-api }] }]
hub:
  port: 0
  security:
    enabled: true
    appKeys:
      - { clientId: reader, clientSecret: "reader-secret" }
      - { clientId: writer, clientSecret: "writer-secret", roles: [write] }
      - { clientId: operator, clientSecret: "operator-secret", roles: [operate] }
      - { clientId: ops, clientSecret: "ops-secret", roles: [read, operate] }
      - { clientId: demo, clientSecret: "${demo.clientSecret}", roles: [${demo.roles.join(", ")}] }
`);
type Key = "reader" | "writer" | "operator" | "ops" | "demo";

const entityMessage = (name: string) => ({
  type: "managedEntity",
  operation: "create",
  data: {
    timestamp: new Date().toISOString(),
    target: { gateway: GATEWAY, probe: "p1", managedEntity: name },
    attributes: {},
  },
});
const snoozeBody = { target: { gateway: GATEWAY }, user: "ann", comment: "maintenance" };
const releaseBody = { target: { gateway: GATEWAY }, user: "ann" };

describe("roles on a running hub and gateway", () => {
  const dir = tempDir("roles");
  let system: RunningService;
  let hub = "";
  let gateway = "";
  const tokens = new Map<Key, string>();

  before(async () => {
    system = await startSystem({
      setup,
      dataDir: dir.path,
      demo: false,
      host: "127.0.0.1",
      logger: pino({ level: "silent" }),
    });
    hub = system.urls.hub as string;
    gateway = system.urls.gateway as string;
    for (const key of ["reader", "writer", "operator", "ops", "demo"] as const) {
      const secret = key === "demo" ? demo.clientSecret : `${key}-secret`;
      const answer = await fetch(`${hub}/token`, {
        headers: { authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString("base64")}` },
      });
      assert.equal(answer.status, 200, key);
      tokens.set(key, ((await answer.json()) as { access_token: string }).access_token);
    }
  });
  after(async () => {
    await system?.stop(5_000);
    dir.remove();
  });

  async function call(
    base: "hub" | "gateway",
    method: "GET" | "POST",
    path: string,
    key: Key | undefined,
    body?: unknown,
  ): Promise<{ status: number; body: string; challenge: string }> {
    const headers: Record<string, string> = {};
    if (key !== undefined) headers.authorization = `Bearer ${tokens.get(key)}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${base === "hub" ? hub : gateway}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: response.status,
      body: await response.text(),
      challenge: response.headers.get("www-authenticate") ?? "",
    };
  }

  // [what it shows, server, method, path, key (undefined: no token), body, status, role named in a 403]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, "hub" | "gateway", "GET" | "POST", string, Key | undefined, unknown, number, string?][] = [
    ["a read key queries entities", "hub", "GET", "/v0/entities", "reader", undefined, 200],
    ["a read key cannot backfill", "hub", "POST", "/v0/messages", "reader", [entityMessage("forged-by-reader")], 403, "write"],
    ["a write key backfills", "hub", "POST", "/v0/messages", "writer", [entityMessage("loaded")], 200],
    ["a write key cannot query entities", "hub", "GET", "/v0/entities", "writer", undefined, 403, "read"],
    ["a write key cannot run a metric query", "hub", "POST", "/v0/metrics/query", "writer", {}, 403, "read"],
    ["a write key cannot query events", "hub", "POST", "/v0/events/recordsQuery", "writer", {}, 403, "read"],
    ["a write key cannot read the OpenAPI document", "hub", "GET", "/v0/openapi.json", "writer", undefined, 403, "read"],
    ["an operate key cannot backfill", "hub", "POST", "/v0/messages", "operator", [entityMessage("forged-by-operator")], 403, "write"],
    ["an operate key without read cannot query", "hub", "GET", "/v0/entities", "operator", undefined, 403, "read"],
    ["the hub's status needs a token", "hub", "GET", "/v1/status", undefined, undefined, 401],
    ["the hub's status needs read", "hub", "GET", "/v1/status", "writer", undefined, 403, "read"],
    ["a read key sees the hub's status", "hub", "GET", "/v1/status", "reader", undefined, 200],
    ["the hub's metrics need a token", "hub", "GET", "/metrics", undefined, undefined, 401],
    ["the hub's metrics need read", "hub", "GET", "/metrics", "operator", undefined, 403, "read"],
    ["a read key scrapes the hub", "hub", "GET", "/metrics", "reader", undefined, 200],
    ["the hub's ping stays open", "hub", "GET", "/v0/ping", undefined, undefined, 200],
    ["the hub's key set stays open", "hub", "GET", "/.well-known/jwks.json", undefined, undefined, 200],
    ["the console's page stays open", "hub", "GET", "/console/config.json", undefined, undefined, 200],
    ["a read key cannot snooze", "gateway", "POST", "/v1/commands/snooze", "reader", snoozeBody, 403, "operate"],
    ["a read key cannot assign", "gateway", "POST", "/v1/commands/assign", "reader", { ...snoozeBody, assignedTo: "bob" }, 403, "operate"],
    ["a write key cannot snooze", "gateway", "POST", "/v1/commands/snooze", "writer", snoozeBody, 403, "operate"],
    ["an operate key without read cannot read items", "gateway", "GET", `/v1/items?gateway=${GATEWAY}`, "operator", undefined, 403, "read"],
    ["a write key cannot read items", "gateway", "GET", `/v1/items?gateway=${GATEWAY}`, "writer", undefined, 403, "read"],
    ["a read key reads items", "gateway", "GET", `/v1/items?gateway=${GATEWAY}`, "reader", undefined, 200],
    ["an operate key cannot open the message tap", "gateway", "GET", "/v1/messages", "operator", undefined, 403, "read"],
    ["the gateway's status needs a token", "gateway", "GET", "/v1/status", undefined, undefined, 401],
    ["the gateway's status needs read", "gateway", "GET", "/v1/status", "operator", undefined, 403, "read"],
    ["a read key sees the gateway's status", "gateway", "GET", "/v1/status", "reader", undefined, 200],
    ["the gateway's metrics need a token", "gateway", "GET", "/metrics", undefined, undefined, 401],
    ["the gateway's metrics need read", "gateway", "GET", "/metrics", "writer", undefined, 403, "read"],
    ["the gateway's health check stays open", "gateway", "GET", "/v1/healthcheck", undefined, undefined, 200],
    ["the console relay refuses a read key's snooze", "hub", "POST", "/console/gateway/v1/commands/snooze", "reader", snoozeBody, 403, "operate"],
    ["the console relay refuses a read key's unassign", "hub", "POST", "/console/gateway/v1/commands/unassign", "reader", releaseBody, 403, "operate"],
    ["the console relay refuses an operate key's items without read", "hub", "GET", `/console/gateway/v1/items?gateway=${GATEWAY}`, "operator", undefined, 403, "read"],
  ];
  for (const [name, base, method, path, key, body, status, role] of cases) {
    test(name, async () => {
      const answer = await call(base, method, path, key, body);
      assert.equal(answer.status, status, answer.body);
      if (status === 403) {
        const error = JSON.parse(answer.body) as { status: number; title: string; body: string };
        assert.equal(error.status, 403);
        assert.equal(error.title, "Forbidden");
        assert.match(error.body, new RegExp(`needs the '${role}' role`));
        assert.equal(answer.challenge, `Bearer realm="vigil", error="insufficient_scope", scope="${role}"`);
      }
    });
  }

  test("nothing a refused key sent reached the store or the gateway's state", async () => {
    const entities = JSON.parse((await call("hub", "GET", "/v0/entities", "reader")).body) as {
      name?: string;
    }[];
    const names = JSON.stringify(entities);
    assert.doesNotMatch(names, /forged-by/);
    const items = JSON.parse(
      (await call("gateway", "GET", `/v1/items?gateway=${GATEWAY}`, "reader")).body,
    ) as {
      item: { snoozed: { snoozed: boolean } };
    };
    assert.equal(items.item.snoozed.snoozed, false);
  });

  test("an operator snoozes through the console; the token's sub is kept beside the user, never published", async () => {
    const controller = new AbortController();
    const tap = await fetch(`${gateway}/v1/messages`, {
      headers: { authorization: `Bearer ${tokens.get("reader")}` },
      signal: controller.signal,
    });
    assert.equal(tap.status, 200);
    try {
      const snoozed = await call("hub", "POST", "/console/gateway/v1/commands/snooze", "ops", snoozeBody);
      assert.equal(snoozed.status, 200, snoozed.body);
      const items = JSON.parse(
        (await call("gateway", "GET", `/v1/items?gateway=${GATEWAY}`, "ops")).body,
      ) as {
        item: { snoozed: { snoozedBy: string; snoozedBySubject: string } };
      };
      assert.equal(items.item.snoozed.snoozedBy, "ann");
      assert.equal(items.item.snoozed.snoozedBySubject, "ops");
      // The published snooze message is exactly public-v2: no subject in it.
      const reader = (tap.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = "";
      let message: unknown;
      while (message === undefined) {
        const { value, done } = await reader.read();
        assert.equal(done, false, "the tap ended before the snooze message");
        text += decoder.decode(value, { stream: true });
        const event = /event: snooze\ndata: (.*)\n/.exec(text);
        if (event?.[1] !== undefined) message = JSON.parse(event[1]);
      }
      assert.equal(validateMessage(message).ok, true, JSON.stringify(message));
      assert.doesNotMatch(JSON.stringify(message), /Subject|"ops"/);
      assert.match(JSON.stringify(message), /"snoozedBy":"ann"/);
    } finally {
      controller.abort();
    }
    const released = await call("gateway", "POST", "/v1/commands/unsnooze", "operator", releaseBody);
    assert.equal(released.status, 200, released.body);
  });

  test("the demo key of the built-in setup can do everything", async () => {
    const answers = [
      await call("hub", "GET", "/v0/entities", "demo"),
      await call("hub", "POST", "/v0/messages", "demo", [entityMessage("by-demo")]),
      await call("hub", "GET", "/v1/status", "demo"),
      await call("hub", "GET", "/metrics", "demo"),
      await call("gateway", "GET", `/v1/items?gateway=${GATEWAY}`, "demo"),
      await call("gateway", "POST", "/v1/commands/snooze", "demo", snoozeBody),
      await call("gateway", "POST", "/v1/commands/unsnooze", "demo", releaseBody),
      await call("hub", "POST", "/console/gateway/v1/commands/assign", "demo", {
        ...snoozeBody,
        assignedTo: "bob",
      }),
      await call("hub", "POST", "/console/gateway/v1/commands/unassign", "demo", releaseBody),
      await call("gateway", "GET", "/v1/status", "demo"),
      await call("gateway", "GET", "/metrics", "demo"),
    ];
    for (const answer of answers) assert.equal(answer.status, 200, answer.body);
  });

  test("a token signed by the hub's own key but without a roles claim is refused everywhere", async () => {
    const jwk = JSON.parse(await readFile(join(dir.path, "keys", "hub-signing-key.json"), "utf8")) as JWK;
    const key = await importJWK(jwk, "EdDSA");
    const kid = await calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x } as JWK);
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT({ client_method: "app-key", ...claims })
        .setProtectedHeader({ alg: "EdDSA", kid })
        .setSubject("demo")
        .setIssuer("vigil-hub")
        .setAudience("vigil")
        .setIssuedAt(now)
        .setExpirationTime(now + 60)
        .setJti("hand-made")
        .sign(key);
    const unscoped = await sign({});
    const scoped = await sign({ roles: ["read"] });
    for (const url of [`${hub}/v0/entities`, `${hub}/v1/status`, `${gateway}/v1/items?gateway=${GATEWAY}`]) {
      const refused = await fetch(url, { headers: { authorization: `Bearer ${unscoped}` } });
      assert.equal(refused.status, 401, url);
      assert.match(refused.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
      // The same token with a roles claim passes: the claim is what was missing.
      const accepted = await fetch(url, { headers: { authorization: `Bearer ${scoped}` } });
      assert.equal(accepted.status, 200, url);
    }
  });

  test("a token's roles claim cannot be widened: a re-signed or unsigned token is refused", async () => {
    const [header, payload] = (tokens.get("reader") ?? "").split(".");
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString("utf8")) as Record<
      string,
      unknown
    >;
    const widened = Buffer.from(JSON.stringify({ ...claims, roles: ["read", "write", "operate"] })).toString(
      "base64url",
    );
    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    for (const forged of [`${header}.${widened}.AAAA`, `${none}.${widened}.`]) {
      for (const [base, method, path, body] of [
        ["hub", "POST", "/v0/messages", [entityMessage("forged")]],
        ["gateway", "POST", "/v1/commands/snooze", snoozeBody],
      ] as const) {
        const response = await fetch(`${base === "hub" ? hub : gateway}${path}`, {
          method,
          headers: { authorization: `Bearer ${forged}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        assert.equal(response.status, 401, `${base} ${path}`);
      }
    }
  });
});
