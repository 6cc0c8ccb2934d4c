/**
 * `vigil hub --bus nats://HOST:PORT?stream=NAME&subjectPrefix=PREFIX` (DESIGN 1): the query names
 * the stream and subject prefix, the rest of the URL reaches NATS as written, and anything else in
 * the query is refused at start with its fix. Where the setup's NATS publish target also names
 * them, the URL wins, one parameter at a time.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseNatsBusUrl } from "../../../src/bus/nats/nats-stream.js";
import { busOption, natsNames } from "../../../src/compose/hub-service.js";
import { parseSetup } from "../../../src/config/load-setup.js";

describe("parseNatsBusUrl: what a --bus URL names", () => {
  // [what it shows, URL, the parts]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, string, ReturnType<typeof parseNatsBusUrl>][] = [
    ["no query: nothing named", "nats://127.0.0.1:4222", { url: "nats://127.0.0.1:4222" }],
    ["both named", "nats://127.0.0.1:4222?stream=OPS_1&subjectPrefix=ops.eu-1", { url: "nats://127.0.0.1:4222", stream: "OPS_1", subjectPrefix: "ops.eu-1" }],
    ["only the stream", "nats://h:4222?stream=S", { url: "nats://h:4222", stream: "S" }],
    ["only the prefix", "nats://h:4222/?subjectPrefix=p", { url: "nats://h:4222/", subjectPrefix: "p" }],
    ["credentials are kept as written", "nats://us%40r:p%3Ass@h:4222?stream=S", { url: "nats://us%40r:p%3Ass@h:4222", stream: "S" }],
    ["an empty query names nothing", "nats://h:4222?", { url: "nats://h:4222" }],
    ["percent-encoding is decoded", "nats://h:4222?stream=A%5FB", { url: "nats://h:4222", stream: "A_B" }],
  ];
  for (const [name, url, expected] of cases)
    test(name, () => assert.deepEqual(parseNatsBusUrl(url), expected));

  // [what it shows, URL, the message]
  // biome-ignore format: one line per case (STYLE 16)
  const refused: [string, string, RegExp][] = [
    ["an unknown parameter, with the known ones", "nats://h:4222?durable=x", /^Error: the --bus URL nats:\/\/h:4222 has an unknown parameter 'durable': it takes stream=NAME and subjectPrefix=PREFIX only$/],
    ["a near miss says which was meant", "nats://h:4222?subjectprefix=x", /unknown parameter 'subjectprefix' \(did you mean 'subjectPrefix'\?\)/],
    ["a parameter given twice", "nats://h:4222?stream=A&stream=B", /gives 'stream' twice; give it once/],
    ["an empty stream name", "nats://h:4222?stream=", /JetStream stream name '' is invalid: use letters, digits, _ and -/],
    ["a stream name with a dot", "nats://h:4222?stream=a.b", /JetStream stream name 'a.b' is invalid/],
    ["a wildcard in the prefix", "nats://h:4222?subjectPrefix=a.*", /NATS subject prefix 'a\.\*' is invalid/],
    ["an empty token in the prefix", "nats://h:4222?subjectPrefix=a..b", /NATS subject prefix 'a\.\.b' is invalid/],
    ["credentials never show in a message", "nats://user:secret@h:4222?nope=1", /^Error: the --bus URL nats:\/\/\*\*\*@h:4222 has an unknown parameter 'nope'/],
  ];
  for (const [name, url, message] of refused)
    test(name, () => assert.throws(() => parseNatsBusUrl(url), message));
});

describe("busOption: --bus checked at start", () => {
  test("a URL of another scheme is refused, credentials masked", () => {
    assert.throws(
      () => busOption("http://user:pw@h:4222"),
      /^Error: --bus takes a NATS URL \(nats:\/\/HOST:PORT\[\?stream=NAME&subjectPrefix=PREFIX\]\), not 'http:\/\/\*\*\*@h:4222'$/,
    );
  });
  test("a nats URL with a query is taken apart", () => {
    assert.deepEqual(busOption("nats://h:4222?stream=S"), { url: "nats://h:4222", stream: "S" });
  });
});

describe("natsNames: the URL wins, then the setup's NATS target, then VIGIL / vigil", () => {
  const HUB_ONLY = { hubOnly: true } as const;
  const hubOnly = parseSetup("hub: {}", undefined, undefined, HUB_ONLY);
  const deployment = parseSetup(
    "gateway:\n  name: G\n  publish:\n    - nats: {url: nats://h:4222, stream: FROM_SETUP, subjectPrefix: from.setup}\n",
  );
  // [what it shows, setup, what the URL names, the names consumed]
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, typeof hubOnly, { stream?: string; subjectPrefix?: string }, { stream: string; subjectPrefix: string }][] = [
    ["hub-only, nothing in the URL: the defaults", hubOnly, {}, { stream: "VIGIL", subjectPrefix: "vigil" }],
    ["hub-only, both in the URL", hubOnly, { stream: "S", subjectPrefix: "p" }, { stream: "S", subjectPrefix: "p" }],
    ["the setup's target when the URL names nothing", deployment, {}, { stream: "FROM_SETUP", subjectPrefix: "from.setup" }],
    ["the URL over the setup, both", deployment, { stream: "S", subjectPrefix: "p" }, { stream: "S", subjectPrefix: "p" }],
    ["the URL over the setup, one at a time", deployment, { stream: "S" }, { stream: "S", subjectPrefix: "from.setup" }],
  ];
  for (const [name, setup, bus, expected] of cases)
    test(name, () => assert.deepEqual(natsNames(setup, bus), expected));
});
