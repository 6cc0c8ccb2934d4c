/**
 * Bulk loading for the DuckDB store: the DataChunk appender writes rows about 10× faster than INSERT
 * statements, and runs inside the connection's open transaction.
 */
import {
  DOUBLE,
  type DuckDBAppender,
  type DuckDBConnection,
  DuckDBDataChunk,
  DuckDBTimestampTZValue,
  type DuckDBType,
  type DuckDBValue,
  INTEGER,
  type JS,
  TIMESTAMPTZ,
  VARCHAR,
} from "@duckdb/node-api";
import bindings from "@duckdb/node-bindings";
import { isCanonicalNumberText } from "../core/canonical-number.js";
import type { SampleRows } from "../store.js";

/** DuckDB's vector size: the most rows one DataChunk holds. */
const CHUNK_ROWS = 2048;
const US_PER_MS = 1000n;

/** Bulk-loads rows into `table` (every column, in table order), one DataChunk per 2048 rows. */
export async function appendRows(
  connection: DuckDBConnection,
  table: string,
  types: readonly DuckDBType[],
  rows: readonly (readonly DuckDBValue[])[],
): Promise<void> {
  if (rows.length > 0) await appendChunks(connection, table, rowChunks(types, rows));
}

function* rowChunks(
  types: readonly DuckDBType[],
  rows: readonly (readonly DuckDBValue[])[],
): Generator<DuckDBDataChunk> {
  for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
    const slice = rows.slice(start, start + CHUNK_ROWS);
    const chunk = DuckDBDataChunk.create(types, slice.length);
    types.forEach((_, column) => {
      chunk.setColumnValues(
        column,
        slice.map((row) => row[column] ?? null),
      );
    });
    yield chunk;
  }
}

/** The columns of `samples`, in table order: series_id, ts, value, text. */
const SAMPLE_TYPES = [INTEGER, TIMESTAMPTZ, DOUBLE, VARCHAR];

/**
 * The DataChunks that load the cells of `cells` into `samples`, `ids` holding each cell's series id
 * (by cell index), 2048 cells each, made one at a time as they are taken: they need no connection,
 * so a transaction can make some while its connection runs a statement (duckdb-transaction.ts).
 * Each column is written into a typed array, a row's cells at a time (its series ids copied as a
 * run, its time filled in), and copied into the chunk's vector once (see {@link SampleColumns}). A
 * value that is not a finite number (NaN: the text is none) is stored as NULL: only those
 * aggregate. A text that is the canonical text of its number (core/canonical-number.ts) is stored
 * as NULL too, and read back from the value.
 */
export function* sampleChunks(cells: SampleRows, ids: Int32Array): Generator<DuckDBDataChunk> {
  let total = 0;
  for (const row of cells.rows) total += row.end - row.start;
  if (total === 0) return;
  const { cells: cellColumns } = cells;
  const columns = new SampleColumns(Math.min(CHUNK_ROWS, total));
  let at = 0; // position in the chunk
  let left = total;
  for (const row of cells.rows) {
    const micros = BigInt(row.at) * US_PER_MS;
    for (let c = row.start; c < row.end; ) {
      const n = Math.min(row.end - c, columns.size - at);
      columns.series.set(ids.subarray(c, c + n), at);
      columns.times.fill(micros, at, at + n);
      for (let end = c + n; c < end; c++, at++) {
        const value = cellColumns.value(c);
        columns.values[at] = value;
        if (!Number.isFinite(value)) columns.valueNull(at);
        const text = cellColumns.ownText(c); // undefined: left out as canonical
        if (text === undefined || isCanonicalNumberText(value, text)) columns.textNull(at);
        else columns.text(at, text);
      }
      left -= n;
      if (at === columns.size) {
        yield columns.chunk();
        if (left === 0) return;
        columns.reset(Math.min(CHUNK_ROWS, left));
        at = 0;
      }
    }
  }
}

/**
 * The four columns of `samples` for one DataChunk of up to CHUNK_ROWS rows, written as typed arrays
 * and copied into the chunk's vectors at once through the bindings (`copy_data_to_vector` and its
 * validity counterpart, what the node-api vectors' `flush` calls): node-api's `setItem` per value
 * checked each value and, once a vector had a NULL, set each validity bit with BigInt arithmetic.
 * The arrays are reused from one chunk to the next; the kept texts are assigned one by one.
 */
class SampleColumns {
  readonly series = new Int32Array(CHUNK_ROWS);
  readonly times = new BigInt64Array(CHUNK_ROWS);
  readonly values = new Float64Array(CHUNK_ROWS);
  /** DuckDB's validity masks: a bit per row, set when the row's value is not NULL. */
  private readonly valueValid = new Uint8Array(CHUNK_ROWS / 8);
  private readonly textValid = new Uint8Array(CHUNK_ROWS / 8);
  private valueNulls = 0;
  private textNulls = 0;
  /** The texts kept, by row. */
  private readonly keptAt: number[] = [];
  private readonly kept: string[] = [];

  constructor(public size: number) {
    this.reset(size);
  }

  reset(size: number): void {
    this.size = size;
    this.valueValid.fill(0xff);
    this.textValid.fill(0xff);
    this.valueNulls = 0;
    this.textNulls = 0;
    this.keptAt.length = 0;
    this.kept.length = 0;
  }

