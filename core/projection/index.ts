/**
 * The session projection (spec 000 §4, spec 002 §2.2): the dispatch-log consumer, the
 * registration task and its conversation-set authorities (Cassandra, Redis hash), the epoch,
 * per-user lazy rebuild, the session list and the rebuild drill, wired as one ProjectionStack.
 * Owns the user keys (`{uNNN}`), the checkpoints, the scripts of lua/projection/ and its metrics.
 */
export * from "./authority.js";
export * from "./consumer.js";
export * from "./drill.js";
export * from "./epoch.js";
export {
  checkpointKey, convsPattern, drillLockKey, epochMarksKey, projectionEpochKey, projectionEpochLogKey, ucsDeadKey, ucsPendingKey, userKeys, type UserKeys,
} from "./keys.js";
export * from "./registration.js";
export * from "./sessions.js";
export * from "./stack.js";
