/**
 * The JSON shapes of qimctl's results: what `--output json` prints, verbatim and stable
 * (documented in docs/operator-guide.md). Fields are camelCase and named after the spec
 * (eventConversationSeq, joinedAt, leftAt, earliestAvailableConversationSeq, …); u64 values are
 * JSON numbers (sequences and versions stay far below 2^53); an absent optional value is null, so
 * every key is always present.
 */
import type { AuditRecord } from "../admin-api/audit.js";
import type {
  AuditEntry,
  ConversationSummary,
  Group,
  HistoryPage,
  HistoryRecord,
  ListMembersResponse,
  Member,
  MembershipChange,
  SendMessageResponse,
} from "../admin-api/client.js";

function u64(v: bigint | number): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`a u64 value ${String(v)} does not fit a JSON number exactly`);
  return n;
}

const nonEmpty = (s: string): string | null => (s === "" ? null : s);

export interface GroupResult {
  tenant: string;
  group: string;
  owner: string;
  version: number;
  memberCount: number;
  createdAtMs: number;
  conversationSeq: number;
}

export function groupResult(g: Group): GroupResult {
  return {
    tenant: g.tenant,
    group: g.group,
    owner: g.owner,
    version: u64(g.version),
    memberCount: g.memberCount,
    createdAtMs: u64(g.createdAtMs),
    conversationSeq: u64(g.conversationSeq),
  };
}

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
    eventConversationSeq: c.eventConversationSeq === undefined ? null : u64(c.eventConversationSeq),
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
  return { userId: m.userId, joinedAt: u64(m.joinedAt), leftAt: m.leftAt === undefined ? null : u64(m.leftAt), state: m.state };
}

export interface MemberListResult {
  group: string;
  version: number;
  members: MemberResult[];
}

export function memberListResult(group: string, r: ListMembersResponse): MemberListResult {
  return { group, version: u64(r.version), members: r.members.map(memberResult) };
}

export interface SendResult {
  group: string;
  sender: string;
  conversationSeq: number;
  messageId: string | null;
  /** The member version the audience was frozen at (0 for a duplicate). */
  version: number;
  duplicate: boolean;
  attempts: number;
}

export function sendResult(group: string, sender: string, r: SendMessageResponse): SendResult {
  return { group, sender, conversationSeq: u64(r.conversationSeq), messageId: nonEmpty(r.messageId), version: u64(r.version), duplicate: r.duplicate, attempts: r.attempts };
}

export interface RecordResult {
  conversationSeq: number;
  messageId: string;
  senderId: string;
  /** "normal" or "control". */
  kind: string;
  countsUnread: boolean;
  createdAtMs: number;
  contentType: string;
  /** The payload as text for text/plain, else null. */
  text: string | null;
  payloadBase64: string;
  /** The decoded qim.membership.v1 body of a control message, else null. */
  membership: { op: string; actor: string; users: string[] } | null;
}

export function recordResult(r: HistoryRecord): RecordResult {
  return {
    conversationSeq: u64(r.conversationSeq),
    messageId: r.messageId,
    senderId: r.senderId,
    kind: r.kind,
    countsUnread: r.countsUnread,
    createdAtMs: u64(r.createdAtMs),
    contentType: r.contentType,
    text: r.contentType === "text/plain" ? r.text : null,
    payloadBase64: Buffer.from(r.payload).toString("base64"),
    membership: r.membership ? { op: r.membership.op, actor: r.membership.actor, users: [...r.membership.users] } : null,
  };
}

export interface HistoryResult {
  group: string;
  user: string;
  joinedAt: number;
  leftAt: number | null;
  state: string;
  earliestAvailableConversationSeq: number;
  records: RecordResult[];
}

export function historyResult(group: string, user: string, p: HistoryPage): HistoryResult {
  return {
    group,
    user,
    joinedAt: u64(p.joinedAt),
    leftAt: p.leftAt === undefined ? null : u64(p.leftAt),
    state: p.state,
    earliestAvailableConversationSeq: u64(p.earliestAvailableConversationSeq),
    records: p.records.map(recordResult),
  };
}

export interface SummaryResult {
  group: string;
  joinedAt: number;
  leftAt: number | null;
  state: string;
  readConversationSeq: number;
  head: RecordResult | null;
  unread: number;
  unreadExact: boolean;
}

export function summaryResult(s: ConversationSummary): SummaryResult {
  return {
    group: s.group,
    joinedAt: u64(s.joinedAt),
    leftAt: s.leftAt === undefined ? null : u64(s.leftAt),
    state: s.state,
    readConversationSeq: u64(s.readConversationSeq),
    head: s.head ? recordResult(s.head) : null,
    unread: s.unread,
    unreadExact: s.unreadExact,
  };
}

export interface SessionsResult {
  user: string;
  summaries: SummaryResult[];
}

/** An audit entry exactly as the server recorded it (admin-api/audit.ts). */
export type AuditEntryResult = AuditRecord;

export function auditEntryResult(e: AuditEntry): AuditEntryResult {
  let args: unknown = e.argumentsJson;
  try {
    args = JSON.parse(e.argumentsJson);
  } catch {
    // kept as the text the server sent
  }
  return {
    time: e.time,
    principal: e.principal,
    role: e.role,
    rpc: e.rpc,
    arguments: args,
    result: e.result,
    detail: e.detail,
    durationMs: e.durationMs,
    requestId: e.requestId,
    fingerprint: e.fingerprint,
  };
}

export interface AuditTailResult {
  entries: AuditEntryResult[];
}
