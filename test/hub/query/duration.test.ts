import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { VigilError } from "../../../src/errors/catalog.js";
import { parseBucketDuration } from "../../../src/hub/query/duration.js";
import type { BucketSpec } from "../../../src/hub/store/store.js";

describe("parseBucketDuration accepts", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, BucketSpec][] = [
    ["one minute", "PT1M", { kind: "minutes", minutes: 1 }],
    ["five minutes", "PT5M", { kind: "minutes", minutes: 5 }],
    ["fifteen minutes", "PT15M", { kind: "minutes", minutes: 15 }],
    ["one hour", "PT1H", { kind: "minutes", minutes: 60 }],
    ["three hours", "PT3H", { kind: "minutes", minutes: 180 }],
    ["twelve hours", "PT12H", { kind: "minutes", minutes: 720 }],
    ["90 minutes divides a day", "PT90M", { kind: "minutes", minutes: 90 }],
    ["hours and minutes combined", "PT1H30M", { kind: "minutes", minutes: 90 }],
    ["eight hours", "PT8H", { kind: "minutes", minutes: 480 }],
    ["leading zero", "PT05M", { kind: "minutes", minutes: 5 }],
    ["lower-case designators", "pt5m", { kind: "minutes", minutes: 5 }],
    ["PT24H is the calendar day", "PT24H", { kind: "day" }],
    ["PT1440M is the calendar day", "PT1440M", { kind: "day" }],
    ["a day", "P1D", { kind: "day" }],
    ["an ISO week", "P1W", { kind: "week" }],
    ["a calendar month", "P1M", { kind: "month" }],
    ["lower-case month", "p1m", { kind: "month" }],
  ];
  for (const [name, text, expected] of cases) {
    test(`${name} (${text})`, () => assert.deepEqual(parseBucketDuration(text), expected));
  }
});

describe("parseBucketDuration rejects", () => {
  // biome-ignore format: one line per case
  const cases: [string, string, string][] = [
    ["7 minutes does not divide a day", "PT7M", "7 minutes does not divide a day"],
    ["7 hours does not divide a day", "PT7H", "420 minutes does not divide a day"],
    ["longer than a day", "PT48H", "2880 minutes does not divide a day"],
    ["fractional hours", "PT0.5H", "fractions are not accepted"],
    ["fraction with comma", "PT0,5H", "fractions are not accepted"],
    ["zero minutes", "PT0M", "a bucket cannot be empty"],
    ["seconds", "PT30S", "unsupported bucket duration"],
    ["two days", "P2D", "unsupported bucket duration"],
    ["seven days instead of a week", "P7D", "unsupported bucket duration"],
    ["a year", "P1Y", "unsupported bucket duration"],
    ["bare PT", "PT", "unsupported bucket duration"],
    ["empty", "", "unsupported bucket duration"],
    ["minutes without T", "P5M", "unsupported bucket duration"],
    ["plain words", "5 minutes", "unsupported bucket duration"],
    ["negative", "-PT5M", "unsupported bucket duration"],
    ["surrounding spaces", " PT5M", "unsupported bucket duration"],
  ];
  for (const [name, text, fragment] of cases) {
    test(`${name} (${JSON.stringify(text)})`, () => {
      assert.throws(
        () => parseBucketDuration(text),
        (error: unknown) => {
          assert.ok(error instanceof VigilError);
          assert.equal(error.status, 400);
          assert.equal(error.fields.field, "bucketing.duration");
          const detail = String(error.fields.detail);
          assert.ok(detail.includes(fragment), detail);
          assert.ok(detail.includes("accepted: PT1M, PT5M, PT15M, PT1H, PT3H, PT12H"), detail);
          return true;
        },
      );
    });
  }
});
