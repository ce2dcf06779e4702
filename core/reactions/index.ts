/**
 * Reactions (spec 003 §4, issue 28): REACT's executor — who may react, the idempotency mark and
 * detail row, the message's absolute summary with summary_version, in one atomic step on the
 * conversation's bucket — and the reads that return the summaries with the messages. Owns the
 * `rxsum` and `rxwho` keys of a conversation's `{bNNN}` tag (named in core/conversation keys.ts:
 * a recall deletes them with the message's state), lua/reactions/ and the `qim_reactions_*`
 * metrics. The pushes go through core/delivery (ConversationEvents). docs/gateway.md "Reactions".
 */
export {
  decodeSummaryEntry, parseReactionKey, REACTION_TRIM_BATCH, REACTION_WHO_PAGE_LIMIT, Reactions, type ReactionChange, type ReactionRow, type ReactionsOptions, type ReactionSummary,
  type ReactRequest, type ReactResult,
} from "./reactions.js";
export { reactionMetrics } from "./metrics.js";
