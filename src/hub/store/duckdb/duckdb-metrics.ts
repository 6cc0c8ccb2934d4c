/**
 * Runs a metric query on DuckDB (DESIGN 5.3): the zone's offsets over the scanned window (read from
 * DuckDB's ICU once per zone and window, then kept), then the statement of duckdb-metrics-sql.ts
 * for each part of the range, and reads their rows. The PostgreSQL store's counterpart is
 * postgres-metrics.ts; what both share (the plan, the segments, the bucket grid) is in `../core/`.
 */
import type { DuckDBConnection, DuckDBDataChunk, DuckDBResult } from "@duckdb/node-api";
import { splitInstant } from "../core/bucket-grid.js";
import { fixedZoneOffsets, parseZone, type ZoneOffsets } from "../core/zone-offsets.js";
import type { MetricQueryPlan, MetricRowBatches } from "../store.js";
import {
  buildMatchedShareQuery,
  buildMetricQuery,
  buildWindowSamplesQuery,
  buildZoneOffsetsQuery,
  type DuckDbScanWindow,
  type MetricSql,
  metricRowBatches,
  type PercentileForm,
  readZoneOffsets,
  type Statement,
} from "./duckdb-metrics-sql.js";
import { NativeResultMemory } from "./duckdb-native-memory.js";

/**
 * Most samples (estimated) one statement of a metric query aggregates: a larger query runs as
 * consecutive statements over parts of its range, cut at bucket boundaries, so that the memory of
 * its aggregation (every value of a group is kept for the exact percentile, outside DuckDB's
 * `memory_limit`) is that of a part. The peers bench's query (bench/peers.bench.ts: 8.6 M samples,
 * one day of 5-minute buckets, the answer's text made too) in a process of 135 MiB idle: one
 * statement peaked at 516-554 MiB, parts of 10^6 samples at 377-415 MiB, for the same CPU (1.1-1.2 s
 * a query); each statement costs about 7 ms however small.
 */
export const QUERY_PART_SAMPLES = 1_000_000; // samples
/** Most statements a metric query is cut into. */
export const QUERY_PARTS_MAX = 64;

/**
 * `window` cut into parts of about `partSamples` samples of `plan` each (estimated: the window's
 * samples times the share of the stored series the plan reads, spread evenly over its time), at
 * bucket boundaries no bucket spans (`splitInstant`): the parts' answers, one after the other, are
 * the answer in order. One part when the query is small or its buckets have no such boundary
 * (months). The first part is as large as the others even with a percentile, which it sorts whole
 * (`answer` in {@link DuckDbMetrics.query}). A short first part of its own (an eighth of the first's
 * time), to sort less, costs one statement more (8-9 ms of fixed cost) for what it saves, now that
 * the next part's statement runs while the hub writes: measured with one, the peers query at 20 and
 * 100 rows took the same time, shorter windows 2-5 % longer and the store-query bench's full
 * aggregation over HTTP 6 % longer.
 */
async function parts(
  reader: DuckDBConnection,
  plan: MetricQueryPlan,
  window: DuckDbScanWindow,
  offsets: ZoneOffsets,
  partSamples: number,
): Promise<DuckDbScanWindow[]> {
  const numbers = async (statement: Statement): Promise<number[]> => {
    const [row] = (await reader.runAndReadAll(statement.sql, statement.values, statement.types)).getRows();
    return (row ?? []).map((v) => Number(v ?? 0));
  };
  const from = Number(window.fromUs / 1000n);
  const to = Number(window.toUs / 1000n);
  const cut = (after: number, before: number, near: number): number | undefined => {
    const at = splitInstant(plan.bucket, offsets, { from: after, to: before }, near, plan);
    return at !== undefined && at > after && at < before ? at : undefined;
  };
  const [samples = 0] = await numbers(buildWindowSamplesQuery(window));
  const cuts: number[] = [];
  // Only a window of more samples than a part asks which of them the plan reads.
  if (partSamples <= 0 || samples > partSamples) {
    const [pairs = 0, series = 0] = await numbers(buildMatchedShareQuery(plan));
    const estimated = (samples * pairs) / Math.max(1, series);
    const count =
      partSamples <= 0 ? QUERY_PARTS_MAX : Math.min(QUERY_PARTS_MAX, Math.ceil(estimated / partSamples));
    for (let i = 1; i < count; i++) {
      const at = cut(cuts[cuts.length - 1] ?? from, to, from + Math.floor(((to - from) * i) / count));
      if (at !== undefined) cuts.push(at);
    }
  }
  const bounds = [window.fromUs, ...cuts.map((t) => BigInt(t) * 1000n), window.toUs];
  return bounds.slice(1).map((toUs, i) => ({ fromUs: bounds[i] as bigint, toUs }));
}

