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
  DispatchAuditResponse,
  DrillReport,
  EpochBump,
  EpochInfo,
  Group,
  HistoryPage,
  HistoryRecord,
  ListConversationSummariesResponse,
  ListMembersResponse,
  Member,
  MembershipChange,
  PartitionState,
  ProjectionStatus,
  RebuildUserResponse,
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
  /** Listed from the projection (no --group): the epoch it was served at; null with --group. */
  epoch: number | null;
  /** Whether this pull merged the user's set back from the authority first; null with --group. */
  rebuilt: boolean | null;
  /** Conversations in the user's projection (the page may be shorter); null with --group. */
  total: number | null;
  /** Conversations of the page the user may not see (normally 0); null with --group. */
  hidden: number | null;
  summaries: SummaryResult[];
}

export function sessionsResult(user: string, r: ListConversationSummariesResponse): SessionsResult {
  return {
    user,
    epoch: r.epoch === undefined ? null : u64(r.epoch),
    rebuilt: r.rebuilt ?? null,
    total: r.total ?? null,
    hidden: r.hidden ?? null,
    summaries: r.summaries.map(summaryResult),
  };
}

export interface EpochBumpResult {
  /** The epoch after this bump. */
  epoch: number;
  reason: string;
  /** Who bumped it: a principal, or "projection" (the consumer's own start-up/runtime audit). */
  by: string;
  atMs: number;
}

export function epochBumpResult(b: EpochBump): EpochBumpResult {
  return { epoch: u64(b.epoch), reason: b.reason, by: b.by, atMs: u64(b.atMs) };
}

export interface EpochResult {
  epoch: number;
  /** Newest first. */
  bumps: EpochBumpResult[];
}

export function epochResult(e: EpochInfo): EpochResult {
  return { epoch: u64(e.epoch), bumps: e.bumps.map(epochBumpResult) };
}

export interface RebuildResult {
  tenant: string;
  user: string;
  epoch: number;
  /** False when the user's mark was current (and no --force): nothing read or written. */
  rebuilt: boolean;
  /** Conversations read from the authority and merged into the user's list. */
  merged: number;
  /** The user's epoch mark after the call. */
  mark: number;
}

export function rebuildResult(tenant: string, user: string, r: RebuildUserResponse): RebuildResult {
  return { tenant, user, epoch: u64(r.epoch), rebuilt: r.rebuilt, merged: r.merged, mark: u64(r.mark) };
}

export interface PartitionResult {
  partition: number;
  /** OK, NO_CHECKPOINT, OVER_WINDOW, BEYOND_HIGH or IDENTITY_MISMATCH. */
  verdict: string;
  checkpoint: number | null;
  low: number;
  high: number;
  lag: number | null;
  newestMs: number | null;
  /** Offsets [from, to) dropped before the consumer read them. */
  lost: { from: number; to: number } | null;
  detail: string;
}

export function partitionResult(p: PartitionState): PartitionResult {
  const opt = (v: bigint | undefined) => (v === undefined ? null : u64(v));
  return {
    partition: p.partition,
    verdict: p.verdict,
    checkpoint: opt(p.checkpoint),
    low: u64(p.low),
    high: u64(p.high),
    lag: opt(p.lag),
    newestMs: opt(p.newestMs),
    lost: p.lost ? { from: u64(p.lost.from), to: u64(p.lost.to) } : null,
    detail: p.detail,
  };
}

export interface ProjectionStatusResult {
  epoch: number;
  authority: string;
  retentionMs: number;
  /** Set when the consumer stopped on a partition it must not continue on. */
  failure: string | null;
  partitions: (PartitionResult & { checkpointUpdatedAtMs: number | null })[];
  /** Registrations waiting to be written to the authority, and dead letters kept, per Redis instance. */
  pending: { instance: number; depth: number; deadLetters: number }[];
}

export function projectionStatusResult(s: ProjectionStatus): ProjectionStatusResult {
  return {
    epoch: u64(s.epoch),
    authority: s.authority,
    retentionMs: u64(s.retentionMs),
    failure: s.failure ?? null,
    partitions: s.partitions.map((p) => ({ ...partitionResult(p), checkpointUpdatedAtMs: p.checkpointUpdatedAtMs === undefined ? null : u64(p.checkpointUpdatedAtMs) })),
    pending: s.pending.map((p) => ({ instance: p.instance, depth: u64(p.depth), deadLetters: u64(p.deadLetters) })),
  };
}

export interface DispatchAuditResult {
  /** True when every partition is OK (exit 0); otherwise exit 4. */
  ok: boolean;
  partitions: PartitionResult[];
}

export function dispatchAuditResult(r: DispatchAuditResponse): DispatchAuditResult {
  return { ok: r.ok, partitions: r.partitions.map(partitionResult) };
}

/**
 * The drill report exactly as core's RebuildDrill produces it (the file --report writes), with
 * the enumerations as the strings the wire carries.
 */
export interface DrillDifferenceResult {
  tenant: string;
  user: string;
  conversation: string;
  field: string;
  before: string | number | boolean | null;
  after: string | number | boolean | null;
}

export interface DrillReportResult {
  drillId: string;
  startedAt: string;
  finishedAt: string;
  wipe: string;
  scope: string;
  users: number;
  conversationsBefore: number;
  conversationsAfter: number;
  epochBefore: number;
  epochAfter: number;
  registrationsFlushed: number;
  usersRebuilt: number;
  authority: string;
  differences: DrillDifferenceResult[];
  ok: boolean;
}

function jsonValue(text: string): string | number | boolean | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : null;
  } catch {
    return text;
  }
}

export function drillReportResult(r: DrillReport): DrillReportResult {
  return {
    drillId: r.drillId,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    wipe: r.wipe,
    scope: r.scope,
    users: r.users,
    conversationsBefore: r.conversationsBefore,
    conversationsAfter: r.conversationsAfter,
    epochBefore: u64(r.epochBefore),
    epochAfter: u64(r.epochAfter),
    registrationsFlushed: r.registrationsFlushed,
    usersRebuilt: r.usersRebuilt,
    authority: r.authority,
    differences: r.differences.map((d) => ({ tenant: d.tenant, user: d.user, conversation: d.conversation, field: d.field, before: jsonValue(d.beforeJson), after: jsonValue(d.afterJson) })),
    ok: r.ok,
  };
}

/** What `drill rebuild --output json` prints: the report and where it was written. */
export type DrillRunResult = DrillReportResult & { reportPath: string };

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
