/** The JSON results of the `membership` commands (docs/operator-guide.md); cli/result.ts says how they are declared. */
import type { ListMembersResponse, Member, MembershipChange } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

/** What `membership add` and `membership remove` print: the change, or with --dry-run its plan. */
export const membershipChangeResult = resultFrom<MembershipChange & { group: string }>()({
  group: "wire",
  /** "join" or "remove". */
  op: "wire",
  /** "committed", "duplicate", "noop" or "planned" (dry run). */
  outcome: "wire",
  /** Users whose membership this change alters (for a plan: the targets after filtering). */
  changed: "wire",
  eventConversationSeq: "u64 or null",
  messageId: "text or null",
  version: "u64",
  memberCount: "wire",
  idempotencyId: "text or null",
  audienceSize: "wire",
  attempts: "wire",
});
export type MembershipChangeResult = ReturnType<typeof membershipChangeResult>;

export const memberResult = resultFrom<Member>()({
  userId: "wire",
  joinedAt: "u64",
  leftAt: "u64 or null",
  /** "ACTIVE", "LEFT" or "REMOVED". */
  state: "wire",
});
export type MemberResult = ReturnType<typeof memberResult>;

/**
 * The JSON result of `membership list`: one page (by user id), or with --all every page, printed
 * as the pages arrive (members across pages in no particular order; one may show twice if Redis
 * rehashed the table meanwhile). version and memberCount: when the (last) page was read.
 */
export const memberListResult = resultFrom<ListMembersResponse & { group: string }>()({
  group: "wire",
  members: (r) => r.members.map(memberResult),
  version: "u64",
  /** Current (ACTIVE) members. */
  memberCount: "wire",
  /** The --cursor of the next page; null after the last page (always null with --all). */
  nextCursor: "text or null",
});
export type MemberListResult = ReturnType<typeof memberListResult>;

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
