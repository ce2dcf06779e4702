/**
 * Operator-supplied text that ends up in logs and the audit log: what one line may contain.
 */
import { InvalidArgumentError } from "../errors/index.js";

/**
 * Characters a one-line text (an epoch bump's or a drill's reason) must not carry: C0 and C1
 * controls and DEL, the line and paragraph separators, and the bidirectional formatting characters
 * (the Arabic letter mark, LRM/RLM, the embeddings and overrides U+202A–U+202E, the isolates
 * U+2066–U+2069) that make a log line display differently from what it contains ("Trojan Source",
 * CVE-2021-42574). The CLI escapes the same set in every table it prints (cli/format.ts visible).
 */
// eslint-disable-next-line no-control-regex
export const NOT_ONE_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Trims ASCII spaces and tabs only: a BOM or a no-break space is content, refused where it does not belong. */
export function trimAscii(s: string): string {
  return s.replace(/^[ \t]+|[ \t]+$/g, "");
}

/** BumpEpochRequest.reason, RunRebuildDrillRequest.reason: at most this many characters (code points). */
export const REASON_MAX_CHARS = 500;

/**
 * A reason (an epoch bump's, a drill's): one line of text of at most `maxChars` characters, ASCII
 * spaces and tabs trimmed; "" when absent and not required. The admin server and the CLI (before
 * it connects) both check with this; throws InvalidArgumentError naming `field`.
 */
export function parseReason(text: string | undefined, field: string, opts: { required: boolean; maxChars?: number }): string {
  const max = opts.maxChars ?? REASON_MAX_CHARS;
  const reason = trimAscii(text ?? "");
  if (reason === "") {
    if (opts.required) throw new InvalidArgumentError(field, `${field} is required (1 to ${max} characters): say why`);
    return "";
  }
  const chars = [...reason].length;
  if (chars > max) throw new InvalidArgumentError(field, `${field} is at most ${max} characters, got ${chars}`);
  if (NOT_ONE_LINE.test(reason)) throw new InvalidArgumentError(field, `${field} must be one line of text without control or bidirectional formatting characters`);
  return reason;
}

/**
 * The first `max` UTF-16 units of `s`, never ending on half a surrogate pair (a lone surrogate
 * breaks encodeURI and every encoder downstream: the audit log refused such a cut message), with
 * "… (N characters)" when something was cut.
 */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max;
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${s.slice(0, end)}… (${s.length} characters)`;
}

/** The longest a retention class name may be (it is a hash field and a CLI argument). */
export const RETENTION_CLASS_NAME_MAX = 64;
const RETENTION_CLASS_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/**
 * A retention class name (spec 000's retention_class, issue 26): 1–RETENTION_CLASS_NAME_MAX of
 * a-z, 0-9, '-' and '_', starting with a letter or digit. The one check the server and the CLI make.
 */
export function checkClassName(field: string, name: string): string {
  if (name.length === 0 || name.length > RETENTION_CLASS_NAME_MAX || !RETENTION_CLASS_NAME.test(name)) {
    throw new InvalidArgumentError(field, `${field} must be 1–${RETENTION_CLASS_NAME_MAX} characters of a-z, 0-9, '-' and '_', starting with a letter or digit (got ${JSON.stringify(cutText(name, 70))})`);
  }
  return name;
}

const DURATION_UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export const DAY_MS = DURATION_UNIT_MS.d;

/**
 * A duration an operator writes — a number (decimals allowed) with an optional unit ms, s, m, h or
 * d (none: seconds), any case, e.g. 90s, 30m, 1.5h, 30d; "off" or "0" is 0 — in whole
 * milliseconds; null when it is not one or lies outside [minMs, maxMs] (0 always passes). The one
 * parser of the server's settings and the CLI's flags; each says its own range in its message.
 */
export function parseDurationMs(text: string, minMs: number, maxMs: number): number | null {
  const t = text.trim().toLowerCase();
  if (t === "off" || t === "0") return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(t);
  const ms = m ? Math.round(Number(m[1]) * DURATION_UNIT_MS[(m[2] ?? "s") as keyof typeof DURATION_UNIT_MS]) : NaN;
  return Number.isSafeInteger(ms) && ms >= minMs && ms <= maxMs ? ms : null;
}
