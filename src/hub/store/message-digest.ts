/**
 * The stored form of a hash message key, in both stores: 128 bits, as 32 hex digits. DuckDB keeps
 * it as a HUGEINT (duckdb-claims.ts), PostgreSQL as a `uuid` (postgres-claims.ts): 16 bytes instead
 * of a 64-character text in the primary key every claim inserts into. Two forms:
 * - `sha`: the first 128 bits of the SHA-256 the key names (its 64 hex digits, as the ingester
 *   makes them; any other text is hashed first). Random, so each insert lands anywhere in the
 *   index, and claims slow as it grows.
 * - `minute`: the minute of the key's `at` (the message's own time) as 32 bits, then the first 96
 *   bits of the SHA-256. A backfill sent in time order inserts its digests at the index's growing
 *   end, and claims keep their cost (bench/message-digests.bench.ts: at 4·10^6 stored, a DuckDB
 *   claim costs 0.56× the random form's). A key without `at` leads with zero.
 * Either way collisions stay out of reach (`minute`: two messages of one minute must share 96 bits).
 * A store fixes its form when it is created: one that holds digests of the `sha` form keeps it, so
 * the messages it stored stay recognised (duckdb-store.ts, postgres-store.ts).
 */
import { hash } from "node:crypto";

/** How a store keeps its digests (see the module comment). */
export type DigestForm = "sha" | "minute";

/** The form a store that holds no digest takes. */
export const NEW_STORE_DIGEST_FORM: DigestForm = "minute";

/** The key under which a store records its form (DuckDB `store_meta`, PostgreSQL `vigil_settings`). */
export const DIGEST_FORM_SETTING = "message_digest_form";

const SHA256_HEX = /^[0-9a-f]{64}$/;
const MS_PER_MINUTE = 60_000;
const MAX_MINUTE = 0xffff_ffff;

/** The form named by a store's setting; throws for a name this release does not know. */
export function digestForm(setting: string): DigestForm {
  if (setting === "sha" || setting === "minute") return setting;
  throw new Error(
    `the store's message digests are of a form this release does not know (${JSON.stringify(setting)}); ` +
      "it was written by a newer release",
  );
}

/** The 32 hex digits stored for the hash key `key` in a store of `form`. */
export function digestHex(
  key: { readonly hash: string; readonly at?: number | undefined },
  form: DigestForm,
): string {
  const sha = SHA256_HEX.test(key.hash) ? key.hash : hash("sha256", key.hash, "hex");
  return form === "sha" ? sha.slice(0, 32) : minuteHex(key.at) + sha.slice(0, 24);
}

/** The minute of `at` as 8 hex digits (times before 1970 or after year 10136 at the ends). */
function minuteHex(at: number | undefined): string {
  if (at === undefined) return "00000000";
  const minute = Math.min(MAX_MINUTE, Math.max(0, Math.floor(at / MS_PER_MINUTE)));
  return minute.toString(16).padStart(8, "0");
}
