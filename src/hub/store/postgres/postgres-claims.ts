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
import {
  byCodePoint,
  claimMessageKeys as claimKeys,
  claimNewDigests,
  type SeqRunStatements,
} from "../core/message-claims.js";
import { type DigestForm, digestHex } from "../message-digest.js";
import type { MessageKey } from "../store.js";
import { checkNoNul } from "./postgres-checks.js";

/**
 * Claims `keys` on `sql` (inside a transaction) in a database whose digests are of `form`: for each
 * key, true when it was not stored before and not earlier in `keys` (core/message-claims.ts).
 * Throws StoreDataError for a malformed key before touching the database.
 */
export function claimMessageKeys(
  sql: TransactionSql,
  keys: readonly MessageKey[],
  form: DigestForm,
): Promise<boolean[]> {
  return claimKeys(
    {
      checkKey: (key) =>
        checkNoNul(
          key.kind === "hash" ? "message hash" : "message origin",
          key.kind === "hash" ? key.hash : key.origin,
        ),
      runs: seqRunStatements(sql),
      claimHashes: claimNewDigests({
        digest: (hash) => digestHex(hash, form),
        async insertNew(digests) {
          // In order (uuid order is the hex digits' order), so the inserts walk the index one way.
          const inserted = await sql<{ digest: string }[]>`
            INSERT INTO message_digests SELECT d FROM unnest(${[...digests].sort(byCodePoint)}::uuid[]) AS d
            ON CONFLICT DO NOTHING RETURNING replace(digest::text, '-', '') AS digest`;
          return inserted.map((r) => r.digest);
        },
      }),
    },
    keys,
  );
}

/** The runs of seqs in `message_ranges`, behind a lock on each origin's `message_origins` row. */
function seqRunStatements(sql: TransactionSql): SeqRunStatements {
  return {
    async read(windows) {
      const names = windows.map((w) => w.origin);
      await sql`INSERT INTO message_origins SELECT unnest(${names}::text[]) ON CONFLICT DO NOTHING`;
      await sql`SELECT origin FROM message_origins WHERE origin = ANY(${names}::text[])
                ORDER BY origin FOR UPDATE`;
      const read = await sql<{ origin: string; first_seq: string; last_seq: string }[]>`
        SELECT r.origin, r.first_seq, r.last_seq
        FROM message_ranges r
        JOIN unnest(${names}::text[], ${windows.map((w) => w.lo)}::bigint[], ${windows.map((w) => w.hi)}::bigint[])
          AS w(origin, lo, hi) ON r.origin = w.origin
        WHERE r.last_seq >= w.lo - 1 AND r.first_seq <= w.hi + 1`;
      return read.map((r) => ({
        origin: r.origin,
        range: { first: Number(r.first_seq), last: Number(r.last_seq) },
      }));
    },
    async remove(runs) {
      await sql`DELETE FROM message_ranges m
        USING unnest(${runs.map((r) => r.origin)}::text[], ${runs.map((r) => r.range.first)}::bigint[])
          AS d(origin, first_seq)
        WHERE m.origin = d.origin AND m.first_seq = d.first_seq`;
    },
    async update(changes) {
      await sql`UPDATE message_ranges m SET first_seq = u.new_first, last_seq = u.new_last
        FROM unnest(${changes.map((u) => u.origin)}::text[], ${changes.map((u) => u.from.first)}::bigint[],
                    ${changes.map((u) => u.to.first)}::bigint[], ${changes.map((u) => u.to.last)}::bigint[])
          AS u(origin, first_seq, new_first, new_last)
        WHERE m.origin = u.origin AND m.first_seq = u.first_seq`;
    },
    async insert(runs) {
      await sql`INSERT INTO message_ranges (origin, first_seq, last_seq)
        SELECT * FROM unnest(${runs.map((r) => r.origin)}::text[], ${runs.map((r) => r.range.first)}::bigint[],
                             ${runs.map((r) => r.range.last)}::bigint[])`;
    },
  };
}
