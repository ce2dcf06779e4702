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

export interface MemberListResult {
  group: string;
  version: number;
  members: MemberResult[];
}

export function memberListResult(group: string, r: ListMembersResponse): MemberListResult {
  return { group, version: u64(r.version), members: r.members.map(memberResult) };
}
