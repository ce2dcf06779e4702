import type {
  NodeRecord,
  ConversationSummary as CoreSummary, DrillProgress as CoreDrillProgress, DrillReport as CoreDrillReport, EpochBump as CoreEpochBump, GroupInfo,
  HistoryPage as CoreHistoryPage, HistoryRecord as CoreRecord, Member as CoreMember, MembershipChangeResult, PartitionAudit,
  ProjectionStatus as CoreProjectionStatus, SendResult, TransferOwnerResult, UserGroupsPage, DissolveGroupResult,
} from "../core/index.js";
import { groupEventOpName, opName } from "../core/index.js";
import type { ClusterNode } from "../admin-api/gen/qim/admin/v1/cluster.js";
import type { HistoryRecord, Member } from "../admin-api/gen/qim/admin/v1/common.js";
import type { DrillProgress, DrillReport } from "../admin-api/gen/qim/admin/v1/drill.js";
import type { Group, GroupDissolution, ListUserGroupsResponse, MembershipChange, OwnerTransfer } from "../admin-api/gen/qim/admin/v1/groups.js";
import type { ConversationSummary, HistoryPage, SendMessageResponse } from "../admin-api/gen/qim/admin/v1/messages.js";
import type { EpochBump, PartitionState, ProjectionStatus } from "../admin-api/gen/qim/admin/v1/projection.js";

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
    state: g.state,
    ...(g.dissolvedAt !== null ? { dissolvedAt: u64(g.dissolvedAt) } : {}),
    maxMembers: g.maxMembers,
  };
}

export function dissolutionOut(r: DissolveGroupResult): GroupDissolution {
  return {
    outcome: r.outcome, owner: r.owner, memberCount: r.memberCount, version: u64(r.version),
    ...(r.dissolvedAt !== null ? { dissolvedAt: u64(r.dissolvedAt) } : {}), messageId: r.messageId ?? "", attempts: r.attempts,
  };
}

