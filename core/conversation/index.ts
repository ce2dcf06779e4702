/**
 * The conversation module: groups, membership changes as CONTROL messages (ADR-0021 §2–3), the
 * send path with group commit, history and the interval-clipped reads. Owns the conversation's
 * keys (`{bNNN}`), the scripts of lua/conversation/ and the writer's metrics.
 */
export * from "./history.js";
export { EDIT_CUSTOM_TYPE, parseModerationReason, RECALL_CUSTOM_TYPE, type AnchorAction, type AnchorResult } from "./anchor.js";
export { applyAnchorEventScript } from "./scripts.js";
export { conversationKeys, outboxKey, reactionWhoKey, type ConversationKeys } from "./keys.js";
export * from "./group-event.js";
export * from "./membership-event.js";
export * from "./service.js";
export type { WriteOutcome } from "./writer.js";
