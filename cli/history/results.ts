/** The JSON result of `history`, and of a history record wherever one is shown (a session's head). */
import type { HistoryPage, HistoryRecord } from "../../admin-api/client.js";
import { optionalU64, u64 } from "../format.js";

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
  /** The decoded qim.group.v1 body of a control message (op "dissolve": the group's last record), else null. */
  groupEvent: { op: string; actor: string } | null;
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
    groupEvent: r.groupEvent ? { op: r.groupEvent.op, actor: r.groupEvent.actor } : null,
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
    leftAt: optionalU64(p.leftAt),
    state: p.state,
    earliestAvailableConversationSeq: u64(p.earliestAvailableConversationSeq),
    records: p.records.map(recordResult),
  };
}