/** The audit line of a dissolve. */
export function describeDissolve(r: DissolveGroupResult): string {
  if (r.outcome === "noop") return `group ${r.group} already was dissolved at conversation_seq ${r.dissolvedAt}; version ${r.version}`;
  if (r.outcome === "planned") return `dry run: would dissolve group ${r.group} (owner ${r.owner}, ${r.memberCount} members) at version ${r.version}`;
  return `dissolved group ${r.group} (owner ${r.owner}, ${r.memberCount} members) at conversation_seq ${r.dissolvedAt}; version ${r.version}`;
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

export function userGroupsOut(p: UserGroupsPage): ListUserGroupsResponse {
  return {
    groups: p.groups.map((g) => ({ group: g.group, joinedAt: u64(g.joinedAt), ...(g.leftAt !== null ? { leftAt: u64(g.leftAt) } : {}), state: g.state })),
    nextAfter: p.nextAfter ?? "",
    conversations: p.conversations,
  };
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
    ...(r.groupEvent ? { groupEvent: { op: groupEventOpName(r.groupEvent.op), actor: r.groupEvent.actor } } : {}),
    state: r.state ?? "",
    recallEventSeq: u64(r.recallEventSeq ?? 0),
    targetSeq: u64(r.target?.conversationSeq ?? 0),
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
export function ownerTransferOut(r: TransferOwnerResult): OwnerTransfer {
  return { outcome: r.outcome, previousOwner: r.previousOwner, owner: r.owner, version: u64(r.version), attempts: r.attempts };
}

/** The audit line of a transfer (the only record of it: no CONTROL message is written). */
export function describeTransfer(r: TransferOwnerResult): string {
  if (r.outcome === "noop") return `${r.owner} already owns group ${r.group}; version ${r.version}`;
  if (r.outcome === "planned") return `dry run: would transfer group ${r.group} from ${r.previousOwner} to ${r.owner} at version ${r.version}`;
  return `transferred group ${r.group} from ${r.previousOwner} to ${r.owner}; version ${r.version}`;
}

export function describeChange(r: MembershipChangeResult): string {
  if (r.outcome === "noop") return `nothing to change; version ${r.version}, ${r.memberCount} members`;
  if (r.outcome === "planned") return `dry run: would ${r.op} ${r.changed.length} user(s) at version ${r.version}; idempotency ${r.idempotencyId}`;
  return `${r.outcome} ${r.op} of ${r.changed.length} user(s) as seq ${r.eventConversationSeq}; version ${r.version}, ${r.memberCount} members`;
}

export function epochBumpOut(b: CoreEpochBump): EpochBump {
  return { epoch: u64(b.epoch), reason: b.reason, by: b.by, atMs: u64(b.at) };
}

/** A partition's audit (dispatch audit, projection status). */
export function partitionOut(a: PartitionAudit): PartitionState {
  return {
    partition: a.partition,
    verdict: a.verdict,
    ...(a.checkpoint !== null ? { checkpoint: u64(a.checkpoint) } : {}),
    low: u64(a.low),
    high: u64(a.high),
    ...(a.lag !== null ? { lag: u64(Math.max(0, a.lag)) } : {}),
    ...(a.newestMs !== null ? { newestMs: u64(a.newestMs) } : {}),
    ...(a.lost ? { lost: { from: u64(a.lost.from), to: u64(a.lost.to) } } : {}),
    detail: a.detail,
    ...(a.checkpointUpdatedAt !== null ? { checkpointUpdatedAtMs: u64(a.checkpointUpdatedAt) } : {}),
  };
}

export function projectionStatusOut(s: CoreProjectionStatus): ProjectionStatus {
  return {
    epoch: u64(s.epoch),
    partitions: s.partitions.map(partitionOut),
    pending: s.pendingPerInstance.map((p) => ({ instance: p.instance, depth: u64(p.depth), deadLetters: u64(p.deadLetters) })),
    authority: s.authority,
    retentionMs: u64(s.retentionMs),
    ...(s.failure !== null ? { failure: s.failure } : {}),
  };
}

export function drillProgressOut(p: CoreDrillProgress): DrillProgress {
  return { phase: p.phase, done: p.done, total: p.total, message: p.message };
}

export function drillReportOut(r: CoreDrillReport): DrillReport {
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
    checkedUsers: r.checkedUsers.map((u) => ({ tenant: u.tenant, user: u.user, conversationsBefore: u.conversationsBefore, conversationsAfter: u.conversationsAfter, rebuilt: u.rebuilt })),
    listRowsCompared: r.listRowsCompared,
    differences: r.differences.map((d) => ({
      tenant: d.tenant, user: d.user, conversation: d.conversation, field: d.field,
      beforeJson: JSON.stringify(d.before), afterJson: JSON.stringify(d.after),
    })),
    ok: r.ok,
  };
}

/** A one-line account of a drill for the audit log: its id, its result, the first differences. */
export function describeDrill(r: CoreDrillReport): string {
  const head = `drill ${r.drillId} (wipe ${r.wipe}): ${r.ok ? "ok" : `${r.differences.length} difference(s)`}; ${r.users} users, `
    + `${r.conversationsBefore} conversations before, ${r.conversationsAfter} after; epoch ${r.epochBefore} -> ${r.epochAfter}; ${r.usersRebuilt} users rebuilt`;
  if (r.ok) return head;
  const shown = r.differences.slice(0, 20).map((d) => `${d.user}/${d.conversation} ${d.field} ${JSON.stringify(d.before)} -> ${JSON.stringify(d.after)}`);
  return `${head}: ${shown.join("; ")}${r.differences.length > shown.length ? `; … ${r.differences.length - shown.length} more` : ""}`;
}

/** A node of the engine cluster on the wire (ClusterService.ListNodes, the dashboard's snapshot). */
export function clusterNodeOut(n: NodeRecord, cmdBadFile = "", connections?: number): ClusterNode {
  return {
    cmdBadFile,
    ...(connections !== undefined ? { connections: BigInt(connections) } : {}),
    nodeId: n.nodeId, address: n.address, version: n.version, startedAtMs: BigInt(n.startedAt), heartbeatAgeMs: BigInt(Math.round(n.heartbeatAgeMs)),
    alive: n.alive, draining: n.draining, owned: { relayBuckets: n.owned.relayBuckets, partitions: n.owned.partitions, slots: n.owned.slots, rooms: n.owned.rooms },
    units: [...n.units],
  };
}