  valueNull(row: number): void {
    clearBit(this.valueValid, row);
    this.valueNulls += 1;
  }

  textNull(row: number): void {
    clearBit(this.textValid, row);
    this.textNulls += 1;
  }

  text(row: number, text: string): void {
    this.keptAt.push(row);
    this.kept.push(text);
  }

  /** A DataChunk of `size` rows holding the columns. */
  chunk(): DuckDBDataChunk {
    const { size } = this;
    const chunk = DuckDBDataChunk.create(SAMPLE_TYPES, size);
    const vector = (column: number) => bindings.data_chunk_get_vector(chunk.chunk, column);
    copy(vector(0), this.series, size);
    copy(vector(1), this.times, size);
    const values = vector(2);
    copy(values, this.values, size);
    if (this.valueNulls > 0) copyValidity(values, this.valueValid, size);
    const texts = vector(3);
    for (let k = 0; k < this.kept.length; k++)
      bindings.vector_assign_string_element(texts, this.keptAt[k] as number, this.kept[k] as string);
    if (this.textNulls > 0) copyValidity(texts, this.textValid, size);
    return chunk;
  }
}

function clearBit(mask: Uint8Array, row: number): void {
  const i = row >>> 3;
  mask[i] = (mask[i] as number) & ~(1 << (row & 7));
}

/** Copies the first `size` items of `items` into `vector`'s data. */
function copy(vector: bindings.Vector, items: Int32Array | BigInt64Array | Float64Array, size: number): void {
  bindings.copy_data_to_vector(
    vector,
    0,
    items.buffer as ArrayBuffer,
    items.byteOffset,
    size * items.BYTES_PER_ELEMENT,
  );
}

/** Copies the validity bits of `size` rows into `vector`'s mask (whole 64-bit words, as DuckDB keeps them). */
function copyValidity(vector: bindings.Vector, valid: Uint8Array, size: number): void {
  bindings.vector_ensure_validity_writable(vector);
  const bytes = Math.ceil(size / 64) * 8;
  bindings.copy_data_to_vector_validity(vector, 0, valid.buffer as ArrayBuffer, valid.byteOffset, bytes);
}

/** Appends `chunks` (of `table`'s columns, in table order) to `table`, inside the open transaction. */
export async function appendChunks(
  connection: DuckDBConnection,
  table: string,
  chunks: Iterable<DuckDBDataChunk>,
): Promise<void> {
  const appender: DuckDBAppender = await connection.createAppender(table);
  try {
    for (const chunk of chunks) appender.appendDataChunk(chunk);
  } finally {
    appender.closeSync();
  }
}

/**
 * An appender to `table` kept open on `connection` from one transaction to the next (the store's
 * writer and `samples`): each {@link append} flushes its chunks into the connection's open
 * transaction, which a rollback takes back, and the next reuses the appender. Making an appender is a
 * call into DuckDB whose answer waits for the hub's event loop, once per part of a backfill
 * otherwise (docs/performance.md, "Backfill into DuckDB"). After a failed append the appender's
 * buffered rows are cleared and it is let go; the next append makes a new one.
 */
export class KeptAppender {
  private appender: DuckDBAppender | undefined;

  constructor(
    private readonly connection: DuckDBConnection,
    private readonly table: string,
  ) {}

  /** Appends `chunks` (of the table's columns, in table order) inside the open transaction. */
  async append(chunks: Iterable<DuckDBDataChunk>): Promise<void> {
    const appender = this.appender ?? (await this.connection.createAppender(this.table));
    this.appender = appender;
    try {
      for (const chunk of chunks) appender.appendDataChunk(chunk);
      appender.flushSync();
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Lets the appender go, dropping rows it holds unflushed; an unusable one is ignored. */
  close(): void {
    const appender = this.appender;
    this.appender = undefined;
    if (appender === undefined) return;
    try {
      appender.clear();
      appender.closeSync();
    } catch {
      // Its connection or instance is gone or invalidated: nothing more to release.
    }
  }
}

/** A TIMESTAMPTZ value from epoch milliseconds (whole ones: see data-checks.ts). */
export const timestampTz = (ms: number): DuckDBTimestampTZValue =>
  new DuckDBTimestampTZValue(BigInt(ms) * US_PER_MS);

/**
 * Adds the terms of a `[from, to)` time range on the TIMESTAMPTZ column `column` to `where`, with
 * their values bound as `$from` and `$to`; an absent end adds nothing.
 */
export function whereTimeRange(
  column: string,
  range: { readonly from?: number; readonly to?: number },
  where: string[],
  values: Record<string, DuckDBValue>,
): void {
  if (range.from !== undefined) {
    where.push(`${column} >= $from`);
    values.from = timestampTz(range.from);
  }
  if (range.to !== undefined) {
    where.push(`${column} < $to`);
    values.to = timestampTz(range.to);
  }
}

/** A number from a DuckDB integer or double column (BIGINT arrives as a bigint); null stays null. */
export function toNumber(v: JS): number | null {
  if (v === null) return null;
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  throw new TypeError(`expected a number from DuckDB, got ${typeof v}`);
}
