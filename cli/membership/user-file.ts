/**
 * The user list of `membership add|remove --from-file` (issue 14): one UUID per line, or CSV with
 * a header that has one `user` column (two are refused; the other columns are ignored; RFC 4180 quoting, so a quoted
 * field may hold commas and line breaks). Blank lines and lines starting with `#` are skipped in
 * both. The whole input is checked before anything is sent: every line that names no valid user
 * is collected with its line number, and users named more than once are folded into one.
 *
 * Pure: the command reads the file (or stdin) and turns the bad lines into a usage error.
 */
import { DEFAULT_MAX_GROUP_MEMBERS } from "../../core/base/index.js";
import { readInput } from "../bounded-input.js";
import { canonicalUuid } from "../validate.js";

/**
 * The most users a --from-file input is meant to hold: the default group size limit
 * (groups.max_members, DEFAULT_MAX_GROUP_MEMBERS) — a thousand batches of
 * MAX_USERS_PER_MEMBERSHIP_CALL (a run of about an hour at the server's pace). The server's own
 * limit, when lower, is checked against the input's users before the first batch.
 */
export const FROM_FILE_MAX_USERS = DEFAULT_MAX_GROUP_MEMBERS;

/**
 * The most bytes a --from-file line may average: a UUID (36) and CRLF, or a spreadsheet export
 * row with the user column and a few short ones (a name, an e-mail). Wider exports are cut to the
 * user column first (`cut -d, -f…`).
 */
export const FROM_FILE_BYTES_PER_USER = 64;

/**
 * The largest --from-file input read (64 MB): FROM_FILE_MAX_USERS lines of
 * FROM_FILE_BYTES_PER_USER. Past it the read stops at once, before the rest is read (`/dev/zero`
 * or a runaway export never fills memory), and nothing is sent.
 */
export const FROM_FILE_MAX_BYTES = FROM_FILE_MAX_USERS * FROM_FILE_BYTES_PER_USER;

/**
 * The longest line (bytes between two line breaks) of a --from-file input: a generous spreadsheet
 * row. A longer one is no list of users (NUL-only `/dev/zero` has no line break at all) and stops
 * the read as soon as it is seen.
 */
export const FROM_FILE_MAX_LINE_BYTES = 64 * 1024;

export { InputTooLargeError } from "../bounded-input.js";

/**
 * Reads a --from-file input as it streams, refusing it as soon as it passes FROM_FILE_MAX_BYTES
 * in all or FROM_FILE_MAX_LINE_BYTES in one line (cli/bounded-input.ts, with what a user list's
 * refusal says).
 */
export function readBounded(source: AsyncIterable<Buffer | string>, limits: { maxBytes: number; maxLineBytes: number } = { maxBytes: FROM_FILE_MAX_BYTES, maxLineBytes: FROM_FILE_MAX_LINE_BYTES }): Promise<string> {
  return readInput(source, {
    ...limits,
    tooLarge: (max) => `larger than ${max} bytes (FROM_FILE_MAX_BYTES: ${FROM_FILE_MAX_USERS} users of ${FROM_FILE_BYTES_PER_USER} bytes); split it, or cut it to the user column`,
    lineTooLong: (max) => `a line is longer than ${max} bytes (FROM_FILE_MAX_LINE_BYTES): not a list of users`,
  });
}

/** The bad lines a report names one by one; the rest are counted. */
export const BAD_LINES_SHOWN = 20;

export interface BadLine {
  /** 1-based, of the input (a CSV record: the line it starts on). */
  line: number;
  /** What was there (at most 64 characters). */
  text: string;
  why: string;
}

export interface UserList {
  format: "list" | "csv";
  /** The distinct users in canonical text, sorted ascending: the order batches are cut in. */
  users: string[];
  /** Lines (records) that named a user, valid or not. */
  entries: number;
  /** Valid entries that named a user already named above (folded into one). */
  duplicates: number;
  /** The first BAD_LINES_SHOWN bad lines. */
  bad: BadLine[];
  /** How many lines were bad in all. */
  badCount: number;
}

const shown = (s: string) => (s.length > 64 ? `${s.slice(0, 61)}...` : s);
const skipped = (s: string) => s.trim() === "" || s.trimStart().startsWith("#");

