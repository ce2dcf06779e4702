import type { BoundedLimit, Uuid } from "../base/index.js";
import type { ConversationService, ConversationSummary } from "../conversation/index.js";
import type { ConversationListService, ConversationRow } from "../conversation-list/index.js";
import type { SessionRow, SessionView, SnapshotPage } from "../session-view/index.js";
import { asOperator } from "./as-operator.js";

/** The engine modules a user's conversation list is made of: its rows (session view) and each conversation's content (conversation). */
export interface ConversationListEngines {
  sessionView: SessionView;
  conversations: ConversationService;
  conversationList: ConversationListService;
}

export interface ConversationListEntry {
  row: SessionRow;
  /** The conversation's head, unread and mentions as the user sees them; null where the user may not see it. */
  summary: ConversationSummary | null;
}

export interface ConversationListPage extends Omit<SnapshotPage, "rows"> {
  entries: ConversationListEntry[];
}

/**
 * One page of a user's conversation list (spec 002 §5, §7): the snapshot's rows, each with the
 * summary of its conversation, read for the page in one pipelined read. A cleared or deleted
 * conversation's summary shows nothing up to its watermark: the rows' hidden_before and
 * deleted_before go with the read, so the summaries apply them (and the read of the user's
 * watermarks is saved).
 */
export async function listConversations(
  engines: Pick<ConversationListEngines, "sessionView" | "conversations">, tenant: Uuid, user: Uuid, page: { limit: BoundedLimit; cursor: string | null },
): Promise<ConversationListPage> {
  const { rows, ...rest } = await engines.sessionView.pageOf(tenant, user, page.limit, page.cursor);
  const summaries = await engines.conversations.conversationSummaries(tenant, user, rows.map((r) => r.conversation as Uuid),
    rows.map((r) => ({ hiddenBefore: r.hiddenBeforeSeq, deletedBefore: r.deletedBeforeSeq })));
  return { ...rest, entries: rows.map((row, i) => ({ row, summary: summaries[i] ?? null })) };
}

/** The actions on one conversation of a user's list (spec 002 §4). */
export type ConversationListAction = "clear" | "delete" | "pin" | "unpin" | "mute" | "unmute" | "archive" | "unarchive";

/**
 * An operator's action on a conversation of a user's list, as that user: a user who is no member
 * is refused as an operator's call is (asOperator), not as the user path hides it. `pinRank` only
 * with "pin".
 */
export function changeConversation(
  engines: Pick<ConversationListEngines, "conversations" | "conversationList">, tenant: Uuid, user: Uuid, group: Uuid, action: ConversationListAction, pinRank?: number,
): Promise<ConversationRow> {
  const list = engines.conversationList;
  return asOperator(engines.conversations, { tenant, group, user, field: "user" },
    () => (action === "pin" ? list.pin(tenant, user, group, pinRank !== undefined ? { rank: pinRank } : {}) : list[action](tenant, user, group)));
}