/** A statement's answer: its chunks, each read from DuckDB once, and the rows and values they hold. */
interface Answer {
  readonly chunks: readonly DuckDBDataChunk[];
  readonly values: number;
  readonly query: MetricSql;
}

/**
 * The largest `k` of a statement's `top` percentile form ({@link PercentileForm}): beyond it, keeping
 * k values a group costs about what sorting them all does (measured on the peers data: k = 2, 4, 8,
 * 16 and 32 took 0.34, 0.41, 0.62, 0.77 and 0.84 of quantile_disc's time, the same aggregates
 * beside).
 */
export const TOP_PERCENTILE_K_MAX = 16;

/** The largest rank a row of `answer` took a percentile at (0 without percentiles or rows). */
function largestNeed({ chunks, query }: Answer): number {
  const column = query.needColumn;
  if (column === null) return 0;
  let need = 0;
  for (const chunk of chunks) {
    const vector = chunk.getColumnVector(column);
    const count = chunk.rowCount;
    for (let r = 0; r < count; r++) {
      const n = Number(vector.getItem(r) ?? 0);
      if (n > need) need = n;
    }
  }
  return need;
}

/**
 * Runs `query` and reads its answer whole, a chunk at a time as DuckDB makes it (a streamed result:
 * DuckDB holds no materialized copy of the answer beside the chunks the hub reads). The peers query
 * at 100 rows with curl, 6 runs of 12 queries alternating with a materialized result: 20-30 MiB
 * less at the peak, and the time within the machine's noise (medians 1.35 s against 1.30, CPU 2.11 s
 * a query against 2.04).
 */
const run = async (reader: DuckDBConnection, query: MetricSql, started?: () => void): Promise<Answer> => {
  // As `reader.stream()`, which prepares, binds and streams in one call, but `started` is told as
  // soon as the statement is in DuckDB's hands (see `DuckDbMetrics.query`).
  const prepared = await reader.prepare(query.sql);
  let result: DuckDBResult;
  try {
    prepared.bind(query.values, query.types);
    const streaming = prepared.stream();
    started?.();
    result = await streaming;
  } finally {
    prepared.destroySync();
  }
  const chunks: DuckDBDataChunk[] = [];
  let values = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (chunk === null || chunk.rowCount === 0) break;
    chunks.push(chunk);
    values += chunk.rowCount * chunk.columnCount;
  }
  return { chunks, values, query };
};

/** Zone-offset answers kept for metric queries (a few hundred bytes each). */
const ZONE_OFFSETS_CACHE_ENTRIES = 256; // entries

/** The metric queries of one DuckDB store, with the zone offsets they have read. */
export class DuckDbMetrics {
  /** Offsets of named zones around recent query ranges (buildZoneOffsetsQuery's key). */
  private readonly zoneOffsets = new Map<string, ZoneOffsets>();

  /** `partSamples`: most samples (estimated) one statement aggregates; 0 cuts every query in {@link QUERY_PARTS_MAX}. */
  constructor(
    private readonly partSamples: number = QUERY_PART_SAMPLES,
    private readonly nativeMemory: NativeResultMemory = new NativeResultMemory(),
  ) {}

  /** Forgets the offsets read (a reopened database reads them again). */
  forget(): void {
    this.zoneOffsets.clear();
  }

