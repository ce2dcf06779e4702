/** The JSON result of `message send` (docs/operator-guide.md); cli/result.ts says how it is declared. */
import type { AdminReactionSummary, AnchorEventResponse, GetReactionsResponse, ReactResponse, SendMessageResponse } from "../../admin-api/client.js";
import { nonEmpty, resultFrom, u64 } from "../result.js";

export const sendResult = resultFrom<SendMessageResponse & { group: string; sender: string }>()({
  group: "wire",
  sender: "wire",
  conversationSeq: "u64",
  messageId: "text or null",
  /** The member version the audience was frozen at (0 for a duplicate). */
  version: "u64",
  duplicate: "wire",
  attempts: "wire",
});
export type SendResult = ReturnType<typeof sendResult>;

/** `message recall` and `message edit` (issue 29). */
export const anchorResult = resultFrom<AnchorEventResponse & { group: string }>()({
  group: "wire",
  /** The message recalled or edited. */
  targetSeq: "u64",
  /** The event's own conversation_seq (what devices receive). */
  eventSeq: "u64",
  /** null when the answer found the recall done before. */
  eventMessageId: "text or null",
  /** The event was written before (a retry, or a second recall): nothing new was written. */
  duplicate: "wire",
});
export type AnchorCommandResult = ReturnType<typeof anchorResult>;

/** A message's reactions (issue 28): absolute counts at summary_version. */
export const reactionSummaryResult = resultFrom<AdminReactionSummary>()({
  conversationSeq: "u64",
  /** 0: nobody reacted (or the message was recalled or trimmed). */
  summaryVersion: "u64",
  /** Each key with its count, in the order the keys first appeared. */
  counts: (s) => s.counts.map((c) => ({ key: c.key, count: u64(c.count) })),
  /** Reactions kept with who and when. */
  detailRows: "u64",
  /** Reactions counted without a detail row (past the detail limits): not listed by --users. */
  withoutDetail: "u64",
});

/** `message react`. */
export const reactResult = resultFrom<ReactResponse & { group: string; user: string; key: string; action: "add" | "remove" }>()({
  group: "wire",
  user: "wire",
  key: "wire",
  action: "wire",
  /** false: the user had that reaction already (add) or did not (remove): nothing changed. */
  changed: "wire",
  summary: (r) => reactionSummaryResult(r.summary!),
});
export type ReactCommandResult = ReturnType<typeof reactResult>;

/** `message reactions`. */
export const reactionsResult = resultFrom<GetReactionsResponse & { group: string }>()({
  group: "wire",
  summary: (r) => reactionSummaryResult(r.summary!),
  /** With --users: one page of who reacted (reactedAtMs null: counted without a detail row); [] without. */
  reactions: (r) => r.reactions.map((x) => ({ user: x.user, key: x.key, reactedAtMs: x.reactedAtMs === 0n ? null : u64(x.reactedAtMs) })),
  /** The next page's --cursor; null at the end. */
  nextCursor: (r) => nonEmpty(r.nextCursor),
});
export type ReactionsCommandResult = ReturnType<typeof reactionsResult>;
