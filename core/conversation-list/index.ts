/**
 * The conversation-list state engine (spec 002 §2.1, §3, §4, §7, §8): per (user, conversation)
 * rows with cached unread and mentions kept by the three-state update and corrected by bounded
 * recompute, the user's badge maintained in the same atomic step, clear/delete/pin/mute/archive
 * and read, reconcile, rebuild and the unread audit, and the compaction consumer that writes a
 * row at most once per projection_compaction_window. Owns the `cl*` keys on the user's `{uNNN}`
 * tag, the list consumer's checkpoints, the scripts of lua/conversation-list/ and its metrics.
 * docs/conversation-list.md records the decisions.
 */
export { inHandEntry, ListCompactor, MAX_PENDING_ROWS, PROJECTION_COMPACTION_WINDOW_MS, type CompactorOptions } from "./compactor.js";
export { LIVE_PUBLISH_INTERVAL_MS, LiveThrottle, type LiveTimer } from "./live-throttle.js";
export { listCheckpointKey, listKeys, listRowsPattern, type ListKeys } from "./keys.js";
export {
  baseOf, decodeRow, LIVE_ROW_CACHE_MAX, liveRow, LiveRowCache, NewRowCache, type BadgeState, type ConversationRow, type InHandEntry, type RowPrefs, type RowState,
} from "./row.js";
export {
  ConversationListService, RECONCILE_MIN_INTERVAL_MS, UNREAD_AUDIT_IDLE_MS, UNREAD_AUDIT_SAMPLE_RATE, type BoundedReconcile, type BoundedReconcileTrigger,
  type ConversationListOptions, type ListChange, type ReconcileResult, type ReconcileTrigger, type UnreadAuditDrift, type UnreadAuditReport,
} from "./service.js";
export {
  ROLLBACK_RECONCILE_PAUSE_MS, ROLLBACK_RECONCILE_SCAN_COUNT, ROLLBACK_RECONCILE_SCANS_PER_CHUNK, ROLLBACK_RECONCILE_USERS_PER_CHUNK, RollbackReconciler,
  type RollbackReconcileOptions, type RollbackSweepReport,
} from "./rollback.js";
export {
  UNREAD_AUDIT_INTERVAL_MS, UNREAD_AUDIT_ROWS_PER_TICK, UNREAD_AUDIT_SCAN_COUNT, UNREAD_AUDIT_SCANS_PER_TICK, UnreadAuditSampler,
  type UnreadAuditPass, type UnreadAuditSamplerOptions,
} from "./sampler.js";
export { ConversationList, DRILL_LIST_SETTLE_WINDOWS, type ConversationListDeps, type ConversationListStackOptions } from "./stack.js";
