/**
 * Time zones of the metric query (DESIGN 5.3): `zoneId` is any IANA zone, alias or fixed offset.
 *
 * Node 20's `Intl` knows every IANA name and alias (validated by trying, since
 * `Intl.supportedValuesOf("timeZone")` lists only canonical names) but no fixed offsets, so offsets
 * (`+05:30`, `-0800`, `+05`, `Z`) are parsed here. Offsets reach ±18:00, the range of Java's
 * `ZoneOffset`, which the seed's clients use to write `zoneId`.
 */

import { VigilError } from "../../errors/catalog.js";

/** ±HH:MM, ±HHMM or ±HH. */
const FIXED_OFFSET = /^([+-])(\d{2})(?::?(\d{2}))?$/;
/** Java's ZoneOffset range. */
const MAX_OFFSET_MINUTES = 18 * 60;
/** Formatter cache bound: zones come from requests, so the cache must not grow without limit. */
const MAX_CACHED_ZONES = 512;

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

function fixedOffsetMinutes(zone: string): number | undefined {
  const match = FIXED_OFFSET.exec(zone);
  if (match === null) return undefined;
  const hours = Number(match[2]);
  const minutes = Number(match[3] ?? "0");
  if (minutes > 59) return undefined;
  const total = hours * 60 + minutes;
  if (total > MAX_OFFSET_MINUTES) return undefined;
  return match[1] === "-" ? -total : total;
}

/** `+05:30` form of an offset in whole minutes; zero is `+00:00`. */
function offsetText(minutes: number): string {
  const sign = minutes < 0 ? "-" : "+";
  const abs = Math.abs(minutes);
  return `${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
}

function pad2(n: number): string {
  return String(n).padStart(2, "0");
}

function invalidZone(zone: string, why: string): VigilError {
  return new VigilError("INVALID_QUERY", {
    field: "zoneId",
    detail:
      `${why} '${zone}'; use an IANA zone such as Europe/London, an alias such as Asia/Calcutta, ` +
      "UTC, or a fixed offset from -18:00 to +18:00 such as +05:30",
  });
}

/**
 * Checks a `zoneId` and returns the zone to hand to the store. IANA names and aliases are accepted
 * when `Intl.DateTimeFormat` accepts them and returned as written (`Asia/Kolkata`, `Asia/Calcutta`,
 * `GMT`), except that case is corrected (`europe/london` → `Europe/London`, `utc` → `UTC`; a
 * lower-case alias becomes Intl's name for it, `asia/kolkata` → `Asia/Calcutta`); fixed offsets `±HH:MM`, `±HHMM` and `±HH`
 * up to ±18:00 are returned in `±HH:MM` form (`-00:00` → `+00:00`); `Z` is returned as `UTC`.
 * Anything else throws INVALID_QUERY for field `zoneId`.
 */
export function checkZone(zone: string): string {
  if (zone === "Z" || zone === "z") return "UTC";
  if (/^[+-]/.test(zone)) {
    const minutes = fixedOffsetMinutes(zone);
    if (minutes === undefined) throw invalidZone(zone, "invalid fixed offset");
    return offsetText(minutes);
  }
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    throw invalidZone(zone, zone === "" ? "empty time zone" : "unknown time zone");
  }
  // Intl's ICU resolves to old canonical names (Asia/Kolkata → Asia/Calcutta, GMT → UTC): keep a
  // name as written, and use Intl's spelling only to correct the case of a name written in lower case.
  if (resolved.toLowerCase() === zone.toLowerCase()) return resolved;
  return zone === zone.toLowerCase() ? resolved : zone;
}

function offsetFormatter(zone: string): Intl.DateTimeFormat {
  let formatter = offsetFormatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    if (offsetFormatters.size >= MAX_CACHED_ZONES) offsetFormatters.clear();
    offsetFormatters.set(zone, formatter);
  }
  return formatter;
}

/** `GMT`, `GMT+05:30`, `GMT-00:01:15` → seconds east of UTC. */
function parseLongOffset(text: string): number {
  const match = /^GMT(?:([+-])(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?)?$/.exec(text);
  if (match === null) throw new Error(`unexpected Intl offset text '${text}'`);
  if (match[1] === undefined) return 0;
  const seconds = Number(match[2]) * 3600 + Number(match[3] ?? "0") * 60 + Number(match[4] ?? "0");
  return match[1] === "-" ? -seconds : seconds;
}

/**
 * The offset from UTC, in whole minutes east of UTC, that `zone` has at the instant `epochMs`
 * (e.g. 60 for Europe/London in summer, 330 for Asia/Kolkata and `+05:30`, -240 for
 * America/New_York in summer). `zone` is a value returned by `checkZone`. Historical local mean
 * time offsets with seconds (Europe/London before 1847 is -00:01:15) are rounded to the nearest
 * minute, the precision of ISO 8601 offsets; every modern offset is a whole number of minutes.
 */
export function offsetMinutes(zone: string, epochMs: number): number {
  const fixed = fixedOffsetMinutes(zone);
  if (fixed !== undefined) return fixed;
  const part = offsetFormatter(zone)
    .formatToParts(epochMs)
    .find((p) => p.type === "timeZoneName");
  if (part === undefined) throw new Error(`Intl gave no offset for zone '${zone}'`);
  // `+ 0` turns a rounded -0 into 0.
  return Math.round(parseLongOffset(part.value) / 60) + 0;
}

function yearText(year: number): string {
  // ISO 8601 expanded years (as Date.prototype.toISOString writes them) outside 0000–9999.
  if (year >= 0 && year <= 9999) return String(year).padStart(4, "0");
  return `${year < 0 ? "-" : "+"}${String(Math.abs(year)).padStart(6, "0")}`;
}

/**
 * The instant `epochMs` as ISO 8601 local time of `zone` with the zone's offset at that instant,
 * to the second (milliseconds are truncated), e.g. `2026-03-29T00:00:00+00:00` and
 * `2026-03-29T02:00:00+01:00` in Europe/London. The offset is always written `±HH:MM`, never `Z`,
 * so that every label of a response has one shape; `Date.parse` of the result gives back the
 * instant. Bucket labels of the metric query response use it (DESIGN 5.3).
 */
export function formatInZone(epochMs: number, zone: string): string {
  const seconds = Math.floor(epochMs / 1000);
  const offset = offsetMinutes(zone, seconds * 1000);
  const local = new Date((seconds + offset * 60) * 1000);
  return (
    `${yearText(local.getUTCFullYear())}-${pad2(local.getUTCMonth() + 1)}-${pad2(local.getUTCDate())}` +
    `T${pad2(local.getUTCHours())}:${pad2(local.getUTCMinutes())}:${pad2(local.getUTCSeconds())}` +
    offsetText(offset)
  );
}

/**
 * {@link formatInZone} with the milliseconds when they are not zero
 * (`2026-03-29T01:00:00.250+01:00`), as RFC 3339 and Go's `time.Time` read it.
 */
export function formatInZoneMillis(epochMs: number, zone: string): string {
  const text = formatInZone(epochMs, zone);
  const millis = ((epochMs % 1000) + 1000) % 1000;
  if (millis === 0) return text;
  return `${text.slice(0, -6)}.${String(millis).padStart(3, "0")}${text.slice(-6)}`;
}
