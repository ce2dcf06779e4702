/**
 * The server process's log lines (qim-admin-server, `qimctl server start`): each written to stderr
 * as `<ISO-8601 UTC time with milliseconds> <line>`, e.g.
 * `2026-12-02T08:41:07.352Z qim admin server listening on 127.0.0.1:7443 (…)` (issue 24: an
 * operator reading a log, or a collector without its own clock, must know when a line was
 * written). One stamp per record: the continuation lines of a multi-line record (a stack trace)
 * follow it unstamped, so that a record stays one block.
 */

/** A record as the log writes it (without the newline). */
export function stampedLine(line: string, now: Date = new Date()): string {
  return `${now.toISOString()} ${line}`;
}

/** Writes one record to stderr; the default `log` of the admin server and of its daemon. */
export function serverLog(line: string): void {
  process.stderr.write(`${stampedLine(line)}\n`);
}
