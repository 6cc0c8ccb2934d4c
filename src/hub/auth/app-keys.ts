/**
 * Application keys (DESIGN 5.4: "Secrets are stored hashed"). Each configured client secret is
 * hashed once with scrypt and a random salt; only the hash stays in memory, and a presented secret
 * is compared in constant time.
 *
 * scrypt runs on libuv's thread pool, which the store's queries share, so derivations go
 * through a WorkLimiter; and a secret that passed scrypt is remembered for VERIFIED_SECRET_TTL_MS
 * (15 minutes) as an HMAC-SHA-256 under a key made at start, one per configured client id, so a
 * well-behaved client's next requests cost a hash rather than a pool thread. The HMAC is no weaker
 * a store than the hub already is: the setup file holds the secrets in clear.
 */
import { createHmac, randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";
import { DEFAULT_ROLES, type Role } from "../../auth/roles.js";
import { VERIFIED_SECRET_TTL_MS } from "../../config/defaults.js";
import { WorkLimiter } from "./work-limiter.js";

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

export interface AppKeyOptions {
  /** Where scrypt derivations wait for a slot; default a WorkLimiter with its defaults. */
  readonly limiter?: WorkLimiter;
  /** How long a verified secret is accepted without scrypt; default VERIFIED_SECRET_TTL_MS (15 min). */
  readonly verifiedTtlMs?: number;
  /** Clock in epoch milliseconds; default Date.now. */
  readonly now?: () => number;
}

interface Verified {
  readonly mac: Buffer;
  readonly until: number; // epoch ms
}

/** The configured application keys, with their secrets hashed, and their roles. */
export class AppKeys {
  /** The last verified secret of each configured client id, as an HMAC (bounded by the setup). */
  private readonly verified = new Map<string, Verified>();
  private readonly macKey = randomBytes(32);
  private readonly limiter: WorkLimiter;
  private readonly verifiedTtlMs: number;
  private readonly now: () => number;

  private constructor(
    private readonly hashes: ReadonlyMap<string, SecretHash>,
    /** The roles of each configured client id (DESIGN 5.4a). */
    private readonly roles: ReadonlyMap<string, readonly Role[]>,
    /** Compared against when the client id is unknown, so that a miss costs as much as a hit. */
    private readonly decoy: SecretHash,
    options: AppKeyOptions,
  ) {
    this.limiter = options.limiter ?? new WorkLimiter();
    this.verifiedTtlMs = options.verifiedTtlMs ?? VERIFIED_SECRET_TTL_MS;
    this.now = options.now ?? Date.now;
  }

  /**
   * Hashes every configured secret (scrypt, 16-byte random salt) and keeps only the hashes, with
   * each key's roles (default DEFAULT_ROLES, `[read]`). Two
   * keys with the same client id are a setup error: which secret counts would otherwise be a guess.
   */
  static async create(
    keys: readonly {
      readonly clientId: string;
      readonly clientSecret: string;
      readonly roles?: readonly Role[];
    }[],
    options: AppKeyOptions = {},
  ) {
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
    return new AppKeys(
      new Map(hashed),
      new Map(keys.map((key) => [key.clientId, key.roles ?? DEFAULT_ROLES] as const)),
      await hashSecret(randomBytes(SALT_BYTES).toString("base64")),
      options,
    );
  }

  /** Number of configured keys. */
  get size(): number {
    return this.hashes.size;
  }

  /** Whether `clientId` is a configured client id. */
  has(clientId: string): boolean {
    return this.hashes.has(clientId);
  }

  /** The roles of `clientId`, or undefined when it is not a configured client id. */
  rolesOf(clientId: string): readonly Role[] | undefined {
    return this.roles.get(clientId);
  }

  /** The configured client ids. */
  clientIds(): IterableIterator<string> {
    return this.hashes.keys();
  }

  private mac(secret: string): Buffer {
    return createHmac("sha256", this.macKey).update(secret, "utf8").digest();
  }

  /**
   * Whether `secret` is the secret of `clientId` as verified by scrypt within the last
   * `verifiedTtlMs`: a constant-time HMAC comparison, no pool thread.
   */
  recall(clientId: string, secret: string): boolean {
    const verified = this.verified.get(clientId);
    if (verified === undefined) return false;
    if (verified.until <= this.now()) {
      this.verified.delete(clientId);
      return false;
    }
    return timingSafeEqual(this.mac(secret), verified.mac);
  }

  /**
   * Whether `secret` is the secret of `clientId`: a recalled secret at once, otherwise one scrypt
   * through the limiter (which rejects with WorkQueueFullError when its queue is full). The
   * comparison is constant-time, and an unknown client id still costs one scrypt, so timing tells
   * neither which ids exist nor how close a guess is.
   */
  async authenticate(clientId: string, secret: string): Promise<boolean> {
    if (this.recall(clientId, secret)) return true;
    const known = this.hashes.get(clientId);
    const stored = known ?? this.decoy;
    const presented = await this.limiter.run(() => deriveKey(secret, stored.salt));
    const ok = timingSafeEqual(presented, stored.hash) && known !== undefined;
    if (ok) this.verified.set(clientId, { mac: this.mac(secret), until: this.now() + this.verifiedTtlMs });
    return ok;
  }
}
