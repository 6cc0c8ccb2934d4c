/**
 * Message-id de-duplication for the DuckDB store (DESIGN 1: the hub stores a message id once),
 * inside the caller's open transaction. Seq keys become runs per origin in `message_ranges`
 * (planned by `planSeqClaim`), in at most four statements per claim whatever the number of origins:
 * read the runs that touch the claimed seqs, then delete, widen and insert runs (a claim of one
 * origin, the common case, reads and widens with scalar parameters). Hash keys cost one statement
 * when claimed optimistically (an insert of the digests not stored, which fails the claim when one
 * was: see {@link claimMessageKeys}), two when claimed carefully: a look-up of the claimed digests
 * among the stored ones, then an insert of the others.
 *
 * `message_digests` has no index (duckdb-schema.ts): its digests lead with their message's minute
 * (message-digest.ts) and are appended in the order they come, so the look-up reads only the row
 * groups whose zone maps overlap the claim's lowest to highest digest. The store runs one write
 * transaction at a time in a file no other process opens, so nothing can insert a digest between a
 * claim's look-up and its insert.
 */
import { BIGINT, type DuckDBConnection, listValue, VARCHAR } from "@duckdb/node-api";
import {
  claimMessageKeys as claimKeys,
  claimNewDigests,
  type DigestStatements,
  type OriginRun,
  type SeqRunStatements,
} from "../core/message-claims.js";
import { checkMessageKey } from "../data-checks.js";
import { type DigestForm, digestHex } from "../message-digest.js";
import { type ClaimedHash, groupMessageKeys } from "../seq-ranges.js";
import type { MessageKey } from "../store.js";
import { toNumber } from "./duckdb-append.js";
import { BIGINT_LIST, TEXT_LIST } from "./duckdb-lists.js";

/**
 * Digests reach DuckDB as one text of decimals split in SQL: a LIST parameter of HUGEINT values is
 * built one value at a time on the hub's thread, and took twice as long as the whole insert of text
 * (a 5,000-message claim at 1M stored, 25-32 ms -> 10-15 ms).
 */
const DIGESTS_FROM_TEXT = "CAST(unnest(string_split($digests, ',')) AS HUGEINT)";
const digestText = (digests: Iterable<bigint>): { digests: string } => ({ digests: [...digests].join(",") });

/**
 * The stored digest of a hash key in a store of `form` (message-digest.ts) as a signed 128-bit
 * integer (DuckDB's HUGEINT).
 */
export function digestOf(
  key: { readonly hash: string; readonly at?: number | undefined },
  form: DigestForm,
): bigint {
  return BigInt.asIntN(128, BigInt(`0x${digestHex(key, form)}`));
}

/**
 * Thrown by an optimistic claim of hash keys that met a digest already stored. The transaction may
 * have gone on past the claim (the optimistic claim answers before the database does), so the
 * store rolls it back and runs it again with the careful claim (duckdb-store.ts).
 */
export class DigestConflict extends Error {
  constructor(detail: string) {
    super(`a claimed message digest is stored already: ${detail}`);
    this.name = "DigestConflict";
  }
}

/**
 * Claims `keys` on `connection` (which must be inside a transaction) in a store whose digests are of
 * `form`: for each key, true when it was not stored before and not earlier in `keys`
 * (core/message-claims.ts). Throws StoreDataError for a malformed key before touching the database.
 * `optimistic`: hash keys are taken as if none were stored (known without the database, so the
 * caller goes on while the look-up and insert run), and a DigestConflict is thrown when one was.
 */
export function claimMessageKeys(
  connection: DuckDBConnection,
  keys: readonly MessageKey[],
  form: DigestForm,
  optimistic = false,
): Promise<boolean[]> {
  return claimKeys(
    {
      checkKey: () => undefined,
      runs: seqRunStatements(connection),
      claimHashes: optimistic
        ? (hashes, fresh) => insertNewDigests(connection, newDigests(hashes, form, fresh))
        : claimNewDigests(digestStatements(connection, form)),
    },
    keys,
  );
}

