/**
 * How an fkm sampler reads a stream message and shows it in `lastMatchText` (DESIGN 3.4).
 *
 * A message is bytes in any format. Keywords are matched against its text decoded as UTF-8 with
 * every invalid sequence replaced by U+FFFD (the WHATWG decoder, never failing), so a log line
 * with a stray byte still matches `ERROR`, and binary content matches only what it spells out.
 * The cell shows that same text, with one trailing line break removed (log lines usually end with
 * one), cut to the gateway's `maxCellLength` UTF-16 code units: a longer text keeps its start and
 * ends with `…`, never splitting a surrogate pair. The decoder never produces lone surrogates, so
 * the cell is always well-formed Unicode.
 */

const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: false });

/** The text keywords are matched against: the bytes as UTF-8, invalid sequences as U+FFFD. */
export function messageText(body: Uint8Array): string {
  return decoder.decode(body);
}

/** The ellipsis that ends a text cut to fit a cell. */
export const CUT_MARK = "…";

/** The text shown in a cell: one trailing line break removed, at most `maxLength` code units. */
export function cellText(text: string, maxLength: number): string {
  let shown = text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
  if (shown.length <= maxLength) return shown;
  if (maxLength < 1) return "";
  let end = maxLength - CUT_MARK.length;
  // Never end between the two halves of a surrogate pair.
  const last = shown.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  shown = shown.slice(0, Math.max(0, end));
  return shown + CUT_MARK;
}
