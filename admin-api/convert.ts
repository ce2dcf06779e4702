import type { ConversationSummary as CoreSummary, GroupInfo, HistoryPage as CoreHistoryPage, HistoryRecord as CoreRecord, Member as CoreMember, MembershipChangeResult, SendResult } from "../core/index.js";
import { opName } from "../core/index.js";
import type { HistoryRecord, Member } from "./gen/qim/admin/v1/common.js";
import type { Group, MembershipChange } from "./gen/qim/admin/v1/groups.js";
import type { ConversationSummary, HistoryPage, SendMessageResponse } from "./gen/qim/admin/v1/messages.js";

/** Core results → admin API messages. Sequence numbers and versions are u64 on the wire. */

const u64 = (n: number) => BigInt(n);

export function groupOut(g: GroupInfo): Group {
  return {
    tenant: g.tenant,
    group: g.group,
    owner: g.owner,
    version: u64(g.version),
    memberCount: g.memberCount,
    createdAtMs: u64(g.createdAt),
    conversationSeq: u64(g.conversationSeq),
  };
}

export function membershipOut(r: MembershipChangeResult): MembershipChange {
  return {
    op: r.op,
    outcome: r.outcome,
    changed: r.changed,
    ...(r.eventConversationSeq !== null ? { eventConversationSeq: u64(r.eventConversationSeq) } : {}),
    messageId: r.messageId ?? "",
    version: u64(r.version),
    memberCount: r.memberCount,
    idempotencyId: r.idempotencyId,
    audienceSize: r.audienceSize,
    attempts: r.attempts,
  };
}

export function memberOut(m: CoreMember): Member {
  return { userId: m.userId, joinedAt: u64(m.joinedAt), ...(m.leftAt !== null ? { leftAt: u64(m.leftAt) } : {}), state: m.state };
}

export function recordOut(r: CoreRecord): HistoryRecord {
  return {
    conversationSeq: u64(r.conversationSeq),
    messageId: r.messageId,
    senderId: r.senderId,
    kind: r.kind,
    countsUnread: r.countsUnread,
    createdAtMs: u64(r.createdAt),
    contentType: r.contentType,
    payload: Buffer.from(r.payload),
    text: r.contentType === "text/plain" ? Buffer.from(r.payload).toString("utf8") : "",
    ...(r.membership ? { membership: { op: opName(r.membership.op), actor: r.membership.actor, users: r.membership.users } } : {}),
  };
}

export function historyOut(p: CoreHistoryPage): HistoryPage {
  return {
    joinedAt: u64(p.joinedAt),
    ...(p.leftAt !== null ? { leftAt: u64(p.leftAt) } : {}),
    state: p.state,
    earliestAvailableConversationSeq: u64(p.earliestAvailableConversationSeq),
    records: p.records.map(recordOut),
  };
}

export function summaryOut(s: CoreSummary): ConversationSummary {
  return {
    group: s.group,
    joinedAt: u64(s.joinedAt),
    ...(s.leftAt !== null ? { leftAt: u64(s.leftAt) } : {}),
    state: s.state,
    readConversationSeq: u64(s.readConversationSeq),
    ...(s.head ? { head: recordOut(s.head) } : {}),
    unread: s.unread,
    unreadExact: s.unreadExact,
  };
}

export function sendOut(r: SendResult): SendMessageResponse {
  return { conversationSeq: u64(r.conversationSeq), messageId: r.messageId ?? "", version: u64(r.version ?? 0), duplicate: r.duplicate, attempts: r.attempts };
}

/** A one-line account of what a mutation did, for the audit log. */
export function describeChange(r: MembershipChangeResult): string {
  if (r.outcome === "noop") return `nothing to change; version ${r.version}, ${r.memberCount} members`;
  if (r.outcome === "planned") return `dry run: would ${r.op} ${r.changed.length} user(s) at version ${r.version}; idempotency ${r.idempotencyId}`;
  return `${r.outcome} ${r.op} of ${r.changed.length} user(s) as seq ${r.eventConversationSeq}; version ${r.version}, ${r.memberCount} members`;
}
