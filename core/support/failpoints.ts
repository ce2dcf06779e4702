/**
 * Fail points, for fault-injection tests ONLY (test/reliability/): a named place in the code where
 * a test can make the process die at the worst moment, e.g. after a commit and before its answer.
 *
 * `failpoint(name)` (and `failpointStop(name)`, which pauses the process instead) does nothing unless the environment variable QIM_FAILPOINTS (a comma list of
 * names) names it, in which case the process kills itself with SIGKILL on the spot: no handler,
 * no flush, no answer — the same as the OOM killer or a power cut as far as the process's peers
 * can tell. The variable is read once, when this module loads; when it is unset or empty a call
 * costs one size check of an empty set. Never set QIM_FAILPOINTS on a production server.
 *
 * The names in use are listed in FAILPOINTS so that a typo in a test is an error, not a silent
 * no-op.
 */

export const FAILPOINTS = {
  /** The admin server: a membership change (add or remove) committed in Redis, neither audited nor answered yet. */
  membershipAfterCommit: "admin.membership.after-commit",
  /**
   * The outbox relay: a batch appended to the dispatch log, not yet marked COMMITTED. The process
   * stops itself there (SIGSTOP, once): a node paused in the middle of its work (issue 11's
   * SIGSTOP test SIGCONTs it after its lease moved, and its mark must be refused).
   */
  relayBeforeMark: "relay.before-mark",
  /** The outbox relay: a fanout job's chunk appended to the dispatch log, its progress not saved yet (issue 22). */
  relayFanoutBeforeProgress: "relay.fanout-before-progress",
  /** A recall or an edit: its event is in the log, the target's state not changed yet (spec 003 C-5). */
  anchorAfterEvent: "conversation.anchor.after-event",
} as const;

export type FailpointName = (typeof FAILPOINTS)[keyof typeof FAILPOINTS];

const KNOWN: ReadonlySet<string> = new Set(Object.values(FAILPOINTS));

/** The fail points this process was started with (parsed once). Unknown names are refused. */
export function parseFailpoints(raw: string | undefined): ReadonlySet<FailpointName> {
  const names = (raw ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const n of names) {
    if (!KNOWN.has(n)) throw new Error(`QIM_FAILPOINTS: unknown fail point "${n}" (known: ${[...KNOWN].join(", ")})`);
  }
  return new Set(names as FailpointName[]);
}

const ACTIVE = parseFailpoints(process.env.QIM_FAILPOINTS);

/** Whether any fail point is armed in this process (the server logs a warning at start-up). */
export function failpointsArmed(): readonly FailpointName[] {
  return [...ACTIVE];
}

const stoppedAt = new Set<FailpointName>();

/** Stops this process by SIGSTOP here, the first time only, when QIM_FAILPOINTS names `name`; otherwise nothing. */
export function failpointStop(name: FailpointName): void {
  if (ACTIVE.size === 0 || !ACTIVE.has(name) || stoppedAt.has(name)) return;
  stoppedAt.add(name);
  process.stderr.write(`fail point ${name}: SIGSTOP (QIM_FAILPOINTS)\n`);
  process.kill(process.pid, "SIGSTOP");
}

/** Dies by SIGKILL here when QIM_FAILPOINTS names `name`; otherwise nothing. */
export function failpoint(name: FailpointName): void {
  if (ACTIVE.size === 0 || !ACTIVE.has(name)) return;
  process.stderr.write(`fail point ${name}: SIGKILL (QIM_FAILPOINTS)\n`);
  process.kill(process.pid, "SIGKILL");
}
