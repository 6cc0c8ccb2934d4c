/**
 * The hub's token signing key (DESIGN 5.4: "signing keys live in the data dir, created on first
 * start"). An Ed25519 key pair is generated once and kept as a private JWK in
 * `<dataDir>/keys/hub-signing-key.json` (mode 0600), so tokens stay valid across restarts.
 */
import { randomBytes } from "node:crypto";
import { chmod, link, mkdir, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
} from "jose";
import { readOptionalText } from "../../fs/optional-file.js";

/** JWS algorithm of every hub token (RFC 8037 §3.1: EdDSA over Ed25519). */
export const SIGNING_ALGORITHM = "EdDSA";
/** Key file path, relative to the data directory. */
export const SIGNING_KEY_FILE = join("keys", "hub-signing-key.json");

/** The key pair in memory, imported once; the public JWK is what `/.well-known/jwks.json` serves. */
export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** Public JWK with `kid`, `alg` and `use`; never has `d`. */
  readonly publicJwk: JWK;
}

type Ed25519PrivateJwk = JWK & { kty: "OKP"; crv: "Ed25519"; x: string; d: string };

function isEd25519PrivateJwk(value: unknown): value is Ed25519PrivateJwk {
  if (typeof value !== "object" || value === null) return false;
  const jwk = value as Record<string, unknown>;
  return jwk.kty === "OKP" && jwk.crv === "Ed25519" && typeof jwk.x === "string" && typeof jwk.d === "string";
}

async function readKeyFile(path: string): Promise<Ed25519PrivateJwk | undefined> {
  const text = await readOptionalText(path);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`signing key file ${path} is not JSON; restore it, or delete it to create a new key`, {
      cause: error,
    });
  }
  if (!isEd25519PrivateJwk(parsed)) {
    throw new Error(
      `signing key file ${path} is not an Ed25519 private JWK; restore it, or delete it to create a new key`,
    );
  }
  return parsed;
}

/**
 * Writes the new key without ever showing a half-written file: the JWK goes to a temporary file with
 * mode 0600, which is then hard-linked into place. `link` fails when the file exists, so when two
 * processes start on one data dir together, both end up with the key of whichever linked first.
 */
async function createKeyFile(path: string): Promise<Ed25519PrivateJwk> {
  const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { crv: "Ed25519", extractable: true });
  const jwk = await exportJWK(privateKey);
  if (!isEd25519PrivateJwk(jwk))
    throw new Error("jose exported an Ed25519 key that is not an OKP private JWK");
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(jwk)}\n`, { mode: 0o600, flag: "wx" });
    await chmod(temporary, 0o600); // the umask may have cleared bits, never added them; be explicit
    await link(temporary, path);
    return jwk;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const existing = await readKeyFile(path);
    if (existing === undefined) throw error;
    return existing;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
}

/**
 * Loads the hub's signing key from `<dataDir>/keys/hub-signing-key.json`, creating the folder
 * (mode 0700) and a new Ed25519 key (file mode 0600) when there is none. The `kid` is the key's
 * RFC 7638 thumbprint (SHA-256). Throws when the file exists but is not an Ed25519 private JWK,
 * and reports through `warn` when the file is readable by group or others.
 */
export async function loadSigningKey(dataDir: string, warn: (message: string) => void): Promise<SigningKey> {
  const path = join(dataDir, SIGNING_KEY_FILE);
  await mkdir(join(dataDir, "keys"), { recursive: true, mode: 0o700 });
  const privateJwk = (await readKeyFile(path)) ?? (await createKeyFile(path));
  if (((await stat(path)).mode & 0o077) !== 0) {
    warn(`signing key file ${path} is readable by other users; run chmod 600 on it`);
  }
  // Only the key members go on: a hand-edited file cannot widen what the key may do.
  const publicBase = { kty: "OKP", crv: "Ed25519", x: privateJwk.x } as const;
  const kid = await calculateJwkThumbprint(publicBase);
  const publicJwk: JWK = { ...publicBase, kid, alg: SIGNING_ALGORITHM, use: "sig" };
  const privateKey = await importJWK({ ...publicBase, d: privateJwk.d }, SIGNING_ALGORITHM);
  const publicKey = await importJWK({ ...publicBase }, SIGNING_ALGORITHM);
  return { kid, privateKey, publicKey, publicJwk };
}
