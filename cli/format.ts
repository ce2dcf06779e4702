/**
 * What every topic's text shares (each topic's own results and sentences live in cli/<topic>/; the
 * rule from wire values to JSON ones is cli/result.ts): the two table-mode layouts — lists as
 * aligned columns, details as aligned label/value lines (etcdctl's printer). Pure functions.
 */
import { NOT_ONE_LINE } from "../core/base/index.js";

const NOT_ONE_LINE_ALL = new RegExp(NOT_ONE_LINE.source, "gu");

/** A character escaped as text: `\x1b` below U+0100, `\u202e` above. */
function escaped(c: string): string {
  const cp = c.codePointAt(0)!;
  return cp < 0x100 ? `\\x${cp.toString(16).padStart(2, "0")}` : `\\u${cp.toString(16).padStart(4, "0")}`;
}

/**
 * Text a user or a peer chose (a message, a payload preview, a name, a reason, an audit argument)
 * as a terminal shows it: every character core/base NOT_ONE_LINE names — C0 and C1 controls, DEL,
 * line separators, bidirectional formatting — written as visible escapes (`\x1b`, `\u202e`), so
 * that a sender cannot retitle or clear the operator's terminal (OSC, CSI), fake a prompt on a
 * line of its own, or reorder what a line displays (Trojan Source). Newlines and tabs are escaped
 * too: one cell stays one cell. Every table cell and label value goes through it (table,
 * keyValues); JSON output never does (it stays exact).
 */
export function visible(s: string): string {
  return s.replace(NOT_ONE_LINE_ALL, escaped);
}

/**
 * A whole block of table-mode output (what a command logs, a streamed line, a diagnostic): as
 * visible(), but the line breaks the output itself is made of are kept. The last line of defence
 * for the sentences that are not table cells.
 */
export function visibleLines(s: string): string {
  return s.split("\n").map(visible).join("\n");
}

/**
 * The most characters a table cell shows (issue 24: a 1,000-user join event printed a 37 KB line
 * and buried every other row). 200 is two and a half lines of an 80-column terminal, room for
 * four UUIDs with their separators; what the system itself puts in a cell (UUIDs, times, verdicts,
 * paths, audit details) stays below it, so only text that a user or a bulk change chose is cut.
 * JSON output is never cut.
 */
export const TABLE_CELL_MAX_CHARS = 200;

/** 1000 → "1,000": counts as people read them (fixed locale, so output does not depend on the machine's). */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A partial escape that a cut left at the end ("\u20", "\x"): dropped, so that no half escape is shown. */
const PARTIAL_ESCAPE = /\\(?:x[0-9a-f]?|u[0-9a-f]{0,3})?$/;

/**
 * A cell as a table shows it: visible() escapes, and a text longer than TABLE_CELL_MAX_CHARS cut
 * with an ellipsis and its full length in characters ("hello wor… (12,345 chars)").
 */
export function cellText(value: string, max: number = TABLE_CELL_MAX_CHARS): string {
  const shown = visible(value);
  const chars = Array.from(shown);
  if (chars.length <= max) return shown;
  const tail = `… (${count(Array.from(value).length)} chars)`;
  return chars.slice(0, Math.max(0, max - tail.length)).join("").replace(PARTIAL_ESCAPE, "") + tail;
}

/** Columns separated by two spaces; the last column is not padded. Every cell is bounded by cellText(). */
export type Cell = string | number | null;

export function table(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null ? "-" : cellText(String(c)))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd())
    .join("\n");
}

/** Label/value lines, labels aligned. */
export function keyValues(pairs: readonly (readonly [string, string | number | null])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${v === null ? "-" : visible(String(v))}`).join("\n");
}

/** 86400000 → "1d", 5400000 → "1h30m", 90000 → "1m30s": the largest units, zeros left out. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const parts: string[] = [];
  let rest = Math.floor(ms / 1000);
  for (const [unit, secs] of [["d", 86_400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    const n = Math.floor(rest / secs);
    rest -= n * secs;
    if (n > 0) parts.push(`${n}${unit}`);
  }
  return parts.join("");
}
