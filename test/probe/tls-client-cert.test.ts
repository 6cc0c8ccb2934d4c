/**
 * The client-certificate chain verifier of per-sampler mTLS (src/probe/tls/client-cert.ts), on
 * certificates made by `openssl` for this run: one line per case (STYLE 16), time passed in.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { parsePemCertificates, verifyClientChain } from "../../src/probe/tls/client-cert.js";
import { makeTestCerts, OPENSSL_SKIP, opensslAvailable, type TestCerts } from "../helpers/certs.js";

const skip = opensslAvailable() ? false : OPENSSL_SKIP;
const DAY = 86_400_000;

describe("verifyClientChain", { skip }, () => {
  let certs: TestCerts;
  const load = (path: string) => new X509Certificate(readFileSync(path));
  before(() => {
    certs = makeTestCerts();
  });
  after(() => certs?.cleanup());

  type Case = [string, (c: TestCerts) => [string[], string[], number], string | true];
  const now = (c: TestCerts) => Date.parse(load(c.client).validFrom) + 60_000;
  // biome-ignore format: one line per case (STYLE 16)
  const cases: Case[] = [
    ["a leaf signed by the anchor", (c) => [[c.client], [c.ca], now(c)], true],
    ["a leaf through a sent intermediate", (c) => [[c.clientViaIntermediate, c.intermediate], [c.ca], now(c)], true],
    ["intermediates in any order and repeated", (c) => [[c.clientViaIntermediate, c.otherCa, c.intermediate, c.intermediate], [c.ca], now(c)], true],
    ["the intermediate itself as the anchor", (c) => [[c.clientViaIntermediate], [c.intermediate], now(c)], true],
    ["the anchor among others", (c) => [[c.client], [c.otherCa, c.ca], now(c)], true],
    ["an intermediate not sent", (c) => [[c.clientViaIntermediate], [c.ca], now(c)], "does not chain to a trusted CA"],
    ["a leaf of another CA", (c) => [[c.wrongClient], [c.ca], now(c)], "does not chain to a trusted CA"],
    ["a leaf of another CA sending our CA as intermediate", (c) => [[c.wrongClient, c.ca], [c.ca], now(c)], "does not chain to a trusted CA"],
    ["a leaf trusted as its own anchor", (c) => [[c.client], [c.client], now(c)], "does not chain to a trusted CA"],
    ["a leaf for serverAuth only", (c) => [[c.serverOnly], [c.ca], now(c)], "does not allow client authentication"],
    ["an expired leaf", (c) => [[c.client], [c.ca], now(c) + 3 * DAY], "the client certificate expired on"],
    ["a leaf not valid yet", (c) => [[c.client], [c.ca], now(c) - DAY], "the client certificate is not valid before"],
    ["no certificate sent", (c) => [[], [c.ca], now(c)], "no client certificate was sent"],
    ["no anchor configured", (c) => [[c.client], [], now(c)], "no trusted CA certificate is configured"],
  ];
  for (const [name, input, expected] of cases) {
    test(`${name} → ${expected === true ? "ok" : expected}`, () => {
      const [presented, anchors, at] = input(certs);
      const result = verifyClientChain(presented.map(load), anchors.map(load), at);
      if (expected === true) assert.equal(result.ok, true, result.ok ? "" : result.reason);
      else {
        assert.equal(result.ok, false);
        assert.ok(!result.ok && result.reason.includes(expected), !result.ok ? result.reason : "");
      }
    });
  }

  test("the anchor found is returned", () => {
    const result = verifyClientChain([load(certs.client)], [load(certs.otherCa), load(certs.ca)], now(certs));
    assert.ok(result.ok && result.anchor.fingerprint256 === load(certs.ca).fingerprint256);
  });

  test("parsePemCertificates reads every certificate of a file, in order", () => {
    const parsed = parsePemCertificates(readFileSync(certs.bothCas, "utf8"));
    assert.deepEqual(
      parsed.map((c) => c.fingerprint256),
      [load(certs.ca).fingerprint256, load(certs.otherCa).fingerprint256],
    );
  });

  // biome-ignore format: one line per case (STYLE 16)
  const badPem: [string, string, RegExp][] = [
    ["empty text", "", /no PEM certificate/],
    ["a private key only", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", /no PEM certificate/],
    ["a damaged certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", /certificate 1 does not parse/],
  ];
  for (const [name, pem, message] of badPem) {
    test(`parsePemCertificates refuses ${name}`, () =>
      assert.throws(() => parsePemCertificates(pem), message));
  }
});
