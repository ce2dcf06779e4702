/**
 * Operator-supplied text that ends up in logs and the audit log: what one line may contain.
 */

/**
 * Characters a one-line text (an epoch bump's or a drill's reason) must not carry: C0 and C1
 * controls and DEL, the line and paragraph separators, and the bidirectional formatting characters
 * that make a log line display differently from what it contains ("Trojan Source",
 * CVE-2021-42574).
 */
// eslint-disable-next-line no-control-regex
export const NOT_ONE_LINE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Trims ASCII spaces and tabs only: a BOM or a no-break space is content, refused where it does not belong. */
export function trimAscii(s: string): string {
  return s.replace(/^[ \t]+|[ \t]+$/g, "");
}
