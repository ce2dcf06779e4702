/** Table-mode text of `sessions` and `sessions watch`. */
import { table } from "../format.js";
import type { SessionsResult, WatchLine } from "./results.js";

export function sessionsText(out: SessionsResult): string {
  const listed = out.snapshotRevision !== null;
  const rows = table(
    listed ? ["GROUP", "PIN", "STATE", "HEAD SEQ", "UNREAD", "@", "MUTED", "ARCHIVED"] : ["GROUP", "STATE", "JOINED AT", "LEFT AT", "READ SEQ", "HEAD SEQ", "UNREAD"],
    out.summaries.map((s) => {
      const unread = s.unreadExact ? s.unread : `${s.unread}+`;
      return listed
        ? [s.group, s.pinRank, s.state, s.head?.conversationSeq ?? null, unread, s.mentions, s.muted ? "yes" : "", s.archived ? "yes" : ""]
        : [s.group, s.state, s.joinedAt, s.leftAt, s.readConversationSeq, s.head?.conversationSeq ?? null, unread];
    }),
  );
  if (!listed) return rows;
  const lines = [`user ${out.user}: ${out.total} conversation(s), snapshot revision ${out.snapshotRevision}`];
  if (out.projectionComplete === false) lines.push("the list changed shape since that cursor (pin, archive, delete, leave): this is the new first page; start again from here");
  if (out.snapshotTruncated) lines.push(`truncated: the user has more than ${out.maxConversationsPerUser} conversations (max_conversations_per_user); only the first ${out.maxConversationsPerUser} in the list's order are listed`);
  lines.push(rows);
  if (out.nextCursor) lines.push(`next page: --cursor ${out.nextCursor}`);
  return lines.join("\n");
}

export function watchText(l: WatchLine): string {
  const at = `v${l.version} (after v${l.previousVersion})`;
  const cause = l.drivingEventId ? ` [${l.drivingEventId}]` : "";
  if (l.kind === "badge") return `${at} badge totalUnread=${l.badge!.totalUnread} totalMention=${l.badge!.totalMention} mutedUnread=${l.badge!.mutedUnread}${cause}`;
  const r = l.row!;
  if (r.deleted) return `${at} ${r.group} deleted${cause}`;
  const flags = [r.pinRank !== null ? `pinned(${r.pinRank})` : "", r.muted ? "muted" : "", r.archived ? "archived" : ""].filter(Boolean).join(",");
  return `${at} ${r.group} head=${r.headConversationSeq} unread=${r.unread}${r.unreadExact ? "" : "+"} mentions=${r.mentions}${flags ? ` ${flags}` : ""}${cause}`;
}
