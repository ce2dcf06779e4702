/**
 * CMD sync (issue 13, spec 001): command channels, the conversation intent and its codec, the
 * owner-local pending buffer, the durable state (on Redis, or on Cassandra when it is configured)
 * and the sync/ack application. Owns the `cmdstate`/`cmdactive` keys on the user slot's `{uNNN}`
 * tag, the Cassandra tables `cmd_conversation_state`/`cmd_conversation_active`, the scripts of lua/cmd-sync/ and
 * its metrics. docs/cmd-sync-core.md records the decisions.
 */
export * from "./types.js";
// core (helper A): channel, intent, codec, pending buffer, durable state, sync/ack
export { buildConversationIntent, splitIntentByOwner, validateIntent } from "./intent.js";
export { CMD_INTENT_CODEC_VERSION, decodeIntent, encodeIntent } from "./codec.js";
export { CmdFencedError } from "./errors.js";
export { CMD_ACTIVE_MAX, cmdActiveMember, cmdFlushPointKey, cmdStateField, cmdStateKeys, cmdUserRef, type CmdStateKeys } from "./keys.js";
export { cmdMetrics } from "./metrics.js";
export {
  CMD_FLUSH_BATCH_SIZE, CMD_FLUSH_INTERVAL_MS, CMD_MAX_PENDING, CMD_PENDING_SHARD_COUNT, CMD_SETTLED_MEMORY_MS, CmdPendingUpdater, compareViews, fnv32a, pendingShardOf,
  type CmdPendingOptions,
} from "./pending.js";
export {
  CMD_PENDING_DIR, CMD_PENDING_FILE, decodePendingFile, encodePendingFile, loadPendingFile, pendingFilePath, savePendingFile, type PendingFileUpdate,
} from "./pending-file.js";
export { RedisCmdStateStore } from "./state.js";
export {
  CMD_CASSANDRA_ACTIVE_PAGE, CMD_CASSANDRA_ACTIVE_TABLE, CMD_CASSANDRA_CELL_TIMESTAMP_BASE, CMD_CASSANDRA_META_TABLE, CMD_CASSANDRA_STATE_TABLE, CMD_CASSANDRA_USER_CONCURRENCY, CMD_CASSANDRA_FLUSH_CONCURRENCY, CMD_CASSANDRA_WRITES_IN_FLIGHT,
  CassandraCmdStateStore, type CassandraCmdStateStoreDeps,
} from "./state-cassandra.js";
export {
  CMD_SYNC_ACTIVE_SCAN_LIMIT, CMD_SYNC_RECORD_MAX_PER_USER, CMD_SYNC_RECORD_MAX_USERS, CMD_SYNC_RECORD_TTL_MS,
  CmdSyncApp, CmdSyncRecords, mergeCandidates, type CmdSyncAppOptions, type CmdSyncRecordEntry,
} from "./sync-app.js";
// the catch-up scan and recovery from the CMD log (core/cmd-log), the CmdSync module (runtime.cmd)
export {
  CMD_CATCHUP_INTERVAL_MS, CMD_FLUSH_POINT_IDLE_MS, CMD_FLUSH_POINT_INTERVAL_MS, CMD_SCAN_OVERLAP_MS, CMD_SCAN_PAGE, CmdCatchUp, type CatchUpOptions, type CatchUpPending,
} from "./catchup.js";
export { CmdSync, type CmdSyncDeps, type CmdSyncOptions } from "./cmd-sync.js";
