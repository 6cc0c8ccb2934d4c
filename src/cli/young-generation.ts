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
 */
import { MAX_SEMI_SPACE_MB } from "../config/defaults.js";

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

type Execve = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never;

/**
 * Starts this process again in place with {@link youngGenerationFlag} when it runs a service
 * command without a bound and this Node can (`process.execve`, Node 22.15 and later, not on
 * Windows); otherwise returns and the process goes on as started. `argv` is `process.argv`.
 */
export function boundYoungGeneration(argv: readonly string[] = process.argv): void {
  const command = argv[2];
  if (command === undefined || !SERVICE_COMMANDS.has(command)) return;
  // @types/node follows Node 20, which has no process.execve.
  const execve = (process as { execve?: Execve }).execve;
  if (typeof execve !== "function" || process.platform === "win32") return;
  const flag = youngGenerationFlag(process.execArgv, process.env.NODE_OPTIONS);
  if (flag === undefined) return;
  try {
    execve.call(
      process,
      process.execPath,
      [process.execPath, ...process.execArgv, flag, ...argv.slice(1)],
      process.env,
    );
  } catch (error) {
    // Only a failed exec returns: the process goes on with V8's own bound.
    process.stderr.write(
      `vigil: could not start again with ${flag} (${error instanceof Error ? error.message : String(error)}); ` +
        "running with this Node's own young generation\n",
    );
  }
}
