/**
 * A metric query's time zone as both stores use it (DESIGN 5.3): which zones the database's own
 * time zone library reads and which are fixed offsets applied by arithmetic, the zone's UTC offsets
 * around a query, and the query's range cut at the offset changes into segments of constant offset.
 *
 * Everything here is in epoch milliseconds, the plan's unit; a store whose database counts in other
 * units (DuckDB's microseconds) converts where it binds a value or reads one back. Offset changes
 * fall on whole seconds, so no conversion loses anything.
 */
import { VigilError } from "../../../errors/catalog.js";

export const SECOND_MS = 1000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;
/** 1970-01-05, the first Monday after the epoch: ISO weeks start on Monday. */
export const FIRST_MONDAY_MS = 4 * DAY_MS;
/** How far before a scan to look for offset transitions: longer than the longest bucket (a month). */
export const TRANSITION_LOOKBACK_MS = 33 * DAY_MS; // 33 days

/** A zone the database can use: a name for its time zone library, or a fixed offset applied by arithmetic. */
export type ZoneSpec =
  | { readonly kind: "named"; readonly name: string }
  | { readonly kind: "fixed"; readonly offsetSeconds: number };

const FIXED_OFFSET = /^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/i;

/**
 * Classifies a zone id. ICU (DuckDB's time zone library) rejects offset ids such as `+05:30` and
 * reads `UTC+05:30` wrongly, and `Etc/GMT…` cannot express half-hour offsets, so fixed offsets
 * (`+05:30`, `-0800`, `+05`, `UTC+01:00`, `GMT-3`, `Z`) become `{kind: "fixed"}` and are applied as
 * a plain shift; every other id (IANA names and aliases like `Asia/Calcutta`) is passed to the
 * database unchanged as `{kind: "named"}`. Throws a RangeError for an offset beyond ±18:59:59.
 */
export function parseZone(zone: string): ZoneSpec {
  if (zone === "Z" || zone === "z") return { kind: "fixed", offsetSeconds: 0 };
  const m = FIXED_OFFSET.exec(zone);
  if (m === null) return { kind: "named", name: zone };
  const [, sign, hours, minutes, seconds] = m;
  const h = Number(hours);
  const min = Number(minutes ?? "0");
  const s = Number(seconds ?? "0");
  if (h > 18 || min > 59 || s > 59) throw new RangeError(`time zone offset out of range: ${zone}`);
  const magnitude = h * 3600 + min * 60 + s;
  return { kind: "fixed", offsetSeconds: sign === "-" ? -magnitude : magnitude };
}

/** One change of a zone's UTC offset: from `beforeMs` to `afterMs` (ms east of UTC) at `atMs`. */
export interface OffsetTransition {
  readonly atMs: number;
  readonly beforeMs: number;
  readonly afterMs: number;
}

/**
 * A zone's UTC offsets around one stretch of time: `initialMs` is in force from before the stretch
 * (at least {@link TRANSITION_LOOKBACK_MS} before it) until the first of `transitions`
 * (time-ordered, each strictly later than the one before). A fixed offset has no transitions.
 */
export interface ZoneOffsets {
  readonly initialMs: number;
  readonly transitions: readonly OffsetTransition[];
}

/** The offsets of a fixed-offset zone: one offset, no transitions. */
export function fixedZoneOffsets(offsetSeconds: number): ZoneOffsets {
  return { initialMs: offsetSeconds * SECOND_MS, transitions: [] };
}

/** Instants `[from, to)` (epoch ms) where samples of a query can be. */
export interface ScanWindow {
  readonly from: number;
  readonly to: number;
}

/** A stretch `[from, to)` (epoch ms) of constant offset, and the transition that opened it, if recent. */
export interface Segment {
  readonly from: number;
  readonly to: number;
  readonly offsetMs: number;
  readonly opened: OffsetTransition | null;
}

/** `window` cut at the transitions inside it; the first segment keeps the latest earlier transition. */
export function segments(offsets: ZoneOffsets, window: ScanWindow): Segment[] {
  const out: Segment[] = [];
  let offsetMs = offsets.initialMs;
  let opened: OffsetTransition | null = null;
  let from = window.from;
  for (const t of offsets.transitions) {
    if (t.atMs <= window.from) {
      offsetMs = t.afterMs;
      opened = t;
      continue;
    }
    if (t.atMs >= window.to) break;
    out.push({ from, to: t.atMs, offsetMs, opened });
    from = t.atMs;
    offsetMs = t.afterMs;
    opened = t;
  }
  out.push({ from, to: window.to, offsetMs, opened });
  return out;
}

/**
 * The zone names a database's time zone library knows, read once on the first query with a named
 * zone. Node's ICU and the database carry their own zone data: a name Node accepts that the
 * database does not know is the client's error (400 for `zoneId`), not a store failure, and it is
 * never passed on (PostgreSQL would read an unknown name as a POSIX spec with the sign inverted).
 */
export class KnownZones {
  private names: Set<string> | undefined;

  /** `read` lists the database's zone names (DuckDB and PostgreSQL: `pg_timezone_names`). */
  constructor(private readonly read: () => Promise<Iterable<string>>) {}

  /** Resolves when `zone` is a fixed offset or a name the database knows; else rejects (INVALID_QUERY). */
  async check(zone: string): Promise<void> {
    const spec = parseZone(zone);
    if (spec.kind !== "named") return;
    this.names ??= new Set(await this.read());
    if (!this.names.has(spec.name)) {
      throw new VigilError("INVALID_QUERY", {
        field: "zoneId",
        detail: `time zone '${zone}' is not known to the store; use a canonical IANA name or a fixed offset such as +05:30`,
      });
    }
  }
}
