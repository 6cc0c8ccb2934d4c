/**
 * `vigil hub --gateway URL`: where the web console's actions go. A URL is checked at
 * start, so a typo fails with its fix; without the option the setup's gateway port on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { gatewayUrlOption } from "../../src/cli/commands/hub.js";
import { parseSetup } from "../../src/config/load-setup.js";
import { defaultGatewayUrl } from "../../src/hub/console/gateway-relay.js";

const CASES: readonly [text: string, expected: string | RegExp][] = [
  ["http://gw.example:7039", "http://gw.example:7039"],
  ["https://gw.example/some/path?x=1", "https://gw.example"],
  ["http://[::1]:7039/", "http://[::1]:7039"],
  ["gw.example:7039", /must be an http:\/\/ or https:\/\/ URL/],
  ["ftp://gw.example", /must be an http:\/\/ or https:\/\/ URL/],
  ["not a url", /must be a URL such as http:\/\/gateway-host:7039/],
];

for (const [text, expected] of CASES) {
  test(`--gateway ${JSON.stringify(text)}`, () => {
    if (typeof expected === "string") assert.equal(gatewayUrlOption(text)(), expected);
    else assert.throws(() => gatewayUrlOption(text), expected);
  });
}

test("without --gateway: the setup's gateway port on loopback; none when that port is 0", () => {
  const setup = (port: number) =>
    parseSetup(`gateway: { name: G, port: ${port} }\nprobes: []\nhub: { security: { enabled: false } }\n`);
  assert.equal(defaultGatewayUrl(setup(7039)), "http://127.0.0.1:7039");
  assert.equal(defaultGatewayUrl(setup(0)), undefined);
});

test("without --gateway, a hub-only setup names no gateway: the console's actions need --gateway", () => {
  const setup = parseSetup("hub: { port: 0 }\n", undefined, undefined, { hubOnly: true });
  assert.equal(defaultGatewayUrl(setup), undefined);
});
