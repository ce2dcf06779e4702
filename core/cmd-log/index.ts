/**
 * The CMD log (issue 13, spec 001's command channel log): command channel ids, the durable commit
 * of a CMD message (seq, history, idempotency, frozen recipients) and the per-bucket recent-commit
 * index that core/cmd-sync's catch-up scan reads. Owns the `cmdseq`/`cmdhist`/`cmdidem`/`cmdrecent`
 * keys on the channel's `{bNNN}` tag and the commit script of lua/cmd-sync/. docs/cmd-sync-log.md
 * records the decisions.
 */
export * from "./types.js";
export {
  CMD_CHANNEL_ID_MAX_BYTES, CMD_CHANNEL_TYPE_MAX, CMD_CHANNEL_TYPE_MIN, channelKeyText, isCommandChannel, isValidCommandChannelId,
  normaliseCommandChannel, parseChannelType, parseCommandChannelId, stripCommandSuffix,
} from "./channel.js";
export {
  CMD_CLIENT_MSG_NO_MAX_CHARS, CMD_LOAD_PAGE, CMD_RECENT_RETENTION_MS, CmdLog, cmdEntryAudience, decodeCmdEntry, type CmdLogOptions,
} from "./log.js";
export { cmdChannelBucket, cmdChannelKeys, cmdRecentKey, sourceGroupOf, type CmdChannelKeys } from "./keys.js";
export { logMetrics as cmdLogMetrics } from "./metrics.js";
