/** The process logger: one JSON line per event on stdout (pino), as every long-running command logs. */
import { type Logger, pino } from "pino";

export function createLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}
