/**
 * Kerberos SPNEGO on the hub's token endpoints end to end (DESIGN 5.4), against real MIT
 * KDCs that this file starts in temp folders (test/helpers/kdc.ts): `kinit` and
 * `curl --negotiate` as the client, a hub listening on a real socket with the service keytab.
 *
 * Two realms: GOOD.TEST is the hub's (`HTTP/localhost@GOOD.TEST`); OTHER.TEST has its own
 * `HTTP/localhost` whose key is in the same keytab, so its tickets pass GSSAPI and only the hub's
 * realm rule refuses them. The service host is `localhost`, the name curl asks a ticket for when
 * the URL says `http://localhost:PORT` (resolved to 127.0.0.1 with `--resolve`).
 */
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { FastifyInstance } from "fastify";
import { decodeJwt } from "jose";
import { type Logger, pino } from "pino";
import type { HubSetup } from "../../../src/config/setup.js";
import { createHttpApp, listen } from "../../../src/http/server.js";
import { type AuthService, registerAuth } from "../../../src/hub/auth/auth.js";
import { basicAuthorization } from "../../../src/hub/auth/credentials.js";
import { loadKerberosBinding, parseServicePrincipal, realmOf } from "../../../src/hub/auth/kerberos.js";
import { kdcMissing, startRealm, type TestRealm, ticketEnd, writeKrb5Conf } from "../../helpers/kdc.js";
import { needs } from "../../helpers/needs.js";

const SERVICE = "HTTP/localhost@GOOD.TEST";
/** Seconds of clock skew the hub's Kerberos library allows (its krb5.conf), so expiry comes soon. */
const HUB_CLOCKSKEW = 1;

function security(kerberos: HubSetup["security"]["kerberos"]): HubSetup["security"] {
  return {
    enabled: true,
    tokenLifetime: 300,
    appKeys: [{ clientId: "reporting", clientSecret: "s3cret", roles: ["read"] }],
    kerberos,
    kerberosRoles: ["read"],
  };
}

/** Lines a hub logged, to read why a request was refused. */
function capture(): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  return { lines, logger: pino({ level: "info" }, { write: (line: string) => void lines.push(line) }) };
}

describe("principal names", () => {
  const services: [written: string, gssName: string, realm: string | undefined][] = [
    ["HTTP/hub.example.com@EXAMPLE.COM", "HTTP@hub.example.com", "EXAMPLE.COM"],
    ["HTTP@hub.example.com", "HTTP@hub.example.com", undefined],
  ];
  for (const [written, gssName, realm] of services) {
    test(`service principal ${written} is GSS name ${gssName}, realm ${realm}`, () => {
      assert.deepEqual(parseServicePrincipal(written), { gssName, realm });
    });
  }
  test("a principal that is neither form is refused", () => {
    assert.equal(parseServicePrincipal("hub.example.com"), undefined);
  });
  const realms: [principal: string, realm: string | undefined][] = [
    ["alice@GOOD.TEST", "GOOD.TEST"],
    ["HTTP/host@GOOD.TEST", "GOOD.TEST"],
    ["alice@EVIL\\@GOOD.TEST", "EVIL\\@GOOD.TEST"],
    ["al\\@ice@GOOD.TEST", "GOOD.TEST"],
    ["alice", undefined],
  ];
  for (const [principal, realm] of realms) {
    test(`the realm of ${principal} is ${realm}`, () => assert.equal(realmOf(principal), realm));
  }
});