  /**
   * The rows of `plan` over `window`, answered on `reader`: one statement per part of
   * {@link parts}, each started as soon as the one before it has answered, whether or not its rows
   * have been read (so the database works on the next part while the hub writes out this one), and
   * made a DuckDB chunk at a time as they are read. A part's rows are written once the next part's
   * statement is in DuckDB's hands: preparing it answers on the hub's thread, which would otherwise
   * take that answer only after writing the whole part, leaving DuckDB idle meanwhile (the peers
   * query, bench/peers.bench.ts: 5-10 % of its time at 20 and 100 rows). Settles once the first
   * part has answered, with its rows and `done`, which settles when the last statement has
   * answered: `reader` is in use until then. A later part's error rejects `done` and the reading of
   * that part's rows.
   */
  async query(
    reader: DuckDBConnection,
    plan: MetricQueryPlan,
    window: DuckDbScanWindow,
  ): Promise<{ readonly batches: MetricRowBatches; readonly done: Promise<void> }> {
    const offsets = await this.offsets(reader, plan, window);
    const cuts = await parts(reader, plan, window, offsets, this.partSamples);
    let bounded = false;
    let percentiles: PercentileForm = { kind: "sort" };
    const statement = async (
      part: DuckDbScanWindow,
      form: PercentileForm,
      started?: () => void,
    ): Promise<Answer> => {
      if (!bounded) {
        try {
          return await run(reader, buildMetricQuery(plan, offsets, part, false, form), started);
        } catch (error) {
          // A variance or deviation beyond the largest double (DuckDB: "VARPOP is out of range"):
          // the forms that answer null there, a tenth slower, from this part on. They answer every
          // group within range as the plain forms do, so the parts before stand.
          if (!(error instanceof Error && /Out of Range Error/i.test(error.message))) throw error;
          bounded = true;
        }
      }
      return run(reader, buildMetricQuery(plan, offsets, part, true, form), started);
    };
    // Percentiles: the first part sorts; a later part takes the top form with room for the ranks
    // the part before needed (the next power of two above the largest). A part with a group that
    // needs more runs again sorting, and so do the parts after it: at most one part is run twice.
    let missed = false;
    const answer = async (part: DuckDbScanWindow, started: () => void): Promise<Answer> => {
      let answered = await statement(part, percentiles, started);
      let need = largestNeed(answered);
      if (percentiles.kind === "top" && need > percentiles.k) {
        missed = true;
        answered = await statement(part, { kind: "sort" });
        need = largestNeed(answered);
      }
      const k = 2 ** Math.ceil(Math.log2(need + 1));
      percentiles = !missed && k <= TOP_PERCENTILE_K_MAX ? { kind: "top", k } : { kind: "sort" };
      return answered;
    };
    const answers: (Promise<Answer> | undefined)[] = [];
    const started: Promise<void>[] = [];
    let last: Promise<unknown> = Promise.resolve();
    for (const part of cuts) {
      let begun = (): void => undefined;
      started.push(
        new Promise<void>((resolve) => {
          begun = resolve;
        }),
      );
      const next = last.then(() => answer(part, begun));
      // Handled here as well as where it is read: rows never read must not leave a rejection unheard.
      next.catch(() => undefined).finally(begun);
      answers.push(next);
      last = next;
    }
    await answers[0];
    const nativeMemory = this.nativeMemory;
    return {
      batches: (async function* () {
        try {
          for (let k = 0; k < answers.length; k++) {
            const { chunks, values, query } = await (answers[k] as Promise<Answer>);
            // A part is let go as it is written: only the parts not written yet are held.
            answers[k] = undefined;
            await started[k + 1];
            yield* metricRowBatches(chunks, query);
            nativeMemory.release(values);
          }
        } finally {
          // Also when the answer is left unread (a client gone): what was read is counted.
          nativeMemory.answered();
        }
      })(),
      done: last.then(() => undefined),
    };
  }

  private async offsets(
    reader: DuckDBConnection,
    plan: MetricQueryPlan,
    window: DuckDbScanWindow,
  ): Promise<ZoneOffsets> {
    const zone = parseZone(plan.zone);
    if (zone.kind === "fixed") return fixedZoneOffsets(zone.offsetSeconds);
    // Count buckets ignore the zone's clock: without time windows no offset is read.
    if (plan.bucket.kind === "count" && plan.timeWindows.length === 0) return fixedZoneOffsets(0);
    const q = buildZoneOffsetsQuery(zone.name, window);
    const known = this.zoneOffsets.get(q.key);
    if (known !== undefined) return known;
    const offsets = readZoneOffsets((await reader.runAndReadAll(q.sql, q.values, q.types)).getRows());
    // Keys come from requests: the cache must not grow without limit.
    if (this.zoneOffsets.size >= ZONE_OFFSETS_CACHE_ENTRIES) this.zoneOffsets.clear();
    this.zoneOffsets.set(q.key, offsets);
    return offsets;
  }
}