/** The runs of seqs in `message_ranges`, read and changed in one statement each. */
function seqRunStatements(connection: DuckDBConnection): SeqRunStatements {
  const runLists = (runs: readonly OriginRun[]) => ({
    origins: listValue(runs.map((r) => r.origin)),
    first: listValue(runs.map((r) => r.range.first)),
    last: listValue(runs.map((r) => r.range.last)),
  });
  return {
    async read(windows) {
      const only = windows.length === 1 ? windows[0] : undefined;
      if (only !== undefined) {
        // One origin (a hub fed by one gateway): scalar parameters, planned in half the time of the
        // join over lists below.
        const read = await connection.runAndReadAll(
          `SELECT first_seq, last_seq FROM message_ranges
           WHERE origin = $origin AND last_seq >= $lo - 1 AND first_seq <= $hi + 1`,
          { origin: only.origin, lo: only.lo, hi: only.hi },
          { origin: VARCHAR, lo: BIGINT, hi: BIGINT },
        );
        return read.getRowsJS().map(([first, last]) => ({
          origin: only.origin,
          range: { first: toNumber(first ?? null) ?? 0, last: toNumber(last ?? null) ?? 0 },
        }));
      }
      const read = await connection.runAndReadAll(
        `SELECT r.origin, r.first_seq, r.last_seq
         FROM message_ranges r
         JOIN (SELECT unnest($origins) AS origin, unnest($lo) AS lo, unnest($hi) AS hi) w ON r.origin = w.origin
         WHERE r.last_seq >= w.lo - 1 AND r.first_seq <= w.hi + 1`,
        {
          origins: listValue(windows.map((w) => w.origin)),
          lo: listValue(windows.map((w) => w.lo)),
          hi: listValue(windows.map((w) => w.hi)),
        },
        { origins: TEXT_LIST, lo: BIGINT_LIST, hi: BIGINT_LIST },
      );
      return read.getRowsJS().map(([origin, first, last]) => ({
        origin: String(origin),
        range: { first: toNumber(first ?? null) ?? 0, last: toNumber(last ?? null) ?? 0 },
      }));
    },
    async remove(runs) {
      await connection.run(
        `DELETE FROM message_ranges USING
           (SELECT unnest($origins) AS origin, unnest($first) AS first_seq, unnest($last) AS last_seq) d
         WHERE message_ranges.origin = d.origin AND message_ranges.first_seq = d.first_seq
           AND message_ranges.last_seq = d.last_seq`,
        runLists(runs),
        { origins: TEXT_LIST, first: BIGINT_LIST, last: BIGINT_LIST },
      );
    },
    async update(changes) {
      const only = changes.length === 1 ? changes[0] : undefined;
      if (only !== undefined) {
        await connection.run(
          `UPDATE message_ranges SET first_seq = $newFirst, last_seq = $newLast
           WHERE origin = $origin AND first_seq = $first AND last_seq = $last`,
          {
            origin: only.origin,
            first: only.from.first,
            last: only.from.last,
            newFirst: only.to.first,
            newLast: only.to.last,
          },
          { origin: VARCHAR, first: BIGINT, last: BIGINT, newFirst: BIGINT, newLast: BIGINT },
        );
        return;
      }
      await connection.run(
        `UPDATE message_ranges SET first_seq = u.new_first, last_seq = u.new_last FROM
           (SELECT unnest($origins) AS origin, unnest($first) AS first_seq, unnest($last) AS last_seq,
                   unnest($newFirst) AS new_first, unnest($newLast) AS new_last) u
         WHERE message_ranges.origin = u.origin AND message_ranges.first_seq = u.first_seq
           AND message_ranges.last_seq = u.last_seq`,
        {
          origins: listValue(changes.map((u) => u.origin)),
          first: listValue(changes.map((u) => u.from.first)),
          last: listValue(changes.map((u) => u.from.last)),
          newFirst: listValue(changes.map((u) => u.to.first)),
          newLast: listValue(changes.map((u) => u.to.last)),
        },
        {
          origins: TEXT_LIST,
          first: BIGINT_LIST,
          last: BIGINT_LIST,
          newFirst: BIGINT_LIST,
          newLast: BIGINT_LIST,
        },
      );
    },
    async insert(runs) {
      await connection.run(
        "INSERT INTO message_ranges SELECT unnest($origins), unnest($first), unnest($last)",
        runLists(runs),
        { origins: TEXT_LIST, first: BIGINT_LIST, last: BIGINT_LIST },
      );
    },
  };
}

/**
 * The optimistic claim (see {@link claimMessageKeys}): marks the first key of each digest in
 * `hashes` fresh; returns the distinct digests.
 */
