/**
 * A membership change over more users than one call takes (`membership add|remove --from-file`,
 * issue 14; the demo's bulk-add step): the distinct users, sorted, cut into batches of the
 * engine's per-call limit (MAX_USERS_PER_MEMBERSHIP_CALL in core/base), sent one after the other,
 * each its own membership event (one CONTROL message).
 *
 * Resuming is re-running: the same input makes the same batches (sorted, a fixed size), and a
 * batch that an earlier run applied comes back `duplicate` (the engine finds it by the
 * idempotency id it derives from the plan, core/conversation/membership-event.ts) or `noop` (its
 * users are all in the requested state), so only what is missing is applied. Each call is applied
 * whole or not at all on the server (one script), so a run stopped between batches, or one whose
 * last call failed, never leaves a batch half-applied.
 */
import type { ChangeMembersRequest, MembershipChange } from "../../admin-api/client.js";
import { LIMITS } from "../validate.js";
import { membershipChangeResult, type MembershipBulkLine } from "./results.js";

export type MembershipOp = "join" | "remove";

/** Sorted distinct users cut into batches of `size` (the last one shorter). */
export function batchesOf(users: readonly string[], size: number = LIMITS.usersPerChange): string[][] {
  if (!Number.isInteger(size) || size < 1 || size > LIMITS.usersPerChange) throw new RangeError(`a batch holds 1 to ${LIMITS.usersPerChange} users, not ${size}`);
  const sorted = [...new Set(users)].sort();
  const out: string[][] = [];
  for (let i = 0; i < sorted.length; i += size) out.push(sorted.slice(i, i + size));
  return out;
}

export interface BulkRun {
  tenant: string;
  group: string;
  op: MembershipOp;
  batches: readonly string[][];
  /** Input lines folded as duplicates, for the summary. */
  duplicates: number;
  /** Plan every batch (the server's dry run: reads only). */
  dryRun: boolean;
  /**
   * Pins batch 1 to this member version and each next batch to the version the previous one
   * answered: a confirmed plan is committed as it was shown, or refused (exit 4) when someone else
   * changed the group meanwhile.
   */
  expectVersion?: bigint;
  /** The command that resumes this run (printed when it stops early). */
  resume: string;
  /** AddMembers or RemoveMembers. */
  rpc(req: ChangeMembersRequest): Promise<MembershipChange>;
  /** Asked before each batch: true stops the run there (Ctrl+C). Never asked during a call. */
  stopRequested?(): boolean;
  /** Batch `batch` is about to be sent. */
  onSend?(batch: number): void;
  /** A batch was answered. */
  onBatch?(line: MembershipBulkLine): void;
}

export interface BulkOutcome {
  lines: MembershipBulkLine[];
  summary: MembershipBulkLine;
  /** What the failed batch's call threw (summary.failedBatch); undefined otherwise. */
  error: unknown;
}

const SUMMARY_ONLY = { events: null, duplicates: null, failedBatch: null, resume: null } as const;

export async function runBulk(r: BulkRun): Promise<BulkOutcome> {
  const sign = r.op === "join" ? 1 : -1;
  const of = r.batches.length;
  const lines: MembershipBulkLine[] = [];
  let expectVersion = r.expectVersion;
  // a dry run plans each batch against the group as it is now: the version and member count each
  // would see are those of the group after the batches before it
  let planned: { version: number; memberCount: number } | undefined;
  let error: unknown;
  let failedBatch: number | null = null;
  let stopped = false;

  for (const [i, users] of r.batches.entries()) {
    if (r.stopRequested?.()) {
      stopped = true;
      break;
    }
    const batch = i + 1;
    r.onSend?.(batch);
    let answer: MembershipChange;
    try {
      answer = await r.rpc({ tenant: r.tenant, group: r.group, users, dryRun: r.dryRun, ...(expectVersion !== undefined ? { expectVersion } : {}) });
    } catch (err) {
      error = err;
      failedBatch = batch;
      break;
    }
    const c = membershipChangeResult({ ...answer, group: r.group });
    if (expectVersion !== undefined) expectVersion = BigInt(c.version);
    const changes = c.outcome === "committed" || c.outcome === "planned" ? c.changed.length : 0;
    let { version, memberCount } = c;
    if (r.dryRun) {
      planned ??= { version: c.version, memberCount: c.outcome === "planned" ? c.memberCount - sign * changes : c.memberCount };
      version = planned.version;
      planned.memberCount += sign * changes;
      memberCount = planned.memberCount;
      if (changes > 0) planned.version++;
    }
    const line: MembershipBulkLine = {
      type: "batch", group: r.group, op: r.op, batch, of, outcome: c.outcome,
      users: users.length, changed: changes, unchanged: users.length - changes,
      eventConversationSeq: c.eventConversationSeq, version, memberCount, ...SUMMARY_ONLY,
    };
    lines.push(line);
    r.onBatch?.(line);
  }

  const last = lines.at(-1);
  const summary: MembershipBulkLine = {
    type: "summary", group: r.group, op: r.op, batch: null, of,
    outcome: failedBatch !== null ? "failed" : stopped ? "interrupted" : r.dryRun ? "planned" : "completed",
    users: r.batches.reduce((n, b) => n + b.length, 0),
    changed: lines.reduce((n, l) => n + l.changed, 0),
    unchanged: lines.reduce((n, l) => n + l.unchanged, 0),
    eventConversationSeq: null,
    version: planned?.version ?? last?.version ?? null,
    memberCount: last?.memberCount ?? null,
    events: lines.flatMap((l) => (l.eventConversationSeq === null ? [] : [{ batch: l.batch!, eventConversationSeq: l.eventConversationSeq, outcome: l.outcome }])),
    duplicates: r.duplicates,
    failedBatch,
    resume: failedBatch !== null || stopped ? r.resume : null,
  };
  return { lines, summary, error };
}
