/**
 * The claim of message keys both stores run inside their open transaction (DESIGN 1: the hub
 * stores a message id once). Seq keys are kept as runs per origin: the claim reads the runs that
 * touch each origin's claimed seqs, plans the change with `planSeqClaim` (seq-ranges.ts) and
 * writes it as deletes, then updates, then inserts — delete first, because a widened run may take
 * the first seq of a run it swallows. Hash keys are digests (message-digest.ts) inserted when new.
 *
 * A dialect supplies only its statements ({@link ClaimStatements}); which keys are new is decided
 * here, once for both stores.
 */
import { checkMessageKey } from "../data-checks.js";
import { type ClaimedHash, groupMessageKeys, planSeqClaim, type SeqRange } from "../seq-ranges.js";
import type { MessageKey } from "../store.js";

/** A run of seqs of one origin. */
export interface OriginRun {
  readonly origin: string;
  readonly range: SeqRange;
}

/** A stored run widened (or moved) from `from` to `to`. */
export interface OriginRunChange {
  readonly origin: string;
  readonly from: SeqRange;
  readonly to: SeqRange;
}

/** The lowest and highest seq one claim names of an origin. */
export interface OriginWindow {
  readonly origin: string;
  readonly lo: number;
  readonly hi: number;
}

/** A dialect's statements on the stored runs of seqs, inside the claim's transaction. */
export interface SeqRunStatements {
  /**
   * The stored runs of each window's origin that overlap or touch `[lo, hi]` (a run ending at
   * lo − 1 or starting at hi + 1 is widened rather than joined by a new run). `windows` are in
   * code-point order of their origins: a store shared by several hubs locks the origins in that
   * order before it reads, so two hubs never wait on each other in a cycle.
   */
  read(windows: readonly OriginWindow[]): Promise<Iterable<OriginRun>>;
  remove(runs: readonly OriginRun[]): Promise<void>;
  update(changes: readonly OriginRunChange[]): Promise<void>;
  insert(runs: readonly OriginRun[]): Promise<void>;
}

/** A dialect's part of a claim. */
export interface ClaimStatements {
  /** Checks a key beyond data-checks.ts (what the database cannot hold); throws StoreDataError. */
  checkKey(key: MessageKey): void;
  readonly runs: SeqRunStatements;
  /** Sets `fresh[h.index]` for each of `hashes` that was not stored (see {@link claimNewDigests}). */
  claimHashes(hashes: readonly ClaimedHash[], fresh: boolean[]): Promise<void>;
}

/** A dialect's statement on the stored digests, of its own digest type `D`. */
export interface DigestStatements<D> {
  /** The stored form of a hash key's digest. */
  digest(hash: ClaimedHash): D;
  /** Inserts the digests that are not stored (`digests` are distinct); resolves with those it inserted. */
  insertNew(digests: readonly D[]): Promise<Iterable<D>>;
}

/**
 * The careful claim of hash keys: each digest is inserted unless stored, and the first key of each
 * inserted digest is fresh (a digest repeated within the claim is new only the first time).
 */
export function claimNewDigests<D>(
  statements: DigestStatements<D>,
): (hashes: readonly ClaimedHash[], fresh: boolean[]) => Promise<void> {
  return async (hashes, fresh) => {
    const digests = hashes.map((h) => statements.digest(h));
    const added = new Set(await statements.insertNew([...new Set(digests)]));
    hashes.forEach(({ index }, k) => {
      if (added.delete(digests[k] as D)) fresh[index] = true;
    });
  };
}

/** Code-point order (what `COLLATE "C"` sorts by), for taking locks in one order everywhere. */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Claims `keys` through `statements` (inside a transaction): for each key, true when it was not
 * stored before and not earlier in `keys`. Throws StoreDataError for a malformed key before any
 * statement runs.
 */
export async function claimMessageKeys(
  statements: ClaimStatements,
  keys: readonly MessageKey[],
): Promise<boolean[]> {
  for (const key of keys) {
    checkMessageKey(key);
    statements.checkKey(key);
  }
  const fresh = new Array<boolean>(keys.length).fill(false);
  const { origins, hashes } = groupMessageKeys(keys);
  if (origins.size > 0) await claimSeqs(statements.runs, origins, fresh);
  if (hashes.length > 0) await statements.claimHashes(hashes, fresh);
  return fresh;
}

async function claimSeqs(
  runs: SeqRunStatements,
  origins: ReadonlyMap<string, { indexes: number[]; seqs: number[] }>,
  fresh: boolean[],
): Promise<void> {
  const windows = [...origins.keys()].sort(byCodePoint).map((origin): OriginWindow => {
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (const seq of origins.get(origin)?.seqs ?? []) {
      if (seq < lo) lo = seq;
      if (seq > hi) hi = seq;
    }
    return { origin, lo, hi };
  });
  const stored = new Map<string, SeqRange[]>();
  for (const { origin, range } of await runs.read(windows)) {
    const list = stored.get(origin);
    if (list === undefined) stored.set(origin, [range]);
    else list.push(range);
  }

  const remove: OriginRun[] = [];
  const update: OriginRunChange[] = [];
  const insert: OriginRun[] = [];
  for (const { origin } of windows) {
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
  if (remove.length > 0) await runs.remove(remove);
  if (update.length > 0) await runs.update(update);
  if (insert.length > 0) await runs.insert(insert);
}
