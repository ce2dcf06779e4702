/** Table-mode text of `sessions`. */
import { table } from "../format.js";
import type { SessionsResult } from "./results.js";

export function sessionsText(out: SessionsResult): string {
  const rows = table(
    ["GROUP", "STATE", "JOINED_AT", "LEFT_AT", "READ_SEQ", "HEAD_SEQ", "UNREAD"],
    out.summaries.map((s) => [s.group, s.state, s.joinedAt, s.leftAt, s.readConversationSeq, s.head?.conversationSeq ?? null, s.unreadExact ? s.unread : `${s.unread}+`]),
  );
  if (out.epoch === null) return rows;
  const headline = `user ${out.user}: ${out.total} conversation(s) in the projection at epoch ${out.epoch}${out.rebuilt ? " (just rebuilt from the authority)" : ""}${out.hidden ? `; ${out.hidden} hidden` : ""}`;
  return `${headline}\n${rows}`;
}
