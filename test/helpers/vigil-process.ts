/**
 * Runs the real `vigil` command (dist/cli/main.js, built by `npm test` before the tests) as a child
 * process and reads its JSON log lines, for end-to-end tests through real HTTP.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** The built CLI; `VIGIL_BIN` points the tests at another build (a helper's own `tsc --outDir`). */
export const VIGIL_BIN =
  process.env.VIGIL_BIN ?? join(import.meta.dirname, "..", "..", "dist", "cli", "main.js");

export interface LogLine {
  msg?: string;
  level?: number;
  [key: string]: unknown;
}

export class VigilProcess {
  readonly logs: LogLine[] = [];
  private readonly waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = "";

  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      let parsed: LogLine;
      try {
        parsed = JSON.parse(line) as LogLine;
      } catch {
        parsed = { msg: line };
      }
      this.logs.push(parsed);
      for (const waiter of [...this.waiters]) {
        if (waiter.match(parsed)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(parsed);
        }
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  }

  /** Resolves with the first log line (past or future) that matches; rejects if the process exits first. */
  waitFor(match: (l: LogLine) => boolean): Promise<LogLine> {
    const seen = this.logs.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      this.waiters.push({ match, resolve });
      void this.exited.then(({ code }) =>
        reject(new Error(`vigil exited (${code}) before the expected log line; stderr: ${this.stderr}`)),
      );
    });
  }

  /** The URL a service logged as `listening`. */
  async url(service: string, probe?: string): Promise<string> {
    const line = await this.waitFor(
      (l) => l.msg === "listening" && l.service === service && (probe === undefined || l.probe === probe),
    );
    return String(line.url);
  }

  async stop(
    signal: NodeJS.Signals = "SIGTERM",
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/** Starts `vigil <args>` with its cwd in `cwd`. */
export function startVigil(args: string[], cwd: string, env?: NodeJS.ProcessEnv): VigilProcess {
  return new VigilProcess(
    spawn(process.execPath, [VIGIL_BIN, ...args], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      ...(env === undefined ? {} : { env: { ...process.env, ...env } }),
    }),
  );
}

/** A throwaway folder, removed by the returned function. */
export function tempDir(prefix: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), `vigil-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Writes a link secret file (mode 0600, as `vigil probe --link-secret-file` wants); returns its path. */
export function writeSecretFile(dir: string, name: string, secret: string): string {
  const path = join(dir, name);
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  return path;
}

export function writeFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Polls `check` until it returns a value other than undefined, for up to `ms` (default 10 s). */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`condition not met within ${ms} ms${last === undefined ? "" : `: ${String(last)}`}`);
}