function newDigests(hashes: readonly ClaimedHash[], form: DigestForm, fresh: boolean[]): Set<bigint> {
  const digests = new Set<bigint>();
  for (const hash of hashes) {
    const { index } = hash;
    const digest = digestOf(hash, form);
    if (digests.has(digest)) continue;
    digests.add(digest);
    fresh[index] = true;
  }
  return digests;
}

/**
 * The optimistic claim of keys that are all hash keys, in two steps so the caller can go on while
 * the database works: `fresh` (the first key of each digest, known without the database) and
 * `insert`, which inserts the digests on `connection` (inside a transaction) and throws a
 * DigestConflict when one was stored. Throws StoreDataError for a malformed key.
 */
export function planOptimisticClaim(
  keys: readonly MessageKey[],
  form: DigestForm,
): {
  fresh: boolean[];
  insert: (connection: DuckDBConnection) => Promise<void>;
} {
  for (const key of keys) checkMessageKey(key);
  const fresh = new Array<boolean>(keys.length).fill(false);
  const digests = newDigests(groupMessageKeys(keys).hashes, form, fresh);
  return { fresh, insert: (connection) => insertNewDigests(connection, digests) };
}

/**
 * Inserts those of `digests` (distinct) that `message_digests` does not hold, in one statement (an
 * anti-join against the stored digests of the claim's range, literals so DuckDB prunes row groups by
 * their zone maps), and throws a DigestConflict when fewer than all went in: the caller rolls the
 * transaction back. One statement rather than a look-up and an insert: a statement's answer waits
 * for the hub's event loop, busy with the next part meanwhile (docs/performance.md, "Backfill into
 * DuckDB"), and the text of digests is cast once.
 */
async function insertNewDigests(connection: DuckDBConnection, digests: ReadonlySet<bigint>): Promise<void> {
  if (digests.size === 0) return;
  const inserted = await connection.run(
    `INSERT INTO message_digests
     SELECT c.digest FROM (SELECT ${DIGESTS_FROM_TEXT} AS digest) c
     ANTI JOIN (SELECT digest FROM message_digests WHERE ${digestRange(digests)}) m ON c.digest = m.digest`,
    digestText(digests),
    { digests: VARCHAR },
  );
  const stored = digests.size - inserted.rowsChanged;
  if (stored > 0) throw new DigestConflict(`${stored} of ${digests.size} claimed digests are stored`);
}

/** The careful claim: the digests not stored are inserted, and named as the new ones. */
function digestStatements(connection: DuckDBConnection, form: DigestForm): DigestStatements<bigint> {
  return {
    digest: (hash) => digestOf(hash, form),
    async insertNew(digests) {
      if (digests.length === 0) return [];
      const stored = await storedDigests(connection, digests);
      const added = stored.size === 0 ? digests : digests.filter((d) => !stored.has(d));
      await insertDigests(connection, added);
      return added;
    },
  };
}

/**
 * Which of `digests` (at least one) `message_digests` holds. The range is written into the
 * statement as literals (integers the hub computed), so DuckDB prunes row groups by their zone maps
 * before the semi-join reads them.
 */
async function storedDigests(connection: DuckDBConnection, digests: Iterable<bigint>): Promise<Set<bigint>> {
  const found = await connection.runAndReadAll(
    `SELECT digest FROM message_digests
     WHERE ${digestRange(digests)} AND digest IN (SELECT ${DIGESTS_FROM_TEXT})`,
    digestText(digests),
    { digests: VARCHAR },
  );
  return new Set((found.getColumnsJS()[0] ?? []) as bigint[]);
}

/** `digest BETWEEN` the lowest and highest of `digests` (at least one), as literals. */
function digestRange(digests: Iterable<bigint>): string {
  let lo: bigint | undefined;
  let hi: bigint | undefined;
  for (const d of digests) {
    if (lo === undefined || d < lo) lo = d;
    if (hi === undefined || d > hi) hi = d;
  }
  return `digest BETWEEN ${lo}::HUGEINT AND ${hi}::HUGEINT`;
}

async function insertDigests(connection: DuckDBConnection, digests: Iterable<bigint>): Promise<void> {
  const text = digestText(digests);
  if (text.digests === "") return;
  await connection.run(`INSERT INTO message_digests SELECT ${DIGESTS_FROM_TEXT}`, text, { digests: VARCHAR });
}
