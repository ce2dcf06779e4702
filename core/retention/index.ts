/**
 * Retention (issue 26): per tenant (and per group where set) a rule per `retention_class` (spec
 * 000), stored in Redis; the trimming task that, per relay bucket at the bucket's lease holder,
 * moves each conversation's global earliest seq forward and removes older history, unread index
 * entries and idempotency ids in bounded steps (lua/retention/). Owns `{g000}:retention:policy:T`
 * and `{bNNN}:retention:T:C`, grpmeta's `earliest_seq` and `idem_trim_cursor` fields, and the
 * `qim_retention_*` metrics. docs/retention.md.
 */
export { cmdChannelDirectoryKey, cmdTrimStateKey, groupRetentionKey, retentionPolicyKey } from "./keys.js";
export {
  CMD_ACK_TRIM_FIRST_PAGE, CMD_ACK_TRIM_PAGE, CMD_ACK_TRIM_PAGE_BYTES, CMD_ACK_TRIM_READS, CMD_ACK_TRIM_SLICE, CMD_DIRECTORY_FILL_PAGE, CMD_DIRECTORY_FILL_PAGES, type CmdChannelTrim, type CmdReadSeqs, type CmdRoundReport,
} from "./cmd-trimmer.js";
export {
  checkRule, DEFAULT_RETENTION_CLASS, effectiveRule, KEEP_EVERYTHING, RetentionPolicies,
  type GroupRetention, type RetentionPolicy, type RetentionRule,
} from "./policy.js";
export { trimCmdHistoryScript, trimConversationScript, type CmdTrimReply, type TrimReply } from "./scripts.js";
export { RetentionTrimmer, type ConversationTrim, type RetentionOptions, type RoundReport } from "./trimmer.js";
