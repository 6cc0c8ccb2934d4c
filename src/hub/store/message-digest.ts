/**
 * The stored form of a hash message key, in both stores: the first 128 bits of the SHA-256 the key
 * names (its 64 hex digits, as the ingester makes them; any other text is hashed first), as 32 hex
 * digits. DuckDB keeps it as a HUGEINT (duckdb-claims.ts), PostgreSQL as a `uuid` (postgres-claims.ts):
 * 16 bytes instead of a 64-character text in the primary key every claim inserts into. 128 bits keep
 * collisions out of reach (about 1 in 10^20 at 10^9 messages).
 */
import { hash } from "node:crypto";

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The 32 hex digits stored for the hash key `key`. */
export function digestHex(key: string): string {
  return (SHA256_HEX.test(key) ? key : hash("sha256", key, "hex")).slice(0, 32);
}
