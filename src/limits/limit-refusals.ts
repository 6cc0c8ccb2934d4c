/**
 * Refusals at the limits of data-limits.ts, counted per entry point and limit and logged at most
 * once a {@link REFUSAL_LOG_INTERVAL_MS} per pair (a client that keeps sending too much cannot
 * flood the log): every process that takes data from the network serves the counts at `/metrics`
 * as `vigil_limit_refusals_total{entry, limit}` (docs/security.md, "Limits").
 */
import type { Registry } from "prom-client";
import { VigilError } from "../errors/catalog.js";
import { readLabelledCounter, type Sample } from "../metrics/registry.js";
import { isWellFormed } from "../text/well-formed.js";
import type { DataLimits } from "./data-limits.js";

/** Where data entered: the probe's HTTP API, the probe link, the hub's backfill, the hub's bus. */
export type LimitEntry = "probe" | "link" | "backfill" | "bus";

/** The name of one limit: its key in the setup's `limits` section. */
export type LimitName = keyof DataLimits;

export const LIMIT_ENTRIES: readonly LimitEntry[] = ["probe", "link", "backfill", "bus"];
export const LIMIT_NAMES: readonly LimitName[] = [
  "nameBytes",
  "attributeValueBytes",
  "attributesPerEntity",
  "cellBytes",
  "linkFrameBytes",
  "jsonDepth",
];

/** The shortest time between two log lines of one entry and limit. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000; // ms

/** Where refusals are logged (a pino logger). */
export interface RefusalLogger {
  warn(details: object, message: string): void;
}

/** The counts of one process, by entry and limit. */
export class LimitRefusals {
  private readonly counts = new Map<string, number>();
  /** Per entry and limit: when it was last logged, and refusals since that were not. */
  private readonly logged = new Map<string, { at: number; quiet: number }>();

  constructor(private readonly logger: RefusalLogger) {}

  /** Counts `count` refusals at `entry` of `limit` and logs them unless one was logged lately. */
  refused(entry: LimitEntry, limit: LimitName, reason: string, count = 1): void {
    const key = `${entry} ${limit}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + count);
    const now = Date.now();
    const last = this.logged.get(key);
    if (last !== undefined && now - last.at < REFUSAL_LOG_INTERVAL_MS) {
      last.quiet += count;
      return;
    }
    this.logged.set(key, { at: now, quiet: 0 });
    this.logger.warn(
      {
        entry,
        limit: `limits.${limit}`,
        reason: reason.slice(0, 300),
        ...(last === undefined || last.quiet === 0 ? {} : { notLogged: last.quiet }),
        total: this.counts.get(key),
      },
      "refused data beyond a limit",
    );
  }

  /** The count of one entry and limit (0 when none). */
  count(entry: LimitEntry, limit: LimitName): number {
    return this.counts.get(`${entry} ${limit}`) ?? 0;
  }

  /** Every count, as samples of the labelled counter (only the pairs that have refused). */
  *samples(): Iterable<Sample<"entry" | "limit">> {
    for (const [key, value] of this.counts) {
      const [entry, limit] = key.split(" ") as [string, string];
      yield [{ entry, limit }, value];
    }
  }
}

/** Registers `vigil_limit_refusals_total{entry, limit}` in a server's registry. */
export function registerLimitRefusals(registry: Registry, refusals: LimitRefusals): void {
  readLabelledCounter(
    registry,
    {
      name: "vigil_limit_refusals_total",
      help: "Data refused at a limit of the setup's limits section, by entry point (probe, link, backfill, bus) and limit",
      labelNames: ["entry", "limit"],
    },
    () => refusals.samples(),
  );
}

/** The 400 an HTTP entry answers for data beyond a limit (errors catalog `LIMIT_EXCEEDED`). */
export function limitError(
  limit: LimitName,
  what: string,
  size: number,
  setting: number,
  sizeUnit = unit(limit),
): VigilError {
  return new VigilError("LIMIT_EXCEEDED", { what, size: `${size} ${sizeUnit}`, limit, setting });
}

/** The text of a refusal where no HTTP error carries it (a backfill rejection, a dead letter, a link close). */
export function limitReason(
  limit: LimitName,
  what: string,
  size: number,
  setting: number,
  sizeUnit = unit(limit),
): string {
  return `${what}: ${size} ${sizeUnit}, more than limits.${limit} (${setting})`;
}

function unit(limit: LimitName): string {
  if (limit === "jsonDepth") return "levels of nesting";
  if (limit === "attributesPerEntity") return "attributes";
  return "bytes";
}

/** A name or value as it can be quoted in a refusal: its first 64 characters, never a lone surrogate. */
export function quoted(text: string): string {
  const short = text.length > 64 ? `${text.slice(0, 64)}…` : text;
  // In a `u` regular expression a surrogate range matches lone surrogates only.
  return `'${isWellFormed(short) ? short : short.replace(/[\uD800-\uDFFF]/gu, "\uFFFD")}'`;
}
