// Subject and name rules of the NATS bus (DESIGN 4.3 "Topics"): which stream subjects capture
// vigil's subjects, and which names a sink or consumer refuses at construction. No server needed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  checkNatsNames,
  displayUrl,
  subjectCaptures,
  subjectsOf,
} from "../../../src/bus/nats/nats-stream.js";

describe("subjectCaptures", () => {
  const cases: [pattern: string, subject: string, captures: boolean][] = [
    ["vigil.metrics", "vigil.metrics", true],
    ["vigil.metrics", "vigil.events", false],
    ["vigil.*", "vigil.metrics", true],
    ["vigil.*", "vigil.a.metrics", false],
    ["vigil.>", "vigil.metrics", true],
    ["vigil.>", "vigil.a.metrics", true],
    ["vigil.>", "vigil", false],
    [">", "vigil.metrics", true],
    ["*.metrics", "vigil.metrics", true],
    ["a.vigil.metrics", "vigil.metrics", false],
    ["vigil", "vigil.metrics", false],
  ];
  for (const [pattern, subject, captures] of cases) {
    it(`${pattern} ${captures ? "captures" : "does not capture"} ${subject}`, () => {
      assert.equal(subjectCaptures(pattern, subject), captures);
    });
  }
});

describe("subjectsOf", () => {
  it("gives <prefix>.entities|metrics|events", () => {
    assert.deepEqual(subjectsOf("site.a"), ["site.a.entities", "site.a.metrics", "site.a.events"]);
  });
});

describe("checkNatsNames", () => {
  const ok = ["nats://127.0.0.1:4222", "VIGIL", "vigil"] as const;
  const cases: [what: string, url: string, stream: string, prefix: string, error: RegExp | undefined][] = [
    ["the defaults", ...ok, undefined],
    ["tls:// and a dotted prefix", "tls://nats.example:4222", "V_1-a", "site.eu-1", undefined],
    [
      "a websocket url",
      "ws://127.0.0.1:8080",
      "VIGIL",
      "vigil",
      /use nats:\/\/HOST:PORT or tls:\/\/HOST:PORT/,
    ],
    [
      "a url without scheme",
      "127.0.0.1:4222",
      "VIGIL",
      "vigil",
      /NATS url '127\.0\.0\.1:4222' is not supported/,
    ],
    ["a stream name with a dot", ok[0], "A.B", "vigil", /stream name 'A\.B' is invalid/],
    ["an empty stream name", ok[0], "", "vigil", /stream name '' is invalid/],
    ["a wildcard prefix", ok[0], "VIGIL", "vigil.>", /subject prefix 'vigil\.>' is invalid/],
    ["an empty prefix token", ok[0], "VIGIL", "vigil..x", /subject prefix 'vigil\.\.x' is invalid/],
    ["a prefix with a space", ok[0], "VIGIL", "vi gil", /subject prefix 'vi gil' is invalid/],
  ];
  for (const [what, url, stream, prefix, error] of cases) {
    it(`${error === undefined ? "accepts" : "refuses"} ${what}`, () => {
      if (error === undefined) checkNatsNames(url, stream, prefix);
      else assert.throws(() => checkNatsNames(url, stream, prefix), error);
    });
  }
});

describe("displayUrl", () => {
  const cases: [url: string, shown: string][] = [
    ["nats://127.0.0.1:4222", "nats://127.0.0.1:4222"],
    ["nats://user:secret@nats.example:4222", "nats://***@nats.example:4222"],
    ["tls://token@nats.example:4222", "tls://***@nats.example:4222"],
  ];
  for (const [url, shown] of cases) {
    it(`shows ${url} as ${shown}`, () => {
      assert.equal(displayUrl(url), shown);
    });
  }
});
