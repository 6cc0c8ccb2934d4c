/**
 * Bucket durations of the metric query (DESIGN 5.3): `bucketing.duration` is an ISO 8601 duration,
 * PT1M … PT12H or any whole number of minutes or hours that divides a day, or a calendar unit
 * P1D, P1W, P1M.
 */

import { VigilError } from "../../errors/catalog.js";
import type { BucketSpec } from "../store/store.js";

const MINUTES_PER_DAY = 1440;

/** PTnH, PTnM or PTnHnM with whole numbers (ISO 8601 designators, either case as Java accepts). */
const TIME_DURATION = /^PT(?:(\d{1,4})H)?(?:(\d{1,4})M)?$/i;

const CALENDAR: Readonly<Record<string, BucketSpec>> = {
  P1D: { kind: "day" },
  P1W: { kind: "week" },
  P1M: { kind: "month" },
};

const ACCEPTED =
  "PT1M, PT5M, PT15M, PT1H, PT3H, PT12H, any PTnM or PTnH (or PTnHnM) of whole minutes or hours " +
  "that divides a day of 1440 minutes (PT90M yes, PT7M no), P1D, P1W or P1M";

function invalid(text: string, why: string): VigilError {
  return new VigilError("INVALID_QUERY", {
    field: "bucketing.duration",
    detail: `${why} '${text}'; accepted: ${ACCEPTED}`,
  });
}

/**
 * Parses a bucket duration. `PTnM`, `PTnH` and `PTnHnM` give `{kind: "minutes"}` when the total is
 * a whole number of minutes that divides 1440 (PT1M, PT90M, PT1H30M, PT12H); a whole day written
 * this way (PT24H, PT1440M) is the calendar day `{kind: "day"}`, the same local-midnight buckets.
 * `P1D`, `P1W` (ISO weeks from Monday) and `P1M` (calendar months) are calendar units. Designators
 * may be lower case. Fractions (PT0.5H), seconds, zero, multiples of calendar units (P2D, P7D) and
 * durations that do not divide a day are INVALID_QUERY for field `bucketing.duration`.
 */
export function parseBucketDuration(text: string): BucketSpec {
  const upper = text.toUpperCase();
  const calendar = CALENDAR[upper];
  if (calendar !== undefined) return calendar;
  const match = TIME_DURATION.exec(text);
  if (match === null || (match[1] === undefined && match[2] === undefined)) {
    if (/[.,]/.test(text)) throw invalid(text, "fractions are not accepted in");
    throw invalid(text, "unsupported bucket duration");
  }
  const minutes = Number(match[1] ?? "0") * 60 + Number(match[2] ?? "0");
  if (minutes === 0) throw invalid(text, "a bucket cannot be empty:");
  if (minutes > MINUTES_PER_DAY || MINUTES_PER_DAY % minutes !== 0) {
    throw invalid(text, `${minutes} minutes does not divide a day:`);
  }
  if (minutes === MINUTES_PER_DAY) return { kind: "day" };
  return { kind: "minutes", minutes };
}
