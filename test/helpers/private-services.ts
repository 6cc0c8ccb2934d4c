/**
 * Services of a test file's own, for the fault tests: a PostgreSQL server the test may
 * stop and start again, and a small tmpfs to fill up. The shared PostgreSQL (127.0.0.1:5432) and
 * NATS (127.0.0.1:4222) serve every other test running at the same time, so a fault test never
 * touches them. A private NATS server is {@link PrivateNats} in nats.ts (the NATS tests had it first).
 *
 * Each `start()` resolves `undefined` with the reason in {@link PrivatePostgres.skipReason} /
 * {@link mountTmpfs}'s answer when the machine cannot provide the service, so the test can print
 * why it skips (scripts/services.sh installs the binaries in CI).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { closedPort, type PrivateNats, waitFor } from "./nats.js";

/** Where Debian's postgresql-15 package (scripts/services.sh) puts the server binaries. */
export const PG_BIN_DIR = "/usr/lib/postgresql/15/bin";

/** How long a private server may take to start or stop (a loaded 2-core machine). */
const SERVICE_TIMEOUT_MS = 60_000; // 60 s

/** The uid and gid of a local user, from /etc/passwd; undefined when there is none. */
function localUser(name: string): { uid: number; gid: number } | undefined {
  for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
    const [user, , uid, gid] = line.split(":");
    if (user === name && uid !== undefined && gid !== undefined)
      return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

/** Why a private PostgreSQL cannot run here, or undefined when it can. */
function postgresSkipReason(): string | undefined {
  for (const bin of ["initdb", "postgres"]) {
    if (!existsSync(join(PG_BIN_DIR, bin))) {
      return `${join(PG_BIN_DIR, bin)} is not installed: run scripts/services.sh start`;
    }
  }
  // PostgreSQL refuses to run as root: run it as the `postgres` user the package creates.
  if (process.getuid?.() === 0 && localUser("postgres") === undefined) {
    return "running as root and there is no postgres user to run a private PostgreSQL as";
  }
  return undefined;
}

/**
 * A PostgreSQL server of the test's own: a fresh cluster in a temporary folder (initdb, trust
 * authentication, user `postgres`), listening on 127.0.0.1 on a free port. `down()` and `up()` stop
 * and start it on the same port and data, as an operator's restart does. Durability settings are
 * PostgreSQL's defaults except `fsync=off`: a stopped or killed server keeps its committed data (the
 * files stay in the page cache); only a machine crash would need fsync.
 */
export class PrivatePostgres {
  /** Why {@link PrivatePostgres.start} resolves undefined on this machine. */
  static readonly skipReason: string | undefined = postgresSkipReason();
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly user: { uid: number; gid: number } | undefined,
  ) {}

  /** `postgres://postgres@127.0.0.1:<port>/<database>`. */
  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Creates the cluster and starts it; undefined when {@link skipReason} says it cannot run. */
  static async start(): Promise<PrivatePostgres | undefined> {
    if (PrivatePostgres.skipReason !== undefined) return undefined;
    const user = process.getuid?.() === 0 ? localUser("postgres") : undefined;
    const dir = mkdtempSync(join(tmpdir(), "vigil-pg-"));
    if (user !== undefined) chownSync(dir, user.uid, user.gid);
    const server = new PrivatePostgres(await closedPort(), dir, user);
    try {
      execFileSync(
        join(PG_BIN_DIR, "initdb"),
        ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"],
        { stdio: "ignore", ...(user ?? {}), timeout: SERVICE_TIMEOUT_MS },
      );
      mkdirSync(join(dir, "socket"));
      if (user !== undefined) chownSync(join(dir, "socket"), user.uid, user.gid);
      await server.up();
    } catch (error) {
      await server.cleanup();
      throw error;
    }
    return server;
  }

  /** Whether the server process is running. */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null;
  }

  /** Starts the server (again) and resolves once it answers a query. */
  async up(): Promise<void> {
    if (this.child !== undefined) return;
    const child = spawn(
      join(PG_BIN_DIR, "postgres"),
      [
        "-D",
        join(this.dir, "data"),
        "-p",
        String(this.port),
        "-k",
        join(this.dir, "socket"),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
        "-c",
        "max_connections=60",
        "-c",
        "shared_buffers=16MB",
      ],
      { stdio: "ignore", ...(this.user ?? {}) },
    );
    this.child = child;
    await waitFor(
      `private PostgreSQL on port ${this.port}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}`);
        const sql = postgres(this.url(), { max: 1, connect_timeout: 1, onnotice: () => undefined });
        try {
          await sql`SELECT 1`;
          return true;
        } catch {
          return false;
        } finally {
          await sql.end({ timeout: 1 }).catch(() => undefined);
        }
      },
      SERVICE_TIMEOUT_MS,
    );
  }

  /**
   * Stops the server and waits for it to exit: `fast` (SIGINT, what `pg_ctl restart` does:
   * sessions are ended, the server shuts down cleanly) or `immediate` (SIGQUIT: no clean
   * shutdown, crash recovery at the next start).
   */
  async down(mode: "fast" | "immediate" = "fast"): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill(mode === "fast" ? "SIGINT" : "SIGQUIT");
    await exited;
  }

  /** Creates a database and returns its URL. */
  async createDatabase(name: string): Promise<string> {
    const sql = postgres(this.url(), { max: 1, onnotice: () => undefined });
    try {
      await sql.unsafe(`CREATE DATABASE ${name}`);
    } finally {
      await sql.end({ timeout: 1 });
    }
    return this.url(name);
  }

  /** Stops the server (SIGKILL if it does not stop within the timeout) and removes its folder. */
  async cleanup(): Promise<void> {
    const child = this.child;
    if (child !== undefined && child.exitCode === null) {
      const stopped = this.down("immediate");
      const timer = setTimeout(() => child.kill("SIGKILL"), SERVICE_TIMEOUT_MS);
      await stopped;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Why a private NATS server ({@link PrivateNats}) cannot run here, or undefined when it can. */
export const PRIVATE_NATS_SKIP: string | undefined = existsSync("/usr/sbin/nats-server")
  ? undefined
  : "/usr/sbin/nats-server is not installed: run scripts/services.sh start";

/** A mounted tmpfs of a fixed size, or why none could be mounted. */
export type Tmpfs =
  | { readonly ok: true; readonly path: string; readonly unmount: () => void }
  | { readonly ok: false; readonly reason: string };

/**
 * Mounts a tmpfs of `sizeBytes` on a new temporary folder (`mount -t tmpfs -o size=…`), so a test
 * can fill a real file system and see ENOSPC. Needs root with CAP_SYS_ADMIN (a privileged
 * container); otherwise answers `ok: false` with the reason. `unmount()` unmounts (lazily if
 * something still holds a file open) and removes the folder.
 */
export function mountTmpfs(sizeBytes: number): Tmpfs {
  const path = mkdtempSync(join(tmpdir(), "vigil-tmpfs-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0700`, "tmpfs", path], {
      stdio: ["ignore", "ignore", "pipe"],
    });
  } catch (error) {
    rmSync(path, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return { ok: false, reason: `mount -t tmpfs refused: ${stderr || (error as Error).message}` };
  }
  return {
    ok: true,
    path,
    unmount: () => {
      try {
        execFileSync("umount", [path], { stdio: "ignore" });
      } catch {
        execFileSync("umount", ["-l", path], { stdio: "ignore" });
      }
      rmSync(path, { recursive: true, force: true });
    },
  };
}
