/** The JSON result of `history`, and of a history record wherever one is shown (a session's head); cli/result.ts says how they are declared. */
import type { HistoryPage, HistoryRecord } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

export const recordResult = resultFrom<HistoryRecord>()({
  conversationSeq: "u64",
  messageId: "wire",
  senderId: "wire",
  /** "normal" or "control". */
  kind: "wire",
  countsUnread: "wire",
  createdAtMs: "u64",
  contentType: "wire",
  /** The payload as text for text/plain, else null. */
  text: (r) => (r.contentType === "text/plain" ? r.text : null),
  payloadBase64: (r) => Buffer.from(r.payload).toString("base64"),
  /** The decoded qim.membership.v1 body of a control message, else null. */
  membership: (r): { op: string; actor: string; users: string[] } | null => (r.membership ? { op: r.membership.op, actor: r.membership.actor, users: [...r.membership.users] } : null),
  /** The decoded qim.group.v1 body of a control message (op "dissolve": the group's last record), else null. */
  groupEvent: (r): { op: string; actor: string } | null => (r.groupEvent ? { op: r.groupEvent.op, actor: r.groupEvent.actor } : null),
  /** "recalled" (payload gone) or "edited" since it was sent (spec 003 §2.3), else null. */
  state: (r) => (r.state === "" ? null : (r.state as "recalled" | "edited")),
  /** recall_event_conversation_seq: the recall event's seq, else null. */
  recallEventSeq: (r) => (r.recallEventSeq === 0n ? null : Number(r.recallEventSeq)),
  /** A recall or edit event: the seq of the message it applies to, else null. */
  targetSeq: (r) => (r.targetSeq === 0n ? null : Number(r.targetSeq)),
});
export type RecordResult = ReturnType<typeof recordResult>;

export const historyResult = resultFrom<HistoryPage & { group: string; user: string }>()({
  group: "wire",
  user: "wire",
  joinedAt: "u64",
  leftAt: "u64 or null",
  state: "wire",
  earliestAvailableConversationSeq: "u64",
  records: (p) => p.records.map(recordResult),
});
export type HistoryResult = ReturnType<typeof historyResult>;
