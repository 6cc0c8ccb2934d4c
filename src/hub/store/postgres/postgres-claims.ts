/**
 * Message-id de-duplication for the PostgreSQL store (DESIGN 1: the hub stores a message id once;
 * DESIGN 5.5: several hubs share one database), inside the caller's open transaction.
 *
 * Seq keys: the claim first locks one `message_origins` row per origin (`FOR UPDATE`, in code-point
 * order so two hubs never wait on each other in a cycle), then reads the runs that touch the seqs,
 * plans with `planSeqClaim` and writes the changes. A second hub claiming the same origin waits at
 * the lock until the first commits or rolls back, then reads the runs as committed: each seq is new
 * for exactly one of them. Hash keys: an insert of their digests (message-digest.ts) that skips
 * stored ones and returns the new ones; the primary key makes a concurrent insert of the same
 * digest wait for the first and then skip it.
 */
import type { TransactionSql } from "postgres";
import { checkMessageKey } from "../data-checks.js";
import { type DigestForm, digestHex } from "../message-digest.js";
import { type ClaimedHash, groupMessageKeys, planSeqClaim, type SeqRange } from "../seq-ranges.js";
import type { MessageKey } from "../store.js";
import { checkNoNul } from "./postgres-checks.js";

/**
 * Claims `keys` on `sql` (inside a transaction) in a database whose digests are of `form`: for each
 * key, true when it was not stored before and not earlier in `keys`. Throws StoreDataError for a
 * malformed key before touching the database.
 */
export async function claimMessageKeys(
  sql: TransactionSql,
  keys: readonly MessageKey[],
  form: DigestForm,
): Promise<boolean[]> {
  for (const key of keys) {
    checkMessageKey(key);
    checkNoNul(
      key.kind === "hash" ? "message hash" : "message origin",
      key.kind === "hash" ? key.hash : key.origin,
    );
  }
  const fresh = new Array<boolean>(keys.length).fill(false);
  const { origins, hashes } = groupMessageKeys(keys);
  if (origins.size > 0) await claimSeqs(sql, origins, fresh);
  if (hashes.length > 0) await claimHashes(sql, hashes, form, fresh);
  return fresh;
}

/** Code-point order (what `COLLATE "C"` sorts by), for taking locks in one order everywhere. */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

async function claimSeqs(
  sql: TransactionSql,
  origins: ReadonlyMap<string, { indexes: number[]; seqs: number[] }>,
  fresh: boolean[],
): Promise<void> {
  const names = [...origins.keys()].sort(byCodePoint);
  await sql`INSERT INTO message_origins SELECT unnest(${names}::text[]) ON CONFLICT DO NOTHING`;
  await sql`SELECT origin FROM message_origins WHERE origin = ANY(${names}::text[])
            ORDER BY origin FOR UPDATE`;
  const lo: number[] = [];
  const hi: number[] = [];
  for (const origin of names) {
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (const seq of origins.get(origin)?.seqs ?? []) {
      if (seq < min) min = seq;
      if (seq > max) max = seq;
    }
    lo.push(min);
    hi.push(max);
  }
  // The runs that overlap or touch each origin's [lo, hi] (a run ending at lo − 1 is widened).
  const read = await sql<{ origin: string; first_seq: string; last_seq: string }[]>`
    SELECT r.origin, r.first_seq, r.last_seq
    FROM message_ranges r
    JOIN unnest(${names}::text[], ${lo}::bigint[], ${hi}::bigint[]) AS w(origin, lo, hi) ON r.origin = w.origin
    WHERE r.last_seq >= w.lo - 1 AND r.first_seq <= w.hi + 1`;
  const stored = new Map<string, SeqRange[]>();
  for (const r of read) {
    const runs = stored.get(r.origin) ?? [];
    runs.push({ first: Number(r.first_seq), last: Number(r.last_seq) });
    stored.set(r.origin, runs);
  }

  const remove: { origin: string; range: SeqRange }[] = [];
  const update: { origin: string; from: SeqRange; to: SeqRange }[] = [];
  const insert: { origin: string; range: SeqRange }[] = [];
  for (const origin of names) {
    const group = origins.get(origin);
    if (group === undefined) continue;
    const plan = planSeqClaim(stored.get(origin) ?? [], group.seqs);
    plan.fresh.forEach((isFresh, i) => {
      fresh[group.indexes[i] as number] = isFresh;
    });
    for (const range of plan.remove) remove.push({ origin, range });
    for (const u of plan.update) update.push({ origin, ...u });
    for (const range of plan.insert) insert.push({ origin, range });
  }
  // Delete before update: a widened run may take the first seq of a run it swallows.
  if (remove.length > 0) {
    await sql`DELETE FROM message_ranges m
      USING unnest(${remove.map((r) => r.origin)}::text[], ${remove.map((r) => r.range.first)}::bigint[])
        AS d(origin, first_seq)
      WHERE m.origin = d.origin AND m.first_seq = d.first_seq`;
  }
  if (update.length > 0) {
    await sql`UPDATE message_ranges m SET first_seq = u.new_first, last_seq = u.new_last
      FROM unnest(${update.map((u) => u.origin)}::text[], ${update.map((u) => u.from.first)}::bigint[],
                  ${update.map((u) => u.to.first)}::bigint[], ${update.map((u) => u.to.last)}::bigint[])
        AS u(origin, first_seq, new_first, new_last)
      WHERE m.origin = u.origin AND m.first_seq = u.first_seq`;
  }
  if (insert.length > 0) {
    await sql`INSERT INTO message_ranges (origin, first_seq, last_seq)
      SELECT * FROM unnest(${insert.map((r) => r.origin)}::text[], ${insert.map((r) => r.range.first)}::bigint[],
                           ${insert.map((r) => r.range.last)}::bigint[])`;
  }
}

async function claimHashes(
  sql: TransactionSql,
  hashes: readonly ClaimedHash[],
  form: DigestForm,
  fresh: boolean[],
): Promise<void> {
  const digests = hashes.map((h) => digestHex(h, form));
  // In order (uuid order is the hex digits' order), so the inserts walk the index one way.
  const distinct = [...new Set(digests)].sort(byCodePoint);
  const inserted = await sql<{ digest: string }[]>`
    INSERT INTO message_digests SELECT d FROM unnest(${distinct}::uuid[]) AS d
    ON CONFLICT DO NOTHING RETURNING replace(digest::text, '-', '') AS digest`;
  const added = new Set(inserted.map((r) => r.digest));
  digests.forEach((digest, i) => {
    if (added.delete(digest)) fresh[(hashes[i] as { index: number }).index] = true;
  });
}
