import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { formatSetupIssues, loadSetupFile, SetupError } from "../../src/config/load-setup.js";
import type { RestApiSampler } from "../../src/config/setup.js";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "fixtures");

function errorOf(run: () => unknown): SetupError {
  try {
    run();
  } catch (error) {
    if (error instanceof SetupError) return error;
    throw error;
  }
  assert.fail("expected a SetupError");
}

describe("loadSetupFile", () => {
  const setup = loadSetupFile(join(FIXTURES, "valid.yaml"));
  const orders = setup.probes[0]?.managedEntities[0]?.samplers[0] as RestApiSampler | undefined;
  const ca = orders?.clientCaCertificate;
  // biome-ignore format: one line per case (STYLE 16)
  const cases: [string, unknown, unknown][] = [
    ["a relative publish file is resolved against the file's folder", setup.gateway.publish[1], { kind: "file", path: join(FIXTURES, "out/messages.ndjson") }],
    ["a relative client CA path is resolved", ca, { enabled: true, path: join(FIXTURES, "certs/ca.pem") }],
    ["a relative hub certificate is resolved, an absolute key kept", setup.hub.tls, { certificate: join(FIXTURES, "certs/hub.pem"), key: "/etc/vigil/hub-key.pem" }],
  ];
  for (const [name, actual, expected] of cases) test(name, () => assert.deepEqual(actual, expected));

  test("issue paths start with the file name", () => {
    const file = join(FIXTURES, "invalid.yaml");
    const error = errorOf(() => loadSetupFile(file));
    assert.deepEqual(
      error.issues.map((i) => i.path),
      [`${file}:gateway.prot`, `${file}:probes[0].managedEntities[0].samplers[0].clientCaCertificate.path`],
    );
  });

  test("formatSetupIssues prints one line per issue: path: message (line, column)", () => {
    const file = join(FIXTURES, "invalid.yaml");
    const lines = formatSetupIssues(errorOf(() => loadSetupFile(file))).split("\n");
    assert.deepEqual(lines, [
      `${file}:gateway.prot: unknown key 'prot'; did you mean 'port'? (line 3, column 3)`,
      `${file}:probes[0].managedEntities[0].samplers[0].clientCaCertificate.path: Client CA certificate enabled ` +
        "without a path; set clientCaCertificate.path to the CA certificate file, or set enabled: false to verify " +
        "against the probe's -ssl-certificate-chain (line 11, column 57)",
    ]);
  });

  test("a missing file is a SetupError naming the file, with the read error as cause", () => {
    const file = join(FIXTURES, "no-such-file.yaml");
    const error = errorOf(() => loadSetupFile(file));
    assert.equal(error.issues.length, 1);
    assert.equal(error.issues[0]?.path, file);
    assert.match(error.issues[0]?.message ?? "", /cannot read the setup file \(ENOENT/);
    assert.ok(error.cause instanceof Error);
  });
});
