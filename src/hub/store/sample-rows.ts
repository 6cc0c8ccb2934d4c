/**
 * Samples in columns ({@link SampleRows}): the builder the ingester fills, and the conversion of the
 * one-object-per-sample form that the stores apply to `IngestBatch.samples` so that they write one
 * form only. The builder makes one object per row (one message's cells), none per cell: on a loaded
 * hub allocation is where the time goes.
 */
import type { EpochMs } from "../../ids.js";
import type {
  CellColumns,
  EntityKey,
  IngestBatch,
  RowNames,
  SampleInput,
  SampleRow,
  SampleRows,
} from "./store.js";

/**
 * Cells a chunk of {@link SampleCells} holds: 2^12 = 4 096. A JavaScript array of more than about
 * 16 000 entries lives in V8's large-object space, where each growth maps fresh memory: pushing
 * onto one cost 0.07–0.1 µs per entry on this machine against 0.005–0.01 onto arrays of a few
 * thousand. A backfill part holds 55 000 cells (5 000 messages of 11), and adding a part's slices
 * took 6 % of the hub's thread in the backfill bench's profile; 1.4 % in chunks
 * (docs/performance.md).
 */
const CHUNK_BITS = 12;
const IN_CHUNK = (1 << CHUNK_BITS) - 1;

/**
 * Cells in columns before rows are made of them: the ingester makes a part's cells while it checks
 * the part, before the store's transaction, and the rows that name them inside it. Held in chunks
 * of 4 096 cells (see CHUNK_BITS), read by index. A cell whose text is the canonical text of its
 * number (core/canonical-number.ts) may be added without it ({@link canonicalCell}): the backfill's
 * parse workers send no such text to the hub's thread, where the DuckDB store would leave it out
 * again, and `text` writes it back for a store that keeps every text.
 */
export class SampleCells implements CellColumns {
  private readonly columnChunks: string[][] = [];
  /** `undefined` where the text is the canonical text of the number (see the class comment). */
  private readonly textChunks: (string | undefined)[][] = [];
  private readonly valueChunks: number[][] = [];
  private count = 0;
  // The chunks being filled.
  private columns: string[] = [];
  private texts: (string | undefined)[] = [];
  private values: number[] = [];

  /** Cells added so far. */
  get length(): number {
    return this.count;
  }

  /** Adds a cell; `value` null (or not finite) when the text is no number. */
  cell(column: string, text: string, value: number | null): void {
    this.add(column, text, value !== null && Number.isFinite(value) ? value : Number.NaN);
  }

  /**
   * Adds a cell whose text is the canonical text of `value` (`isCanonicalNumberText(value, text)`,
   * core/canonical-number.ts), without the text: `text` writes it, and `ownText` is undefined.
   */
  canonicalCell(column: string, value: number): void {
    this.add(column, undefined, value);
  }

  private add(column: string, text: string | undefined, value: number): void {
    if ((this.count & IN_CHUNK) === 0) {
      this.columns = [];
      this.texts = [];
      this.values = [];
      this.columnChunks.push(this.columns);
      this.textChunks.push(this.texts);
      this.valueChunks.push(this.values);
    }
    this.columns.push(column);
    this.texts.push(text);
    this.values.push(value);
    this.count += 1;
  }

  column(c: number): string {
    return (this.columnChunks[c >>> CHUNK_BITS] as string[])[c & IN_CHUNK] as string;
  }

  text(c: number): string {
    return this.ownText(c) ?? String(this.value(c));
  }

  ownText(c: number): string | undefined {
    return (this.textChunks[c >>> CHUNK_BITS] as (string | undefined)[])[c & IN_CHUNK];
  }

  value(c: number): number {
    return (this.valueChunks[c >>> CHUNK_BITS] as number[])[c & IN_CHUNK] as number;
  }
}

/**
 * Collects rows of samples: {@link cell} for each cell of a row, then {@link endRow}; or, over
 * cells made before (`cells`), {@link row} for each row with its range of them.
 */
export class SampleRowsBuilder implements SampleRows {
  readonly rows: SampleRow[] = [];
  readonly cells: SampleCells;
  private start = 0;

  constructor(cells: SampleCells = new SampleCells()) {
    this.cells = cells;
  }

  /** Cells added so far, of every row. */
  get length(): number {
    return this.cells.length;
  }

  /** Adds a cell to the row being built; `value` null (or not finite) when the text is no number. */
  cell(column: string, text: string, value: number | null): void {
    this.cells.cell(column, text, value);
  }

  /** Ends the row of the cells added since the last row; a row without cells is not kept. */
  endRow(entity: EntityKey, names: RowNames, at: EpochMs): void {
    const end = this.cells.length;
    if (end !== this.start) {
      this.row(entity, names.sampler, names.samplerType, names.dataview, names.row, at, this.start, end);
    }
    this.start = end;
  }

  /** Adds a row of the cells `[start, end)` made before; a row without cells is not kept. */
  row(
    entity: EntityKey,
    sampler: string,
    samplerType: string,
    dataview: string,
    row: string,
    at: EpochMs,
    start: number,
    end: number,
  ): void {
    if (end > start) this.rows.push({ entity, sampler, samplerType, dataview, row, at, start, end });
  }
}

const NO_ROWS: SampleRows = { rows: [], cells: new SampleCells() };

/** Whether two samples belong in one row: the same entity, series names but the column, and time. */
function sameRow(a: SampleInput, b: SampleInput): boolean {
  if (a.at !== b.at) return false;
  const x = a.series;
  const y = b.series;
  if (x !== y && (x.row !== y.row || x.dataview !== y.dataview || x.sampler !== y.sampler)) return false;
  if (x !== y && x.samplerType !== y.samplerType) return false;
  const e = a.entity;
  const f = b.entity;
  return e === f || (e.managedEntity === f.managedEntity && e.probe === f.probe && e.gateway === f.gateway);
}

/**
 * Every sample of `batch` in columns: `batch.samples` (each run of samples of one row becomes one
 * row) followed by `batch.rows`. Returns `batch.rows` itself when there are no single samples.
 */
export function sampleRowsOf(batch: IngestBatch): SampleRows {
  const samples = batch.samples;
  if (samples.length === 0) return batch.rows ?? NO_ROWS;
  const out = new SampleRowsBuilder();
  let first: SampleInput | undefined; // the first sample of the row being built
  for (const sample of samples) {
    if (first !== undefined && !sameRow(first, sample)) {
      out.endRow(first.entity, first.series, first.at);
      first = undefined;
    }
    first ??= sample;
    out.cell(sample.series.column, sample.text, sample.value);
  }
  if (first !== undefined) out.endRow(first.entity, first.series, first.at);
  const rows = batch.rows;
  if (rows !== undefined) {
    for (const r of rows.rows) {
      const { cells } = rows;
      for (let c = r.start; c < r.end; c++) out.cell(cells.column(c), cells.text(c), cells.value(c));
      out.endRow(r.entity, r, r.at);
    }
  }
  return out;
}