describe("without the kerberos binding", () => {
  test("setting up the hub's authentication fails, naming the fix", async () => {
    const { logger } = capture();
    const app = createHttpApp({ logger });
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const dir = await mkdtemp(join(tmpdir(), "vigil-krb-"));
    try {
      await assert.rejects(
        registerAuth(app, {
          security: security({ enabled: true, keytab: "/nowhere.keytab", servicePrincipal: SERVICE }),
          dataDir: dir,
          kerberosBinding: { ok: false, reason: "the optional kerberos package did not load (test)" },
        }),
        /hub\.security\.kerberos is enabled but the optional kerberos package did not load \(test\): .*libkrb5-dev.*npm ci/,
      );
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test("with the binding but no usable keytab, the hub starts, says why at start, and refuses Negotiate", {
  skip: needs(loadKerberosBinding().ok ? false : "the kerberos binding does not load here"),
}, async () => {
  const { lines, logger } = capture();
  const app = createHttpApp({ logger });
  const { mkdtemp, rm } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const dir = await mkdtemp(join(tmpdir(), "vigil-krb-"));
  try {
    const keytab = join(dir, "missing.keytab");
    await registerAuth(app, {
      security: security({ enabled: true, keytab, servicePrincipal: SERVICE }),
      dataDir: dir,
    });
    assert.match(
      lines.join(""),
      new RegExp(
        `Kerberos: cannot acquire the credentials of HTTP/localhost@GOOD\\.TEST from keytab ${keytab}`,
      ),
    );
    const r = await app.inject({
      method: "GET",
      url: "/token",
      headers: { authorization: "Negotiate YIIB" },
    });
    assert.equal(r.statusCode, 401);
    assert.equal(r.headers["www-authenticate"], 'Negotiate, Basic realm="vigil", charset="UTF-8"');
  } finally {
    await app.close();
    await rm(dir, { recursive: true, force: true });
    delete process.env.KRB5_KTNAME;
  }
});

function skipReason(): string | undefined {
  const missing = kdcMissing();
  if (missing !== undefined) return missing;
  const binding = loadKerberosBinding();
  if (!binding.ok) return binding.reason;
  const curl = spawnSync("curl", ["-V"], { encoding: "utf8" });
  if (curl.status !== 0 || !/\bSPNEGO\b/.test(curl.stdout)) return "curl without SPNEGO support";
  return undefined;
}
const SKIP = skipReason();

describe("SPNEGO against a real KDC", { skip: needs(SKIP) }, () => {
  let good: TestRealm;
  let other: TestRealm;
  let app: FastifyInstance;
  let auth: AuthService;
  let port: number;
  const hubLog = capture();
  /** A krb5.conf knowing both realms, per default realm (the client's). */
  const clientConf = (defaultRealm: string) => join(good.dir, `client-${defaultRealm}.conf`);
  const saved = { ...process.env };
  let hubSecurity: HubSetup["security"];

  before(async () => {
    good = await startRealm("GOOD.TEST");
    other = await startRealm("OTHER.TEST");
    const keytab = join(good.dir, "hub.keytab");
    good.addPrincipal("alice", "alice-pw");
    good.addPrincipal("bob", "bob-pw");
    good.addPrincipal("HTTP/localhost");
    good.exportKeytab("HTTP/localhost", keytab);
    other.addPrincipal("carol", "carol-pw");
    other.addPrincipal("HTTP/localhost");
    other.exportKeytab("HTTP/localhost", keytab);
    const realms = [good, other];
    for (const realm of realms) writeKrb5Conf(clientConf(realm.realm), realms, realm.realm);
    // The hub runs in this process: its GSSAPI reads this krb5.conf and keeps its replay cache here.
    const hubConf = join(good.dir, "hub-krb5.conf");
    writeKrb5Conf(hubConf, realms, "GOOD.TEST", HUB_CLOCKSKEW);
    process.env.KRB5_CONFIG = hubConf;
    process.env.KRB5RCACHEDIR = good.dir;

    app = createHttpApp({ logger: hubLog.logger });
    hubSecurity = security({ enabled: true, keytab, servicePrincipal: SERVICE });
    auth = await registerAuth(app, {
      security: hubSecurity,
      dataDir: join(good.dir, "hub-data"),
      limits: { address: { burst: 1_000 } },
    });
    const url = await listen(app, 0, "127.0.0.1");
    port = Number(new URL(url).port);
  });

  after(async () => {
    await app?.close();
    await Promise.all([good?.stop(), other?.stop()]);
    for (const name of ["KRB5_CONFIG", "KRB5RCACHEDIR", "KRB5_KTNAME", "KRB5CCNAME"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  /**
   * `curl --negotiate` with the ticket cache `ccache`; returns status, headers and body. Run
   * asynchronously: the hub answering it lives in this process.
   */
  async function curl(
    path: string,
    ccache: string,
    realm: string,
    extra: string[] = [],
  ): Promise<{ status: number; body: Record<string, unknown>; headers: string }> {
    const { stdout: out } = await promisify(execFile)(
      "curl",
      [
        "-s",
        "--max-time",
        "30",
        "-D",
        "-",
        "--negotiate",
        "-u",
        ":",
        "--resolve",
        `localhost:${port}:127.0.0.1`,
        ...extra,
        `http://localhost:${port}${path}`,
      ],
      {
        env: { ...process.env, KRB5_CONFIG: clientConf(realm), KRB5CCNAME: `FILE:${ccache}` },
        encoding: "utf8",
      },
    );
    const blocks = out.split("\r\n\r\n");
    const body = blocks.pop() ?? "";
    const headers = blocks.at(-1) ?? "";
    const status = Number(/^HTTP\/[\d.]+ (\d+)/.exec(headers)?.[1]);
    return { status, headers, body: JSON.parse(body) as Record<string, unknown> };
  }

  test("kerberosRoles reload: a principal's token is held to the new roles, a new token carries them", async () => {
    const ccache = join(good.dir, "bob-roles.cc");
    good.kinit("bob@GOOD.TEST", "bob-pw", ccache, { krb5Conf: clientConf("GOOD.TEST") });
    const before = await curl("/token", ccache, "GOOD.TEST");
    assert.equal(before.status, 200, JSON.stringify(before.body));
    assert.deepEqual(decodeJwt(String(before.body.access_token)).roles, ["read"]);
    await auth.reload({ ...hubSecurity, kerberosRoles: ["operate"] });
    try {
      assert.deepEqual((await auth.verify(String(before.body.access_token))).roles, []);
      const after = await curl("/token", ccache, "GOOD.TEST");
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.deepEqual(decodeJwt(String(after.body.access_token)).roles, ["operate"]);
      assert.deepEqual((await auth.verify(String(after.body.access_token))).roles, ["operate"]);
    } finally {
      await auth.reload(hubSecurity);
    }
  });

  test("kinit + curl --negotiate at /token gives a token whose sub is the client principal", async () => {
    const ccache = join(good.dir, "alice.cc");
    good.kinit("alice@GOOD.TEST", "alice-pw", ccache, { krb5Conf: clientConf("GOOD.TEST") });
    const r = await curl("/token", ccache, "GOOD.TEST");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.token_type, "Bearer");
    assert.equal(decodeJwt(String(r.body.access_token)).sub, "alice@GOOD.TEST");
    const grant = await auth.verify(String(r.body.access_token));
    assert.deepEqual([grant.sub, grant.roles], ["alice@GOOD.TEST", ["read"]]);
    assert.match(r.headers, /^WWW-Authenticate: Negotiate \S+/im, "mutual authentication token");
  });

  test("/authorize with Negotiate echoes state; the refresh token is spent by Negotiate only", async () => {
    const ccache = join(good.dir, "alice2.cc");
    good.kinit("alice@GOOD.TEST", "alice-pw", ccache, { krb5Conf: clientConf("GOOD.TEST") });
    const r = await curl("/authorize?response_type=token&state=s1", ccache, "GOOD.TEST");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.state, "s1");
    const refresh = `grant_type=refresh_token&refresh_token=${String(r.body.refresh_token)}`;
    // An application-key client is not the owner: invalid_grant, and the token stays unspent.
    const byKey = await app.inject({
      method: "POST",
      url: "/oauth2/token",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: basicAuthorization("reporting", "s3cret"),
      },
      payload: refresh,
    });
    assert.equal(byKey.statusCode, 400);
    assert.equal(byKey.json().error, "invalid_grant");
    const byOwner = await curl("/oauth2/token", ccache, "GOOD.TEST", ["-d", refresh]);
    assert.equal(byOwner.status, 200, JSON.stringify(byOwner.body));
    assert.equal(decodeJwt(String(byOwner.body.access_token)).sub, "alice@GOOD.TEST");
  });

  test("a principal of another realm is refused with 401 and the documented body", async () => {
    const ccache = join(good.dir, "carol.cc");
    other.kinit("carol@OTHER.TEST", "carol-pw", ccache, { krb5Conf: clientConf("OTHER.TEST") });
    const r = await curl("/token", ccache, "OTHER.TEST");
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, {
      status: 401,
      title: "Authorization failed",
      body:
        "Client authentication failed: send an application key as 'Authorization: Basic <base64 of client-id:secret>', " +
        "or a Kerberos ticket as 'Authorization: Negotiate <SPNEGO token>'.",
    });
    assert.match(r.headers, /^WWW-Authenticate: Negotiate, Basic realm="vigil"/im);
    assert.match(hubLog.lines.join(""), /client principal carol@OTHER\.TEST is not of realm GOOD\.TEST/);
  });

  test("a ticket that has expired is refused with 401", async () => {
    const ccache = join(good.dir, "bob.cc");
    good.kinit("bob@GOOD.TEST", "bob-pw", ccache, { lifetime: "3s", krb5Conf: clientConf("GOOD.TEST") });
    // The client side of SPNEGO in this process (the kerberos package), while the ticket is valid:
    // curl makes no Negotiate token from an expired ticket, so it could not show the hub refusing one.
    process.env.KRB5_CONFIG = clientConf("GOOD.TEST");
    process.env.KRB5CCNAME = `FILE:${ccache}`;
    // Loaded by name at run time: the package is optional, so type-checking must not need it.
    const kerberos = createRequire(import.meta.url)("kerberos") as {
      initializeClient(
        service: string,
        options: { mechOID: number },
      ): Promise<{ step(c: string): Promise<string> }>;
      GSS_MECH_OID_SPNEGO: number;
    };
    const client = await kerberos.initializeClient("HTTP@localhost", {
      mechOID: kerberos.GSS_MECH_OID_SPNEGO,
    });
    const token = await client.step("");
    process.env.KRB5_CONFIG = join(good.dir, "hub-krb5.conf");
    // Wait for the state "expired for the hub": past the ticket's end plus the hub's allowed skew.
    const expiredAt = ticketEnd(ccache, clientConf("GOOD.TEST")) + (HUB_CLOCKSKEW + 1) * 1000;
    while (Date.now() <= expiredAt) await sleep(100);
    const r = await app.inject({
      method: "GET",
      url: "/token",
      headers: { authorization: `Negotiate ${token}` },
    });
    assert.equal(r.statusCode, 401, r.body);
    assert.equal(r.json().title, "Authorization failed");
    // The token was made while the ticket was valid, so by now its authenticator is older than the
    // allowed skew too: MIT krb5 reports either (both seen in CI), and both refuse the expired ticket.
    assert.match(hubLog.lines.join(""), /Kerberos: [^"]*(expired|clock skew too great)/i);
  });
});
