/**
 * Test certificates for the probe's TLS and mTLS (DESIGN 3.5), made by the `openssl` command into a
 * throwaway folder: a CA, a server certificate for 127.0.0.1/localhost, a client certificate signed
 * by the CA, one signed through an intermediate CA, a server-only certificate (no clientAuth), and a
 * "wrong" client certificate signed by another CA. A test file skips with {@link OPENSSL_SKIP} when
 * `openssl` is not installed. `cleanup()` removes the folder.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const OPENSSL_SKIP = "the openssl command is not installed";

/** Whether `openssl` runs. */
export function opensslAvailable(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** PEM file paths; each `*Key` is the private key of the certificate of the same name. */
export interface TestCerts {
  readonly dir: string;
  readonly ca: string;
  readonly caKey: string;
  readonly otherCa: string;
  readonly intermediate: string;
  readonly server: string;
  readonly serverKey: string;
  /** Signed by `ca`. */
  readonly client: string;
  readonly clientKey: string;
  /** Signed by `intermediate` (itself signed by `ca`); `clientViaIntermediateChain` is leaf + intermediate. */
  readonly clientViaIntermediate: string;
  readonly clientViaIntermediateChain: string;
  readonly clientViaIntermediateKey: string;
  /** Signed by `ca` but with extendedKeyUsage serverAuth only. */
  readonly serverOnly: string;
  readonly serverOnlyKey: string;
  /** Signed by `otherCa`. */
  readonly wrongClient: string;
  readonly wrongClientKey: string;
  /** `ca` and `otherCa` in one PEM file. */
  readonly bothCas: string;
  cleanup(): void;
}

/** Makes every certificate of {@link TestCerts} (EC P-256 keys, valid 2 days). */
export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), "vigil-certs-"));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ext = (name: string, lines: string[]) => {
    writeFileSync(at(name), `${lines.join("\n")}\n`);
    return at(name);
  };
  const caExt = ext("ca.ext", [
    "basicConstraints=critical,CA:TRUE",
    "keyUsage=critical,keyCertSign,cRLSign",
    "subjectKeyIdentifier=hash",
  ]);
  const key = (name: string) =>
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", at(name));
  const selfSigned = (name: string, cn: string) => {
    key(`${name}.key`);
    // biome-ignore format: openssl arguments read best as the command line
    openssl(
      "req", "-x509", "-new", "-key", at(`${name}.key`), "-subj", `/CN=${cn}`, "-days", "2",
      "-out", at(`${name}.pem`), "-addext", "basicConstraints=critical,CA:TRUE",
      "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    );
  };
  const signed = (name: string, cn: string, issuer: string, extFile: string) => {
    key(`${name}.key`);
    openssl("req", "-new", "-key", at(`${name}.key`), "-subj", `/CN=${cn}`, "-out", at(`${name}.csr`));
    // biome-ignore format: openssl arguments read best as the command line
    openssl(
      "x509", "-req", "-in", at(`${name}.csr`), "-CA", at(`${issuer}.pem`), "-CAkey", at(`${issuer}.key`),
      "-CAcreateserial", "-days", "2", "-extfile", extFile, "-out", at(`${name}.pem`),
    );
  };
  try {
    selfSigned("ca", "vigil test CA");
    selfSigned("other-ca", "vigil other CA");
    signed("intermediate", "vigil test intermediate", "ca", caExt);
    signed(
      "server",
      "localhost",
      "ca",
      ext("server.ext", [
        "basicConstraints=CA:FALSE",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "extendedKeyUsage=serverAuth",
      ]),
    );
    const clientExt = ext("client.ext", ["basicConstraints=CA:FALSE", "extendedKeyUsage=clientAuth"]);
    signed("client", "good client", "ca", clientExt);
    signed("client-int", "client via intermediate", "intermediate", clientExt);
    signed("server-only", "server-only client", "ca", at("server.ext"));
    signed("wrong-client", "wrong client", "other-ca", clientExt);
    const read = (name: string) => readFileSync(at(name), "utf8");
    writeFileSync(at("client-int-chain.pem"), read("client-int.pem") + read("intermediate.pem"));
    writeFileSync(at("both-cas.pem"), read("ca.pem") + read("other-ca.pem"));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    ca: at("ca.pem"),
    caKey: at("ca.key"),
    otherCa: at("other-ca.pem"),
    intermediate: at("intermediate.pem"),
    server: at("server.pem"),
    serverKey: at("server.key"),
    client: at("client.pem"),
    clientKey: at("client.key"),
    clientViaIntermediate: at("client-int.pem"),
    clientViaIntermediateChain: at("client-int-chain.pem"),
    clientViaIntermediateKey: at("client-int.key"),
    serverOnly: at("server-only.pem"),
    serverOnlyKey: at("server-only.key"),
    wrongClient: at("wrong-client.pem"),
    wrongClientKey: at("wrong-client.key"),
    bothCas: at("both-cas.pem"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
