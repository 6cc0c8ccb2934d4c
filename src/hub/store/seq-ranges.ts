/**
 * De-duplication of `<origin>.<seq>` message ids kept as ranges (DESIGN 1: "the hub stores a message
 * id once"). A gateway run numbers its messages from 1 and they mostly arrive in order, so the seqs
 * stored for one origin are a few runs `[first, last]`; in-order delivery widens one run and keeps
 * one row per origin. Batches that commit out of order (two hubs sharing a database) or redelivery
 * leave gaps, filled later by merging the neighbouring runs. The store reads the runs that touch a
 * batch's seqs, asks {@link planSeqClaim} what changes, and writes that back in the same transaction.
 */
import type { MessageKey } from "./store.js";

/** A run of stored seqs of one origin, both ends included. */
export interface SeqRange {
  readonly first: number;
  readonly last: number;
}

/** What one claim does to the stored runs of one origin. */
export interface SeqClaimPlan {
  /** For each seq in the order given: new (not stored, not earlier in the list). */
  readonly fresh: boolean[];
  /** Stored runs to widen in place: the stored run and its new bounds. */
  readonly update: { readonly from: SeqRange; readonly to: SeqRange }[];
  /** Stored runs to delete (merged into an updated one). */
  readonly remove: SeqRange[];
  /** Runs to add. */
  readonly insert: SeqRange[];
}

/**
 * Plans the claim of `seqs` (positive integers, any order, repeats allowed) for one origin.
 * `stored` must hold every stored run that overlaps or touches `[min(seqs) − 1, max(seqs) + 1]`
 * (more is harmless). The result keeps runs disjoint and never adjacent: a new seq next to a run
 * widens it, one that closes a gap merges the two runs around it.
 */
export function planSeqClaim(stored: readonly SeqRange[], seqs: readonly number[]): SeqClaimPlan {
  const runs = [...stored].sort((a, b) => a.first - b.first || a.last - b.last);
  // Runs written by one store are disjoint; runs left by writers that raced may overlap, and
  // binary search would miss a cover among them, so they are searched one by one.
  const disjoint = runs.every((run, i) => i === 0 || run.first > (runs[i - 1] as SeqRange).last);
  const seen = new Set<number>();
  const fresh = seqs.map((seq) => {
    if (seen.has(seq)) return false;
    seen.add(seq);
    return disjoint ? !covered(runs, seq) : !runs.some((r) => r.first <= seq && seq <= r.last);
  });
  const added = seqs.filter((_, i) => fresh[i]);
  // In-order delivery gives ascending seqs: sort only when needed (fresh seqs are distinct).
  if (added.some((seq, i) => i > 0 && seq < (added[i - 1] as number))) added.sort((a, b) => a - b);
  const plan: SeqClaimPlan = { fresh, update: [], remove: [], insert: [] };
  if (added.length === 0) return plan;

  // Every interval, stored or new, sorted by start; coalesce those that overlap or touch.
  const intervals: { range: SeqRange; stored: boolean }[] = runs.map((range) => ({ range, stored: true }));
  let start = added[0] as number;
  let end = start;
  for (const seq of added.slice(1)) {
    if (seq === end + 1) {
      end = seq;
      continue;
    }
    intervals.push({ range: { first: start, last: end }, stored: false });
    start = seq;
    end = seq;
  }
  intervals.push({ range: { first: start, last: end }, stored: false });
  intervals.sort((a, b) => a.range.first - b.range.first || a.range.last - b.range.last);

  let group: { first: number; last: number; members: SeqRange[] } | undefined;
  const close = (g: { first: number; last: number; members: SeqRange[] }): void => {
    const merged = { first: g.first, last: g.last };
    const [keep, ...rest] = g.members;
    if (keep === undefined) plan.insert.push(merged);
    else if (keep.first !== merged.first || keep.last !== merged.last || rest.length > 0) {
      plan.update.push({ from: keep, to: merged });
      plan.remove.push(...rest);
    }
  };
  for (const { range, stored: isStored } of intervals) {
    if (group !== undefined && range.first <= group.last + 1) {
      group.last = Math.max(group.last, range.last);
    } else {
      if (group !== undefined) close(group);
      group = { first: range.first, last: range.last, members: [] };
    }
    if (isStored) group.members.push(range);
  }
  if (group !== undefined) close(group);
  return plan;
}

/** Whether a sorted list of disjoint runs holds `seq` (binary search). */
function covered(runs: readonly SeqRange[], seq: number): boolean {
  let lo = 0;
  let hi = runs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const run = runs[mid] as SeqRange;
    if (seq < run.first) hi = mid - 1;
    else if (seq > run.last) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The message keys of one claim, split by kind: seqs grouped per origin, hashes, each with its index. */
export interface ClaimGroups {
  readonly origins: Map<string, { indexes: number[]; seqs: number[] }>;
  readonly hashes: ClaimedHash[];
}

/** A hash key of a claim, with its index in the claim's keys. */
export interface ClaimedHash {
  readonly index: number;
  readonly hash: string;
  readonly at: number | undefined;
}

/** Groups `keys` for a claim (both stores claim seqs per origin as ranges, hashes one by one). */
export function groupMessageKeys(keys: readonly MessageKey[]): ClaimGroups {
  const origins = new Map<string, { indexes: number[]; seqs: number[] }>();
  const hashes: ClaimedHash[] = [];
  keys.forEach((key, index) => {
    if (key.kind === "hash") {
      hashes.push({ index, hash: key.hash, at: key.at });
      return;
    }
    let group = origins.get(key.origin);
    if (group === undefined) {
      group = { indexes: [], seqs: [] };
      origins.set(key.origin, group);
    }
    group.indexes.push(index);
    group.seqs.push(key.seq);
  });
  return { origins, hashes };
}
