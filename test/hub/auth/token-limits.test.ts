/**
 * The token endpoints under abuse (docs/security.md): rate limits and lockout per remote
 * address and per client id (429 with Retry-After), bounded secret checks (503 beyond the queue),
 * the verified-secret cache that keeps a known client in while its id is locked out, and the
 * bounded maps behind them. Time is a controllable clock; nothing here asserts a duration.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import type { HubSetup } from "../../../src/config/setup.js";
import { createHttpApp } from "../../../src/http/server.js";
import { AppKeys } from "../../../src/hub/auth/app-keys.js";
import { addressKey, KeyedLimiter } from "../../../src/hub/auth/attempt-limits.js";
import { type AuthOptions, registerAuth } from "../../../src/hub/auth/auth.js";
import { basicAuthorization } from "../../../src/hub/auth/credentials.js";
import { WorkLimiter, WorkQueueFullError } from "../../../src/hub/auth/work-limiter.js";

function clock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number): void {
      now += ms;
    },
  };
}

const BUCKET = {
  burst: 3,
  perSecond: 1,
  lockoutFailures: 3,
  lockoutMs: 60_000,
  lockoutMaxMs: 240_000,
  maxKeys: 100,
};

describe("KeyedLimiter", () => {
  test("a burst passes, the next request waits for the refill, and the bucket refills with time", () => {
    const time = clock();
    const limiter = new KeyedLimiter(BUCKET, time.now);
    for (let i = 0; i < 3; i++) assert.equal(limiter.take("a"), undefined);
    assert.deepEqual(limiter.take("a"), { reason: "rate", retryAfterMs: 1000 });
    assert.equal(limiter.take("b"), undefined, "another key has its own bucket");
    time.advance(1000);
    assert.equal(limiter.take("a"), undefined);
    assert.equal(limiter.take("a")?.reason, "rate");
  });

  test("failures in a row lock out, each further lockout doubles up to the max, a success resets", () => {
    const time = clock();
    const limiter = new KeyedLimiter({ ...BUCKET, burst: 100 }, time.now);
    const lockouts: (number | undefined)[] = [];
    for (let round = 0; round < 4; round++) {
      limiter.fail("a");
      limiter.fail("a");
      lockouts.push(limiter.fail("a")?.retryAfterMs);
      assert.equal(limiter.take("a")?.reason, "lockout");
      time.advance(lockouts.at(-1) ?? 0);
      assert.equal(limiter.take("a"), undefined, "free again once the lockout is over");
    }
    assert.deepEqual(lockouts, [60_000, 120_000, 240_000, 240_000]);
    limiter.succeed("a");
    limiter.fail("a");
    limiter.fail("a");
    assert.equal(limiter.fail("a")?.retryAfterMs, 60_000);
  });

  test("the map holds at most maxKeys keys, forgetting the least recently seen", () => {
    const time = clock();
    const limiter = new KeyedLimiter({ ...BUCKET, maxKeys: 2 }, time.now);
    for (let i = 0; i < 3; i++) limiter.take("a");
    limiter.take("b");
    limiter.take("a"); // "a" is now the most recent; "b" the least
    limiter.take("c");
    assert.equal(limiter.size, 2);
    assert.equal(limiter.take("a")?.reason, "rate", "a is remembered");
    assert.equal(limiter.take("b"), undefined, "b was forgotten and starts afresh");
  });

  test("client-chosen names are data: __proto__ and constructor are ordinary keys", () => {
    const limiter = new KeyedLimiter(BUCKET, clock().now);
    for (let i = 0; i < 3; i++) assert.equal(limiter.take("__proto__"), undefined);
    assert.equal(limiter.take("__proto__")?.reason, "rate");
    assert.equal(limiter.take("constructor"), undefined);
  });
});

describe("addressKey", () => {
  const cases: [ip: string, key: string][] = [
    ["127.0.0.1", "127.0.0.1"],
    ["::ffff:10.1.2.3", "10.1.2.3"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::9", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:ffff::1", "2001:db8:1:2::/64"],
    ["::1", "0:0:0:0::/64"],
  ];
  for (const [ip, key] of cases) test(`${ip} → ${key}`, () => assert.equal(addressKey(ip), key));
});

describe("WorkLimiter", () => {
  test("runs `concurrency` tasks, queues `queue` more in order, refuses the rest at once", async () => {
    const limiter = new WorkLimiter({ concurrency: 1, queue: 1 });
    const order: string[] = [];
    let release: () => void = () => undefined;
    const first = limiter.run(
      () =>
        new Promise<void>((resolve) => {
          order.push("first");
          release = resolve;
        }),
    );
    const second = limiter.run(async () => void order.push("second"));
    await assert.rejects(
      limiter.run(async () => void order.push("third")),
      WorkQueueFullError,
    );
    assert.deepEqual(limiter.load, { running: 1, waiting: 1 });
    release();
    await Promise.all([first, second]);
    assert.deepEqual(order, ["first", "second"]);
    assert.deepEqual(limiter.load, { running: 0, waiting: 0 });
    assert.equal(limiter.refused, 1);
  });

  test("a task that throws frees its slot", async () => {
    const limiter = new WorkLimiter({ concurrency: 1, queue: 0 });
    await assert.rejects(
      limiter.run(async () => Promise.reject(new Error("boom"))),
      /boom/,
    );
    assert.equal(await limiter.run(async () => 7), 7);
  });
});

test("AppKeys recalls a verified secret without a secret check, and forgets it after the TTL", async () => {
  const time = clock();
  const limiter = new WorkLimiter({ concurrency: 1, queue: 0 });
  const keys = await AppKeys.create([{ clientId: "a", clientSecret: "s", roles: ["read"] }], {
    limiter,
    verifiedTtlMs: 1000,
    now: time.now,
  });
  assert.equal(keys.recall("a", "s"), false);
  assert.equal(await keys.authenticate("a", "s"), true);
  assert.equal(keys.recall("a", "s"), true);
  assert.equal(keys.recall("a", "wrong"), false);
  time.advance(1000);
  assert.equal(keys.recall("a", "s"), false);
});

// ---- Through HTTP ----

const CLIENT = "reporting";
const SECRET = "s3cret";
const security: HubSetup["security"] = {
  enabled: true,
  tokenLifetime: 300,
  appKeys: [
    { clientId: CLIENT, clientSecret: SECRET, roles: ["read"] },
    { clientId: "other", clientSecret: "other-secret", roles: ["read"] },
  ],
  kerberos: { enabled: false, keytab: "", servicePrincipal: "" },
  kerberosRoles: ["read"],
};
const HIGH = { burst: 1_000_000, lockoutFailures: 1_000_000 };

const apps: FastifyInstance[] = [];
const dirs: string[] = [];
after(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function hub(options: Pick<AuthOptions, "limits" | "checks">): Promise<FastifyInstance> {
  const dir = await mkdtemp(join(tmpdir(), "vigil-limits-"));
  dirs.push(dir);
  const app = createHttpApp({ logger: pino({ level: "silent" }) });
  apps.push(app);
  await registerAuth(app, { security, dataDir: dir, ...options });
  return app;
}

const token = (app: FastifyInstance, user: string, password: string, remoteAddress = "127.0.0.1") =>
  app.inject({
    method: "GET",
    url: "/token",
    remoteAddress,
    headers: { authorization: basicAuthorization(user, password) },
  });

describe("token endpoint limits over HTTP", () => {
  test("past its burst an address gets 429 TOO_MANY_REQUESTS with Retry-After; another address does not", async () => {
    const time = clock();
    const app = await hub({ limits: { now: time.now, address: { burst: 3, perSecond: 1 }, client: HIGH } });
    for (let i = 0; i < 3; i++) assert.equal((await token(app, CLIENT, SECRET)).statusCode, 200);
    const r = await token(app, CLIENT, SECRET);
    assert.equal(r.statusCode, 429);
    assert.equal(r.headers["retry-after"], "1");
    assert.deepEqual(r.json(), {
      status: 429,
      title: "Too many requests",
      body: "Too many token requests from this address. Retry after 1 s.",
    });
    assert.equal((await token(app, CLIENT, SECRET, "10.0.0.9")).statusCode, 200);
    time.advance(1000);
    assert.equal((await token(app, CLIENT, SECRET)).statusCode, 200);
  });

  test("failures from one address lock it out for a minute, even for a right secret", async () => {
    const time = clock();
    const app = await hub({
      limits: { now: time.now, address: { burst: 100, lockoutFailures: 3 }, client: HIGH },
    });
    for (let i = 0; i < 3; i++) assert.equal((await token(app, "nobody", `guess-${i}`)).statusCode, 401);
    const r = await token(app, CLIENT, SECRET);
    assert.equal(r.statusCode, 429);
    assert.equal(r.headers["retry-after"], "60");
    assert.match(r.json().body, /Too many failed authentications from this address; it is locked out/);
    time.advance(60_000);
    assert.equal((await token(app, CLIENT, SECRET)).statusCode, 200);
  });

  test("failures on a client id lock it out from every address, except for a secret verified recently", async () => {
    const time = clock();
    const app = await hub({
      limits: { now: time.now, address: HIGH, client: { burst: 100, lockoutFailures: 3 } },
    });
    assert.equal((await token(app, CLIENT, SECRET)).statusCode, 200); // verified: recalled from now on
    for (const id of [CLIENT, "other"]) {
      for (let i = 0; i < 3; i++) {
        assert.equal((await token(app, id, `guess-${i}`, `10.0.${i}.1`)).statusCode, 401);
      }
    }
    const attacker = await token(app, "other", "guess-3", "10.9.9.9");
    assert.equal(attacker.statusCode, 429);
    assert.match(attacker.json().body, /from this client id; it is locked out/);
    assert.equal((await token(app, "other", "other-secret", "10.9.9.8")).statusCode, 429);
    // The legitimate client of the locked id keeps getting tokens with the secret it used before.
    assert.equal((await token(app, CLIENT, SECRET, "10.9.9.7")).statusCode, 200);
    assert.equal((await token(app, CLIENT, "guess-4", "10.9.9.7")).statusCode, 429);
  });

  test("the OAuth endpoint answers the limits as temporarily_unavailable, 429 and Retry-After", async () => {
    const time = clock();
    const app = await hub({ limits: { now: time.now, address: { burst: 1, perSecond: 0.5 }, client: HIGH } });
    const post = () =>
      app.inject({
        method: "POST",
        url: "/oauth2/token",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: `grant_type=client_credentials&client_id=${CLIENT}&client_secret=${SECRET}`,
      });
    assert.equal((await post()).statusCode, 200);
    const r = await post();
    assert.equal(r.statusCode, 429);
    assert.equal(r.headers["retry-after"], "2");
    assert.equal(r.json().error, "temporarily_unavailable");
    assert.deepEqual(Object.keys(r.json()).sort(), ["error", "error_description"]);
  });

  test("beyond the secret-check queue, requests get 503 with Retry-After instead of waiting", async () => {
    const app = await hub({ limits: { address: HIGH, client: HIGH }, checks: { concurrency: 1, queue: 1 } });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => token(app, CLIENT, `wrong-${i}`, `10.1.0.${i}`)),
    );
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [401, 401, 503, 503, 503, 503]);
    const refused = answers.find((r) => r.statusCode === 503);
    assert.equal(refused?.headers["retry-after"], "1");
    assert.equal(refused?.json().title, "Service unavailable");
  });
});
