/** The JSON results of the `membership` commands (docs/operator-guide.md). */
import type { ListMembersResponse, Member, MembershipChange } from "../../admin-api/client.js";
import { nonEmpty, optionalU64, u64 } from "../format.js";

/** What `membership add` and `membership remove` print: the change, or with --dry-run its plan. */
export interface MembershipChangeResult {
  group: string;
  /** "join" or "remove". */
  op: string;
  /** "committed", "duplicate", "noop" or "planned" (dry run). */
  outcome: string;
  /** Users whose membership this change alters (for a plan: the targets after filtering). */
  changed: string[];
  eventConversationSeq: number | null;
  messageId: string | null;
  version: number;
  memberCount: number;
  idempotencyId: string | null;
  audienceSize: number;
  attempts: number;
}

export function membershipChangeResult(group: string, c: MembershipChange): MembershipChangeResult {
  return {
    group,
    op: c.op,
    outcome: c.outcome,
    changed: [...c.changed],
    eventConversationSeq: optionalU64(c.eventConversationSeq),
    messageId: nonEmpty(c.messageId),
    version: u64(c.version),
    memberCount: c.memberCount,
    idempotencyId: nonEmpty(c.idempotencyId),
    audienceSize: c.audienceSize,
    attempts: c.attempts,
  };
}

export interface MemberResult {
  userId: string;
  joinedAt: number;
  leftAt: number | null;
  /** "ACTIVE", "LEFT" or "REMOVED". */
  state: string;
}

export function memberResult(m: Member): MemberResult {
  return { userId: m.userId, joinedAt: u64(m.joinedAt), leftAt: optionalU64(m.leftAt), state: m.state };
}

/**
 * The JSON result of `membership list`: one page (by user id), or with --all every page, printed
 * as the pages arrive (members across pages in no particular order; one may show twice if Redis
 * rehashed the table meanwhile). version and memberCount: when the (last) page was read.
 */
export interface MemberListResult {
  group: string;
  members: MemberResult[];
  version: number;
  /** Current (ACTIVE) members. */
  memberCount: number;
  /** The --cursor of the next page; null after the last page (always null with --all). */
  nextCursor: string | null;
}

export function memberListResult(group: string, r: ListMembersResponse): MemberListResult {
  return { group, members: r.members.map(memberResult), version: u64(r.version), memberCount: r.memberCount, nextCursor: r.nextCursor === "" ? null : r.nextCursor };
}

/** A batch's event in the summary of `membership add|remove --from-file`. */
export interface BulkEvent {
  batch: number;
  eventConversationSeq: number;
  /** "committed" (by this run) or "duplicate" (by an earlier run that this one resumes). */
  outcome: string;
}

/**
 * One line of `membership add|remove --from-file --output json` (JSON lines): a `batch` line per
 * call as it is answered, then one `summary` line. One shape for both (every key always present):
 * the fields of the other kind are null.
 */
export interface MembershipBulkLine {
  /** "batch" or "summary". */
  type: string;
  group: string;
  /** "join" or "remove". */
  op: string;
  /** The batch's number, from 1; null on the summary. */
  batch: number | null;
  /** How many batches the input makes. */
  of: number;
  /**
   * batch: "committed", "duplicate" (applied by an earlier run), "noop" or "planned" (dry run);
   * summary: "completed", "planned", "interrupted" or "failed".
   */
  outcome: string;
  /** Distinct users in this batch; on the summary, in the whole input. */
  users: number;
  /** Users whose membership this run changed (planned: would change); duplicate: 0. */
  changed: number;
  /** Users already in the requested state (a duplicate batch's: all of them). */
  unchanged: number;
  /** The batch's event (committed or duplicate); null for noop, planned and on the summary. */
  eventConversationSeq: number | null;
  /**
   * The member version after the batch (planned: the one it would apply at) and the member count
   * after it; on the summary those after the last batch answered (planned: after the whole run;
   * null when no batch was answered).
   */
  version: number | null;
  memberCount: number | null;
  /** summary: the events of the batches answered, in batch order; null on a batch line. */
  events: BulkEvent[] | null;
  /** summary: input lines that named a user already named (folded); null on a batch line. */
  duplicates: number | null;
  /** summary: the batch whose call failed (the run stopped there); null otherwise. */
  failedBatch: number | null;
  /** summary: the command that resumes an interrupted or failed run; null otherwise. */
  resume: string | null;
}