/** A CSV record's fields (RFC 4180); undefined when a quoted field is not closed. */
export function csvFields(record: string): string[] | undefined {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < record.length; i++) {
    const c = record[i]!;
    if (quoted) {
      if (c !== '"') cur += c;
      else if (record[i + 1] === '"') {
        cur += '"';
        i++;
      } else quoted = false;
    } else if (c === '"' && cur.trim() === "") {
      quoted = true;
      cur = "";
    } else if (c === ",") {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  if (quoted) return undefined;
  out.push(cur);
  return out;
}

/** Lines joined into CSV records: a record goes on while a quoted field is open (an odd count of `"`); a blank or comment line stands alone. */
function csvRecords(lines: readonly string[], from: number): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  for (let i = from; i < lines.length; i++) {
    const line = i + 1;
    let text = lines[i]!;
    if (skipped(text)) {
      out.push({ line, text });
      continue;
    }
    let quotes = (text.match(/"/g) ?? []).length;
    while (quotes % 2 === 1 && i + 1 < lines.length) {
      i++;
      text += `\n${lines[i]}`;
      quotes += (lines[i]!.match(/"/g) ?? []).length;
    }
    out.push({ line, text });
  }
  return out;
}

/**
 * The users an input names. The format is told by its first line that is not blank or a comment:
 * a UUID starts a list; a line with a `user` column (case and spaces aside) is a CSV header; a
 * line with commas and no such column is refused as a header; anything else is a list whose
 * first line is bad.
 */
export function parseUserList(input: string): UserList {
  const lines = input.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const bad: BadLine[] = [];
  let badCount = 0;
  const refuse = (line: number, text: string, why: string) => {
    badCount++;
    if (bad.length < BAD_LINES_SHOWN) bad.push({ line, text: shown(text), why });
  };
  const seen = new Set<string>();
  let entries = 0;
  let duplicates = 0;
  /** An entry naming `value`; a bad one is shown as `text` (the line, or the CSV record). */
  const take = (line: number, value: string, text: string, why: string) => {
    entries++;
    const id = canonicalUuid(value);
    if (id === undefined) refuse(line, text, why);
    else if (seen.has(id)) duplicates++;
    else seen.add(id);
  };

  const first = lines.findIndex((l) => !skipped(l));
  const rawHeader = first < 0 ? undefined : csvFields(lines[first]!);
  const header = rawHeader?.map((f) => f.trim().toLowerCase());
  const userColumn = header?.indexOf("user") ?? -1;
  // two columns that both read as "user" (case and spaces aside): which one holds the users is a
  // guess, and taking either silently drops the other's
  const userColumns = header?.flatMap((h, i) => (h === "user" ? [i] : [])) ?? [];
  const format: UserList["format"] = first >= 0 && canonicalUuid(lines[first]!) === undefined && (userColumn >= 0 || lines[first]!.includes(",")) ? "csv" : "list";

  if (format === "list") {
    lines.forEach((l, i) => {
      if (!skipped(l)) take(i + 1, l, l, "not a UUID (expected 8-4-4-4-12 hex digits)");
    });
  } else if (userColumn < 0) {
    refuse(first + 1, lines[first]!, `a CSV header needs a "user" column (columns: ${header!.join(", ")})`);
  } else if (userColumns.length > 1) {
    const named = userColumns.map((i) => `${i + 1} (${JSON.stringify(rawHeader![i])})`).join(" and ");
    refuse(first + 1, lines[first]!, `the CSV header is ambiguous: columns ${named} both name the "user" column (case and spaces aside); keep one`);
  } else {
    for (const r of csvRecords(lines, first + 1)) {
      if (skipped(r.text)) continue;
      const fields = csvFields(r.text);
      if (fields === undefined) {
        entries++;
        refuse(r.line, r.text, "a quoted field is not closed");
      } else if (fields.length <= userColumn) {
        entries++;
        refuse(r.line, r.text, `no "user" column: ${fields.length} field(s), "user" is column ${userColumn + 1}`);
      } else {
        take(r.line, fields[userColumn]!, r.text, fields[userColumn]!.trim() === "" ? 'the "user" column is empty' : 'the "user" column is not a UUID');
      }
    }
  }
  return { format, users: [...seen].sort(), entries, duplicates, bad, badCount };
}

/** The bad lines as one sentence: each shown line with its number, then how many more. */
export function badLinesText(list: Pick<UserList, "bad" | "badCount">): string {
  const each = list.bad.map((b) => `line ${b.line}: ${JSON.stringify(b.text)} ${b.why}`).join("; ");
  const more = list.badCount > list.bad.length ? `; and ${list.badCount - list.bad.length} more` : "";
  return `${list.badCount} bad line(s), nothing was sent: ${each}${more}`;
}
