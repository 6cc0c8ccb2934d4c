/**
 * The young generation of a long-running vigil process. V8 sizes its semi-spaces when
 * the process starts: Node 20's at most 16 MB, Node 24's from the machine's memory (64 MB on a
 * 24 GiB machine, a new space of 128 MB that the rows a probe keeps replacing fill), and nothing
 * set later changes it (`v8.setFlagsFromString` does for the heap's growth, heap-growth.ts, not
 * for this). So a service command (`up`, `hub`, `gateway`, `probe`) started without a bound of its
 * own replaces itself, before it has loaded, opened or written anything, with the same process
 * started again with `--max-semi-space-size=MAX_SEMI_SPACE_MB`: `process.execve`, which keeps the
 * process id, the environment and the standard streams, so whatever started it (a shell, systemd,
 * `npm start`, a test) sees one process throughout. A process started with its own
 * `--max-semi-space-size` (in its arguments or NODE_OPTIONS) keeps it; on a Node without
 * `process.execve` (Node 20, whose bound is already 16 MB; Windows) the process runs as started.
 *
 * V8's flags hold for every isolate of the process, and the flag outranks a worker's own
 * `resourceLimits`: with it, the hub's backfill parse worker had a new space of 32 MB instead of
 * the 8 its limits ask for. So once the process runs, the flag is cleared
 * (`workersOwnYoungGeneration`): the main isolate keeps the bound it started with, and isolates
 * made later (workers) take their own limits.
 *
 * The same exec gives the process glibc's malloc tunable {@link MALLOC_TUNABLE} (`GLIBC_TUNABLES`,
 * which glibc reads only when a process starts), unless the environment sets that tunable already.
 * glibc raises its threshold for serving an allocation by `mmap` each time such a block is freed,
 * up to 32 MiB, after which the large blocks of a backfill (bodies, slices, result chunks) come from
 * its arenas, where freed pages stay resident between live ones; a fixed threshold turns that off,
 * so a freed large block goes back to the system. The hub's peak in the peers backfill and query
 * (bench/peers.bench.ts, Node 20 with the variable set by hand, one round each): 289 and 307 MiB
 * against 326-333 and 353 at 20 rows, 329-334 and 365-372 against 351 and 407-410 at 100, for
 * 0-5 % more CPU. On a Node without `process.execve` the operator sets the variable
 * (docs/operations.md).
 */
import { setFlagsFromString } from "node:v8";
import { MALLOC_MMAP_THRESHOLD_BYTES, MAX_SEMI_SPACE_MB } from "../config/defaults.js";

/** The commands that run until stopped (DESIGN 1), whose memory the bound is for. */
export const SERVICE_COMMANDS: ReadonlySet<string> = new Set(["up", "hub", "gateway", "probe"]);

const OWN_BOUND = /^--max[-_]semi[-_]space[-_]size(=|$)/;

/**
 * The V8 flag a process started with `execArgv` and `NODE_OPTIONS` must be started again with, or
 * undefined when it names its own bound.
 */
export function youngGenerationFlag(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  maxSemiSpaceMb: number = MAX_SEMI_SPACE_MB,
): string | undefined {
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)];
  if (given.some((arg) => OWN_BOUND.test(arg))) return undefined;
  return `--max-semi-space-size=${maxSemiSpaceMb}`;
}

/** The glibc tunable a service process runs with (see the file comment). */
export const MALLOC_TUNABLE = `glibc.malloc.mmap_threshold=${MALLOC_MMAP_THRESHOLD_BYTES}`;

/**
 * The `GLIBC_TUNABLES` a service process must be started again with, given the one it has, or
 * undefined when it sets the threshold itself or the system is not Linux.
 */
export function mallocTunables(
  current: string | undefined,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (platform !== "linux") return undefined;
  if (/(?:^|:)glibc\.malloc\.mmap_threshold=/.test(current ?? "")) return undefined;
  return current === undefined || current === "" ? MALLOC_TUNABLE : `${current}:${MALLOC_TUNABLE}`;
}

/**
 * `env` with {@link mallocTunables} in its `GLIBC_TUNABLES` when it needs them: the environment a
 * service process runs with, which it gives itself where it can start again in place, and which
 * whatever starts it on a Node that cannot (Node 20) gives it (docs/operations.md).
 */
export function serviceEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv {
  const tunables = mallocTunables(env.GLIBC_TUNABLES, platform);
  return tunables === undefined ? env : { ...env, GLIBC_TUNABLES: tunables };
}

type Execve = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never;

/** Whether this Node can start its process again in place (`process.execve`, not on Windows). */
export function canRestartInPlace(): boolean {
  // @types/node follows Node 20, which has no process.execve.
  return typeof (process as { execve?: Execve }).execve === "function" && process.platform !== "win32";
}

/**
 * Starts this process again in place with {@link youngGenerationFlag} when it runs a service
 * command without a bound and this Node can (`process.execve`, Node 22.15 and later, not on
 * Windows); otherwise returns and the process goes on as started. `argv` is `process.argv`.
 */
export function boundYoungGeneration(argv: readonly string[] = process.argv): void {
  const command = argv[2];
  if (command === undefined || !SERVICE_COMMANDS.has(command)) return;
  if (canRestartInPlace()) {
    const execve = (process as unknown as { execve: Execve }).execve;
    const flag = youngGenerationFlag(process.execArgv, process.env.NODE_OPTIONS);
    const env = serviceEnvironment();
    if (flag !== undefined || env !== process.env) {
      const flags = flag === undefined ? [] : [flag];
      try {
        execve.call(
          process,
          process.execPath,
          [process.execPath, ...process.execArgv, ...flags, ...argv.slice(1)],
          env,
        );
      } catch (error) {
        // Only a failed exec returns: the process goes on as started.
        process.stderr.write(
          `vigil: could not start again with ${[...flags, `GLIBC_TUNABLES=${env.GLIBC_TUNABLES ?? ""}`].join(" ")} ` +
            `(${error instanceof Error ? error.message : String(error)}); running as started\n`,
        );
      }
    }
  }
  workersOwnYoungGeneration();
}

/**
 * Clears `--max-semi-space-size` for the isolates made from now on, when the process was started
 * with it: the main isolate keeps the bound it started with, and a worker takes the young
 * generation of its own `resourceLimits` (see the file comment).
 */
export function workersOwnYoungGeneration(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  if (youngGenerationFlag(execArgv, nodeOptions) !== undefined) return false;
  setFlagsFromString("--max-semi-space-size=0");
  return true;
}
