/**
 * Application keys (DESIGN 5.4: "Secrets are stored hashed"). Each configured client secret is
 * hashed once with scrypt and a random salt; only the hash stays in memory, and a presented secret
 * is compared in constant time.
 */
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

/** scrypt cost (N = 2^14, r = 8, p = 1): the parameters RFC 7914 §2 and OWASP give for interactive logins. */
const SCRYPT_OPTIONS: ScryptOptions = { N: 16_384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const HASH_BYTES = 32; // bytes of derived key
const SALT_BYTES = 16; // bytes of random salt

interface SecretHash {
  readonly salt: Buffer;
  readonly hash: Buffer;
}

function deriveKey(secret: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, HASH_BYTES, SCRYPT_OPTIONS, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

async function hashSecret(secret: string): Promise<SecretHash> {
  const salt = randomBytes(SALT_BYTES);
  return { salt, hash: await deriveKey(secret, salt) };
}

/** The configured application keys, with their secrets hashed. */
export class AppKeys {
  private constructor(
    private readonly hashes: ReadonlyMap<string, SecretHash>,
    /** Compared against when the client id is unknown, so that a miss costs as much as a hit. */
    private readonly decoy: SecretHash,
  ) {}

  /**
   * Hashes every configured secret (scrypt, 16-byte random salt) and keeps only the hashes. Two
   * keys with the same client id are a setup error: which secret counts would otherwise be a guess.
   */
  static async create(keys: readonly { readonly clientId: string; readonly clientSecret: string }[]) {
    const ids = new Set<string>();
    for (const { clientId } of keys) {
      if (ids.has(clientId)) {
        throw new Error(`hub.security.appKeys lists client id '${clientId}' twice; give each key its own id`);
      }
      ids.add(clientId);
    }
    const hashed = await Promise.all(
      keys.map(async (key) => [key.clientId, await hashSecret(key.clientSecret)] as const),
    );
    return new AppKeys(new Map(hashed), await hashSecret(randomBytes(SALT_BYTES).toString("base64")));
  }

  /** Number of configured keys. */
  get size(): number {
    return this.hashes.size;
  }

  /**
   * Whether `secret` is the secret of `clientId`. The comparison is constant-time, and an unknown
   * client id still costs one scrypt, so timing tells neither which ids exist nor how close a guess is.
   */
  async authenticate(clientId: string, secret: string): Promise<boolean> {
    const known = this.hashes.get(clientId);
    const stored = known ?? this.decoy;
    const presented = await deriveKey(secret, stored.salt);
    return timingSafeEqual(presented, stored.hash) && known !== undefined;
  }
}
