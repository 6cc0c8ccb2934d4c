/**
 * Parsing of the `Authorization` header (RFC 7617 Basic, RFC 6750 Bearer, RFC 4559 Negotiate),
 * one case per line.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Credentials, formDecode, parseAuthorization } from "../../../src/hub/auth/credentials.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

const cases: [
  name: string,
  header: string | undefined,
  expected: Credentials["kind"],
  fields?: Record<string, string>,
][] = [
  ["no header", undefined, "none"],
  ["blank header", "   ", "none"],
  ["Basic user and password", `Basic ${b64("app:secret")}`, "basic", { user: "app", password: "secret" }],
  ["Basic splits at the first colon", `Basic ${b64("app:a:b")}`, "basic", { user: "app", password: "a:b" }],
  ["Basic with an empty password", `Basic ${b64("app:")}`, "basic", { user: "app", password: "" }],
  ["Basic decodes UTF-8", `Basic ${b64("café:pässword")}`, "basic", { user: "café", password: "pässword" }],
  ["scheme is case-insensitive", `BASIC ${b64("app:s")}`, "basic", { user: "app", password: "s" }],
  ["several spaces after the scheme", `Basic    ${b64("app:s")}`, "basic", { user: "app", password: "s" }],
  ["Basic without a colon", `Basic ${b64("app")}`, "malformed"],
  ["Basic with bad base64", "Basic abc", "malformed"],
  ["Basic with no credentials", "Basic", "malformed"],
  ["Basic with auth-params", 'Basic realm="x"', "malformed"],
  ["Bearer token", "Bearer abc.def-_~+/", "bearer", { token: "abc.def-_~+/" }],
  ["bearer in lower case", "bearer t0k", "bearer", { token: "t0k" }],
  ["Bearer with a space inside", "Bearer a b", "malformed"],
  ["Negotiate token", "Negotiate YIIB==", "negotiate", { token: "YIIB==" }],
  ["unknown scheme", "Digest username=x", "malformed"],
  ["no scheme", "=abc", "malformed"],
];

for (const [name, header, kind, fields] of cases) {
  test(`parseAuthorization: ${name}`, () => {
    const parsed = parseAuthorization(header);
    assert.equal(parsed.kind, kind);
    if (fields !== undefined)
      assert.deepEqual({ ...parsed, kind: undefined }, { ...fields, kind: undefined });
  });
}

test("parseAuthorization never puts the secret in a malformed reason", () => {
  const parsed = parseAuthorization(`Basic ${b64("no-colon-secret")}`);
  assert.equal(parsed.kind, "malformed");
  assert.doesNotMatch(JSON.stringify(parsed), /no-colon-secret/);
});

const decodes: [name: string, input: string, expected: string][] = [
  ["plus is a space", "a+b", "a b"],
  ["percent escapes", "a%3Ab%25", "a:b%"],
  ["invalid escapes stay as sent", "100%", "100%"],
  ["plain text is unchanged", "secret", "secret"],
];
for (const [name, input, expected] of decodes) {
  test(`formDecode: ${name}`, () => assert.equal(formDecode(input), expected));
}
