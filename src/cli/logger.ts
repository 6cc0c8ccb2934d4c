/**
 * The process logger (pino): one JSON line per event on stdout, as every long-running command logs,
 * or readable lines (pino-pretty, in the process) when a person watches: `--log-format pretty`, or by
 * default when stdout is a terminal. `--log-format json` keeps JSON on a terminal too.
 */
import { Option } from "commander";
import { type Logger, pino } from "pino";
import pretty from "pino-pretty";

export const LOG_FORMATS = ["auto", "json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The `--log-format` option of the long-running commands. */
export function logFormatOption(): Option {
  return new Option(
    "--log-format <format>",
    "json (one JSON line per event) or pretty (readable lines); auto: pretty on a terminal, else json",
  )
    .choices(LOG_FORMATS)
    .default("auto");
}

/** Whether lines are readable text rather than JSON: `format`, or for `auto` whether stdout is a terminal. */
export function prettyLogs(format: LogFormat, terminal: boolean): boolean {
  return format === "pretty" || (format === "auto" && terminal);
}

export function createLogger(level: string, format: LogFormat = "auto"): Logger {
  const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  if (!prettyLogs(format, process.stdout.isTTY === true)) return pino(options);
  return pino(
    options,
    pretty({
      colorize: process.stdout.isTTY === true,
      translateTime: "SYS:yyyy-mm-dd HH:MM:ss.l o",
      ignore: "pid,hostname",
      sync: true, // every line written before the process exits
    }),
  );
}
