/**
 * One `fkm` sampler (DESIGN 3.4): at each sample it scans the messages it took from its source
 * stream and keeps its dataview, named after the sampler: one row per keyword with `pattern`,
 * `severity`, `matches` (messages that matched since the sampler started), `lastMatchTime` (when
 * the probe received the last matching message, ISO 8601 UTC), `lastMatchText` (that message, see
 * match-text.ts); headlines `samplingStatus` and `messagesScanned` (cumulative).
 *
 * A keyword that matched in the last sample gives its row's `matches` cell the keyword's severity,
 * otherwise OK; the severity travels on the link beside the cells (`severities` of a row).
 *
 * Patterns are RE2 (src/text/pattern.ts, linear time): a long message and a pattern such as
 * `(a+)+$` cost time proportional to the message, never more. A message counts once per keyword
 * however often the keyword occurs in it. The row name is the pattern (the first column, DESIGN
 * 3.3); two keywords with one pattern are `<pattern>_duplicate1`, … as in any dataview.
 */
import type { FkmSampler } from "../../config/setup.js";
import type { Change, DataviewAddress, WireHeadlines, WireSeverities } from "../../link/protocol.js";
import { encodeCells } from "../../link/protocol.js";
import type { Severity } from "../../messages/types.js";
import { compilePattern, type Pattern, PatternError } from "../../text/pattern.js";
import { publishedNames } from "../dataview-model.js";
import type { StateSnapshot } from "../state-cursor.js";
import type { StreamMessage } from "../streams/stream-buffer.js";
import { cellText, messageText } from "./match-text.js";

/** Columns of an fkm dataview, in display order (DESIGN 3.4). */
export const FKM_COLUMNS = ["pattern", "severity", "matches", "lastMatchTime", "lastMatchText"] as const;

/** `samplingStatus` when the sampler works. */
export const FKM_STATUS_OK = "OK";

interface KeywordState {
  readonly source: string;
  /** Null when the pattern does not compile (a setup that skipped validation); it never matches. */
  readonly pattern: Pattern | null;
  severity: Severity;
  matches: number;
  lastMatchTime: string;
  /** The matching message's text as its cell shows it (cut to the cell length of that sample). */
  lastMatchText: string;
  matchedLastSample: boolean;
}

/** A keyword row as GET shows it. */
export interface FkmKeywordView {
  readonly name: string;
  readonly pattern: string;
  readonly severity: Severity;
  readonly matches: number;
  readonly matchSeverity: Severity;
  readonly lastMatchTime: string;
  readonly lastMatchText: string;
}

/** An fkm sampler's state as GET on the sampler shows it. */
export interface FkmView {
  readonly samplingStatus: string;
  readonly messagesScanned: number;
  readonly source: { readonly sampler: string; readonly stream: string };
  readonly sampleIntervalSeconds: number;
  readonly keywords: readonly FkmKeywordView[];
}

type Row = { name: string; cells: string[]; severities: WireSeverities };

/** The state of one fkm sampler and the changes it publishes. */
export class FkmSamplerState {
  private keywords: KeywordState[] = [];
  private messagesScanned = 0;
  private status = FKM_STATUS_OK;
  /** The status the source resolution gives (set by the owner), shown when patterns are fine. */
  private sourceStatus = FKM_STATUS_OK;
  /** Rows as last sent (name → encoded cells + severities), to send only what changed. */
  private sent = new Map<string, string>();
  private sentHeadlines = "";
  /** The whole dataview must be sent (new sampler, or its keywords changed). */
  private announce = true;
  private at: number;

  constructor(
    readonly managedEntity: string,
    public setup: FkmSampler,
    at: number,
  ) {
    this.at = at;
    this.setKeywords(setup);
  }

  get address(): DataviewAddress {
    return {
      managedEntity: this.managedEntity,
      sampler: this.setup.name,
      samplerType: this.setup.type,
      dataview: this.setup.name,
    };
  }

  /**
   * Takes a new setup of this sampler. Keywords whose pattern stays keep their counters (in order
   * of appearance); a changed keyword list makes the whole dataview be sent again.
   */
  reconfigure(setup: FkmSampler): void {
    const before = this.setup;
    this.setup = setup;
    const same =
      before.keywords.length === setup.keywords.length &&
      before.keywords.every(
        (k, i) => k.pattern === setup.keywords[i]?.pattern && k.severity === setup.keywords[i]?.severity,
      );
    if (!same) {
      this.setKeywords(setup);
      this.announce = true;
    }
  }

  /** Sets the status the source gives (OK, or why the source cannot be read). */
  setSourceStatus(status: string): void {
    this.sourceStatus = status;
    this.status = this.patternStatus() ?? status;
  }

