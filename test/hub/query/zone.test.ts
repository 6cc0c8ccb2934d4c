import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { VigilError } from "../../../src/errors/catalog.js";
import { checkZone, formatInZone, offsetMinutes } from "../../../src/hub/query/zone.js";

const at = (iso: string): number => {
  const ms = Date.parse(iso);
  assert.ok(!Number.isNaN(ms), iso);
  return ms;
};

describe("checkZone", () => {
  // biome-ignore format: one line per case
  const valid: [string, string, string][] = [
    ["canonical IANA name", "Europe/London", "Europe/London"],
    ["alias kept as an alias", "Asia/Calcutta", "Asia/Calcutta"],
    ["canonical Kolkata", "Asia/Kolkata", "Asia/Kolkata"],
    ["lower-case name is case-corrected", "europe/london", "Europe/London"],
    ["GMT kept as written", "GMT", "GMT"],
    ["lower-case alias takes Intl's name", "asia/kolkata", "Asia/Calcutta"],
    ["UTC", "UTC", "UTC"],
    ["utc is case-corrected", "utc", "UTC"],
    ["Z means UTC", "Z", "UTC"],
    ["Etc zone", "Etc/GMT+5", "Etc/GMT+5"],
    ["fixed offset as written", "+05:30", "+05:30"],
    ["negative fixed offset", "-08:00", "-08:00"],
    ["offset without colon normalized", "+0530", "+05:30"],
    ["hours-only offset normalized", "-03", "-03:00"],
    ["negative zero offset is +00:00", "-00:00", "+00:00"],
    ["largest offset", "+18:00", "+18:00"],
  ];
  for (const [name, zone, expected] of valid) {
    test(`accepts ${name}`, () => assert.equal(checkZone(zone), expected));
  }

  // biome-ignore format: one line per case

  const invalid: [string, string, string][] = [
    ["unknown name", "Mars/Olympus", "unknown time zone 'Mars/Olympus'"],
    ["empty", "", "empty time zone"],
    ["offset beyond 18:00", "+18:30", "invalid fixed offset '+18:30'"],
    ["offset with 60 minutes", "+05:60", "invalid fixed offset"],
    ["single-digit offset", "+5", "invalid fixed offset"],
    ["UTC+1 form", "UTC+1", "unknown time zone"],
  ];
  for (const [name, zone, fragment] of invalid) {
    test(`rejects ${name}`, () => {
      assert.throws(
        () => checkZone(zone),
        (error: unknown) => {
          assert.ok(error instanceof VigilError);
          assert.equal(error.status, 400);
          assert.equal(error.code, "INVALID_QUERY");
          assert.equal(error.fields.field, "zoneId");
          assert.match(String(error.fields.detail), new RegExp(fragment.replace(/[+()]/g, "\\$&")));
          return true;
        },
      );
    });
  }
});

describe("offsetMinutes", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, string, number][] = [
    ["London in winter", "Europe/London", "2026-01-15T12:00:00Z", 0],
    ["London in summer", "Europe/London", "2026-07-15T12:00:00Z", 60],
    ["New York in winter", "America/New_York", "2026-01-15T12:00:00Z", -300],
    ["New York in summer", "America/New_York", "2026-07-15T12:00:00Z", -240],
    ["Kolkata", "Asia/Kolkata", "2026-07-15T12:00:00Z", 330],
    ["fixed +05:30", "+05:30", "2026-07-15T12:00:00Z", 330],
    ["fixed -08:00", "-08:00", "2026-07-15T12:00:00Z", -480],
    ["Lord Howe standard (+10:30)", "Australia/Lord_Howe", "2026-07-15T12:00:00Z", 630],
    ["Lord Howe summer (+11:00, 30-minute DST)", "Australia/Lord_Howe", "2026-01-15T12:00:00Z", 660],
    ["London local mean time rounded to minutes", "Europe/London", "1800-01-01T00:00:00Z", -1],
  ];
  for (const [name, zone, instant, expected] of cases) {
    test(name, () => assert.equal(offsetMinutes(zone, at(instant)), expected));
  }
});

describe("formatInZone", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, string, string][] = [
    ["UTC is written +00:00, never Z", "UTC", "2026-03-29T00:00:00Z", "2026-03-29T00:00:00+00:00"],
    ["milliseconds are truncated", "UTC", "2026-03-29T00:00:00.999Z", "2026-03-29T00:00:00+00:00"],
    ["London last second of GMT", "Europe/London", "2026-03-29T00:59:59Z", "2026-03-29T00:59:59+00:00"],
    ["London first instant of BST", "Europe/London", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00+01:00"],
    ["London repeated hour, first", "Europe/London", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00+01:00"],
    ["London repeated hour, second", "Europe/London", "2026-10-25T01:30:00Z", "2026-10-25T01:30:00+00:00"],
    ["New York before spring gap", "America/New_York", "2026-03-08T06:59:59Z", "2026-03-08T01:59:59-05:00"],
    ["New York after spring gap", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00"],
    ["New York repeated 01:30 EDT", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00"],
    ["New York repeated 01:30 EST", "America/New_York", "2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00"],
    ["Kolkata half-hour offset", "Asia/Kolkata", "2026-01-01T00:00:00Z", "2026-01-01T05:30:00+05:30"],
    ["fixed +05:30", "+05:30", "2026-01-01T00:00:00Z", "2026-01-01T05:30:00+05:30"],
    ["fixed -08:00 crosses the year", "-08:00", "2026-01-01T00:00:00Z", "2025-12-31T16:00:00-08:00"],
    ["Lord Howe before DST", "Australia/Lord_Howe", "2026-10-03T15:29:59Z", "2026-10-04T01:59:59+10:30"],
    ["Lord Howe skips 02:00-02:30", "Australia/Lord_Howe", "2026-10-03T15:30:00Z", "2026-10-04T02:30:00+11:00"],
    ["Lord Howe 01:45 first", "Australia/Lord_Howe", "2026-04-04T14:45:00Z", "2026-04-05T01:45:00+11:00"],
    ["Lord Howe 01:45 again", "Australia/Lord_Howe", "2026-04-04T15:15:00Z", "2026-04-05T01:45:00+10:30"],
    ["year below 1000 is padded", "UTC", "0500-06-01T00:00:00Z", "0500-06-01T00:00:00+00:00"],
    ["negative year is expanded", "UTC", "-000100-01-01T00:00:00Z", "-000100-01-01T00:00:00+00:00"],
    ["local mean time", "Europe/London", "1800-01-01T00:00:00Z", "1799-12-31T23:59:00-00:01"],
  ];
  for (const [name, zone, instant, expected] of cases) {
    test(name, () => assert.equal(formatInZone(at(instant), zone), expected));
  }

  test("parses back to the same second in several zones (property)", () => {
    const zones = [
      "UTC",
      "Europe/London",
      "America/New_York",
      "Asia/Kolkata",
      "Australia/Lord_Howe",
      "Asia/Kathmandu",
      "Pacific/Chatham",
      "America/St_Johns",
      "+05:30",
      "-08:00",
    ];
    const instants = fc.integer({ min: at("1900-01-01T00:00:00Z"), max: at("2100-01-01T00:00:00Z") });
    fc.assert(
      fc.property(instants, fc.constantFrom(...zones), (ms, zone) => {
        const text = formatInZone(ms, zone);
        assert.match(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
        assert.equal(Date.parse(text), Math.floor(ms / 1000) * 1000);
      }),
      { numRuns: 2000 },
    );
  });
});
