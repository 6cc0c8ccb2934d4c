/**
 * A throwaway MIT Kerberos realm for tests: its own folder under the system temp dir
 * with `krb5.conf`, `kdc.conf`, a database made by `kdb5_util create -s`, principals added with
 * `kadmin.local`, keytabs exported with `ktadd`, and `krb5kdc -n` in the foreground on a free port,
 * told where everything is through `KRB5_CONFIG` and `KRB5_KDC_PROFILE`. `stop()` kills that KDC by
 * its PID and removes the folder. Nothing touches /etc/krb5.conf or the system's KDC.
 *
 * The binaries come from Debian's krb5-kdc, krb5-admin-server and krb5-user (scripts/services.sh
 * installs them); a test file skips with {@link kdcMissing}'s reason when one is absent.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

const TOOLS = {
  krb5kdc: "/usr/sbin/krb5kdc",
  kdb5_util: "/usr/sbin/kdb5_util",
  "kadmin.local": "/usr/sbin/kadmin.local",
  kinit: "/usr/bin/kinit",
  klist: "/usr/bin/klist",
} as const;

/** Why a Kerberos test cannot run here (a missing binary), or undefined when it can. */
export function kdcMissing(): string | undefined {
  for (const [name, path] of Object.entries(TOOLS)) {
    try {
      accessSync(path, constants.X_OK);
    } catch {
      return `${name} not found at ${path}: install krb5-kdc, krb5-admin-server and krb5-user (scripts/services.sh start)`;
    }
  }
  return undefined;
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port; gives up after `tries`. */
async function waitForPort(
  port: number,
  process: ChildProcess,
  log: () => string,
  tries = 200,
): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (process.exitCode !== null) throw new Error(`krb5kdc exited (${process.exitCode}): ${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`krb5kdc did not listen on port ${port}: ${log()}`);
}

/** The `[realms]` stanza a client needs to reach this realm's KDC. */
export interface RealmEntry {
  readonly realm: string;
  readonly port: number;
}

/**
 * Writes a client `krb5.conf` at `path` that knows `realms` and uses `defaultRealm`. `clockskew`
 * (seconds) is how late a ticket is still accepted; DNS lookups and reverse DNS are off so that
 * `localhost` stays `localhost`.
 */
export function writeKrb5Conf(
  path: string,
  realms: readonly RealmEntry[],
  defaultRealm: string,
  clockskew = 300,
): void {
  const stanzas = realms.map((r) => `  ${r.realm} = {\n    kdc = 127.0.0.1:${r.port}\n  }`).join("\n");
  writeFileSync(
    path,
    [
      "[libdefaults]",
      `  default_realm = ${defaultRealm}`,
      "  dns_lookup_kdc = false",
      "  dns_lookup_realm = false",
      "  rdns = false",
      "  dns_canonicalize_hostname = false",
      "  udp_preference_limit = 1",
      `  clockskew = ${clockskew}`,
      "[realms]",
      stanzas,
      "",
    ].join("\n"),
  );
}

/** One running throwaway realm. */
export interface TestRealm extends RealmEntry {
  /** The realm's folder (database, logs, keytabs, ticket caches). */
  readonly dir: string;
  /** A `krb5.conf` that knows this realm only, with it as default. */
  readonly krb5Conf: string;
  /** Environment for the Kerberos tools of this realm (KRB5_CONFIG, KRB5_KDC_PROFILE). */
  readonly env: NodeJS.ProcessEnv;
  /** Adds a principal with a password, or a random key when `password` is undefined. */
  addPrincipal(name: string, password?: string, options?: { maxLife?: string }): void;
  /** Adds `principal`'s keys to the keytab file at `path` (created when missing). */
  exportKeytab(principal: string, path: string): void;
  /**
   * Gets a ticket-granting ticket for `principal` into the cache file at `ccache` (password on
   * stdin); `lifetime` is kinit's `-l` (e.g. "1s"). `krb5Conf` defaults to this realm's.
   */
  kinit(
    principal: string,
    password: string,
    ccache: string,
    options?: { lifetime?: string; krb5Conf?: string },
  ): void;
  /** The KDC's log so far, for failure messages. */
  log(): string;
  /** Kills the KDC by its PID and removes the folder. */
  stop(): Promise<void>;
}

/**
 * Creates realm `realm` in a new temp folder and starts its KDC on a free port. Throws, after
 * cleaning up, when a step fails. Call {@link kdcMissing} first.
 */
export async function startRealm(realm: string): Promise<TestRealm> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-kdc-"));
  let kdc: ChildProcess | undefined;
  let output = "";
  try {
    const port = await freePort();
    const krb5Conf = join(dir, "krb5.conf");
    const kdcConf = join(dir, "kdc.conf");
    writeKrb5Conf(krb5Conf, [{ realm, port }], realm);
    writeFileSync(join(dir, "kadm5.acl"), "");
    writeFileSync(
      kdcConf,
      [
        "[kdcdefaults]",
        `  kdc_ports = ${port}`,
        `  kdc_tcp_ports = ${port}`,
        "[realms]",
        `  ${realm} = {`,
        `    database_name = ${join(dir, "principal")}`,
        `    key_stash_file = ${join(dir, "stash")}`,
        `    acl_file = ${join(dir, "kadm5.acl")}`,
        "    max_life = 1h",
        "    max_renewable_life = 0",
        "    supported_enctypes = aes256-cts-hmac-sha1-96:normal",
        "  }",
        "[logging]",
        `  kdc = FILE:${join(dir, "kdc.log")}`,
        "",
      ].join("\n"),
    );
    const env: NodeJS.ProcessEnv = { ...process.env, KRB5_CONFIG: krb5Conf, KRB5_KDC_PROFILE: kdcConf };
    // kadmin.local exits 0 even when a query fails, so its output is read for errors.
    const run = (tool: string, args: string[]): string => {
      const result = spawnSync(tool, args, { env, input: "", encoding: "utf8" });
      const out = `${result.stdout}${result.stderr}`;
      if (result.status !== 0) throw new Error(`${tool} ${args.join(" ")} failed (${result.status}): ${out}`);
      return out;
    };
    run(TOOLS.kdb5_util, ["create", "-s", "-P", "pw", "-r", realm]);
    const kadmin = (query: string) => {
      const out = run(TOOLS["kadmin.local"], ["-r", realm, "-q", query]);
      if (/error|not found|does not exist|\bwhile\b/i.test(out))
        throw new Error(`kadmin.local -q '${query}': ${out}`);
    };

    kdc = spawn(TOOLS.krb5kdc, ["-n", "-r", realm], { env, stdio: ["ignore", "pipe", "pipe"] });
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    kdc.stdout?.on("data", collect);
    kdc.stderr?.on("data", collect);
    const child = kdc;
    // A test process that ends without calling stop() (an uncaught error) still takes its KDC along.
    const killOnExit = () => {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, "SIGKILL");
    };
    process.once("exit", killOnExit);
    await waitForPort(port, child, () => output);

    return {
      realm,
      port,
      dir,
      krb5Conf,
      env,
      addPrincipal(name, password, options = {}) {
        const life = options.maxLife === undefined ? "" : `-maxlife "${options.maxLife}" `;
        kadmin(
          password === undefined
            ? `addprinc ${life}-randkey ${name}`
            : `addprinc ${life}-pw ${password} ${name}`,
        );
      },
      exportKeytab(principal, path) {
        kadmin(`ktadd -k ${path} ${principal}`);
      },
      kinit(principal, password, ccache, options = {}) {
        const args = [
          ...(options.lifetime === undefined ? [] : ["-l", options.lifetime]),
          "-c",
          ccache,
          principal,
        ];
        execFileSync(TOOLS.kinit, args, {
          env: { ...env, KRB5_CONFIG: options.krb5Conf ?? krb5Conf },
          input: `${password}\n`,
          stdio: ["pipe", "pipe", "pipe"],
        });
      },
      log: () => output,
      async stop() {
        process.removeListener("exit", killOnExit);
        if (child.exitCode === null && child.pid !== undefined) {
          const exited = new Promise((resolve) => child.once("exit", resolve));
          process.kill(child.pid, "SIGTERM");
          await exited;
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (kdc?.pid !== undefined && kdc.exitCode === null) process.kill(kdc.pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The end time (epoch ms) of the ticket-granting ticket in cache `ccache`, from `klist`. */
export function ticketEnd(ccache: string, krb5Conf: string): number {
  const out = execFileSync(TOOLS.klist, ["-c", ccache], {
    env: { ...process.env, KRB5_CONFIG: krb5Conf, LC_ALL: "C", TZ: "UTC" },
    encoding: "utf8",
  });
  // "11/23/26 15:58:14  11/23/26 15:58:15  krbtgt/GOOD.TEST@GOOD.TEST"
  const match = /^\S+ \S+\s+(\d\d)\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d)\s+krbtgt\//m.exec(out);
  if (match === null) throw new Error(`no ticket-granting ticket in klist output: ${out}`);
  const [, month, day, year, hour, minute, second] = match.map(Number) as number[];
  return Date.UTC(2000 + (year ?? 0), (month ?? 1) - 1, day, hour, minute, second);
}