  /**
   * One sample: scans `messages` (oldest first) at time `at`. Every keyword's "matched in the last
   * sample" is recomputed, so a sample without a match sets its `matches` cell back to OK. A
   * matching text is kept cut to `maxCellLength`, so a sampler holds no message after its sample.
   */
  sample(messages: readonly StreamMessage[], at: number, maxCellLength: number): void {
    this.at = at;
    for (const keyword of this.keywords) keyword.matchedLastSample = false;
    for (const message of messages) {
      const text = messageText(message.body);
      for (const keyword of this.keywords) {
        if (keyword.pattern === null || !keyword.pattern.test(text)) continue;
        keyword.matches += 1;
        keyword.matchedLastSample = true;
        keyword.lastMatchTime = new Date(message.at).toISOString();
        keyword.lastMatchText = cellText(text, maxCellLength);
      }
    }
    this.messagesScanned += messages.length;
  }

  /** The link changes since the last call: the whole dataview, or the rows and headlines that changed. */
  changes(): Change[] {
    const dataview = this.address;
    const at = this.at;
    const rows = this.rows();
    const headlines = this.headlines();
    if (this.announce) {
      this.remember(rows, headlines);
      return [
        {
          kind: "dataview",
          dataview,
          at,
          plugin: "fkm",
          columns: FKM_COLUMNS,
          rows: rows.map((row) => ({
            name: row.name,
            cells: encodeCells(row.cells),
            severities: row.severities,
          })),
          headlines,
        },
      ];
    }
    const out: Change[] = [];
    for (const row of rows) {
      const key = rowKey(row);
      if (this.sent.get(row.name) === key) continue;
      this.sent.set(row.name, key);
      out.push({
        kind: "row",
        dataview,
        at,
        name: row.name,
        cells: encodeCells(row.cells),
        severities: row.severities,
      });
    }
    const headlinesKey = JSON.stringify(headlines);
    if (headlinesKey !== this.sentHeadlines) {
      this.sentHeadlines = headlinesKey;
      out.push({ kind: "headlines", dataview, at, headlines });
    }
    return out;
  }

  /** The dataview for the link's state; the state carries what was pending. */
  snapshot(): StateSnapshot {
    const rows = this.rows();
    const headlines = this.headlines();
    this.remember(rows, headlines);
    return {
      address: this.address,
      plugin: "fkm",
      at: this.at,
      columns: FKM_COLUMNS,
      headlines,
      rows: rows.map((row) => ({
        name: row.name,
        cells: row.cells,
        at: this.at,
        severities: row.severities,
      })),
    };
  }

  /** What GET on the sampler shows. */
  view(): FkmView {
    const names = publishedNames(this.keywords.map((k) => k.source));
    return {
      samplingStatus: this.status,
      messagesScanned: this.messagesScanned,
      source: { sampler: this.setup.source.sampler, stream: this.setup.source.stream },
      sampleIntervalSeconds: this.setup.sampleInterval,
      keywords: this.keywords.map((k, i) => ({
        name: names[i] ?? k.source,
        pattern: k.source,
        severity: k.severity,
        matches: k.matches,
        matchSeverity: k.matchedLastSample ? k.severity : "OK",
        lastMatchTime: k.lastMatchTime,
        lastMatchText: k.lastMatchText,
      })),
    };
  }

  private setKeywords(setup: FkmSampler): void {
    const previous = new Map<string, KeywordState[]>();
    for (const k of this.keywords) {
      const list = previous.get(k.source) ?? [];
      list.push(k);
      previous.set(k.source, list);
    }
    this.keywords = setup.keywords.map(({ pattern, severity }) => {
      const kept = previous.get(pattern)?.shift();
      if (kept !== undefined) {
        kept.severity = severity;
        return kept;
      }
      return {
        source: pattern,
        pattern: compileOrNull(pattern),
        severity,
        matches: 0,
        lastMatchTime: "",
        lastMatchText: "",
        matchedLastSample: false,
      };
    });
    this.status = this.patternStatus() ?? this.sourceStatus;
  }

  private patternStatus(): string | undefined {
    const bad = this.keywords.find((k) => k.pattern === null);
    return bad === undefined ? undefined : `Invalid keyword pattern '${bad.source}' (not RE2 syntax)`;
  }

  private rows(): Row[] {
    const names = publishedNames(this.keywords.map((k) => k.source));
    return this.keywords.map((k, i) => ({
      name: names[i] ?? k.source,
      cells: [k.source, k.severity, String(k.matches), k.lastMatchTime, k.lastMatchText],
      severities: [["matches", k.matchedLastSample ? k.severity : "OK"]],
    }));
  }

  private headlines(): WireHeadlines {
    return [
      ["samplingStatus", this.status],
      ["messagesScanned", String(this.messagesScanned)],
    ];
  }

  private remember(rows: readonly Row[], headlines: WireHeadlines): void {
    this.announce = false;
    this.sent = new Map(rows.map((row) => [row.name, rowKey(row)]));
    this.sentHeadlines = JSON.stringify(headlines);
  }
}

function rowKey(row: Row): string {
  return JSON.stringify([row.cells, row.severities]);
}

function compileOrNull(source: string): Pattern | null {
  try {
    return compilePattern(source);
  } catch (error) {
    if (error instanceof PatternError) return null;
    throw error;
  }
}
